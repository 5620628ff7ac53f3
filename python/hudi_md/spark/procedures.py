"""Spark SQL ``CALL`` procedures on hudi-md tables, with Apache Hudi 1.2's names, parameters and
output columns (``integration/hudi_procedures.md`` records what Hudi 1.2's bundle does).

The Scala command parses ``CALL name(arg => value, ...)``, resolves ``table => 'db.t'`` (or
``path``) to the table's location and asks the planner process for :func:`call`: the procedure's
rows as an Arrow table whose schema is :func:`procedure_schema`. Arguments arrive as strings (SQL
literals, unquoted) keyed by Hudi's parameter names.

- :attr:`Procedure.parameters` is Hudi 1.2's parameter list, in its order (positional arguments
  map onto it), ``table`` and ``path`` included: the caller consumes those two, so :func:`call`
  never asks for them and ignores them when they come.
- An argument the procedure does not take, or a required one missing, is an
  :class:`~hudi_md.errors.InvalidOptionError` naming the procedure, the argument and the
  procedure's parameters (Hudi 1.2 ignores unknown arguments silently).
- ``filter`` (Hudi's Spark SQL predicate over the output columns, ``show_fsview_latest`` and
  ``show_metadata_table_stats``) is not taken: a non-empty one is refused, naming the way to filter
  the returned rows.
- ``validate_metadata`` is hudi-md's own: the differences
  :func:`~hudi_md.metadata.validate.validate_metadata_table` finds, one row each, or one ``ok`` row.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from hudi_md.api import open_table
from hudi_md.config import metadata as M
from hudi_md.config import services as CS
from hudi_md.config.option import ConfigOption
from hudi_md.errors import InvalidOptionError, MetadataTableError
from hudi_md.formats.commit_metadata import CommitMetadata
from hudi_md.formats.commit_metadata_writer import serialize_instant_metadata
from hudi_md.metadata.stats import metadata_stats
from hudi_md.metadata.validate import validate_metadata_table
from hudi_md.table.config import TableConfig
from hudi_md.table.fs_view import FileSlice, FileSystemView, LogFile
from hudi_md.table.state import TableState
from hudi_md.table.timeline import CLEAN, COMMIT, COMPACTION, DELTA_COMMIT, Instant, Timeline
from hudi_md.write import clustering, compaction, services
from hudi_md.write.config import WriteConfig
from hudi_md.write.plans import read_plan
from hudi_md.write.recovery import resolve_pending_services
from hudi_md.write.transaction import Transaction
from hudi_md.write.writer import HudiWriter

__all__ = ["PROCEDURES", "Parameter", "Procedure", "call", "procedure_schema"]

# The arguments that name the table: the caller resolves them and passes the table's location.
TABLE_ARGUMENTS = frozenset({"table", "path"})
# Hudi's sentinel for "every partition" (show_fsview_latest's path_regex / partition_path).
ALL_PARTITIONS = "ALL_PARTITIONS"

# Hudi keys the procedures set or read that hudi-md's writer has no constant for.
CLEANER_HOURS_RETAINED = CS.CLEANER_HOURS_RETAINED.key
CLEAN_TRIGGER_STRATEGY = CS.CLEAN_TRIGGER_STRATEGY.key
CLEAN_MAX_COMMITS = CS.CLEAN_MAX_COMMITS.key
COMPACT_TRIGGER_STRATEGY = CS.COMPACT_TRIGGER_STRATEGY.key
CLEANER_POLICIES = ("KEEP_LATEST_COMMITS", "KEEP_LATEST_FILE_VERSIONS")


@dataclass(frozen=True)
class Parameter:
    """One procedure parameter as Hudi 1.2 declares it. ``default`` is the SQL literal of Hudi's
    default (None: no default); ``type`` its Spark SQL type (string, int, bigint, boolean)."""

    name: str
    required: bool
    default: str | None
    type: str = "string"

    def describe(self) -> str:
        if self.required:
            return f"{self.name} (required)"
        return f"{self.name} (default {self.default})" if self.default is not None else self.name


@dataclass(frozen=True)
class Procedure:
    name: str
    parameters: tuple[Parameter, ...]
    schema: pa.Schema
    run: Callable[[str, Mapping[str, str], Mapping[str, str]], pa.Table]

    def describe_parameters(self) -> str:
        return ", ".join(p.describe() for p in self.parameters)


def _req(name: str, type: str = "string") -> Parameter:
    return Parameter(name, True, None, type)


def _opt(name: str, default: str | None = None, type: str = "string") -> Parameter:
    return Parameter(name, False, default, type)


def _schema(*fields: tuple[str, pa.DataType]) -> pa.Schema:
    return pa.schema([pa.field(name, t, nullable=True) for name, t in fields])


S, I64, I32, F64, BOOL = pa.string(), pa.int64(), pa.int32(), pa.float64(), pa.bool_()


# --- arguments -----------------------------------------------------------------------------------


class _Args:
    """A procedure's arguments (strings) with Hudi's defaults, converted to the parameter's type;
    a value that does not convert names the procedure and the argument."""

    def __init__(self, procedure: str, parameters: Sequence[Parameter], values: Mapping[str, str]) -> None:
        self.procedure = procedure
        self.params = {p.name: p for p in parameters}
        self.values = values

    def is_set(self, name: str) -> bool:
        return self.values.get(name) is not None

    def text(self, name: str) -> str | None:
        value = self.values.get(name)
        return self.params[name].default if value is None else value

    def integer(self, name: str) -> int | None:
        value = self.text(name)
        if value is None:
            return None
        try:
            return int(value.strip())
        except ValueError:
            raise self.invalid(name, value, "an integer") from None

    def boolean(self, name: str) -> bool:
        value = (self.text(name) or "").strip().lower()
        if value not in ("true", "false"):
            raise self.invalid(name, self.text(name), "true or false")
        return value == "true"

    def limit(self) -> int:
        limit = self.integer("limit")
        if limit is None or limit < 0:
            raise self.invalid("limit", self.text("limit"), "a non-negative integer")
        return limit

    def invalid(self, name: str, value: object, expected: str) -> InvalidOptionError:
        return InvalidOptionError(f"{self.procedure}: argument {name} must be {expected}, got {value!r}")

    def refuse(self, name: str, why: str) -> InvalidOptionError:
        return InvalidOptionError(f"{self.procedure}: argument {name}: {why}")

    def no_filter(self) -> None:
        if (self.text("filter") or "").strip():
            raise self.refuse(
                "filter",
                "hudi-md's procedures take no filter; filter the rows they return instead, e.g. "
                'spark.sql("CALL ...").where("...")',
            )


def _hudi_options(a: _Args, name: str = "options") -> dict[str, str]:
    """Hudi's ``options => 'k1=v1,k2=v2'`` (HoodieCLIUtils.extractOptions)."""
    text = a.text(name)
    out: dict[str, str] = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise a.invalid(name, text, "comma-separated key=value pairs")
        out[key.strip()] = value.strip()
    return out


