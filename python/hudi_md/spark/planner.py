"""The long-lived planner process the Spark shim talks to (ARCHITECTURE.md, "Planner protocol").

Run as ``python -m hudi_md.spark.planner``. Frames on stdin/stdout: a 4-byte big-endian length,
then the payload. Each request is one JSON frame; each response is one JSON frame, and a ``plan``
response is followed by one more frame holding an Arrow IPC stream of file slices.

Requests:

* ``{"op": "ping"}`` → ``{"ok": true, "version": ...}``
* ``{"op": "schema", "path": P, "options": {...}}`` → ``{"ok": true, "data_schema": <Spark
  StructType JSON>, "partition_schema": <Spark StructType JSON>, "latest_instant": T}``
* ``{"op": "plan", "path": P, "options": {...}, "filters": <expression JSON or null>, "engine":
  true|false}`` → ``{"ok": true, "counters": {...}, "latest_instant": T, "rows": N}`` + Arrow
  stream of slice rows (:mod:`hudi_md.table.slice_rows`: ``partition_path``, ``file_id``, ``base_instant``,
  ``base_file`` (absolute URI or null), ``base_file_size``, ``log_files`` (absolute URIs),
  ``log_file_sizes``, ``total_size``), then one ``p:<column>`` per partition column (typed).
  With ``engine: true`` (the driver's shim can lend its Spark), a plan whose column_stats pruning
  goes to the engine asks for it before answering: it writes ``{"callback": "engine"}`` and reads
  one frame back, ``{"ok": true, "port": N, "secret": S, "job": ID}`` (a Py4J server of the driver
  to attach to, :mod:`hudi_md.spark.plan_engine`) or ``{"ok": false, "message": M}``.
* ``{"op": "read_slice", "path": P, "options": {...}, "slice": <one plan row as a JSON object,
  without the p: columns>, "columns": [...] or null}`` → ``{"ok": true, "rows": N}`` + Arrow
  stream of the slice's merged rows (MOR base + logs), for the executors' readers. For an
  incremental query only the rows whose ``_hoodie_commit_time`` is one of the range's commits.
* ``{"op": "incremental_range", "path": P, "options": {...}}`` → ``{"ok": true, "begin": B or
  null, "end": E or null, "latest_instant": T or null, "commit_times": [...]}``: the checked range
  of an incremental query and the commits in it (see :func:`incremental_range`).
* ``{"op": "procedure_schema", "path": P, "procedure": N}`` → ``{"ok": true, "result_schema":
  <Spark StructType JSON>, "parameters": [...]}``: a ``CALL``'s output columns and its parameters
  in Hudi's order (:mod:`hudi_md.spark.procedures`).
* ``{"op": "call", "path": P, "options": {...}, "procedure": N, "args": [{"arg_name": K, "arg_value": V},
  ...]}`` → ``{"ok": true, "rows": N}`` + Arrow stream of the procedure's rows
  (:func:`call_procedure`).
* ``{"op": "create_table", "path": P, "options": {...}, "schema": <Spark StructType JSON>}`` →
  ``{"ok": true}``: Apache Hudi's ``CREATE TABLE`` (``hoodie.properties``, no instant) for the
  shim's SQL ``CREATE TABLE ... USING hudi-md`` on a location without a table (options: Hudi's
  write keys; an existing table is left as it is, conflicting options refused).
* errors: ``{"ok": false, "error_type": ..., "message": ...}``; the process keeps serving.

The names (ops, keys, slice columns, read options) are those of :mod:`hudi_md.spark.protocol`,
which the shim's ``Protocol.scala`` mirrors.

Options understood besides ``hoodie.*`` and storage options: ``as.of.instant``,
``hoodie.datasource.query.type`` (snapshot | read_optimized | incremental),
``hoodie.datasource.read.begin.instanttime`` (incremental: required, exclusive; ``000`` = from the
first commit) / ``hoodie.datasource.read.end.instanttime`` (incremental: inclusive, default the
latest completed commit; the shim sets it to ``incremental_range``'s ``latest_instant`` when the
query is created, so the driver's plan and the executors' reads agree on the range).
Incremental queries return what ``Table.read(query_type="incremental")`` returns: the latest
version (as of the end) of the records whose ``_hoodie_commit_time`` is a commit in the range. A
``plan`` lists only the slices of file groups those commits wrote; the rows of base-only slices
are filtered by the shim (Spark's Parquet reader), those of merged slices by ``read_slice``.
A table is kept open per path and options while storage shows the same ``hoodie.properties`` and
timeline (both asked at once for each request; every instant file counts).
"""

