"""`--json` on every `hudi-md` command (issue 39): the JSON parses, and carries the facts the text
output states (or, for a command that changes the table, the facts the table shows after it).
Long commands report progress on stderr, never on stdout; `--quiet` and `--json` silence it.

In process (click's runner: stdout and stderr apart), on a table written here; a command that
changes the table runs on copies of it: one for the text form, one for `--json`, one for
`--quiet`."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
import pyarrow as pa
import pytest
from click.testing import CliRunner, Result

import hudi_md
from hudi_md.cli import main

OPTIONS = {
    "hoodie.table.name": "trips",
    "hoodie.datasource.write.recordkey.field": "uuid",
    "hoodie.datasource.write.partitionpath.field": "city",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.table.type": "MERGE_ON_READ",
    "hoodie.compact.inline": "false",
}
ROWS = pa.table(
    {
        "uuid": ["a", "b", "c", "d", "e"],
        "city": ["sf", "sf", "nyc", "la", "nyc"],
        "fare": [10.5, 25.0, 30.0, 5.25, 22.0],
        "ts": [1, 1, 1, 1, 1],
    }
)
INSTANT = re.compile(r"^\d{17}$")


def invoke(*args: str, ok: bool = True) -> Result:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    if ok:
        assert result.exit_code == 0, f"hudi-md {' '.join(args)}: {result.exit_code}\n{result.output}"
    return result


def as_json(*args: str) -> Any:
    result = invoke(*args, "--json")
    assert result.stderr == "", result.stderr  # no progress with --json
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A MOR table with three writes: an insert, then two upserts of sf (log files to compact)."""
    path = tmp_path_factory.mktemp("json") / "trips"
    hudi_md.write(ROWS, str(path), operation="insert", options=OPTIONS)
    sf = ROWS.filter(pa.compute.equal(ROWS["city"], "sf"))
    for ts in (2, 3):
        hudi_md.write(
            sf.set_column(3, "ts", pa.array([ts, ts])), str(path), operation="upsert", options=OPTIONS
        )
    return path


# --- commands that read -------------------------------------------------------------------------------


def _check_table_show(text: str, data: dict[str, Any], path: Path) -> None:
    lines = text.splitlines()
    for key, value in data.items():
        if key != "properties":
            assert f"{key}: {value}" in lines
    assert data["table_type"] == "MERGE_ON_READ" and data["partition_fields"] == ["city"]
    assert data["instants"] == 3 and INSTANT.match(data["latest_commit"])
    assert isinstance(data["table_version"], int)
    props = lines[lines.index("properties:") + 1 :]
    assert props == [f"  {k}={v}" for k, v in sorted(data["properties"].items())]
    assert data["properties"]["hoodie.table.name"] == "trips"


def _check_timeline(text: str, data: list[dict[str, Any]], path: Path) -> None:
    rows = [line.split() for line in text.splitlines()]
    assert rows == [
        [
            r["requested_time"],
            r["action"],
            r["state"],
            *([r["completion_time"]] if r["completion_time"] else []),
        ]
        for r in data
    ]
    assert [r["action"] for r in data] == ["deltacommit"] * 3
    assert all(r["state"] == "COMPLETED" and INSTANT.match(r["completion_time"]) for r in data)


def _check_read(text: str, data: dict[str, Any], path: Path) -> None:
    *rows, count = text.splitlines()
    assert [json.loads(r) for r in rows] == data["rows"]
    assert count == f"({data['total_rows']} rows)" and data["total_rows"] == 5
    fares = {r["uuid"]: r["fare"] for r in data["rows"]}
    assert fares == dict(zip(ROWS["uuid"].to_pylist(), ROWS["fare"].to_pylist(), strict=True))
    assert {r["uuid"]: r["ts"] for r in data["rows"]} == {"a": 3, "b": 3, "c": 1, "d": 1, "e": 1}


def _check_commits_show(text: str, data: list[dict[str, Any]], path: Path) -> None:
    header, *rows = text.splitlines()
    assert header.split()[:2] == ["instant", "action"]
    assert [r.split()[0] for r in rows] == [d["instant_time"] for d in data]
    for line, d in zip(rows, data, strict=True):
        cells = line.split()
        assert cells[3:] == [
            str(d[k])
            for k in (
                "partitions_written",
                "files_added",
                "files_updated",
                "records_written",
                "records_inserted",
                "records_updated",
                "records_deleted",
                "bytes_written",
                "errors",
            )
        ]
    assert [d["operation"] for d in data] == ["UPSERT", "UPSERT", "INSERT"]
    assert data[-1]["records_inserted"] == 5 and data[0]["records_updated"] == 2
    assert all(isinstance(d["bytes_written"], int) and d["bytes_written"] > 0 for d in data)