# --- show_commits, show_commit_files --------------------------------------------------------------


def _raw_stats(meta: CommitMetadata) -> list[Mapping[str, Any]]:
    """The write stats as recorded, in :meth:`CommitMetadata.write_stats` order (for what the typed
    stat leaves out: ``totalWriteErrors``, and whether ``prevCommit`` is absent or ``"null"``)."""
    stats = meta.raw.get("partitionToWriteStats") or {}
    return [s for per_partition in stats.values() for s in per_partition or ()]


def _prev_commit(raw: Mapping[str, Any]) -> str | None:
    value = raw.get("prevCommit")
    return None if value is None else str(value)


def _errors(raw: Mapping[str, Any]) -> int:
    return int(raw.get("totalWriteErrors") or 0)


def _commit_metadata(timeline: Timeline, instant: Instant) -> CommitMetadata:
    return CommitMetadata(timeline.metadata(instant), f"{timeline.name}/{instant.file_name}")


SHOW_COMMITS = (_req("table"), _opt("limit", "10", "int"))


def _show_commits(path: str, args: Mapping[str, str], options: Mapping[str, str]) -> pa.Table:
    """Completed commits, deltacommits and replacecommits, newest first, with Hudi's
    HoodieCommitMetadata totals (``fetchTotal*``)."""
    a = _Args("show_commits", SHOW_COMMITS, args)
    limit = a.limit()
    timeline = open_table(path, options).timeline
    rows = []
    for instant in list(reversed(timeline.write_timeline().instants))[:limit]:
        meta = _commit_metadata(timeline, instant)
        stats, raw = meta.write_stats(), _raw_stats(meta)
        prev = [_prev_commit(r) for r in raw]
        rows.append(
            {
                "commit_time": instant.requested_time,
                "state_transition_time": instant.completion_time,
                "action": instant.action,
                "total_bytes_written": sum(s.total_write_bytes for s in stats),
                # Hudi: prevCommit "null" is a new file, any other value an updated one, none neither
                "total_files_added": sum(1 for p in prev if p is not None and p.lower() == "null"),
                "total_files_updated": sum(1 for p in prev if p is not None and p.lower() != "null"),
                "total_partitions_written": len(meta.raw.get("partitionToWriteStats") or {}),
                "total_records_written": sum(s.num_writes for s in stats),
                "total_update_records_written": sum(s.num_update_writes for s in stats),
                "total_errors": sum(_errors(r) for r in raw),
            }
        )
    return pa.Table.from_pylist(rows, schema=SHOW_COMMITS_SCHEMA)


SHOW_COMMITS_SCHEMA = _schema(
    ("commit_time", S),
    ("state_transition_time", S),
    ("action", S),
    ("total_bytes_written", I64),
    ("total_files_added", I64),
    ("total_files_updated", I64),
    ("total_partitions_written", I64),
    ("total_records_written", I64),
    ("total_update_records_written", I64),
    ("total_errors", I64),
)

SHOW_COMMIT_FILES = (_req("table"), _opt("limit", "10", "int"), _req("instant_time"))


