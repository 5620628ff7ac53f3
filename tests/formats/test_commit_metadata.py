"""Timeline instant decoding over every instant file of the hudi-rs fixture tables."""

from __future__ import annotations

import io
import json
import os
import re
import zipfile
from collections import Counter
from pathlib import Path

import fastavro
import pytest

from hudi_md.errors import CommitMetadataError
from hudi_md.formats.commit_metadata import (
    CommitMetadata,
    WriteStat,
    parse_commit_metadata,
    parse_instant_metadata,
    rolled_back_instants,
)

from fixtures import fixtures_dir

FIXTURES = fixtures_dir()
COMMIT_METADATA = FIXTURES / "core-tests-data" / "commit_metadata"
ARCHIVES = (
    sorted(str(p.relative_to(FIXTURES)) for p in FIXTURES.glob("**/*.zip")) if FIXTURES.is_dir() else []
)
# <instant>[_<completion>].<action>[.requested|.inflight], and the v6/v8 COW "<instant>.inflight".
INSTANT_FILE = re.compile(r"^(\d+)(?:_(\d+))?\.([a-z]+)(?:\.(requested|inflight))?$")
COMMIT_ACTIONS = ("commit", "deltacommit", "replacecommit")

pytestmark = pytest.mark.skipif(not FIXTURES.is_dir(), reason="hudi-rs fixtures not available")


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The timeline instant files of every table zip and its MDT, unpacked once (``__MACOSX`` skipped)."""
    root = tmp_path_factory.mktemp("hudi_tables")
    for archive in ARCHIVES:
        with zipfile.ZipFile(FIXTURES / archive) as zf:
            members = [
                m
                for m in zf.namelist()
                if not m.startswith("__MACOSX")
                and "/.hoodie/" in m
                and INSTANT_FILE.match(m.rsplit("/", 1)[-1])
            ]
            zf.extractall(root / Path(archive).with_suffix(""), members=members)
    return root


@pytest.fixture(scope="module")
def file_sizes() -> dict[Path, int]:
    """Size of every file in every table zip, keyed like the unpacked paths (relative to ``tables``)."""
    sizes: dict[Path, int] = {}
    for archive in ARCHIVES:
        with zipfile.ZipFile(FIXTURES / archive) as zf:
            for info in zf.infolist():
                if not info.filename.startswith("__MACOSX") and not info.is_dir():
                    sizes[Path(archive).with_suffix("") / info.filename] = info.file_size
    return sizes


def _timelines(table_root: Path) -> list[tuple[Path, Path]]:
    """(table base path, timeline dir) for the data table and its MDT, v6 and v8+ layouts."""
    out = []
    for d, _, _ in os.walk(table_root):
        path = Path(d)
        if path.name == ".hoodie":
            out.append((path.parent, path))
        elif path.name == "timeline" and path.parent.name == ".hoodie":
            out.append((path.parent.parent, path))
    return out


def _instant_files(timeline: Path) -> list[tuple[Path, str, str | None]]:
    out = []
    for f in sorted(timeline.iterdir()):
        m = INSTANT_FILE.match(f.name)
        if f.is_file() and m:
            action, state = m.group(3), m.group(4)
            if action == "inflight":  # "<instant>.inflight" = inflight commit
                action, state = "commit", "inflight"
            out.append((f, action, state))
    return out


# --- the two single-file fixtures -------------------------------------------------------------------


def test_v6_json_commit() -> None:
    path = COMMIT_METADATA / "v6_commit.json"
    raw = parse_instant_metadata(path.read_bytes(), path.name)
    assert set(raw) >= {"partitionToWriteStats", "compacted", "extraMetadata", "operationType"}
    cm = CommitMetadata(raw, path.name)
    assert cm.operation_type == "UPSERT"
    assert cm.compacted is False
    assert json.loads(cm.schema or "")["name"] == "v6_nonpartitioned_record"
    (stat,) = cm.write_stats()
    name = "a079bdb3-731c-4894-b855-abfcd6921007-0_0-203-274_20240418173551906.parquet"
    assert stat == WriteStat(
        partition_path="",
        file_id="a079bdb3-731c-4894-b855-abfcd6921007-0",
        path=name,
        prev_commit="20240418173550988",
        num_writes=4,
        num_deletes=0,
        num_update_writes=1,
        num_inserts=1,
        file_size_in_bytes=441520,
        total_write_bytes=441520,
        base_file=None,
        log_files=(),
    )
    assert stat.file_name == name
    assert cm.files_added() == {"": {name: 441520}}
    assert cm.replaced_file_ids() == {}


def test_v8_avro_deltacommit() -> None:
    path = COMMIT_METADATA / "v8_deltacommit.avro"
    cm = parse_commit_metadata(path.read_bytes(), path.name)
    assert cm.operation_type == "UPSERT"
    stats = cm.write_stats()
    assert [s.partition_path for s in stats] == ["city=san_francisco", "city=sao_paulo", "city=chennai"]
    assert all(s.prev_commit is None for s in stats)  # the string "null" of new file groups
    assert [s.num_inserts for s in stats] == [4, 2, 2]
    added = cm.files_added()
    assert added["city=chennai"] == {
        "58fccab1-a55c-4b22-b74e-22b747ad4a44-0_2-252-391_20250713011913147.parquet": 436193
    }
    assert json.loads(cm.schema or "")["name"] == "v8_trips_8i1u_record"


def test_empty_file_is_empty_metadata() -> None:
    assert parse_instant_metadata(b"", "x.commit.requested") == {}
    cm = parse_commit_metadata(b"", "x.commit.requested")
    assert cm.write_stats() == [] and cm.files_added() == {} and cm.schema is None
    assert cm.operation_type is None


def test_json_nulls_and_null_strings() -> None:
    doc = {
        "partitionToWriteStats": {
            "p": [
                {
                    "fileId": "f",
                    "path": "p/.f_1.log.1_0-1-1",
                    "prevCommit": "null",
                    "numWrites": None,
                    "fileSizeInBytes": 10,
                    "logFiles": [".f_1.log.1_0-1-1"],
                    "baseFile": "",
                },
                {"fileId": "f", "path": "p/.f_1.log.1_0-1-1", "fileSizeInBytes": 25},
            ]
        },
        "partitionToReplaceFileIds": {"q": ["g"]},
        "extraMetadata": {"schema": ""},
    }
    cm = parse_commit_metadata(json.dumps(doc).encode(), "x.deltacommit")
    first = cm.write_stats()[0]
    assert (first.prev_commit, first.num_writes, first.base_file) == (None, 0, None)
    assert first.log_files == (".f_1.log.1_0-1-1",)
    # The same log file appended twice in one commit: the larger (later) size.
    assert cm.files_added() == {"p": {".f_1.log.1_0-1-1": 25}}
    assert cm.replaced_file_ids() == {"q": ["g"]}
    assert cm.schema is None


def test_v6_replacecommit_replaced_file_ids(tables: Path) -> None:
    timeline = tables / "sample_table/cow/v6_simplekeygen_nonhivestyle_overwritetable"
    (path,) = timeline.glob("*/.hoodie/*.replacecommit")
    cm = parse_commit_metadata(path.read_bytes(), path.name)
    assert cm.operation_type == "INSERT_OVERWRITE_TABLE"
    assert cm.replaced_file_ids() == {
        "30": ["d398fae1-c0e6-4098-8124-f55f7098bdba-0"],
        "20": ["88163884-fef0-4aab-865d-c72327a8a1d5-0"],
        "10": ["4f2685a3-614f-49ca-9b2b-e1cb9fb61f27-0"],
    }


def test_rollback_metadata_v6_and_v9(tables: Path) -> None:
    v6 = tables / "sample_table/mor/parquet/v6_nonpartitioned_rollback"
    (done,) = v6.glob("*/.hoodie/*.rollback")
    meta = parse_instant_metadata(done.read_bytes(), done.name)
    assert rolled_back_instants(meta) == ["20250126040826878"]
    assert meta["instantsRollback"] == [{"commitTime": "20250126040826878", "action": "deltacommit"}]
    part = meta["partitionMetadata"][""]
    assert [Path(p).name for p in part["rollbackLogFiles"]] == [
        ".0712b9f9-d2d5-4cae-bcf4-8fd7146af503-0_20250126040823628.log.2_1-0-1"
    ]
    (plan,) = v6.glob("*/.hoodie/*.rollback.requested")
    assert rolled_back_instants(parse_instant_metadata(plan.read_bytes(), plan.name)) == ["20250126040826878"]

    v9 = tables / "sample_table/mor/avro/v9_nonpartitioned_rollback"
    (done,) = v9.glob("*/.hoodie/timeline/*.rollback")
    meta = parse_instant_metadata(done.read_bytes(), done.name)
    assert rolled_back_instants(meta) == ["20260403184242950"]
    assert meta["partitionMetadata"][""]["successDeleteFiles"][0].endswith("_20260403184242950.parquet")


# --- every instant file of every table --------------------------------------------------------------


@pytest.mark.parametrize("archive", ARCHIVES)
def test_every_instant_file_parses(tables: Path, file_sizes: dict[Path, int], archive: str) -> None:
    table_root = tables / Path(archive).with_suffix("")
    seen: Counter[str] = Counter()
    for base_path, timeline in _timelines(table_root):
        for path, action, state in _instant_files(timeline):
            meta = parse_instant_metadata(path.read_bytes(), path.name)
            assert isinstance(meta, dict)
            seen[f"{action}.{state}" if state else action] += 1
            if state is not None or action not in COMMIT_ACTIONS:
                continue
            cm = CommitMetadata(meta, path.name)
            in_mdt = base_path.name == "metadata" and base_path.parent.name == ".hoodie"
            for stat in cm.write_stats():
                assert stat.path and not stat.path.startswith("/"), (path, stat.path)
                assert (
                    stat.path.endswith(".parquet")
                    or ".log." in stat.path
                    or (in_mdt and stat.path.endswith(".hfile"))
                ), (path, stat.path)
                # No fixture table was ever cleaned: every file a commit wrote is still there.
                assert (base_path / stat.path).relative_to(tables) in file_sizes, (path, stat.path)
            if action == "replacecommit":
                assert cm.replaced_file_ids()
    if "empty" not in archive:
        assert any(k in seen for k in COMMIT_ACTIONS)


def test_instant_file_census(tables: Path) -> None:
    """Completed instants across the 28 tables and their MDTs, by action."""
    completed: Counter[str] = Counter()
    for _, timeline in _timelines(tables):
        for path, action, state in _instant_files(timeline):
            if state is None:
                completed[action] += 1
                parse_instant_metadata(path.read_bytes(), path.name)
    assert completed == Counter(
        {"commit": 64, "deltacommit": 213, "replacecommit": 14, "indexing": 13, "rollback": 3}
    )


def test_files_added_match_the_files_on_disk(tables: Path, file_sizes: dict[Path, int]) -> None:
    """Base name + fileSizeInBytes (largest over the commits) is each written file's real size."""
    checked = 0
    for base_path, timeline in _timelines(tables):
        sizes: dict[Path, int] = {}
        for path, action, state in _instant_files(timeline):
            if state is None and action in COMMIT_ACTIONS:
                cm = parse_commit_metadata(path.read_bytes(), path.name)
                for partition, files in cm.files_added().items():
                    for name, size in files.items():
                        file = base_path / partition / name
                        sizes[file] = max(size, sizes.get(file, 0))
        for file, size in sizes.items():
            assert file_sizes[file.relative_to(tables)] == size, file
            checked += 1
    assert checked == 974