def _check_list_partitions(text: str, data: list[dict[str, Any]], path: Path) -> None:
    assert text.splitlines() == [d["partition_path"] for d in data] == ["la", "nyc", "sf"]


def _check_list_files(text: str, data: list[dict[str, Any]], path: Path) -> None:
    assert [line.split("\t") for line in text.splitlines()] == [
        [d["partition_path"], d["file_name"], str(d["size"])] for d in data
    ]
    for d in data:
        assert (path / d["partition_path"] / d["file_name"]).stat().st_size == d["size"]


def _check_stats(text: str, data: dict[str, Any], path: Path) -> None:
    lines = text.splitlines()
    for key in ("path", "table_version", "available_partitions", "partition_count", "mdt_instants"):
        assert f"{key}: {data[key]}" in lines
    for name, p in data["partitions"].items():
        assert (
            f"  {name}: {p['file_groups']} file groups, {p['base_files']} base files, {p['log_files']} "
            f"log files (max {p['max_log_files_per_file_group']} per group), {p['total_size']} bytes"
        ) in lines
    assert data["partition_count"] == 3 and "files" in data["partitions"]


def _check_validate(text: str, data: dict[str, Any], path: Path) -> None:
    assert text == "OK: MDT matches storage\n"
    assert data == {"ok": True, "differences": []}


def _check_index_show(text: str, data: dict[str, Any], path: Path) -> None:
    assert text.splitlines()[:2] == [
        f"available: {', '.join(data['available'])}",
        "inflight:  (none)",
    ]
    assert "files" in data["available"] and data["pending_indexing"] == [] and data["inflight"] == []


READERS: dict[str, tuple[list[str], Callable[[str, Any, Path], None]]] = {
    "table show": (["table", "show"], _check_table_show),
    "timeline": (["timeline"], _check_timeline),
    "read": (["read", "--limit", "-1"], _check_read),
    "commits show": (["commits", "show"], _check_commits_show),
    "metadata list-partitions": (["metadata", "list-partitions"], _check_list_partitions),
    "metadata list-files": (["metadata", "list-files"], _check_list_files),
    "metadata stats": (["metadata", "stats"], _check_stats),
    "metadata validate": (["metadata", "validate"], _check_validate),
    "index show": (["index", "show"], _check_index_show),
}


@pytest.mark.parametrize("command", sorted(READERS))
def test_json_of_a_reading_command_carries_the_text_facts(table: Path, command: str) -> None:
    args, check = READERS[command]
    text = invoke(*args, str(table)).stdout
    data = as_json(*args, str(table))
    check(text, data, table)
    # the group's --json is the command's (but the timings and request counts of metadata stats)
    again = json.loads(invoke("--json", *args, str(table)).stdout)
    if command == "metadata stats":
        for varying in ("metrics", "reader_metrics", "storage"):
            assert isinstance(again.pop(varying), dict) and isinstance(data.pop(varying), dict)
    assert again == data


# --- commands that change the table --------------------------------------------------------------------


def _timeline(path: Path) -> list[tuple[str, str, str]]:
    return [(i.requested_time, i.action, i.state.name) for i in hudi_md.open_table(str(path)).timeline]


def _completed(path: Path, instant: str, action: str) -> bool:
    return (instant, action, "COMPLETED") in _timeline(path)


def _mdt_partitions(path: Path) -> list[str]:
    return hudi_md.open_table(str(path)).state.config.metadata_partitions


def _logs(path: Path) -> int:
    slices = hudi_md.open_table(str(path)).file_slices().to_pylist()
    return sum(1 for s in slices if s["log_files"])


@dataclass
class Change:
    args: list[str]
    check: Callable[[Path, dict[str, Any]], None]  # the table after the --json run, the JSON
    text: Callable[[Path, dict[str, Any]], str]  # the text run's stdout, from its table and JSON facts
    before: list[list[str]] = field(default_factory=list)  # commands run first (quietly)
    progress: bool = True  # reports progress on stderr


def _check_compaction(path: Path, d: dict[str, Any]) -> None:
    assert _completed(path, d["instant"], "commit")
    assert d["file_groups_compacted"] == 1 and _logs(path) == 0


def _check_clustering_schedule(path: Path, d: dict[str, Any]) -> None:
    assert (d["instant"], "clustering", "REQUESTED") in _timeline(path)
    assert d["file_groups"] == len(hudi_md.open_table(str(path)).file_slices())


def _check_clustering_run(path: Path, d: dict[str, Any]) -> None:
    [done] = d["clusterings"]
    assert _completed(path, done["instant"], "replacecommit") and _logs(path) == 0
    live = len(hudi_md.open_table(str(path)).file_slices())  # one group a city, before and after
    assert done["file_groups_replaced"] == done["file_groups_written"] == live