def _show_commit_files(path: str, args: Mapping[str, str], options: Mapping[str, str]) -> pa.Table:
    """One row per write stat of the completed commit ``instant_time``."""
    a = _Args("show_commit_files", SHOW_COMMIT_FILES, args)
    limit = a.limit()
    instant_time = a.text("instant_time") or ""
    table = open_table(path, options)
    writes = table.timeline.write_timeline()
    instant = writes.get(instant_time)
    if instant is None:
        last = writes.last()
        raise a.refuse(
            "instant_time",
            f"{instant_time!r} is not a completed commit of {table.uri} "
            f"(the latest is {last.requested_time if last else 'none'})",
        )
    meta = _commit_metadata(table.timeline, instant)
    rows = [
        {
            "action": instant.action,
            "partition_path": s.partition_path,
            "file_id": s.file_id,
            "previous_commit": _prev_commit(r),
            "total_records_updated": s.num_update_writes,
            "total_records_written": s.num_writes,
            "total_bytes_written": s.total_write_bytes,
            "total_errors": _errors(r),
            "file_size": s.file_size_in_bytes,
        }
        for s, r in zip(meta.write_stats(), _raw_stats(meta), strict=True)
    ]
    return pa.Table.from_pylist(rows[:limit], schema=SHOW_COMMIT_FILES_SCHEMA)


SHOW_COMMIT_FILES_SCHEMA = _schema(
    ("action", S),
    ("partition_path", S),
    ("file_id", S),
    ("previous_commit", S),
    ("total_records_updated", I64),
    ("total_records_written", I64),
    ("total_bytes_written", I64),
    ("total_errors", I64),
    ("file_size", I64),
)


# --- show_fsview_latest ---------------------------------------------------------------------------

SHOW_FSVIEW_LATEST = (
    _opt("table"),
    _opt("path"),
    _opt("max_instant", ""),
    _opt("include_max", "false", "boolean"),
    _opt("include_in_flight", "false", "boolean"),
    _opt("exclude_compaction", "false", "boolean"),
    _opt("limit", "10", "int"),
    _opt("path_regex", ALL_PARTITIONS),
    _opt("filter", ""),
    _opt("partition_path", ALL_PARTITIONS),
    _opt("merge", "true", "boolean"),
)


def _glob(pattern: str) -> re.Pattern[str]:
    """A Hadoop glob (``*``, ``?``, ``[...]``, ``{a,b}``, ``\\`` escapes; no wildcard crosses
    ``/``) as a regular expression over partition paths."""
    out: list[str] = []
    depth = i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if c == "[" and (end := pattern.find("]", i + 2)) > 0:
            body = pattern[i + 1 : end]
            out.append("[" + ("^" + body[1:] if body[0] in "^!" else body).replace("\\", "\\\\") + "]")
            i = end + 1
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "{":
            out.append("(?:")
            depth += 1
        elif c == "}" and depth:
            out.append(")")
            depth -= 1
        elif c == "," and depth:
            out.append("|")
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out))


def _view_as_of(a: _Args, table: TableState) -> tuple[bool, str | None]:
    """(any instant in range, the view's as-of): Hudi keeps the completed writes before
    ``max_instant`` (at or before it with ``include_max``)."""
    max_instant = a.text("max_instant") or ""
    if not max_instant:
        return True, None
    if a.boolean("include_max"):
        return True, max_instant
    earlier = [i.requested_time for i in table.timeline.write_timeline() if i.requested_time < max_instant]
    return bool(earlier), max(earlier, default=None)


def _log_files_text(table: TableState, logs: Sequence[LogFile]) -> str:
    # Hudi: the slice's log files newest first, as HoodieLogFile's toString, in a Scala mkString
    return (
        "["
        + ",".join(f"HoodieLogFile(pathStr={table.storage.uri(lf.path)}, fileSize={lf.size})" for lf in logs)
        + "]"
    )


def _fsview_row(table: TableState, view: FileSystemView, s: FileSlice) -> dict[str, Any]:
    base_size = s.base_file.size if s.base_file else 0
    logs = sorted(s.log_files, key=LogFile.sort_key, reverse=True)
    # Hudi's "scheduled" sizes are of log files whose deltacommit completed (on the whole timeline,
    # archived instants included), "unscheduled" of the others; its file lists split by whether
    # the log's instant is the slice's base instant.
    start = view.timeline_start
    done = [
        lf
        for lf in logs
        if table.timeline.completion_time_of(lf.instant) is not None
        or (start is not None and lf.instant < start)
    ]
    scheduled = sum(lf.size for lf in done)
    unscheduled = sum(lf.size for lf in logs) - scheduled
    return {
        "partition": s.partition_path,
        "file_id": s.file_id,
        "base_instant": s.base_instant,
        "data_file": table.storage.uri(s.base_file.path) if s.base_file else "",
        "data_file_size": base_size,
        "num_delta_files": len(logs),
        "total_delta_file_size": sum(lf.size for lf in logs),
        "delta_size_compaction_scheduled": scheduled,
        "delta_size_compaction_unscheduled": unscheduled,
        "delta_to_base_radio_compaction_scheduled": scheduled / base_size if base_size else -1.0,
        "delta_to_base_radio_compaction_unscheduled": unscheduled / base_size if base_size else -1.0,
        "delta_files_compaction_scheduled": _log_files_text(
            table, [lf for lf in logs if lf.instant == s.base_instant]
        ),
        "delta_files_compaction_unscheduled": _log_files_text(
            table, [lf for lf in logs if lf.instant != s.base_instant]
        ),
    }


