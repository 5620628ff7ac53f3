"""The `hudi-md` CLI, run as a user would (a subprocess of the installed console script)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import hudi_md

from fixtures import archives

MDT_TABLES = [
    a
    for a in archives()
    if a.endswith(("_meta.zip", "v8_trips_8i3u1d.zip", "v9_timebasedkeygen_nonhivestyle.zip"))
    or a.endswith(("v9_nonpartitioned_rollback.zip", "v9_txns_simple_overwrite.zip"))
]


def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "hudi_md.cli", *args], capture_output=True, text=True, timeout=120
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"hudi-md {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
        )
    return proc


def test_console_script_is_installed() -> None:
    exe = Path(sys.executable).parent / "hudi-md"
    assert exe.exists()
    out = subprocess.run([str(exe), "--help"], capture_output=True, text=True, check=True).stdout
    for command in ("metadata", "table", "timeline", "read"):
        assert command in out


@pytest.mark.parametrize("archive", MDT_TABLES)
def test_validate_passes_on_every_mdt_fixture(archive: str, table_path) -> None:
    proc = run("metadata", "validate", str(table_path(archive)))
    assert "OK" in proc.stdout


def _copy(table_path, tmp_path: Path) -> Path:
    src = table_path("sample_table/cow/v9_txns_simple_meta.zip")
    dest = tmp_path / "t"
    shutil.copytree(src, dest)
    return dest


def test_validate_fails_on_a_file_removed_behind_the_mdt(tmp_path: Path, table_path) -> None:
    dest = _copy(table_path, tmp_path)
    victim = sorted((dest / "region=us").glob("*.parquet"))[-1]
    victim.unlink()
    proc = run("metadata", "validate", str(dest), check=False)
    assert proc.returncode == 1
    assert f"region=us/{victim.name}: only in MDT" in proc.stdout
    data = json.loads(run("metadata", "validate", "--json", str(dest), check=False).stdout)
    assert not data["ok"]
    assert [(d["kind"], d["file_name"]) for d in data["differences"]] == [("file_only_in_mdt", victim.name)]


def test_validate_fails_on_a_file_added_behind_the_mdt(tmp_path: Path, table_path) -> None:
    dest = _copy(table_path, tmp_path)
    src = sorted((dest / "region=us").glob("*.parquet"))[-1]
    _, token, instant = src.stem.split("_")
    added = dest / "region=eu" / f"00000000-0000-0000-0000-000000000000-0_{token}_{instant}.parquet"
    shutil.copy(src, added)
    proc = run("metadata", "validate", str(dest), check=False)
    assert proc.returncode == 1
    assert f"region=eu/{added.name}: only in storage" in proc.stdout


def test_list_partitions_and_files_match_the_api(table_path) -> None:
    path = str(table_path("sample_table/mor/avro/v9_txns_simple_meta.zip"))
    table = hudi_md.open_table(path)
    parts = json.loads(run("--json", "metadata", "list-partitions", path).stdout)
    assert (
        [p["partition_path"] for p in parts]
        == table.partitions()
        == ["region=apac", "region=eu", "region=us"]
    )
    files = json.loads(run("metadata", "list-files", path, "--partition", "region=eu", "--json").stdout)
    listed = table.metadata_table.files.files_in_partitions(["region=eu"])["region=eu"]
    assert [(f["file_name"], f["size"]) for f in files] == [(e.name, e.size) for e in listed]
    # every file the MDT lists for the partition exists on storage with that size
    for f in files:
        assert (Path(path) / "region=eu" / f["file_name"]).stat().st_size == f["size"]


def test_stats_table_show_timeline(table_path) -> None:
    path = str(table_path("sample_table/mor/avro/v9_txns_simple_meta.zip"))
    stats = json.loads(run("metadata", "stats", "--json", path).stdout)
    assert stats["available_partitions"] == [
        "column_stats",
        "files",
        "partition_stats",
        "record_index",
        "secondary_index_merchant_idx",
        "secondary_index_txn_date_idx",
    ]
    assert stats["partitions"]["record_index"]["file_groups"] == 10
    assert stats["partitions"]["column_stats"]["file_groups"] == 2
    assert stats["partition_count"] == 3
    assert "metadata stats" not in run("metadata", "stats", path).stdout  # text form works too
    show = json.loads(run("table", "show", "--json", path).stdout)
    assert show["table_version"] == 9 and show["table_type"] == "MERGE_ON_READ"
    assert show["partition_fields"] == ["region"]
    timeline = json.loads(run("timeline", "--json", path).stdout)
    actions = {r["action"] for r in timeline}
    assert {"deltacommit", "replacecommit", "commit", "indexing"} <= actions
    assert all(r["completion_time"] for r in timeline if r["state"] == "COMPLETED")


def test_read_command(table_path) -> None:
    path = str(table_path("sample_table/cow/v9_txns_simple_meta.zip"))
    out = json.loads(run("read", path, "--limit", "3", "--json").stdout)
    assert out["total_rows"] == hudi_md.open_table(path).read().num_rows
    assert len(out["rows"]) == 3
    text = run("read", path, "--limit", "2", "--filter", "region = eu").stdout
    assert text.strip().endswith("shown)") or text.strip().endswith("rows)")


def test_errors_are_clear(tmp_path: Path) -> None:
    proc = run("table", "show", str(tmp_path / "nothing"), check=False)
    assert proc.returncode == 2
    assert "no Hudi table" in proc.stderr
    proc = run("metadata", "list-partitions", str(tmp_path / "nothing"), check=False)
    assert proc.returncode == 2


def test_drop_index_makes_a_table_with_secondary_indexes_writable(table_path, tmp_path) -> None:
    """A Hudi table with secondary indexes is refused by hudi-md's writer; `metadata drop-index`
    drops them (config first, then folders and index.json) and the write then succeeds, with
    the remaining MDT valid and hudi-rs reading the same rows."""
    import hudi
    import pyarrow as pa

    from hudi_md.errors import UnsupportedFeatureError
    from hudi_md.metadata.validate import validate_metadata_table

    path = tmp_path / "t"
    shutil.copytree(table_path("sample_table/mor/avro/v9_txns_simple_meta.zip"), path)
    table = hudi_md.open_table(str(path))
    one = table.read(filters=[("txn_id", "=", "TXN-001")])
    # the table's ordering field: another one is refused before anything is written, as Hudi does
    opts = {"hoodie.datasource.write.precombine.field": "txn_ts"}
    with pytest.raises(UnsupportedFeatureError, match="secondary_index_merchant_idx"):
        hudi_md.write(one, str(path), operation="upsert", options=opts)
    assert run("metadata", "drop-index", str(path), "no_such_index", check=False).returncode != 0
    indexes = ["secondary_index_merchant_idx", "secondary_index_txn_date_idx"]
    out = run("metadata", "drop-index", str(path), *indexes)
    assert "dropped secondary_index_merchant_idx, secondary_index_txn_date_idx" in out.stdout
    config = hudi_md.open_table(str(path)).state.config
    assert config.metadata_partitions == ["column_stats", "files", "partition_stats", "record_index"]
    assert not (path / ".hoodie" / "metadata" / "secondary_index_merchant_idx").exists()
    defs = json.loads((path / ".hoodie" / ".index_defs" / "index.json").read_text())["indexDefinitions"]
    assert sorted(defs) == ["column_stats", "record_index"]  # Hudi 1.1 wrote no partition_stats entry
    hudi_md.write(one, str(path), operation="upsert", options=opts)
    table = hudi_md.open_table(str(path))
    assert not validate_metadata_table(table)
    rs = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(str(path)).build().read())
    assert sorted(table.read().column("txn_id").to_pylist()) == sorted(rs.column("txn_id").to_pylist())