from __future__ import annotations

import importlib.metadata
import json
import logging
import struct
import sys
import threading
import uuid
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO

import pyarrow as pa

from hudi_md.api import open_table
from hudi_md.config import check_options
from hudi_md.config import read as R
from hudi_md.errors import HudiMdError, InvalidOptionError
from hudi_md.planning.scan import TableScan, incremental_commits
from hudi_md.spark import protocol as P
from hudi_md.spark.protocol import AS_OF, BEGIN, END, QUERY_TYPE
from hudi_md.storage.hadoop_s3a import s3a_storage_options
from hudi_md.storage.redaction import ScrubbedStream, Scrubber, secret_values
from hudi_md.table.fs_view import FileSlice
from hudi_md.table.slice_rows import finish_rows, slice_from_row, slices_to_arrow
from hudi_md.table.timeline import Instant, resolve_instant

if TYPE_CHECKING:
    from hudi_md.planning.column_stats_mode import ColumnStatsEngine
    from hudi_md.table.partitions import PartitionScheme
    from hudi_md.table.state import TableState


log = logging.getLogger(__name__)

_READ_OPTIONS = {AS_OF, QUERY_TYPE, BEGIN, END, P.PATH}


def _version() -> str:
    """The installed hudi-md's version (the planner imports no more than it uses: not the package
    root, which sits above the Spark layer)."""
    try:
        return importlib.metadata.version("hudi-md")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def read_frame(stream: BinaryIO) -> bytes | None:
    header = stream.read(4)
    if not header:
        return None
    if len(header) < 4:
        raise EOFError("truncated frame header")
    (n,) = struct.unpack(">I", header)
    data = stream.read(n)
    if len(data) != n:
        raise EOFError("truncated frame")
    return data


def write_frame(stream: BinaryIO, payload: bytes) -> None:
    stream.write(struct.pack(">I", len(payload)))
    stream.write(payload)