def _show_fsview_latest(path: str, args: Mapping[str, str], options: Mapping[str, str]) -> pa.Table:
    """The latest (merged) file slice of every file group, from the table's file-system view (the
    MDT's listing when the table has one): the slices ``Table.file_slices()`` plans."""
    a = _Args("show_fsview_latest", SHOW_FSVIEW_LATEST, args)
    limit = a.limit()
    a.no_filter()
    a.boolean("exclude_compaction")  # no effect without include_in_flight (as in Hudi)
    a.boolean("merge")  # the view's latest slice is always merged with a pending compaction's
    if a.boolean("include_in_flight"):
        raise a.refuse("include_in_flight", "hudi-md's file-system view holds committed files only")
    if a.is_set("path_regex") and a.is_set("partition_path"):
        raise a.refuse("path_regex", "path_regex and partition_path cannot be used together")
    pattern = a.text("path_regex") if a.is_set("path_regex") else a.text("partition_path")
    table = open_table(path, options).state
    any_instant, as_of = _view_as_of(a, table)
    if not any_instant:
        return SHOW_FSVIEW_LATEST_SCHEMA.empty_table()
    view = table.file_system_view(as_of)
    partitions = sorted(view.partitions())
    if pattern != ALL_PARTITIONS:
        regex = _glob(pattern or "")
        partitions = [p for p in partitions if regex.fullmatch(p)]
    slices = sorted(view.latest_file_slices(partitions), key=lambda s: (s.partition_path, s.file_id))
    rows = [_fsview_row(table, view, s) for s in slices[:limit]]
    return pa.Table.from_pylist(rows, schema=SHOW_FSVIEW_LATEST_SCHEMA)


SHOW_FSVIEW_LATEST_SCHEMA = _schema(
    ("partition", S),
    ("file_id", S),
    ("base_instant", S),
    ("data_file", S),
    ("data_file_size", I64),
    ("num_delta_files", I64),
    ("total_delta_file_size", I64),
    ("delta_size_compaction_scheduled", I64),
    ("delta_size_compaction_unscheduled", I64),
    ("delta_to_base_radio_compaction_scheduled", F64),
    ("delta_to_base_radio_compaction_unscheduled", F64),
    ("delta_files_compaction_scheduled", S),
    ("delta_files_compaction_unscheduled", S),
)


# --- show_metadata_table_stats --------------------------------------------------------------------

SHOW_METADATA_TABLE_STATS = (_opt("table"), _opt("path"), _opt("filter", ""))


def _show_metadata_table_stats(path: str, args: Mapping[str, str], options: Mapping[str, str]) -> pa.Table:
    """Hudi's HoodieMetadataMetrics stats: per MDT partition the latest slices' base and log file
    counts and sizes, and the data table's partition count. (Hudi 1.2's procedure builds its MDT
    reader with metrics off and so returns no row; these are the rows it has with them on.)"""
    a = _Args("show_metadata_table_stats", SHOW_METADATA_TABLE_STATS, args)
    a.no_filter()
    table = open_table(path, options).state
    mdt = table.metadata_table
    if mdt is None:
        raise MetadataTableError(
            f"show_metadata_table_stats: {table.uri} has no readable metadata table"
            + (f": {table.metadata_error}" if table.metadata_error else "")
        )
    data = metadata_stats(table, mdt)
    stats: dict[str, str] = {"partitionCount": str(data["partition_count"])}
    for name, p in data["partitions"].items():
        base_size = sum(s.base_file.size for s in mdt.file_slices(name) if s.base_file is not None)
        stats[f"{name}.baseFileCount"] = str(p["base_files"])
        stats[f"{name}.logFileCount"] = str(p["log_files"])
        stats[f"{name}.totalBaseFileSizeInBytes"] = str(base_size)
        stats[f"{name}.totalLogFileSizeInBytes"] = str(p["total_size"] - base_size)
    rows = [{"stat_key": k, "stat_value": v} for k, v in sorted(stats.items())]
    return pa.Table.from_pylist(rows, schema=SHOW_METADATA_TABLE_STATS_SCHEMA)


SHOW_METADATA_TABLE_STATS_SCHEMA = _schema(("stat_key", S), ("stat_value", S))


# --- run_compaction -------------------------------------------------------------------------------

RUN_COMPACTION = (
    _req("op"),
    _opt("table"),
    _opt("path"),
    _opt("timestamp", None, "bigint"),
    _opt("options"),
    _opt("instants"),
    _opt("limit", None, "int"),
)
_COMPACTION_OPS = ("schedule", "execute", "scheduleandexecute")


def _specific_instants(a: _Args, specific: str, op: str, pending: Sequence[str], service: str) -> list[str]:
    """``instants => 'T1,T2'`` of run_compaction and run_clustering: only with ``op => 'execute'``,
    and each a pending instant of the service."""
    if op != "execute":
        raise a.refuse("instants", "specific instants can only be used with op => 'execute'")
    wanted = sorted(t.strip() for t in specific.split(",") if t.strip())
    missing = [t for t in wanted if t not in pending]
    if missing:
        raise a.refuse(
            "instants", f"no pending {service} {', '.join(missing)} (pending: {list(pending) or 'none'})"
        )
    return wanted


