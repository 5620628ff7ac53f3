"""The Python side of Spark SQL ``CALL`` procedures (``hudi_md.spark.procedures``), without Spark.

Tables are written by hudi-md; each procedure is checked against what the table holds: commit
metadata, the files on disk, ``Table.file_slices()``, the rows read back (and hudi-rs's reading of
them). The schemas are Apache Hudi 1.2's, as its bundle reports them
(``integration/hudi_procedures.md``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import hudi
import pyarrow as pa
import pytest

import hudi_md
from hudi_md.errors import InvalidOptionError
from hudi_md.formats.commit_metadata import CommitMetadata
from hudi_md.formats.commit_metadata_writer import serialize_instant_metadata
from hudi_md.spark.procedures import PROCEDURES, call, procedure_schema
from table_model import region_options, region_rows

COW, MOR = "COPY_ON_WRITE", "MERGE_ON_READ"
DATA = ["id", "region", "ts", "value"]


def _options(table_type: str) -> dict[str, str]:
    return region_options(f"procs_{table_type.lower()}", table_type)


_rows = region_rows


def _write(path: str, table_type: str, data: pa.Table, operation: str) -> None:
    hudi_md.write(data, path, operation=operation, options=_options(table_type))


def _three_commits(path: str, table_type: str) -> None:
    """Insert 9 rows (3 partitions), upsert 5 of them, delete one."""
    _write(path, table_type, _rows(range(9), 1, 0), "insert")
    _write(path, table_type, _rows(range(0, 9, 2), 2, 100), "upsert")
    _write(path, table_type, _rows([1], 3, 0), "delete")


def _data(rows: pa.Table) -> list[dict[str, Any]]:
    return sorted(rows.select(DATA).to_pylist(), key=lambda r: r["id"])


def _hudi_rs(path: str) -> list[dict[str, Any]]:
    batches = hudi.HudiTableBuilder.from_base_uri(path).build().read(hudi.HudiReadOptions())
    return _data(pa.Table.from_batches(batches))


def _read(path: str) -> list[dict[str, Any]]:
    return _data(hudi_md.open_table(path).read())


def _files(path: str) -> set[str]:
    """Data files (base and log) on storage, relative to the table."""
    root = Path(path)
    return {
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and ".hoodie" not in p.parts and (".parquet" in p.name or ".log." in p.name)
    }


@pytest.fixture(params=[COW, MOR])
def table(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    path = str(tmp_path / request.param.lower())
    _three_commits(path, request.param)
    return path, request.param


# --- schemas and arguments ------------------------------------------------------------------------

# What Apache Hudi 1.2's bundle reports (Procedure.outputType), as (name, Spark SQL type).
# run_clustering and show_clustering (Apache Hudi 1.2's RunClusteringProcedure and
# ShowClusteringProcedure, read from the bundle through py4j)
CLUSTERING_ROWS = [
    ("timestamp", "string"),
    ("input_group_size", "int"),
    ("state", "string"),
    ("involved_partitions", "string"),
]
HUDI_SCHEMAS = {
    "show_commits": [
        ("commit_time", "string"),
        ("state_transition_time", "string"),
        ("action", "string"),
        ("total_bytes_written", "bigint"),
        ("total_files_added", "bigint"),
        ("total_files_updated", "bigint"),
        ("total_partitions_written", "bigint"),
        ("total_records_written", "bigint"),
        ("total_update_records_written", "bigint"),
        ("total_errors", "bigint"),
    ],
    "show_commit_files": [
        ("action", "string"),
        ("partition_path", "string"),
        ("file_id", "string"),
        ("previous_commit", "string"),
        ("total_records_updated", "bigint"),
        ("total_records_written", "bigint"),
        ("total_bytes_written", "bigint"),
        ("total_errors", "bigint"),
        ("file_size", "bigint"),
    ],
    "show_fsview_latest": [
        ("partition", "string"),
        ("file_id", "string"),
        ("base_instant", "string"),
        ("data_file", "string"),
        ("data_file_size", "bigint"),
        ("num_delta_files", "bigint"),
        ("total_delta_file_size", "bigint"),
        ("delta_size_compaction_scheduled", "bigint"),
        ("delta_size_compaction_unscheduled", "bigint"),
        ("delta_to_base_radio_compaction_scheduled", "double"),
        ("delta_to_base_radio_compaction_unscheduled", "double"),
        ("delta_files_compaction_scheduled", "string"),
        ("delta_files_compaction_unscheduled", "string"),
    ],
    "run_compaction": [("timestamp", "string"), ("operation_size", "int"), ("state", "string")],
    "run_clustering": CLUSTERING_ROWS,
    "show_clustering": CLUSTERING_ROWS,
    "run_clean": [
        ("start_clean_time", "string"),
        ("time_taken_in_millis", "bigint"),
        ("total_files_deleted", "int"),
        ("earliest_commit_to_retain", "string"),
        ("bootstrap_part_metadata", "string"),
        ("version", "int"),
    ],
    "rollback_to_instant": [("rollback_result", "boolean")],
    "show_metadata_table_stats": [("stat_key", "string"), ("stat_value", "string")],
}
# Hudi 1.2's parameters, in order (name, required).
HUDI_PARAMETERS = {
    "run_clustering": [
        ("table", False),
        ("path", False),
        ("predicate", False),
        ("order", False),
        ("show_involved_partition", False),
        ("op", False),
        ("order_strategy", False),
        ("options", False),
        ("instants", False),
        ("selected_partitions", False),
        ("partition_regex_pattern", False),
        ("limit", False),
    ],
    "show_clustering": [
        ("table", False),
        ("path", False),
        ("limit", False),
        ("show_involved_partition", False),
    ],
    "show_commits": [("table", True), ("limit", False)],
    "show_commit_files": [("table", True), ("limit", False), ("instant_time", True)],
    "show_fsview_latest": [
        ("table", False),
        ("path", False),
        ("max_instant", False),
        ("include_max", False),
        ("include_in_flight", False),
        ("exclude_compaction", False),
        ("limit", False),
        ("path_regex", False),
        ("filter", False),
        ("partition_path", False),
        ("merge", False),
    ],
    "run_compaction": [
        ("op", True),
        ("table", False),
        ("path", False),
        ("timestamp", False),
        ("options", False),
        ("instants", False),
        ("limit", False),
    ],
    "run_clean": [
        ("table", True),
        ("schedule_in_line", False),
        ("clean_policy", False),
        ("retain_commits", False),
        ("hours_retained", False),
        ("file_versions_retained", False),
        ("trigger_strategy", False),
        ("trigger_max_commits", False),
        ("options", False),
    ],
    "rollback_to_instant": [("table", True), ("instant_time", True)],
    "show_metadata_table_stats": [("table", False), ("path", False), ("filter", False)],
}
SPARK_TYPES = {
    pa.string(): "string",
    pa.int64(): "bigint",
    pa.int32(): "int",
    pa.float64(): "double",
    pa.bool_(): "boolean",
}


@pytest.mark.parametrize("name", sorted(HUDI_SCHEMAS))
def test_names_parameters_and_schemas_are_hudis(name: str) -> None:
    schema = procedure_schema(name)
    assert [(f.name, SPARK_TYPES[f.type]) for f in schema] == HUDI_SCHEMAS[name]
    assert all(f.nullable for f in schema)
    assert [(p.name, p.required) for p in PROCEDURES[name].parameters] == HUDI_PARAMETERS[name]
    assert procedure_schema(name.upper()) == schema


def test_the_registry() -> None:
    assert sorted(PROCEDURES) == sorted([*HUDI_SCHEMAS, "validate_metadata"])
    assert all(name == p.name == name.lower() for name, p in PROCEDURES.items())
    limit = next(p for p in PROCEDURES["show_commits"].parameters if p.name == "limit")
    assert (limit.default, limit.type) == ("10", "int")


def test_unknown_procedure_lists_the_supported_ones() -> None:
    with pytest.raises(InvalidOptionError) as e:
        procedure_schema("show_commitz")
    assert "show_commitz" in str(e.value)
    for name in PROCEDURES:
        assert name in str(e.value)
    with pytest.raises(InvalidOptionError, match="show_commitz"):
        call("show_commitz", "/nowhere", {}, {})


def test_unknown_argument_names_procedure_argument_and_parameters(table: tuple[str, str]) -> None:
    path, _ = table
    with pytest.raises(InvalidOptionError) as e:
        call("show_commits", path, {"limt": "2"}, {})
    message = str(e.value)
    assert "show_commits" in message and "'limt'" in message
    assert "table (required)" in message and "limit (default 10)" in message


def test_missing_required_argument(table: tuple[str, str]) -> None:
    path, _ = table
    with pytest.raises(InvalidOptionError) as e:
        call("show_commit_files", path, {"limit": "3"}, {})
    message = str(e.value)
    assert "show_commit_files" in message and "'instant_time'" in message
    assert "instant_time (required)" in message and "limit (default 10)" in message
    with pytest.raises(InvalidOptionError, match=r"run_compaction: missing required argument 'op'"):
        call("run_compaction", path, {}, {})


def test_values_that_do_not_convert(table: tuple[str, str]) -> None:
    path, _ = table
    with pytest.raises(InvalidOptionError, match=r"show_commits: argument limit must be .*'abc'"):
        call("show_commits", path, {"limit": "abc"}, {})
    with pytest.raises(InvalidOptionError, match=r"show_commits: argument limit"):
        call("show_commits", path, {"limit": "-1"}, {})
    with pytest.raises(InvalidOptionError, match=r"show_fsview_latest: argument merge must be true or false"):
        call("show_fsview_latest", path, {"merge": "yes"}, {})
    with pytest.raises(InvalidOptionError, match=r"run_clean: argument retain_commits must be an integer"):
        call("run_clean", path, {"retain_commits": "x"}, {})
    with pytest.raises(InvalidOptionError, match=r"run_compaction: argument op must be one of"):
        call("run_compaction", path, {"op": "bogus"}, {})


def test_table_arguments_are_the_callers(table: tuple[str, str]) -> None:
    """``table`` / ``path`` name the table: the caller resolved them to ``path``."""
    path, _ = table
    plain = call("show_commits", path, {}, {})
    assert call("show_commits", path, {"table": "db.t", "path": "elsewhere"}, {}) == plain
    assert call("SHOW_COMMITS", path, {}, {}) == plain


# --- show_commits, show_commit_files --------------------------------------------------------------


def test_show_commits_newest_first_with_commit_metadata_counts(table: tuple[str, str]) -> None:
    path, table_type = table
    t = hudi_md.open_table(path)
    writes = list(t.timeline.write_timeline())
    rows = call("show_commits", path, {}, {})
    assert rows.schema == procedure_schema("show_commits")
    got = rows.to_pylist()
    assert [r["commit_time"] for r in got] == [i.requested_time for i in reversed(writes)]
    assert [r["state_transition_time"] for r in got] == [i.completion_time for i in reversed(writes)]
    action = "commit" if table_type == COW else "deltacommit"
    assert [r["action"] for r in got] == [action] * 3
    for row, instant in zip(got, reversed(writes), strict=True):
        stats = CommitMetadata(t.timeline.metadata(instant)).write_stats()
        assert row["total_records_written"] == sum(s.num_writes for s in stats)
        assert row["total_update_records_written"] == sum(s.num_update_writes for s in stats)
        assert row["total_bytes_written"] == sum(s.total_write_bytes for s in stats)
        assert row["total_files_added"] == sum(1 for s in stats if s.prev_commit is None)
        assert row["total_files_updated"] == sum(1 for s in stats if s.prev_commit is not None)
        assert row["total_partitions_written"] == len({s.partition_path for s in stats})
        assert row["total_errors"] == 0
    delete, upsert, insert = got
    # the insert: 9 records into 3 new file groups, one per region
    assert (insert["total_records_written"], insert["total_files_added"], insert["total_files_updated"]) == (
        9,
        3,
        0,
    )
    assert insert["total_partitions_written"] == 3 and insert["total_update_records_written"] == 0
    # the upsert of ids 0, 2, 4, 6, 8: every region's file group updated
    assert (upsert["total_files_added"], upsert["total_files_updated"]) == (0, 3)
    assert upsert["total_update_records_written"] == 5
    # the delete of id-001 (region us)
    assert (delete["total_partitions_written"], delete["total_files_updated"]) == (1, 1)
    assert [r["commit_time"] for r in call("show_commits", path, {"limit": "2"}, {}).to_pylist()] == [
        r["commit_time"] for r in got[:2]
    ]
    assert call("show_commits", path, {"limit": "0"}, {}).num_rows == 0


def test_show_commit_files_matches_the_write_stats(table: tuple[str, str]) -> None:
    path, _ = table
    t = hudi_md.open_table(path)
    for instant in t.timeline.write_timeline():
        stats = CommitMetadata(t.timeline.metadata(instant)).write_stats()
        rows = call("show_commit_files", path, {"instant_time": instant.requested_time, "limit": "100"}, {})
        assert rows.schema == procedure_schema("show_commit_files")
        assert rows.to_pylist() == [
            {
                "action": instant.action,
                "partition_path": s.partition_path,
                "file_id": s.file_id,
                "previous_commit": s.prev_commit or "null",
                "total_records_updated": s.num_update_writes,
                "total_records_written": s.num_writes,
                "total_bytes_written": s.total_write_bytes,
                "total_errors": 0,
                "file_size": s.file_size_in_bytes,
            }
            for s in stats
        ]
        # the sizes are the files' (base files, and MOR log files, which grow by appends no more)
        for s in stats:
            assert os.path.getsize(Path(path) / s.path) == s.file_size_in_bytes
    first = t.timeline.write_timeline().first()
    assert first is not None
    one = call("show_commit_files", path, {"instant_time": first.requested_time, "limit": "1"}, {})
    assert one.num_rows == 1
    with pytest.raises(InvalidOptionError, match=r"show_commit_files: argument instant_time: '2020'"):
        call("show_commit_files", path, {"instant_time": "2020"}, {})


# --- show_fsview_latest ---------------------------------------------------------------------------


def _slice_facts(rows: pa.Table) -> list[tuple[Any, ...]]:
    return sorted(
        (
            r["partition_path"],
            r["file_id"],
            r["base_instant"],
            r["base_file_uri"] or "",
            r["base_file_size"] or 0,
            len(r["log_files"]),
            sum(r["log_file_sizes"]),
            tuple(sorted(r["log_file_uris"])),
        )
        for r in rows.to_pylist()
    )


def _fsview_facts(rows: pa.Table) -> list[tuple[Any, ...]]:
    out = []
    for r in rows.to_pylist():
        logs = (r["delta_files_compaction_scheduled"] + r["delta_files_compaction_unscheduled"]).replace(
            "][", ","
        )
        uris = [part.split(",")[0] for part in logs.strip("[]").split("HoodieLogFile(pathStr=")[1:]]
        out.append(
            (
                r["partition"],
                r["file_id"],
                r["base_instant"],
                r["data_file"],
                r["data_file_size"],
                r["num_delta_files"],
                r["total_delta_file_size"],
                tuple(sorted(uris)),
            )
        )
    return sorted(out)


def test_show_fsview_latest_matches_file_slices(table: tuple[str, str]) -> None:
    path, table_type = table
    rows = call("show_fsview_latest", path, {}, {})
    assert rows.schema == procedure_schema("show_fsview_latest")
    slices = hudi_md.open_table(path).file_slices()
    assert _fsview_facts(rows) == _slice_facts(slices)
    assert rows.num_rows == 3
    # every log file's deltacommit completed: Hudi counts its size as "scheduled"
    for r in rows.to_pylist():
        assert r["delta_size_compaction_scheduled"] == r["total_delta_file_size"]
        assert r["delta_size_compaction_unscheduled"] == 0
        ratio = r["total_delta_file_size"] / r["data_file_size"]
        assert r["delta_to_base_radio_compaction_scheduled"] == pytest.approx(ratio)
    if table_type == MOR:
        assert sum(r["num_delta_files"] for r in rows.to_pylist()) == 4  # 3 upserts + 1 delete
        log_lists = [r["delta_files_compaction_unscheduled"] for r in rows.to_pylist()]
        # newest log file first, as Hudi lists them
        us = next(s for s in log_lists if "region=us" in s)
        names = [p.split(", fileSize")[0].rsplit("/", 1)[1] for p in us.split("pathStr=")[1:]]
        assert names == sorted(names, reverse=True) and len(names) == 2


def test_show_fsview_latest_arguments(table: tuple[str, str]) -> None:
    path, _ = table
    writes = list(hudi_md.open_table(path).timeline.write_timeline())
    one = call("show_fsview_latest", path, {"partition_path": "region=us"}, {})
    assert one.column("partition").to_pylist() == ["region=us"]
    globbed = call("show_fsview_latest", path, {"path_regex": "region=[ae]*"}, {})
    assert globbed.column("partition").to_pylist() == ["region=apac", "region=eu"]
    assert call("show_fsview_latest", path, {"path_regex": "region={us,eu}"}, {}).num_rows == 2
    assert call("show_fsview_latest", path, {"partition_path": "region=mars"}, {}).num_rows == 0
    assert call("show_fsview_latest", path, {"limit": "2"}, {}).num_rows == 2
    # as of the first commit: its base files, no log file
    first = call("show_fsview_latest", path, {"max_instant": writes[1].requested_time}, {}).to_pylist()
    assert {r["base_instant"] for r in first} == {writes[0].requested_time}
    assert all(r["num_delta_files"] == 0 for r in first) and len(first) == 3
    inclusive = {"max_instant": writes[0].requested_time, "include_max": "true"}
    assert call("show_fsview_latest", path, inclusive, {}).to_pylist() == first
    before_all = {"max_instant": writes[0].requested_time}
    assert call("show_fsview_latest", path, before_all, {}).num_rows == 0
    with pytest.raises(InvalidOptionError, match="cannot be used together"):
        call("show_fsview_latest", path, {"path_regex": "*", "partition_path": "region=us"}, {})
    with pytest.raises(InvalidOptionError, match=r"show_fsview_latest: argument include_in_flight"):
        call("show_fsview_latest", path, {"include_in_flight": "true"}, {})
    with pytest.raises(InvalidOptionError, match=r"show_fsview_latest: argument filter"):
        call("show_fsview_latest", path, {"filter": "num_delta_files > 0"}, {})


# --- run_compaction -------------------------------------------------------------------------------


def test_run_compaction_on_mor(tmp_path: Path) -> None:
    path = str(tmp_path / "mor")
    _three_commits(path, MOR)
    before = _read(path)
    with_logs = [s for s in hudi_md.open_table(path).file_slices().to_pylist() if s["log_files"]]
    assert len(with_logs) == 3
    # Hudi's trigger: 5 deltacommits since the last compaction (there are 3)
    assert call("run_compaction", path, {"op": "run"}, {}).num_rows == 0
    due = {"op": "run", "options": "hoodie.compact.inline.max.delta.commits=3"}
    rows = call("run_compaction", path, due, {})
    assert rows.schema == procedure_schema("run_compaction")
    [row] = rows.to_pylist()
    assert row["state"] == "COMPLETED" and row["operation_size"] == 3
    t = hudi_md.open_table(path)
    done = t.timeline.write_timeline().last()
    assert done is not None and (done.requested_time, done.action) == (row["timestamp"], "commit")
    slices = t.file_slices().to_pylist()
    assert all(s["log_files"] == [] and s["base_instant"] == row["timestamp"] for s in slices)
    assert _read(path) == before == _hudi_rs(path)
    assert len(before) == 8
    # nothing left to compact
    assert call(
        "run_compaction", path, {**due, "options": "hoodie.compact.inline.max.delta.commits=0"}, {}
    ) == (procedure_schema("run_compaction").empty_table())


def test_run_compaction_schedule_then_execute(tmp_path: Path) -> None:
    path = str(tmp_path / "mor")
    _three_commits(path, MOR)
    before = _read(path)
    due = "hoodie.compact.inline.max.delta.commits=1"
    [scheduled] = call("run_compaction", path, {"op": "schedule", "options": due}, {}).to_pylist()
    assert scheduled["state"] == "REQUESTED" and scheduled["operation_size"] == 3
    pending = hudi_md.open_table(path).timeline.pending()
    assert [(i.requested_time, i.action) for i in pending] == [(scheduled["timestamp"], "compaction")]
    assert _read(path) == before
    with pytest.raises(
        InvalidOptionError, match=r"run_compaction: argument instants: no pending compaction 1"
    ):
        call("run_compaction", path, {"op": "execute", "instants": "1"}, {})
    with pytest.raises(InvalidOptionError, match=r"run_compaction: argument instants"):
        call("run_compaction", path, {"op": "schedule", "instants": scheduled["timestamp"]}, {})
    [ran] = call(
        "run_compaction", path, {"timestamp": scheduled["timestamp"], "op": "execute"}, {}
    ).to_pylist()
    assert ran == {**scheduled, "state": "COMPLETED"}
    assert all(s["log_files"] == [] for s in hudi_md.open_table(path).file_slices().to_pylist())
    assert _read(path) == before == _hudi_rs(path)
    assert call("run_compaction", path, {"op": "execute"}, {}).num_rows == 0


def test_run_compaction_takes_the_schema_an_earlier_write_recorded(tmp_path: Path) -> None:
    """The latest write records no writer schema (a writer may leave it out): compaction takes
    the latest one recorded, as Apache Hudi's TableSchemaResolver does (it failed with a
    TypeError) and records it in its own commit."""
    path = str(tmp_path / "mor")
    _three_commits(path, MOR)
    before = _read(path)
    timeline = hudi_md.open_table(path).timeline
    writes = timeline.write_timeline().instants
    schema = timeline.metadata(writes[-2])["extraMetadata"]["schema"]
    record = timeline.metadata(writes[-1])
    del record["extraMetadata"]["schema"]
    instant_file = Path(path, ".hoodie", "timeline", writes[-1].file_name)
    instant_file.write_bytes(serialize_instant_metadata("deltacommit", record))
    due = {"op": "run", "options": "hoodie.compact.inline.max.delta.commits=1"}
    [row] = call("run_compaction", path, due, {}).to_pylist()
    assert row["state"] == "COMPLETED" and row["operation_size"] == 3
    t = hudi_md.open_table(path)
    done = t.timeline.write_timeline().last()
    assert done is not None and done.action == "commit"
    assert t.timeline.metadata(done)["extraMetadata"]["schema"] == schema
    assert _read(path) == before == _hudi_rs(path)


def test_run_compaction_refuses_a_cow_table(tmp_path: Path) -> None:
    path = str(tmp_path / "cow")
    _write(path, COW, _rows(range(3), 1, 0), "insert")
    with pytest.raises(InvalidOptionError, match=r"run_compaction: argument table: .*COPY_ON_WRITE"):
        call("run_compaction", path, {"op": "run"}, {})


# --- run_clean ------------------------------------------------------------------------------------


def test_run_clean_removes_older_file_versions(tmp_path: Path) -> None:
    path = str(tmp_path / "cow")
    _write(path, COW, _rows(range(9), 1, 0), "insert")
    first = _files(path)
    _write(path, COW, _rows(range(9), 2, 100), "upsert")
    second = _files(path) - first
    _write(path, COW, _rows(range(9), 3, 200), "upsert")
    third = _files(path) - first - second
    assert (len(first), len(second), len(third)) == (3, 3, 3)
    before = _read(path)
    writes = list(hudi_md.open_table(path).timeline.write_timeline())
    rows = call("run_clean", path, {"retain_commits": "1"}, {})
    assert rows.schema == procedure_schema("run_clean")
    [row] = rows.to_pylist()
    # Hudi's KEEP_LATEST_COMMITS keeps the version the earliest retained commit's queries read
    assert row["total_files_deleted"] == 3
    assert row["earliest_commit_to_retain"] == writes[-1].requested_time
    assert row["bootstrap_part_metadata"] == "{}" and row["version"] == 2
    assert _files(path) == second | third
    cleans = hudi_md.open_table(path).timeline.completed().of_actions("clean")
    assert [i.requested_time for i in cleans] == [row["start_clean_time"]]
    assert _read(path) == before == _hudi_rs(path)
    assert call("validate_metadata", path, {}, {}).column("ok").to_pylist() == [True]
    # nothing committed since: Hudi's trigger (hoodie.clean.max.commits=1) plans no clean
    assert call("run_clean", path, {"retain_commits": "1"}, {}).num_rows == 0


def test_run_clean_keep_latest_file_versions_on_mor(tmp_path: Path) -> None:
    path = str(tmp_path / "mor")
    _three_commits(path, MOR)
    due = {"op": "run", "options": "hoodie.compact.inline.max.delta.commits=1"}
    call("run_compaction", path, due, {})
    before = _read(path)
    compacted = {
        s["base_file"]
        for s in hudi_md.open_table(path).file_slices().to_pylist()
        if s["base_file"] is not None
    }
    args = {"clean_policy": "KEEP_LATEST_FILE_VERSIONS", "file_versions_retained": "1"}
    [row] = call("run_clean", path, args, {}).to_pylist()
    assert row["total_files_deleted"] == 3 + 4  # the first base files, the 4 log files
    assert row["earliest_commit_to_retain"] == ""
    assert _files(path) == compacted
    assert _read(path) == before == _hudi_rs(path)


def test_run_clean_argument_errors(table: tuple[str, str]) -> None:
    path, _ = table
    with pytest.raises(InvalidOptionError, match=r"run_clean: argument clean_policy: 'BOGUS'"):
        call("run_clean", path, {"clean_policy": "bogus"}, {})
    with pytest.raises(InvalidOptionError, match=r"run_clean: argument clean_policy: 'KEEP_LATEST_BY_HOURS'"):
        call("run_clean", path, {"clean_policy": "KEEP_LATEST_BY_HOURS", "hours_retained": "1"}, {})
    with pytest.raises(InvalidOptionError, match=r"run_clean: argument options"):
        call("run_clean", path, {"options": "hoodie.cleaner.commits.retained"}, {})
    # nothing to clean: no row
    assert call("run_clean", path, {}, {}).num_rows == 0
    assert call("run_clean", path, {"schedule_in_line": "false"}, {}).num_rows == 0


# --- rollback_to_instant --------------------------------------------------------------------------


def test_rollback_to_instant_removes_the_last_commit(table: tuple[str, str]) -> None:
    path, _ = table
    t = hudi_md.open_table(path)
    writes = list(t.timeline.write_timeline())
    before_last = _data(t.read(as_of=writes[-2].requested_time))
    assert len(before_last) == 9 and len(_read(path)) == 8
    with pytest.raises(
        InvalidOptionError, match=r"rollback_to_instant: argument instant_time: .*not the latest"
    ):
        call("rollback_to_instant", path, {"instant_time": writes[0].requested_time}, {})
    with pytest.raises(InvalidOptionError, match=r"rollback_to_instant: argument instant_time: no completed"):
        call("rollback_to_instant", path, {"instant_time": "20200101000000000"}, {})
    rows = call("rollback_to_instant", path, {"instant_time": writes[-1].requested_time}, {})
    assert rows.schema == procedure_schema("rollback_to_instant")
    assert rows.to_pylist() == [{"rollback_result": True}]
    after = hudi_md.open_table(path).timeline
    assert [i.requested_time for i in after.write_timeline()] == [i.requested_time for i in writes[:-1]]
    assert [i.action for i in after.completed().of_actions("rollback")] == ["rollback"]
    assert _read(path) == before_last == _hudi_rs(path)
    assert [r["commit_time"] for r in call("show_commits", path, {}, {}).to_pylist()] == [
        i.requested_time for i in reversed(writes[:-1])
    ]


# --- validate_metadata, show_metadata_table_stats -------------------------------------------------


def test_validate_metadata_reports_nothing_then_a_deleted_file(table: tuple[str, str]) -> None:
    path, _ = table
    rows = call("validate_metadata", path, {}, {})
    assert rows.schema == procedure_schema("validate_metadata")
    assert rows.to_pylist() == [
        {
            "ok": True,
            "kind": None,
            "partition_path": None,
            "file_name": None,
            "mdt_size": None,
            "storage_size": None,
            "detail": None,
            "message": "OK: MDT matches storage",
        }
    ]
    victim = next(s for s in hudi_md.open_table(path).file_slices().to_pylist() if s["base_file"])
    size = victim["base_file_size"]
    os.remove(victim["base_file_uri"])
    [row] = call("validate_metadata", path, {"indexes": "false"}, {}).to_pylist()
    partition, name = victim["base_file"].split("/")
    assert row["ok"] is False
    assert (row["kind"], row["partition_path"], row["file_name"]) == ("file_only_in_mdt", partition, name)
    assert (row["mdt_size"], row["storage_size"]) == (size, None)
    assert row["message"] == f"{partition}/{name}: only in MDT"
    assert call("validate_metadata", path, {}, {}).column("ok").to_pylist() == [False]


def test_validate_metadata_without_a_metadata_table(tmp_path: Path) -> None:
    path = str(tmp_path / "nomdt")
    data = _rows(range(3), 1, 0)
    hudi_md.write(
        data, path, operation="insert", options={**_options(COW), "hoodie.metadata.enable": "false"}
    )
    [row] = call("validate_metadata", path, {}, {}).to_pylist()
    assert (row["ok"], row["kind"]) == (False, "metadata_table_missing")


def test_show_metadata_table_stats(table: tuple[str, str]) -> None:
    path, _ = table
    rows = call("show_metadata_table_stats", path, {}, {})
    assert rows.schema == procedure_schema("show_metadata_table_stats")
    stats = dict(zip(rows.column("stat_key").to_pylist(), rows.column("stat_value").to_pylist(), strict=True))
    assert rows.column("stat_key").to_pylist() == sorted(stats)
    mdt = hudi_md.open_table(path).metadata_table
    assert mdt is not None
    assert stats.pop("partitionCount") == "3"
    names = sorted(mdt.available_partitions)
    assert "files" in names
    for name in names:
        slices = mdt.file_slices(name)
        bases = [s.base_file for s in slices if s.base_file is not None]
        logs = [lf for s in slices for lf in s.log_files]
        root = Path(path) / ".hoodie" / "metadata" / name
        # the sizes are the files' on storage
        assert int(stats.pop(f"{name}.totalBaseFileSizeInBytes")) == sum(
            os.path.getsize(root / b.name) for b in bases
        )
        assert int(stats.pop(f"{name}.totalLogFileSizeInBytes")) == sum(
            os.path.getsize(root / lf.name) for lf in logs
        )
        assert int(stats.pop(f"{name}.baseFileCount")) == len(bases)
        assert int(stats.pop(f"{name}.logFileCount")) == len(logs) > 0
    assert stats == {}
    with pytest.raises(InvalidOptionError, match=r"show_metadata_table_stats: argument filter"):
        call("show_metadata_table_stats", path, {"filter": "stat_key like 'files%'"}, {})


@pytest.mark.parametrize("table_type", [COW, MOR])
def test_run_clustering_schedule_execute_and_show(tmp_path: Path, table_type: str) -> None:
    path = str(tmp_path / "t")
    _three_commits(path, table_type)
    before = _read(path)
    partitions = sorted({s["partition_path"] for s in hudi_md.open_table(path).file_slices().to_pylist()})
    # as Apache Hudi 1.2: a schedule returns no row; show_clustering lists the pending plan
    assert call("run_clustering", path, {"op": "schedule", "order": "id"}, {}).num_rows == 0
    [scheduled] = call("show_clustering", path, {"show_involved_partition": "true"}, {}).to_pylist()
    assert scheduled["state"] == "REQUESTED"
    assert scheduled["input_group_size"] == len(partitions)
    assert scheduled["involved_partitions"] == ",".join(partitions)
    with pytest.raises(
        InvalidOptionError, match=r"run_clustering: argument instants: no pending clustering 1"
    ):
        call("run_clustering", path, {"op": "execute", "instants": "1"}, {})
    with pytest.raises(InvalidOptionError, match=r"run_clustering: argument order"):
        call("run_clustering", path, {"op": "schedule", "order": "nope"}, {})
    [ran] = call("run_clustering", path, {"op": "execute"}, {}).to_pylist()
    assert ran == {**scheduled, "state": "COMPLETED", "involved_partitions": "*"}
    t = hudi_md.open_table(path)
    done = t.timeline.write_timeline().last()
    assert done is not None and (done.requested_time, done.action) == (ran["timestamp"], "replacecommit")
    assert all(
        s["base_instant"] == ran["timestamp"] and not s["log_files"] for s in t.file_slices().to_pylist()
    )
    assert _read(path) == before == _hudi_rs(path)
    assert call("show_clustering", path, {}, {}).num_rows == 0
    # the default op schedules and runs; each partition's single group again (single-group clustering)
    [again] = call("run_clustering", path, {"order_strategy": "z-order", "order": "id,ts"}, {}).to_pylist()
    assert again["state"] == "COMPLETED" and again["timestamp"] > ran["timestamp"]
    assert _read(path) == before == _hudi_rs(path)
    with pytest.raises(InvalidOptionError, match=r"run_clustering: argument order_strategy"):
        call("run_clustering", path, {"order_strategy": "spiral"}, {})