class Planner:
    """Answers requests; keeps one opened table per (path, options) until its timeline moves.
    ``engine``: where column_stats pruning runs for plans whose request offers the driver's Spark
    (:class:`~hudi_md.spark.plan_engine.DriverEngine`)."""

    def __init__(self, engine: ColumnStatsEngine | None = None) -> None:
        self._tables: dict[str, TableState] = {}
        self._lock = threading.Lock()
        self._engine = engine

    def _table(self, path: str, options: Mapping[str, str], hadoop_conf: Mapping[str, str]) -> TableState:
        table_opts = {k: v for k, v in options.items() if k not in _READ_OPTIONS}
        key = json.dumps([path, sorted(table_opts.items()), sorted(hadoop_conf.items())])
        with self._lock:
            cached = self._tables.get(key)
        if cached is not None and cached.is_current():
            return cached
        # the state a table opened for the user holds: what planning and reading take
        fresh = open_table(path, s3a_storage_options(path, table_opts, hadoop_conf)).state
        with self._lock:
            cached = self._tables.get(key)
            if cached is not None and cached.same_state(fresh):
                return cached
            self._tables[key] = fresh
        return fresh

    def handle(self, request: Mapping[str, Any]) -> tuple[dict[str, Any], bytes | None]:
        op = request.get(P.OP)
        if op == P.OP_PING:
            return {P.OK: True, P.VERSION: _version()}, None
        path = request.get(P.PATH)
        if not path:
            raise InvalidOptionError(f"request without '{P.PATH}'")
        options = string_map(request.get(P.OPTIONS))
        # the reader's and the table's options (TBLPROPERTIES among them), as Spark passed them
        check_options(options)
        if op == P.OP_CREATE_TABLE:
            create_table(path, options, request.get(P.TABLE_SCHEMA))
            return {P.OK: True}, None
        if op == P.OP_PROCEDURE_SCHEMA:
            from hudi_md.spark.arrow_types import arrow_schema_to_spark_json
            from hudi_md.spark.procedures import PROCEDURES, procedure_schema

            name = str(request.get(P.PROCEDURE) or "")
            schema = procedure_schema(name)
            return {
                P.OK: True,
                P.RESULT_SCHEMA: json.dumps(arrow_schema_to_spark_json(schema)),
                P.PARAMETERS: [p.name for p in PROCEDURES[name.strip().lower()].parameters],
            }, None
        if op == P.OP_CALL:
            storage_options = s3a_storage_options(
                path,
                {k: v for k, v in options.items() if k not in _READ_OPTIONS},
                string_map(request.get(P.HADOOP_CONF)),
            )
            return call_procedure(path, storage_options, request)
        table = self._table(path, options, string_map(request.get(P.HADOOP_CONF)))
        latest = table.timeline.write_timeline().last()
        if op == P.OP_SCHEMA:
            # a time-travel query's columns are those of its instant (the shim sends its options)
            data, part = spark_schemas(table, _as_of(table, options))
            return {
                P.OK: True,
                P.DATA_SCHEMA: data,
                P.PARTITION_SCHEMA: part,
                P.LATEST_INSTANT: latest.requested_time if latest else None,
                P.ORDERING_FIELDS: list(table.config.ordering_fields),
                P.RECORD_KEY_FIELDS: list(table.config.record_key_fields),
            }, None
        if op == P.OP_PLAN:
            engine = self._engine if request.get(P.ENGINE) is True else None
            header, body = self._plan(table, options, request.get(P.FILTERS), latest, engine)
            known = request.get(P.KNOWN_ANSWER)
            if known and header.get(P.ANSWER) == known:
                # the shim still holds this very answer, decoded: only say so (no slices sent again)
                return {**header, P.UNCHANGED: True}, b""
            return header, body
        if op == P.OP_PARTITIONS:
            # as Apache Hudi 1.2's SHOW PARTITIONS: a dropped partition is not shown
            return {P.OK: True, P.PARTITION_PATHS: table.live_partitions()}, None
        if op == P.OP_READ_SLICE:
            return self._read_slice(table, options, request.get(P.SLICE) or {}, request.get(P.COLUMNS))
        if op == P.OP_INCREMENTAL_RANGE:
            rng = incremental_range(table, options)
            return {
                P.OK: True,
                P.BEGIN_INSTANT: rng.begin,
                P.END_INSTANT: rng.end,
                P.LATEST_INSTANT: rng.latest,
                P.COMMIT_TIMES: list(rng.commit_times),
            }, None
        raise InvalidOptionError(f"unknown planner op {op!r}")

    def _plan(
        self,
        table: TableState,
        options: Mapping[str, str],
        filters: object,
        latest: Instant | None,
        engine: ColumnStatsEngine | None = None,
    ) -> tuple[dict[str, Any], bytes]:
        from hudi_md.planning.filters import from_json
        from hudi_md.planning.planner import plan_scan

        query_type = R.QUERY_TYPE.get(options)
        # the same plan of the same table state (a new DataFrame repeating a query): its answer
        answer_key = json.dumps([filters, query_type, R.AS_OF_INSTANT.get(options)], sort_keys=True)
        answers = _ANSWERS.setdefault(table, {}) if query_type != P.QUERY_INCREMENTAL else {}
        if answer_key in answers:
            return answers[answer_key]
        expr = from_json(filters) if filters else None
        if query_type == P.QUERY_INCREMENTAL:
            rng = incremental_range(table, options)
            slices, _ = TableScan(table, filters=expr).incremental_plan(rng.begin, rng.end)
            counters = {P.COUNTER_COMMITS_IN_RANGE: len(rng.commit_times), P.COUNTER_FILE_SLICES: len(slices)}
            rows = slices_to_arrow(slices)
        else:
            as_of = _as_of(table, options)
            plan = plan_scan(
                table,
                expr,
                as_of=as_of,
                read_optimized=query_type == P.QUERY_READ_OPTIMIZED,
                column_stats_engine=engine,
            )
            rows = plan.rows
            counters = dict(plan.counters)
        counters[P.COUNTER_STORAGE_REQUESTS] = table.storage_stats()["requests"]
        batch = plan_rows(table, rows)
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, batch.schema) as writer:
            writer.write_table(batch)
        header = {
            P.OK: True,
            P.COUNTERS: counters,
            P.LATEST_INSTANT: latest.requested_time if latest else None,
            P.ROWS: batch.num_rows,
            P.ANSWER: uuid.uuid4().hex,
        }
        answer = (header, sink.getvalue().to_pybytes())
        if len(answers) >= _ANSWERS_PER_TABLE:
            answers.pop(next(iter(answers)))
        answers[answer_key] = answer
        return answer

    def _read_slice(
        self,
        table: TableState,
        options: Mapping[str, str],
        desc: Mapping[str, Any],
        columns: Sequence[str] | None,
    ) -> tuple[dict[str, Any], bytes]:
        """Merge one MOR file slice (base + logs) and return its rows as an Arrow stream."""
        from hudi_md.read.merge import MergeSpec
        from hudi_md.read.slice_reader import instant_validator, read_file_slice

        storage = table.storage
        fs = slice_from_row(desc, uri_of=storage.uri)
        if R.QUERY_TYPE.get(options) == P.QUERY_INCREMENTAL:
            rows = _read_incremental_slice(table, fs, incremental_range(table, options), columns)
        else:
            as_of = _as_of(table, options)
            rows = read_file_slice(
                storage,
                fs,
                schema=table.schema_as_of(as_of),
                merge=MergeSpec.from_config(table.config),
                is_valid_instant=instant_validator(table.timeline, as_of),
                columns=list(columns) if columns else None,
            )
        rows = rows.cast(_sparkable(rows.schema))
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, rows.schema) as writer:
            writer.write_table(rows)
        return {P.OK: True, P.ROWS: rows.num_rows}, sink.getvalue().to_pybytes()