def _compaction_due(writer: HudiWriter) -> bool:
    """Hudi's NUM_COMMITS trigger: as many completed deltacommits since the last compaction as
    ``hoodie.compact.inline.max.delta.commits`` (5)."""
    strategy = CS.COMPACT_TRIGGER_STRATEGY.get(writer.options)
    if strategy != "NUM_COMMITS":
        raise InvalidOptionError(
            f"run_compaction: {COMPACT_TRIGGER_STRATEGY}={strategy} is not supported (hudi-md: NUM_COMMITS)"
        )
    cfg = WriteConfig.from_options(writer.options, TableConfig.load(writer.storage))
    timeline = writer.timeline().completed()
    last = timeline.of_actions(COMMIT).last()
    since = [
        i for i in timeline.of_actions(DELTA_COMMIT) if last is None or i.requested_time > last.requested_time
    ]
    return len(since) >= cfg.compact_inline_max_delta_commits


def _schedule_compaction(writer: HudiWriter) -> str | None:
    """A compaction plan of every slice with log files, requested only (Hudi's ``schedule``); the
    next ``execute`` or write runs it."""
    with writer.lock():
        planned = compaction.plan_compaction(writer.storage, writer.state())
        if planned is None:
            return None
        plan, _ = planned
        return Transaction.request(
            writer, COMPACTION, serialize_instant_metadata("compaction_plan", plan)
        ).instant


def _execute_pending(writer: HudiWriter) -> None:
    with writer.lock():
        resolve_pending_services(writer)
        writer.finish_mdt_rebuild()


def _run_compaction(path: str, args: Mapping[str, str], options: Mapping[str, str]) -> pa.Table:
    """``schedule`` a compaction (when Hudi's trigger says it is due), ``execute`` the pending
    ones, or both (``run`` / ``scheduleAndExecute``); a row per compaction instant it scheduled or
    ran, newest first, with its plan's operation count and its state now."""
    a = _Args("run_compaction", RUN_COMPACTION, args)
    op = (a.text("op") or "").strip().lower()
    op = "scheduleandexecute" if op == "run" else op
    if op not in _COMPACTION_OPS:
        raise a.invalid("op", a.text("op"), "one of run, schedule, execute, scheduleAndExecute")
    specific = a.text("instants")
    if a.is_set("timestamp") and specific is None:
        specific, op = str(a.integer("timestamp")), "execute"
    limit = a.integer("limit")
    writer = HudiWriter(path, {**options, **_hudi_options(a)})
    if not TableConfig.load(writer.storage).is_mor:
        raise a.refuse("table", f"{writer.uri} is a COPY_ON_WRITE table; compaction is for MERGE_ON_READ")
    pending = sorted(i.requested_time for i in writer.timeline().pending().of_actions(COMPACTION))
    if specific is not None:
        _specific_instants(a, specific, op, pending, "compaction")
    if limit is not None and op != "schedule" and len(pending) > limit:
        raise a.refuse(
            "limit", f"hudi-md runs every pending compaction ({len(pending)}), not {limit} of them"
        )
    ran = list(pending) if op != "schedule" else []
    if op == "schedule":
        new = _schedule_compaction(writer) if _compaction_due(writer) else None
    elif op == "execute":
        new = None
        _execute_pending(writer)
    elif _compaction_due(writer):
        new = services.compact(writer)  # runs the pending compactions first
    else:
        new = None
        _execute_pending(writer)
    timeline = writer.timeline()
    rows = []
    for t in sorted({*ran, *([new] if new else [])}, reverse=True):
        instant = timeline.get(t)
        if instant is None:  # rolled back: a file its plan reads is gone
            continue
        plan = read_plan(writer.storage, t, COMPACTION) or {}
        rows.append(
            {
                "timestamp": t,
                "operation_size": len(plan.get("operations") or ()),
                "state": instant.state.name,
            }
        )
    return pa.Table.from_pylist(rows, schema=RUN_COMPACTION_SCHEMA)


RUN_COMPACTION_SCHEMA = _schema(("timestamp", S), ("operation_size", I32), ("state", S))


# --- run_clustering -------------------------------------------------------------------------------

RUN_CLUSTERING = (
    _opt("table"),
    _opt("path"),
    _opt("predicate"),
    _opt("order"),
    _opt("show_involved_partition", "false", "boolean"),
    _opt("op"),
    _opt("order_strategy"),
    _opt("options"),
    _opt("instants"),
    _opt("selected_partitions"),
    _opt("partition_regex_pattern"),
    _opt("limit", None, "int"),
)
# Hudi's LayoutOptimizationStrategy names and values
_ORDER_STRATEGIES = {"linear": "LINEAR", "z-order": "ZORDER", "zorder": "ZORDER", "hilbert": "HILBERT"}