def _clustering_text(path: Path, d: dict[str, Any]) -> str:
    [done] = d["clusterings"]
    instant = [t for t, a, _ in _timeline(path) if a == "replacecommit"][-1]
    return (
        f"clustering {instant}: {done['file_groups_replaced']} file groups into {done['file_groups_written']}"
    )


def _check_clean(path: Path, d: dict[str, Any]) -> None:
    assert _completed(path, d["instant"], "clean")
    meta = hudi_md.open_table(str(path)).timeline
    done = meta.metadata(meta.get(d["instant"], "clean"))
    assert d["files_deleted"] == done["totalFilesDeleted"] > 0


def _first_write(path: Path) -> str:
    return _timeline(path)[0][0]


def _last_write(path: Path) -> str:
    return [t for t, a, _ in _timeline(path) if a == "deltacommit"][-1]


def _check_rollback(path: Path, d: dict[str, Any]) -> None:
    assert _completed(path, d["instant"], "rollback")
    assert d["rolled_back"] not in {t for t, _, _ in _timeline(path)}
    assert len([a for _, a, _ in _timeline(path) if a == "deltacommit"]) == 2


def _check_restore(path: Path, d: dict[str, Any]) -> None:
    assert [a for _, a, _ in _timeline(path) if a == "deltacommit"] == ["deltacommit"]
    assert d["restored_to"] == _first_write(path) and len(d["rollback_instants"]) == 2
    assert all(_completed(path, rb, "rollback") for rb in d["rollback_instants"])


def _check_partitions(expected: list[str], key: str = "metadata_partitions") -> Callable:
    def check(path: Path, d: dict[str, Any]) -> None:
        assert d[key] == expected
        assert d["metadata_partitions"] == _mdt_partitions(path)

    return check


def _check_init(path: Path, d: dict[str, Any]) -> None:
    assert d["metadata_partitions"] == _mdt_partitions(path) and "files" in d["metadata_partitions"]
    assert d["rolled_back"] == [] and (
        d["compaction_instant"] is None or INSTANT.match(d["compaction_instant"])
    )


def _check_schedule(path: Path, d: dict[str, Any]) -> None:
    assert (d["instant"], "indexing", "REQUESTED") in _timeline(path)
    assert d["partitions"] == ["record_index"]


def _check_index_run(path: Path, d: dict[str, Any]) -> None:
    assert _completed(path, d["instant"], "indexing") and "record_index" in _mdt_partitions(path)


def _uri(path: Path) -> str:
    return hudi_md.open_table(str(path)).uri


SCHEDULE = ["index", "schedule", "--partitions", "record_index"]
CHANGERS: dict[str, Change] = {
    "compaction": Change(["compaction"], _check_compaction, lambda p, d: f"compaction {d['instant']}"),
    "clustering schedule": Change(
        ["clustering", "schedule"],
        _check_clustering_schedule,
        lambda p, d: f"clustering {d['instant']} scheduled: {d['file_groups']} file groups",
    ),
    "clustering run": Change(["clustering", "run"], _check_clustering_run, _clustering_text),
    "clean": Change(
        [
            "clean",
            "-o",
            "hoodie.cleaner.policy=KEEP_LATEST_FILE_VERSIONS",
            "-o",
            "hoodie.cleaner.fileversions.retained=1",
        ],
        _check_clean,
        lambda p, d: f"clean {d['instant']}",
        before=[["compaction"]],
    ),
    "rollback": Change(
        ["rollback", "{path}", "{last}"], _check_rollback, lambda p, d: f"rollback {d['instant']}"
    ),
    "restore": Change(
        ["restore", "{path}", "{first}"],
        _check_restore,
        lambda p, d: f"restored to {d['restored_to']}: {len(d['rollback_instants'])} rollbacks",
    ),
    "metadata delete": Change(
        ["metadata", "delete"],
        _check_partitions([]),
        lambda p, d: f"deleted the metadata table of {d['path']}",
        progress=False,
    ),
    "metadata create": Change(
        ["metadata", "create"],
        _check_partitions(["files", "column_stats", "partition_stats"], "created"),
        lambda p, d: (
            f"created MDT partitions: {', '.join(d['created'])} "
            f"({', '.join(d['metadata_partitions'])} available)"
        ),
        before=[["metadata", "delete"]],
    ),
    "metadata repair": Change(
        ["metadata", "repair"],
        _check_partitions(["column_stats", "files", "partition_stats"]),
        lambda p, d: f"rebuilt the metadata table of {d['path']}: {', '.join(d['metadata_partitions'])}",
    ),
    "metadata drop-index": Change(
        ["metadata", "drop-index", "{path}", "partition_stats"],
        _check_partitions(["column_stats", "files"]),
        lambda p, d: (
            f"dropped partition_stats from the metadata table of {d['path']}; it keeps column_stats, files"
        ),
        progress=False,
    ),
    "metadata init": Change(
        ["metadata", "init"],
        _check_init,
        lambda p, d: (
            f"MDT partitions: {', '.join(d['metadata_partitions'])}; rolled back: nothing; "
            f"compaction: {d['compaction_instant'] or 'not due'}"
        ),
    ),
    "index schedule": Change(
        SCHEDULE, _check_schedule, lambda p, d: f"scheduled indexing {d['instant']}", progress=False
    ),
    "index run": Change(
        ["index", "run"],
        _check_index_run,
        lambda p, d: f"indexing {d['instant']} completed",
        before=[SCHEDULE],
    ),
    "index drop": Change(
        ["index", "drop", "--partitions", "column_stats"],
        _check_partitions(["files", "partition_stats"]),
        lambda p, d: (
            f"dropped column_stats from the metadata table of {d['path']}; it keeps files, partition_stats"
        ),
        progress=False,
    ),
}