def _as_of(table: TableState, options: Mapping[str, str]) -> str | None:
    """The instant of a time-travel query (``as.of.instant``), None for a read of the latest."""
    as_of = R.AS_OF_INSTANT.get(options)
    return resolve_instant(as_of) if as_of else None


def create_table(path: str, options: Mapping[str, str], spark_schema: object) -> None:
    """``CREATE TABLE``: the table's ``hoodie.properties`` from its columns (Spark JSON)."""
    from hudi_md.spark.arrow_types import spark_schema_to_arrow
    from hudi_md.write.writer import HudiWriter

    if not isinstance(spark_schema, dict):
        raise InvalidOptionError(f"{P.OP_CREATE_TABLE} needs '{P.TABLE_SCHEMA}', a Spark StructType as JSON")
    HudiWriter(path, s3a_storage_options(path, options)).create(spark_schema_to_arrow(spark_schema))


# --- incremental queries ---------------------------------------------------------------------------


def call_procedure(
    path: str, storage_options: Mapping[str, str], request: Mapping[str, Any]
) -> tuple[dict[str, Any], bytes]:
    """A ``CALL``: the procedure's rows as an Arrow stream of the types Spark reads. The shim sends
    the arguments by name (it bound those given by position to ``procedure_schema``'s parameters
    and resolved the table to ``path``)."""
    from hudi_md.spark.arrow_types import arrow_schema_to_spark_json, spark_schema_to_arrow
    from hudi_md.spark.procedures import call, procedure_schema

    name = str(request.get(P.PROCEDURE) or "")
    schema = procedure_schema(name)
    args: dict[str, str] = {}
    for arg in request.get(P.PROCEDURE_ARGS) or ():
        key = arg.get(P.ARG_NAME)
        if not key:
            raise InvalidOptionError(f"CALL {name}: an argument without a name: {arg!r}")
        args[str(key)] = str(arg.get(P.ARG_VALUE))
    rows = call(name, path, args, storage_options)
    spark_types = spark_schema_to_arrow(arrow_schema_to_spark_json(schema))
    rows = rows.select(schema.names).cast(spark_types)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, rows.schema) as writer:
        writer.write_table(rows)
    return {P.OK: True, P.ROWS: rows.num_rows}, sink.getvalue().to_pybytes()


@dataclass(frozen=True)
class IncrementalRange:
    """The checked options of an incremental query.

    ``begin`` (exclusive; None = from the first commit) and ``end`` (inclusive; None = the latest)
    are what ``Table.read(query_type="incremental", start=begin, end=end)`` takes: completion times
    on tables of version 8 and later, requested times on version 6 (as Apache Hudi 1.2:
    :func:`~hudi_md.planning.scan.incremental_commits`); ``latest`` is the latest completed commit's
    time in the same terms (the end an open range is pinned to); ``commit_times`` the instant times
    of the completed commits in ``(begin, end]``: a row belongs to the query when its
    ``_hoodie_commit_time`` is one of them (the set ``TableScan.incremental`` filters on);
    ``as_of`` the instant the range's slices are read as of.
    """

    begin: str | None
    end: str | None
    latest: str | None
    commit_times: tuple[str, ...]
    as_of: str | None