def _run_clustering(path: str, args: Mapping[str, str], options: Mapping[str, str]) -> pa.Table:
    """``schedule`` a clustering of the table's small file groups, ``execute`` the pending ones
    (``instants``: those; ``limit``: the oldest so many), or both (the default,
    ``scheduleAndExecute``: the new plan runs; with nothing to schedule, the pending ones).
    ``order`` and ``order_strategy`` set the sort columns and layout; ``selected_partitions``
    (comma-separated paths) or ``partition_regex_pattern`` limit the plan. A row per clustering
    run, newest first, as Apache Hudi 1.2 returns them (a schedule alone returns none): its
    instant, the plan's group count, its state (COMPLETED), and its partitions
    (``show_involved_partition``; else ``*``)."""
    a = _Args("run_clustering", RUN_CLUSTERING, args)
    if (a.text("predicate") or "").strip():
        raise a.refuse("predicate", "select partitions with selected_partitions => 'p1,p2'")
    op = (a.text("op") or "scheduleandexecute").strip().lower()
    if op not in _COMPACTION_OPS:
        raise a.invalid("op", a.text("op"), "one of schedule, execute, scheduleAndExecute")
    conf: dict[str, str] = {}
    if a.text("selected_partitions"):
        conf[CS.CLUSTERING_PARTITION_SELECTED.key] = a.text("selected_partitions") or ""
    if a.text("partition_regex_pattern"):
        conf[CS.CLUSTERING_PARTITION_REGEX.key] = a.text("partition_regex_pattern") or ""
    if a.text("order"):
        conf[CS.CLUSTERING_SORT_COLUMNS.key] = a.text("order") or ""
    strategy = a.text("order_strategy")
    if strategy:
        if strategy.strip().lower() not in _ORDER_STRATEGIES:
            raise a.invalid("order_strategy", strategy, "one of linear, z-order, hilbert")
        conf[CS.LAYOUT_OPTIMIZE_STRATEGY.key] = _ORDER_STRATEGIES[strategy.strip().lower()]
    writer = HudiWriter(path, {**options, **conf, **_hudi_options(a)})
    if a.text("order"):
        names = {f.name.lower() for f in writer.state().schema}
        missing = [c for c in (a.text("order") or "").split(",") if c.strip().lower() not in names]
        if missing:
            raise a.refuse("order", f"no column {missing[0].strip()!r} in {writer.uri}")
    pending = [i.requested_time for i in clustering.pending_clusterings(writer.storage, writer.timeline())]
    specific = a.text("instants")
    wanted = pending
    if specific is not None:
        wanted = _specific_instants(a, specific, op, pending, "clustering")
    limit = a.integer("limit")
    if limit is not None:
        wanted = wanted[:limit]  # the oldest
    touched: set[str] = set()
    if op in ("schedule", "scheduleandexecute"):
        new = services.schedule_clustering(writer)
        if new is not None:
            wanted = [new]  # Hudi runs the plan it just wrote
            touched.add(new)
    if op in ("execute", "scheduleandexecute"):
        for t in wanted:
            services.cluster(writer, instant=t)
        touched.update(wanted)
    # Hudi 1.2 reports the completed ones only (its rows are the replacecommits among them): a
    # schedule alone returns no row, show_clustering lists what is pending
    show = a.boolean("show_involved_partition")
    return _clustering_rows(writer, sorted(touched, reverse=True), show, completed_only=True)


def _clustering_rows(
    writer: HudiWriter, instants: Sequence[str], show_partitions: bool, *, completed_only: bool = False
) -> pa.Table:
    """A row per clustering instant (``completed_only``: per completed one): the plan's group
    count, the state now, its partitions."""
    timeline = writer.timeline()
    pending_action = clustering.clustering_action(TableConfig.load(writer.storage))
    rows = []
    for t in instants:
        instant = timeline.get(t)
        if instant is None or (completed_only and not instant.is_completed):
            continue  # (None: rolled back, its plan could not run)
        plan = read_plan(writer.storage, t, pending_action) or {}
        groups = (plan.get("clusteringPlan") or {}).get("inputGroups") or []
        partitions = sorted({s.get("partitionPath") or "" for g in groups for s in g.get("slices") or ()})
        rows.append(
            {
                "timestamp": t,
                "input_group_size": len(groups),
                "state": instant.state.name,
                "involved_partitions": ",".join(partitions) if show_partitions else "*",
            }
        )
    return pa.Table.from_pylist(rows, schema=RUN_CLUSTERING_SCHEMA)


SHOW_CLUSTERING = (
    _opt("table"),
    _opt("path"),
    _opt("limit", "20", "int"),
    _opt("show_involved_partition", "false", "boolean"),
)


def _show_clustering(path: str, args: Mapping[str, str], options: Mapping[str, str]) -> pa.Table:
    """The pending clusterings, newest first (at most ``limit``)."""
    a = _Args("show_clustering", SHOW_CLUSTERING, args)
    writer = HudiWriter(path, options)
    pending = [i.requested_time for i in clustering.pending_clusterings(writer.storage, writer.timeline())]
    newest = sorted(pending, reverse=True)[: a.limit()]
    return _clustering_rows(writer, newest, a.boolean("show_involved_partition"))


RUN_CLUSTERING_SCHEMA = _schema(
    ("timestamp", S), ("input_group_size", I32), ("state", S), ("involved_partitions", S)
)


# --- run_clean ------------------------------------------------------------------------------------