# --- damaged files -----------------------------------------------------------------------------------


def test_truncated_avro_commit() -> None:
    data = (COMMIT_METADATA / "v8_deltacommit.avro").read_bytes()
    name = "20250713011913147_20250713011914000.deltacommit"
    with pytest.raises(CommitMetadataError, match=re.escape(name)):
        parse_instant_metadata(data[: len(data) - 300], name)


def test_json_commit_with_a_syntax_error() -> None:
    data = (COMMIT_METADATA / "v6_commit.json").read_bytes().replace(b'"compacted" :', b'"compacted" ', 1)
    with pytest.raises(CommitMetadataError, match=r"20240418173551906\.commit.*neither Avro nor valid JSON"):
        parse_instant_metadata(data, "20240418173551906.commit")


def test_json_that_is_not_an_object() -> None:
    with pytest.raises(CommitMetadataError, match=r"a\.commit.*list"):
        parse_instant_metadata(b"[1, 2]", "a.commit")


def test_avro_container_without_records() -> None:
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema({"type": "record", "name": "R", "fields": []}), [])
    with pytest.raises(CommitMetadataError, match=r"b\.commit.*no record"):
        parse_instant_metadata(buf.getvalue(), "b.commit")


def test_malformed_write_stats_name_the_file() -> None:
    doc = {"partitionToWriteStats": {"p": {"not": "a list"}}}
    cm = parse_commit_metadata(json.dumps(doc).encode(), "c.commit")
    with pytest.raises(CommitMetadataError, match=r"c\.commit.*not a list"):
        cm.write_stats()
    doc = {"partitionToWriteStats": {"p": [{"numWrites": "many"}]}}
    cm = parse_commit_metadata(json.dumps(doc).encode(), "d.commit")
    with pytest.raises(CommitMetadataError, match=r"d\.commit.*malformed write stat"):
        cm.write_stats()