def _args(change: Change, path: Path) -> list[str]:
    subs = {"{path}": str(path), "{first}": _first_write(path), "{last}": _last_write(path)}
    args = [subs.get(a, a) for a in change.args]
    return args if str(path) in args else [*args, str(path)]


def _copy(table: Path, dest: Path, change: Change) -> Path:
    shutil.copytree(table, dest)
    for before in change.before:
        invoke(*before, str(dest))
    return dest


@pytest.mark.parametrize("command", sorted(CHANGERS))
def test_json_of_a_changing_command_carries_the_text_facts(table: Path, tmp_path: Path, command: str) -> None:
    change = CHANGERS[command]
    as_text, in_json, quiet = (_copy(table, tmp_path / name, change) for name in ("text", "json", "quiet"))

    data = as_json(*_args(change, in_json))
    change.check(in_json, data)

    text = invoke(*_args(change, as_text))
    assert text.stdout == change.text(as_text, _facts_of(as_text, data, in_json)) + "\n"
    if change.progress:
        lines = text.stderr.splitlines()
        assert lines and re.fullmatch(r".* in \d+\.\d s", lines[-1]), text.stderr
    else:
        assert text.stderr == ""

    silent = invoke(*_args(change, quiet), "--quiet" if change.progress else "--json")
    assert silent.stderr == ""


def _facts_of(copy: Path, data: dict[str, Any], other: Path) -> dict[str, Any]:
    """``data``, the JSON of the command run on ``other``, as the same run on ``copy`` has it: the
    copy's path, and the instants the command made there (the newest of the same action)."""
    facts = dict(data)
    if "path" in facts:
        facts["path"] = _uri(copy)
    for key in ("instant", "compaction_instant"):
        if facts.get(key) is not None:
            action = next(a for t, a, _ in _timeline(other) if t == data[key])
            facts[key] = [t for t, a, _ in _timeline(copy) if a == action][-1]
    return facts


# --- every command has --json --------------------------------------------------------------------------

# the metastore server's own commands (hudi_md.metastore_server.cli, not the client's)
SERVER_COMMANDS = {"metastore serve", "metastore token create"}
# need a metastore server: tests/metastore/test_cli_json_metastore.py
METASTORE_CLIENT = {"metastore register", "metastore sync", "metastore ls"}


def _leaves(group: click.Group, prefix: str = "") -> dict[str, click.Command]:
    out: dict[str, click.Command] = {}
    for name, command in group.commands.items():
        path = f"{prefix}{name}"
        if isinstance(command, click.Group):
            out.update(_leaves(command, f"{path} "))
        else:
            out[path] = command
    return out


def test_every_command_has_json_and_is_covered_here() -> None:
    leaves = _leaves(main)
    ours = set(leaves) - SERVER_COMMANDS
    assert ours == set(READERS) | set(CHANGERS) | METASTORE_CLIENT
    for name in sorted(ours):
        (option,) = [p for p in leaves[name].params if p.name == "json"]
        assert isinstance(option, click.Option)
        assert option.help and option.help.startswith("print JSON instead of text: "), name
        help_text = invoke(*name.split(), "--help").stdout
        assert "--json" in help_text and "print JSON instead of text" in help_text


def test_validate_reports_its_steps_on_stderr_unless_quiet(table: Path) -> None:
    text = invoke("metadata", "validate", str(table))
    assert text.stdout == "OK: MDT matches storage\n"
    first, *steps, last = text.stderr.splitlines()
    assert first == f"validating the metadata table of {_uri(table)}..."
    assert steps[0].startswith("  comparing the MDT's files with a listing of ")
    assert "  looking for files no instant wrote" in steps
    assert re.fullmatch(r"0 differences in \d+\.\d s", last)
    for flag in ("--quiet", "-q", "--no-progress"):
        quiet = invoke("metadata", "validate", str(table), flag)
        assert quiet.stderr == "" and quiet.stdout == text.stdout