RUN_CLEAN = (
    _req("table"),
    _opt("schedule_in_line", "true", "boolean"),
    _opt("clean_policy"),
    _opt("retain_commits", None, "int"),
    _opt("hours_retained", None, "int"),
    _opt("file_versions_retained", None, "int"),
    _opt("trigger_strategy"),
    _opt("trigger_max_commits", None, "int"),
    _opt("options"),
)


def _clean_options(a: _Args) -> dict[str, str]:
    """Hudi's cleaner keys from the arguments, then ``options`` (which wins, as in Hudi)."""
    options: dict[str, ConfigOption[Any]] = {
        "clean_policy": CS.CLEANER_POLICY,
        "retain_commits": CS.CLEANER_COMMITS_RETAINED,
        "hours_retained": CS.CLEANER_HOURS_RETAINED,
        "file_versions_retained": CS.CLEANER_FILE_VERSIONS_RETAINED,
        "trigger_strategy": CS.CLEAN_TRIGGER_STRATEGY,
        "trigger_max_commits": CS.CLEAN_MAX_COMMITS,
    }
    given = _hudi_options(a)
    out: dict[str, str] = {}
    for name, option in options.items():
        # `options` names the key (or its older name) too: it wins
        if a.is_set(name) and not option.is_set(given):
            value = a.text(name) or ""
            if a.params[name].type == "int":
                value = str(a.integer(name))
            out[option.key] = value
    return {**out, **given}


def _clean_due(writer: HudiWriter, opts: Mapping[str, str]) -> bool:
    """Hudi's NUM_COMMITS clean trigger: completed commits since the last clean's last completed
    commit reach ``hoodie.clean.max.commits`` (1)."""
    max_commits = CS.CLEAN_MAX_COMMITS.get(opts)
    timeline = writer.timeline()
    last_clean = timeline.completed().of_actions(CLEAN).last()
    since = (timeline.metadata(last_clean).get("lastCompletedCommitTimestamp") or "") if last_clean else ""
    return sum(1 for i in timeline.write_timeline() if i.requested_time > since) >= max_commits


def _clean_row(writer: HudiWriter, instant_time: str) -> dict[str, Any]:
    timeline = writer.timeline()
    instant = timeline.get(instant_time, CLEAN)
    meta = timeline.metadata(instant) if instant is not None else {}
    return {
        "start_clean_time": meta.get("startCleanTime"),
        "time_taken_in_millis": meta.get("timeTakenInMillis"),
        "total_files_deleted": meta.get("totalFilesDeleted"),
        "earliest_commit_to_retain": meta.get("earliestCommitToRetain"),
        "bootstrap_part_metadata": json.dumps(
            meta.get("bootstrapPartitionMetadata") or {}, separators=(",", ":")
        ),
        "version": meta.get("version"),
    }


def _run_clean(path: str, args: Mapping[str, str], options: Mapping[str, str]) -> pa.Table:
    """Plan and run a clean (``schedule_in_line``; else run the pending ones); the clean's
    HoodieCleanMetadata as one row, or no row when there was nothing to clean."""
    a = _Args("run_clean", RUN_CLEAN, args)
    schedule = a.boolean("schedule_in_line")
    opts = {**options, **_clean_options(a)}
    policy = (CS.CLEANER_POLICY.raw(opts) or CS.CLEANER_POLICY.default).strip().upper()
    if policy not in CLEANER_POLICIES:
        raise a.refuse("clean_policy", f"{policy!r}: hudi-md cleans by {' or '.join(CLEANER_POLICIES)}")
    strategy = (CS.CLEAN_TRIGGER_STRATEGY.raw(opts) or CS.CLEAN_TRIGGER_STRATEGY.default).strip().upper()
    if strategy != "NUM_COMMITS":
        raise a.refuse("trigger_strategy", f"{strategy!r}: the one trigger strategy is NUM_COMMITS")
    writer = HudiWriter(path, opts)
    if schedule:
        if not _clean_due(writer, opts):
            return RUN_CLEAN_SCHEMA.empty_table()
        cfg = WriteConfig.from_options(writer.options, TableConfig.load(writer.storage))
        done = services.clean(writer, cfg)
        cleans: list[str] = [done] if done else []
    else:
        pending = sorted(i.requested_time for i in writer.timeline().pending().of_actions(CLEAN))
        _execute_pending(writer)
        completed = writer.timeline().completed().of_actions(CLEAN)
        cleans = [t for t in pending if completed.contains(t)]
    rows = [_clean_row(writer, cleans[-1])] if cleans else []
    return pa.Table.from_pylist(rows, schema=RUN_CLEAN_SCHEMA)


RUN_CLEAN_SCHEMA = _schema(
    ("start_clean_time", S),
    ("time_taken_in_millis", I64),
    ("total_files_deleted", I32),
    ("earliest_commit_to_retain", S),
    ("bootstrap_part_metadata", S),
    ("version", I32),
)


# --- rollback_to_instant --------------------------------------------------------------------------

ROLLBACK_TO_INSTANT = (_req("table"), _req("instant_time"))


