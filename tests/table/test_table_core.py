"""Table core: hoodie.properties, timeline layouts 1 and 2, file names, bad input."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import hudi_md
from hudi_md.errors import CommitMetadataError, TableConfigError, TableNotFoundError
from hudi_md.storage import Storage
from hudi_md.table.config import TableConfig, compute_checksum, format_properties, parse_properties
from hudi_md.table.filenames import BaseFileName, LogFileName, parse_data_file
from hudi_md.table.timeline import State, Timeline, parse_instant_file

from fixtures import archives


@pytest.mark.parametrize("archive", archives())
def test_every_properties_file_parses_and_its_checksum_holds(archive: str, table_path) -> None:
    path = table_path(archive)
    for props in [path / ".hoodie/hoodie.properties", path / ".hoodie/metadata/.hoodie/hoodie.properties"]:
        if not props.exists():
            continue
        config = TableConfig.from_bytes(props.read_bytes(), str(props))
        raw = props.read_text()
        assert f"hoodie.table.checksum={compute_checksum(config.database_name, config.table_name)}" in raw
        assert config.table_version in (6, 8, 9)


def test_properties_escapes_round_trip() -> None:
    props = {
        "hoodie.table.create.schema": '{"type":"record","name":"a b","fields":[]}',
        "hoodie.table.name": "t",
        "odd key=:": "line1\nline2\\end",
        "unicode": "caf\u00e9 \u2603",
    }
    assert parse_properties(format_properties(props)) == props
    assert parse_properties("a\\:b = c \\\n   d\n! comment\nx:y") == {"a:b": "c d", "x": "y"}


def test_checksum_mismatch_names_the_file(tmp_path: Path, table_path) -> None:
    dest = tmp_path / "t"
    shutil.copytree(table_path("sample_table/cow/v8_nonpartitioned.zip"), dest)
    props = dest / ".hoodie/hoodie.properties"
    props.write_text(props.read_text().replace("hoodie.table.name=", "hoodie.table.name=x"))
    with pytest.raises(TableConfigError, match=r"hoodie\.properties.*checksum mismatch"):
        hudi_md.open_table(str(dest))


def test_truncated_properties_is_a_typed_error(tmp_path: Path, table_path) -> None:
    dest = tmp_path / "t"
    shutil.copytree(table_path("sample_table/cow/v8_nonpartitioned.zip"), dest)
    props = dest / ".hoodie/hoodie.properties"
    props.write_bytes(props.read_bytes()[:60])
    with pytest.raises(TableConfigError, match=r"hoodie\.properties"):
        hudi_md.open_table(str(dest))


def test_backup_properties_is_used_when_main_is_corrupt(tmp_path: Path, table_path) -> None:
    dest = tmp_path / "t"
    shutil.copytree(table_path("sample_table/cow/v8_nonpartitioned.zip"), dest)
    props = dest / ".hoodie/hoodie.properties"
    (dest / ".hoodie/hoodie.properties.backup").write_bytes(props.read_bytes())
    props.write_bytes(b"\x00\xffgarbage")
    assert hudi_md.open_table(str(dest)).table_name == "v8_nonpartitioned"


def test_an_open_table_is_current_until_its_config_or_timeline_changes(tmp_path: Path, table_path) -> None:
    # the Spark planner keeps tables open and asks at every request whether storage still holds
    # them: unchanged bytes of hoodie.properties are the config it holds (not parsed again), other
    # bytes are parsed and compared as properties
    dest = tmp_path / "t"
    shutil.copytree(table_path("sample_table/cow/v8_nonpartitioned.zip"), dest)
    props = dest / ".hoodie/hoodie.properties"
    original = props.read_bytes()
    table = hudi_md.open_table(str(dest))
    assert table.state.is_current()
    assert TableConfig.load(table.state.storage, table.state.config) is table.state.config
    props.write_bytes(b"#Updated at another time\n" + original)  # the same properties
    reread = TableConfig.load(table.state.storage, table.state.config)
    assert reread is not table.state.config and reread.props == table.state.config.props
    assert table.state.is_current()
    changed = dict(table.state.config.props, **{"hoodie.table.precombine.field": "changed_field"})
    props.write_text(format_properties(changed))
    assert not table.state.is_current()
    props.write_bytes(original)
    assert table.state.is_current()
    (dest / ".hoodie/hoodie.properties.backup").write_bytes(original)
    props.unlink()  # the backup holds the same bytes, read from another file
    backup = TableConfig.load(table.state.storage, table.state.config)
    assert backup is not table.state.config and backup.source.endswith("hoodie.properties.backup")
    assert table.state.is_current()
    props.write_bytes(original)
    next(p for p in (dest / ".hoodie/timeline").iterdir() if p.is_file()).unlink()
    assert not table.state.is_current()


def test_missing_table(tmp_path: Path) -> None:
    with pytest.raises(TableNotFoundError, match="no Hudi table"):
        hudi_md.open_table(str(tmp_path))


@pytest.mark.parametrize(
    ("name", "layout", "expected"),
    [
        ("20240418173550988.commit", 1, ("20240418173550988", "commit", State.COMPLETED)),
        ("20240418173550988.inflight", 1, ("20240418173550988", "commit", State.INFLIGHT)),
        ("20240418173550988.commit.requested", 1, ("20240418173550988", "commit", State.REQUESTED)),
        ("20240418173550988.compaction.inflight", 1, ("20240418173550988", "compaction", State.INFLIGHT)),
        ("20251220210129235_20251220210129883.commit", 2, ("20251220210129235", "commit", State.COMPLETED)),
        (
            "20251220210129235_20251220210129883.clustering",
            2,
            ("20251220210129235", "replacecommit", State.COMPLETED),
        ),
        ("20251220210129235.clustering.requested", 2, ("20251220210129235", "clustering", State.REQUESTED)),
        (
            "20251220210129235_20251220210129883.indexing",
            2,
            ("20251220210129235", "indexing", State.COMPLETED),
        ),
        ("hoodie.properties", 2, None),
        ("history", 2, None),
        ("20251220210129235.deltacommit.unknown", 2, None),
    ],
)
def test_instant_file_names(name: str, layout: int, expected: tuple | None) -> None:
    instant = parse_instant_file(name, layout)
    if expected is None:
        assert instant is None
    else:
        assert instant is not None
        assert (instant.requested_time, instant.action, instant.state) == expected


def test_layout2_completion_times_and_layout1_mtimes(table_path) -> None:
    v9 = table_path("sample_table/mor/avro/v9_txns_simple_meta.zip")
    config = TableConfig.load(Storage(str(v9)))
    tl = Timeline.load(Storage(str(v9)), config.timeline_path, config.timeline_layout_version)
    compaction = tl.get("20260307162618152")
    assert compaction is not None and compaction.action == "commit"
    assert compaction.completion_time == "20260307162619230"
    clustering = tl.get("20260307162619269")
    assert clustering is not None and clustering.action == "replacecommit" and clustering.is_completed
    assert len(tl.completed().of_actions("indexing")) == 2
    # replaced file groups come from the replacecommits' metadata
    assert tl.replaced_file_ids()
    v6 = table_path("sample_table/cow/v6_nonpartitioned.zip")
    config6 = TableConfig.load(Storage(str(v6)))
    assert config6.timeline_path == ".hoodie" and config6.timeline_layout_version == 1
    tl6 = Timeline.load(Storage(str(v6)), ".hoodie", 1)
    assert [i.action for i in tl6.completed()] == ["commit", "commit"]
    assert all(i.completion_time for i in tl6.completed())


def test_file_names() -> None:
    base = BaseFileName.parse("a079bdb3-731c-4894-b855-abfcd6921007-0_0-182-253_20240418173550988.parquet")
    assert base is not None
    assert (base.file_id, base.write_token, base.instant) == (
        "a079bdb3-731c-4894-b855-abfcd6921007-0",
        "0-182-253",
        "20240418173550988",
    )
    log = LogFileName.parse(".c923cb31-a2d3-49c6-8f47-4be96502c239-0_20260307162607806.log.1_0-104-236")
    assert log is not None
    assert (log.file_id, log.instant, log.version, log.write_token) == (
        "c923cb31-a2d3-49c6-8f47-4be96502c239-0",
        "20260307162607806",
        1,
        "0-104-236",
    )
    assert LogFileName.parse(".f_1.log.2_1-0-1.cdc").is_cdc  # type: ignore[union-attr]
    assert parse_data_file(".hoodie_partition_metadata") is None
    assert parse_data_file("notes.txt") is None
    a = LogFileName.parse(".f_1.log.2_1-0-1")
    b = LogFileName.parse(".f_1.log.10_0-0-0")
    assert a and b and a.sort_key() < b.sort_key()


def test_corrupt_commit_file_is_a_typed_error(tmp_path: Path, table_path) -> None:
    dest = tmp_path / "t"
    shutil.copytree(table_path("sample_table/cow/v6_simplekeygen_nonhivestyle_overwritetable.zip"), dest)
    (replace,) = (dest / ".hoodie").glob("*.replacecommit")
    replace.write_bytes(replace.read_bytes()[:40])
    with pytest.raises(CommitMetadataError, match=replace.name):
        hudi_md.open_table(str(dest)).file_slices()