def incremental_range(table: TableState, options: Mapping[str, str]) -> IncrementalRange:
    """The incremental range of a request's options; :class:`InvalidOptionError` naming the option
    when the begin instant is missing or malformed, the end is malformed or before the begin, or
    ``as.of.instant`` is set too (Hudi's names and rules)."""
    raw_begin = (R.BEGIN_INSTANT.get(options) or "").strip()
    if not raw_begin:
        raise InvalidOptionError(
            f"{BEGIN} is required when {QUERY_TYPE}=incremental: the instant after which commits are "
            "returned (exclusive), e.g. 20240418173550988, or 000 for every commit"
        )
    if R.AS_OF_INSTANT.is_set(options):
        raise InvalidOptionError(f"{AS_OF} cannot be combined with {QUERY_TYPE}=incremental; use {END}")
    # Hudi's examples start incremental pulls at "000" (before any instant); so does this.
    begin = None if set(raw_begin) == {"0"} else _instant_option(table, BEGIN, raw_begin)
    raw_end = R.END_INSTANT.get(options)
    end = _instant_option(table, END, raw_end) if raw_end else None
    if begin is not None and end is not None and end < begin:
        raise InvalidOptionError(f"{END} {end} is before {BEGIN} {begin}")
    commits = incremental_commits(table, begin, end)
    writes = table.timeline.write_timeline()
    if table.config.table_version < 8:
        latest = max((i.requested_time for i in writes), default=None)
    else:
        latest = max((i.completion_time or i.requested_time for i in writes), default=None)
    return IncrementalRange(begin, end, latest, tuple(commits.times), commits.as_of)


def _instant_option(table: TableState, key: str, raw: str) -> str:
    try:
        resolved = resolve_instant(raw)
    except InvalidOptionError:
        resolved = None
    if resolved is None:
        raise InvalidOptionError(f"{key} must be an instant time like 20240418173550988, got {raw!r}")
    return resolved


def _read_incremental_slice(
    table: TableState, fs: FileSlice, rng: IncrementalRange, columns: Sequence[str] | None
) -> pa.Table:
    """One merged slice of an incremental query, read as ``TableScan.incremental`` reads it."""
    scan = TableScan(table, columns=list(columns) if columns else None)
    return scan.read_commits([fs], rng.commit_times, rng.as_of)


# --- schemas and slices -----------------------------------------------------------------------------


def partition_arrow_schema(table: TableState, schema: pa.Schema | None = None) -> pa.Schema:
    """Spark partition columns: the table's, when its paths carry their values exactly (identity
    key generators; types read back from paths, so not timestamps, whose paths Hudi writes in two
    forms). Other columns stay ordinary data columns read from the files. Their types are those
    of ``schema`` (default: the table's)."""
    from hudi_md.table.partitions import PartitionScheme, parses_from_path

    scheme = PartitionScheme(table.config)
    if not scheme.is_identity or not _paths_carry_values(table, scheme):
        return pa.schema([])
    schema = table.schema if schema is None else schema
    fields = []
    for name in table.partition_fields:
        idx = schema.get_field_index(name)
        field = schema.field(idx) if idx >= 0 else pa.field(name, pa.string())
        if idx < 0 or parses_from_path(field.type):
            fields.append(field)
    return pa.schema(fields)


# Plan answers per opened table state (gone with it), by filters and query options: a DataFrame
# repeating a query on an unchanged table gets the answer already made (slices as Arrow).
Answer = tuple[dict[str, Any], bytes]
_ANSWERS: weakref.WeakKeyDictionary[Any, dict[str, Answer]] = weakref.WeakKeyDictionary()
_ANSWERS_PER_TABLE = 16

# Per opened table (the planner keeps one per timeline state): parsing every partition path costs
# ~0.1 s at 100k partitions, and both the schema and every plan ask.
_PATHS_CARRY_VALUES: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()


def _paths_carry_values(table: TableState, scheme: PartitionScheme) -> bool:
    """False when some partition value holds `/` without URL encoding (Hudi writes it as more
    directory levels, e.g. its quickstart's `americas/brazil/sao_paulo`): then the files, not the
    paths, carry the values."""
    if scheme.url_encoded:
        return True
    known = _PATHS_CARRY_VALUES.get(table)
    if known is None:
        known = scheme.all_parse(table.partitions())
        _PATHS_CARRY_VALUES[table] = known
    return known


def spark_schemas(table: TableState, as_of: str | None = None) -> tuple[str, str]:
    """(data schema, partition schema) as Spark StructType JSON (partition columns not in the
    data), as of the instant ``as_of`` (None: the latest; see ``TableState.schema_as_of``)."""
    from hudi_md.spark.arrow_types import arrow_schema_to_spark_json

    schema = table.schema_as_of(as_of)
    parts = partition_arrow_schema(table, schema)
    data = pa.schema([f for f in schema if f.name not in parts.names])

    def spark_json(s: pa.Schema) -> str:
        return json.dumps(arrow_schema_to_spark_json(_sparkable(s)), separators=(",", ":"), sort_keys=True)

    return spark_json(data), spark_json(parts)