def _rollback_to_instant(path: str, args: Mapping[str, str], options: Mapping[str, str]) -> pa.Table:
    """Roll back the completed write ``instant_time``, which must be the latest (as Hudi 1.2
    requires: "please rollback greater commits first")."""
    a = _Args("rollback_to_instant", ROLLBACK_TO_INSTANT, args)
    instant_time = (a.text("instant_time") or "").strip()
    try:
        HudiWriter(path, options).rollback_commit(instant_time)
    except InvalidOptionError as e:
        raise a.refuse("instant_time", str(e)) from e
    return pa.Table.from_pylist([{"rollback_result": True}], schema=ROLLBACK_TO_INSTANT_SCHEMA)


ROLLBACK_TO_INSTANT_SCHEMA = _schema(("rollback_result", BOOL))


# --- validate_metadata (hudi-md's) ----------------------------------------------------------------

VALIDATE_METADATA = (_opt("table"), _opt("path"), _opt("indexes", "true", "boolean"))
VALID_MESSAGE = "OK: MDT matches storage"


def _validate_metadata(path: str, args: Mapping[str, str], options: Mapping[str, str]) -> pa.Table:
    """``hudi-md metadata validate``: the MDT against a storage listing, its record index and
    partition stats against the latest slices (``indexes``), the schema against earlier commits'.
    A row per difference (``ok`` false), or one row ``ok`` true when there is none."""
    a = _Args("validate_metadata", VALIDATE_METADATA, args)
    indexes = a.boolean("indexes")
    table = open_table(path, {**options, M.METADATA_ENABLE.key: "true"}).state
    diffs = validate_metadata_table(table, indexes=indexes)
    rows = [{"ok": False, **d.to_dict()} for d in diffs] or [{"ok": True, "message": VALID_MESSAGE}]
    return pa.Table.from_pylist(rows, schema=VALIDATE_METADATA_SCHEMA)


VALIDATE_METADATA_SCHEMA = _schema(
    ("ok", BOOL),
    ("kind", S),
    ("partition_path", S),
    ("file_name", S),
    ("mdt_size", I64),
    ("storage_size", I64),
    ("detail", S),
    ("message", S),
)


# --- the registry ---------------------------------------------------------------------------------

PROCEDURES: dict[str, Procedure] = {
    p.name: p
    for p in (
        Procedure("show_commits", SHOW_COMMITS, SHOW_COMMITS_SCHEMA, _show_commits),
        Procedure("show_commit_files", SHOW_COMMIT_FILES, SHOW_COMMIT_FILES_SCHEMA, _show_commit_files),
        Procedure("show_fsview_latest", SHOW_FSVIEW_LATEST, SHOW_FSVIEW_LATEST_SCHEMA, _show_fsview_latest),
        Procedure(
            "show_metadata_table_stats",
            SHOW_METADATA_TABLE_STATS,
            SHOW_METADATA_TABLE_STATS_SCHEMA,
            _show_metadata_table_stats,
        ),
        Procedure("run_compaction", RUN_COMPACTION, RUN_COMPACTION_SCHEMA, _run_compaction),
        Procedure("run_clustering", RUN_CLUSTERING, RUN_CLUSTERING_SCHEMA, _run_clustering),
        Procedure("show_clustering", SHOW_CLUSTERING, RUN_CLUSTERING_SCHEMA, _show_clustering),
        Procedure("run_clean", RUN_CLEAN, RUN_CLEAN_SCHEMA, _run_clean),
        Procedure(
            "rollback_to_instant", ROLLBACK_TO_INSTANT, ROLLBACK_TO_INSTANT_SCHEMA, _rollback_to_instant
        ),
        Procedure("validate_metadata", VALIDATE_METADATA, VALIDATE_METADATA_SCHEMA, _validate_metadata),
    )
}


def _procedure(name: str) -> Procedure:
    procedure = PROCEDURES.get(name.strip().lower())
    if procedure is None:
        raise InvalidOptionError(
            f"unknown procedure {name!r}; hudi-md supports: {', '.join(sorted(PROCEDURES))}"
        )
    return procedure


def procedure_schema(name: str) -> pa.Schema:
    """The output columns of procedure ``name`` (any case)."""
    return _procedure(name).schema


def call(name: str, path: str, args: Mapping[str, str], options: Mapping[str, str]) -> pa.Table:
    """Run procedure ``name`` on the table at ``path``: ``args`` keyed by Hudi's parameter names
    (``table``/``path`` may come and are ignored), ``options`` the storage and table options.
    Returns rows with :func:`procedure_schema`'s schema."""
    procedure = _procedure(name)
    known = {p.name for p in procedure.parameters} | TABLE_ARGUMENTS
    for arg in args:
        if arg not in known:
            raise InvalidOptionError(
                f"{procedure.name}: unknown argument {arg!r}; "
                f"its parameters: {procedure.describe_parameters()}"
            )
    for p in procedure.parameters:
        if p.required and p.name not in TABLE_ARGUMENTS and args.get(p.name) is None:
            raise InvalidOptionError(
                f"{procedure.name}: missing required argument {p.name!r}; "
                f"its parameters: {procedure.describe_parameters()}"
            )
    values = {k: v for k, v in args.items() if k not in TABLE_ARGUMENTS}
    return procedure.run(path, values, options)