def _sparkable(schema: pa.Schema) -> pa.Schema:
    """Arrow types Spark's converter accepts (tz-aware timestamps become UTC microseconds)."""
    out = []
    for f in schema:
        t = f.type
        if pa.types.is_timestamp(t):
            t = pa.timestamp("us", tz="UTC") if t.tz else pa.timestamp("us")
        out.append(pa.field(f.name, t, nullable=True))
    return pa.schema(out)


def plan_rows(table: TableState, rows: pa.Table) -> pa.Table:
    """A ``plan`` answer's rows: the slice rows (table-relative paths, ``slice_rows``) with
    absolute URIs, plus the typed values of :func:`partition_arrow_schema`'s columns
    (``p:<column>``)."""
    from hudi_md.table.partitions import PartitionScheme

    scheme = PartitionScheme(table.config)
    pschema = partition_arrow_schema(table)

    def values(partition_path: str) -> Mapping[str, Any]:
        found = scheme.typed_values(partition_path, pschema)
        if found is None:
            raise InvalidOptionError(
                f"{table.uri}: partition path {partition_path!r} does not carry the values of "
                f"{', '.join(pschema.names)} (key generator {table.config.keygen})"
            )
        return found

    return finish_rows(
        rows,
        uri=table.storage.uri,
        uri_prefix=table.storage.uri_prefix,
        partition_schema=pschema,
        partition_values=values,
        partition_value_columns=lambda paths: scheme.typed_value_columns(paths, pschema),
    )


def string_map(value: object) -> dict[str, str]:
    """A request's options or Hadoop configuration as strings (absent: empty)."""
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, Mapping) else {}


# Every secret a request carried (credentials in its options or the session's Hadoop
# configuration): replaced in error messages and in everything the process writes to stderr,
# which the shim copies into Spark's log.
SCRUBBER = Scrubber()


def serve(stdin: BinaryIO, stdout: BinaryIO) -> None:
    from hudi_md.spark.plan_engine import DriverEngine

    def ask(message: Mapping[str, Any]) -> Mapping[str, Any]:
        """A callback in the middle of a request: one frame out, the shim's one frame back."""
        write_frame(stdout, json.dumps(message).encode("utf-8"))
        stdout.flush()
        frame = read_frame(stdin)
        if frame is None:
            raise EOFError("the shim closed the planner's input during a callback")
        reply = json.loads(frame)
        if not isinstance(reply, Mapping):
            raise ValueError(f"callback answer is not a JSON object: {frame[:80]!r}")
        return reply

    planner = Planner(DriverEngine(ask))
    while True:
        frame = read_frame(stdin)
        if frame is None:
            return
        try:
            request = json.loads(frame)
            if isinstance(request, Mapping):
                SCRUBBER.remember(
                    secret_values(string_map(request.get(P.OPTIONS)))
                    | secret_values(string_map(request.get(P.HADOOP_CONF)))
                )
            header, body = planner.handle(request)
        except (HudiMdError, ValueError, OSError, KeyError) as e:
            message = SCRUBBER.scrub(str(e))
            log.warning("planner request failed: %s", message)
            header, body = {P.OK: False, P.ERROR_TYPE: type(e).__name__, P.MESSAGE: message}, None
        write_frame(stdout, json.dumps(header, default=str).encode("utf-8"))
        if body is not None:
            write_frame(stdout, body)
        stdout.flush()


def configure_logging() -> None:
    """The planner's log goes to its stderr, which the shim copies into Spark's driver log: lines
    starting with :data:`~hudi_md.spark.protocol.LOG_WARNING_PREFIX` or ``LOG_ERROR_PREFIX`` (Python's
    level names) at WARN there, so that Spark's shells (which show WARN) show them, e.g. an option
    the user mistyped (:func:`hudi_md.config.check_options`); the rest at INFO."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(levelname)s:%(name)s:%(message)s")
    logging.captureWarnings(True)


def main() -> None:
    out = sys.stdout.buffer
    sys.stderr = ScrubbedStream(sys.stderr, SCRUBBER)
    sys.stdout = sys.stderr  # nothing but frames may reach the shim's pipe
    configure_logging()
    serve(sys.stdin.buffer, out)


if __name__ == "__main__":
    main()
