"""What a write through Spark's own API means for ``hudi_md.write``: the operation and options of
a ``DataFrameWriter`` save (by its save mode) or of an SQL ``INSERT`` / ``DELETE`` on a catalog
table, decided as Apache Hudi's Spark data source and Spark SQL decide them.

The shim sends the request as JSON (``DefaultSource.createRelation``; the session extension turns
SQL writes into that call); :mod:`hudi_md.spark.bridge` resolves it here against the table as it
is, then writes with :func:`hudi_md.spark.writer.write_dataframe`. The JSON's names are those of
:mod:`hudi_md.spark.protocol` (``Protocol.scala`` spells them for the shim).

Save modes (``df.write.format("hudi-md").mode(...)``):

- ``append``: ``hoodie.datasource.write.operation`` (default ``upsert``);
- ``overwrite``: ``insert_overwrite_table`` on an existing table (Apache Hudi deletes the table's
  directory and writes a new table instead, which readers see half-done and which loses its
  timeline; the rows left are the same), the configured operation on a new one (as Hudi);
- ``errorifexists`` / ``ignore``: the shim fails or skips on an existing table (``.hoodie/
  hoodie.properties`` exists); on a new one, as ``append``;
- ``delete`` and ``delete_partition`` take ``append`` only, and an existing table (as Hudi).

SQL (Hudi's ``ProvidesHoodieConfig``): the table's ``TBLPROPERTIES`` and ``OPTIONS`` (the shim
maps Spark SQL's short names, ``primaryKey``, ``preCombineField`` / ``orderingFields``,
``type`` = cow|mor, ``recordMergeMode``, to Hudi's keys), under the session's ``hoodie.*``
settings (``SET``); ``PARTITIONED BY`` names the partition fields and the catalog name the table,
for a new table, which is hive-style partitioned unless said otherwise. ``INSERT INTO``:
``hoodie.datasource.write.operation`` when set, else ``hoodie.spark.sql.insert.into.operation``
(default ``insert``, as Apache Hudi 1.x: a key the table holds already, or twice in the statement,
makes two rows). ``INSERT OVERWRITE``:
``insert_overwrite_table`` for an unpartitioned table or a static overwrite without partition
values; with static values, ``insert_overwrite`` of the existing partitions holding them (Hudi's
``hoodie.static.overwrite.partition.paths``), whether or not rows go there; in dynamic mode
(``spark.sql.sources.partitionOverwriteMode`` or ``hoodie.datasource.overwrite.mode``),
``insert_overwrite`` of the partitions written. ``DELETE FROM t WHERE ...`` deletes the matching
rows (``delete``). ``UPDATE`` and ``MERGE INTO`` write the rows they change (Spark plans them)
as an ``upsert``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hudi_md.config import check_options
from hudi_md.config import spark as SP
from hudi_md.config import table as T
from hudi_md.config import write as W
from hudi_md.config.option import ConfigOption
from hudi_md.errors import InvalidOptionError, TableExistsError, TableNotFoundError
from hudi_md.spark import protocol as P
from hudi_md.write.config import (
    DATABASE_NAME,
    HIVE_STYLE,
    PARTITION_PATH,
    PARTITIONS_TO_DELETE,
    RECORD_KEY,
    TABLE_NAME,
)

if TYPE_CHECKING:
    from hudi_md.table.state import TableState

OPERATION = W.OPERATION.key
SQL_INSERT_INTO_OPERATION = SP.SQL_INSERT_INTO_OPERATION.key
OVERWRITE_MODE = SP.OVERWRITE_MODE.key
STATIC_OVERWRITE_PARTITIONS = W.STATIC_OVERWRITE_PARTITIONS.key
DATASOURCE_TABLE_NAME = SP.DATASOURCE_TABLE_NAME.key
DELETE_OPERATIONS = ("delete", "delete_partition")
# Apache Hudi's streaming sink records each micro-batch's id under this commit metadata key.
SINK_CHECKPOINT_KEY = "_hudi_streaming_sink_checkpoint"


@dataclass(frozen=True)
class SqlCommand:
    """An SQL write on a catalog table, as the shim's analysis rule saw it."""

    command: str  # SQL_INSERT, SQL_DELETE, SQL_UPSERT (UPDATE, MERGE INTO), SQL_DROP_PARTITIONS, SQL_TRUNCATE
    overwrite: bool
    # PARTITION (...) of an INSERT: column → static value, or None for a dynamic column
    partition_spec: Mapping[str, str | None]
    overwrite_mode: str  # spark.sql.sources.partitionOverwriteMode
    table: str
    database: str
    partition_columns: tuple[str, ...]
    table_properties: Mapping[str, str]  # TBLPROPERTIES (Hudi's keys)
    session_options: Mapping[str, str]  # the session's hoodie.* settings
    # ALTER TABLE DROP PARTITION's specs (column → value), and its IF EXISTS
    partition_specs: tuple[Mapping[str, str], ...] = ()
    if_exists: bool = False


@dataclass(frozen=True)
class WriteRequest:
    """One write the shim hands over. ``options`` are the writer's options (``.option(...)``) or,
    for SQL, the catalog table's ``OPTIONS``; ``partition_columns`` are
    ``DataFrameWriter.partitionBy``'s."""

    path: str
    save_mode: str
    options: Mapping[str, str]
    partition_columns: tuple[str, ...] = ()
    sql: SqlCommand | None = None

    @classmethod
    def from_json(cls, text: str) -> WriteRequest:
        doc = json.loads(text)
        sql_doc = doc.get(P.WRITE_SQL)
        sql = None
        if sql_doc:
            sql = SqlCommand(
                command=str(sql_doc[P.SQL_COMMAND]),
                overwrite=bool(sql_doc.get(P.SQL_OVERWRITE)),
                partition_spec={
                    str(k): _opt_str(v) for k, v in (sql_doc.get(P.SQL_PARTITION_SPEC) or {}).items()
                },
                overwrite_mode=str(sql_doc.get(P.SQL_OVERWRITE_MODE) or "static"),
                table=str(sql_doc.get(P.SQL_TABLE) or ""),
                database=str(sql_doc.get(P.SQL_DATABASE) or "default"),
                partition_columns=tuple(str(c) for c in sql_doc.get(P.WRITE_PARTITION_COLUMNS) or ()),
                table_properties=_str_map(sql_doc.get(P.SQL_TABLE_PROPERTIES)),
                session_options=_str_map(sql_doc.get(P.SQL_SESSION_OPTIONS)),
                partition_specs=tuple(_str_map(spec) for spec in sql_doc.get(P.SQL_PARTITION_SPECS) or ()),
                if_exists=bool(sql_doc.get(P.SQL_IF_EXISTS)),
            )
        return cls(
            path=str(doc[P.PATH]),
            save_mode=str(doc.get(P.WRITE_SAVE_MODE) or "append").lower(),
            options=_str_map(doc.get(P.OPTIONS)),
            partition_columns=tuple(str(c) for c in doc.get(P.WRITE_PARTITION_COLUMNS) or ()),
            sql=sql,
        )


@dataclass(frozen=True)
class ResolvedWrite:
    """``operation`` None: nothing to write (save mode ``ignore`` on an existing table)."""

    operation: str | None
    options: dict[str, str] = field(default_factory=dict)


def resolve(request: WriteRequest, table: TableState | None) -> ResolvedWrite:
    """The operation and options of ``request`` on ``table`` (None: no table at the path yet)."""
    if request.sql is not None:
        return _resolve_sql(request, request.sql, table)
    opts = dict(request.options)
    check_options(opts)
    datasource_table_name = SP.DATASOURCE_TABLE_NAME.get(opts)
    if not T.TABLE_NAME.is_set(opts) and datasource_table_name:
        opts[TABLE_NAME] = datasource_table_name
    if request.partition_columns and not W.PARTITION_PATH.is_set(opts):
        opts[PARTITION_PATH] = ",".join(request.partition_columns)
    configured = _operation(opts, W.OPERATION)
    if table is not None and configured not in DELETE_OPERATIONS and _batch_committed(table, opts):
        return ResolvedWrite(None, opts)
    mode = request.save_mode
    if mode not in P.SAVE_MODES:
        raise InvalidOptionError(f"save mode must be one of {', '.join(P.SAVE_MODES)}, got {mode!r}")
    if configured in DELETE_OPERATIONS:
        if mode != P.SAVE_MODE_APPEND:
            raise InvalidOptionError(
                f"{OPERATION}={configured} works with save mode append only (as in Apache Hudi), got {mode}"
            )
        if table is None:
            raise TableNotFoundError(f"{request.path}: no Hudi table to {configured} from")
    if table is not None and mode in (P.SAVE_MODE_ERROR_IF_EXISTS, P.SAVE_MODE_IGNORE):
        if mode == P.SAVE_MODE_IGNORE:
            return ResolvedWrite(None, opts)
        raise TableExistsError(f"{request.path}: a Hudi table exists there already (save mode errorifexists)")
    if mode == P.SAVE_MODE_OVERWRITE and table is not None:
        return ResolvedWrite("insert_overwrite_table", opts)
    return ResolvedWrite(configured or "upsert", opts)


def _batch_committed(table: TableState, opts: Mapping[str, str]) -> bool:
    """Whether a streaming sink's micro-batch (``_hudi_streaming_sink_checkpoint``: ``{"<batch id>":
    "<application>-<query>"}``, as Apache Hudi's sink records it) is in the table already: the
    newest completed commit that records a sink checkpoint holds this batch id or a later one
    (Spark replays the last batch after a restart that lost its own record of the commit)."""
    incoming = opts.get(SINK_CHECKPOINT_KEY)  # commit metadata (the "_" prefix), not a hoodie key
    if not incoming:
        return False
    try:
        batch = int(next(iter(json.loads(incoming))))
    except (ValueError, TypeError, StopIteration) as e:
        raise InvalidOptionError(
            f"{SINK_CHECKPOINT_KEY} must be a JSON object {{batch id: writer}}: {e}"
        ) from None
    timeline = table.timeline
    for instant in reversed(list(timeline.write_timeline())):
        recorded = (timeline.metadata(instant).get("extraMetadata") or {}).get(SINK_CHECKPOINT_KEY)
        if recorded:
            try:
                return int(next(iter(json.loads(recorded)))) >= batch
            except (ValueError, TypeError, StopIteration):
                return False  # a checkpoint written by another tool: not this sink's
    return False


def _resolve_sql(request: WriteRequest, sql: SqlCommand, table: TableState | None) -> ResolvedWrite:
    # TBLPROPERTIES (only Hudi's keys: the catalog keeps its own entries there too), OPTIONS
    # (Hudi's keys and storage options), then the session's SET hoodie.* above both.
    opts = {k: v for k, v in sql.table_properties.items() if k.startswith("hoodie.")}
    opts.update(request.options)
    opts.update(sql.session_options)
    check_options(opts)
    if sql.command != P.SQL_INSERT and table is None:
        raise TableNotFoundError(f"{request.path}: no Hudi table to {sql.command.replace('_', ' ')}")
    if table is None:
        opts.setdefault(TABLE_NAME, sql.table)
        opts.setdefault(DATABASE_NAME, sql.database)
        if sql.partition_columns:
            opts.setdefault(PARTITION_PATH, ",".join(sql.partition_columns))
            opts.setdefault(HIVE_STYLE, "true")  # Hudi's Spark SQL default for the tables it creates
        if not W.RECORD_KEY.is_set(opts):
            raise InvalidOptionError(
                f"{sql.database}.{sql.table}: a new Hudi table needs a record key: "
                f"TBLPROPERTIES (primaryKey = '<column>') or {RECORD_KEY}"
            )
    configured = _operation(opts, W.OPERATION)
    if sql.command == P.SQL_DELETE:
        opts[OPERATION] = "delete"
        return ResolvedWrite("delete", opts)
    if sql.command == P.SQL_UPSERT:  # UPDATE, MERGE INTO: the rows they change, by record key
        opts[OPERATION] = "upsert"
        return ResolvedWrite("upsert", opts)
    if sql.command in (P.SQL_DROP_PARTITIONS, P.SQL_TRUNCATE):
        assert table is not None
        return _drop_partitions(sql, table, opts)
    if sql.overwrite:
        operation = _overwrite_operation(opts, sql, configured)
        if operation == "insert_overwrite" and table is not None:
            static = _static_partitions(sql, table, opts)
            if static is not None:
                opts[STATIC_OVERWRITE_PARTITIONS] = ",".join(static)
    elif configured:
        operation = configured
    elif SP.SQL_INSERT_INTO_OPERATION.is_set(opts):
        operation = SP.SQL_INSERT_INTO_OPERATION.get(opts)
    else:
        # Apache Hudi 1.x's default (hoodie.spark.sql.insert.into.operation=insert): keys the
        # table holds already are inserted again, not updated
        operation = "insert"
    opts[OPERATION] = operation
    return ResolvedWrite(operation, opts)


def _overwrite_operation(opts: Mapping[str, str], sql: SqlCommand, configured: str | None) -> str:
    """INSERT OVERWRITE: an overwrite operation the options name, else by the overwrite mode
    (a non-overwrite operation in the options does not turn INSERT OVERWRITE into an append)."""
    if configured in ("insert_overwrite", "insert_overwrite_table"):
        return configured
    mode = _overwrite_mode(opts, sql)
    static_values = [v for v in sql.partition_spec.values() if v is not None]
    if not sql.partition_columns or (mode == "STATIC" and not static_values):
        return "insert_overwrite_table"
    return "insert_overwrite"


def _drop_partitions(sql: SqlCommand, table: TableState, opts: dict[str, str]) -> ResolvedWrite:
    """ALTER TABLE ... DROP PARTITION: ``delete_partition`` of the partitions each spec names (as
    Apache Hudi 1.2; a spec naming none writes nothing, with or without IF EXISTS, as Hudi 1.2).
    TRUNCATE TABLE [PARTITION (...)]: the same for its spec; without one every row goes
    (``insert_overwrite_table`` of no rows; Apache Hudi deletes the table's timeline too, hudi-md
    keeps it: time travel to before the truncate still works)."""
    if sql.command == P.SQL_TRUNCATE and not sql.partition_specs:
        opts[OPERATION] = "insert_overwrite_table"
        return ResolvedWrite("insert_overwrite_table", opts)
    # a partition an earlier drop emptied is listed until its clean: not dropped again
    live = set(table.live_partitions())
    dropped: list[str] = []
    for spec in sql.partition_specs:
        matched = _matching_partitions(table, spec, "DROP PARTITION")
        dropped += [p for p in matched if p in live and p not in dropped]
    if not dropped:
        return ResolvedWrite(None, opts)  # nothing there
    opts[OPERATION] = "delete_partition"
    opts[PARTITIONS_TO_DELETE] = ",".join(dropped)
    return ResolvedWrite("delete_partition", opts)


def _static_partitions(sql: SqlCommand, table: TableState, opts: Mapping[str, str]) -> list[str] | None:
    """The existing partitions a static INSERT OVERWRITE replaces: those whose values equal the
    PARTITION (...) values (None in dynamic mode, where the partitions written are replaced)."""
    mode = _overwrite_mode(opts, sql)
    static = {k: v for k, v in sql.partition_spec.items() if v is not None}
    if mode != "STATIC" or not static:
        return None
    return _matching_partitions(table, static, "a static INSERT OVERWRITE")


def _matching_partitions(table: TableState, static: Mapping[str, str], what: str) -> list[str]:
    """The table's partitions whose values equal ``static``'s (values as the SQL gave them)."""
    from hudi_md.table.partitions import PartitionScheme, coerce

    schema = table.schema
    scheme = PartitionScheme(table.config)
    wanted: dict[str, Any] = {}
    for name, raw in static.items():
        idx = schema.get_field_index(name)
        if idx < 0:
            raise InvalidOptionError(f"PARTITION ({name} = ...): {name} is not a column of {table.uri}")
        try:
            wanted[name] = coerce(raw, schema.field(idx).type)
        except ValueError as e:
            raise InvalidOptionError(f"PARTITION ({name} = {raw!r}): not a {schema.field(idx).type}") from e
    matched = []
    for path in table.partitions():
        values = scheme.typed_values(path, schema)
        if values is None:
            raise InvalidOptionError(
                f"{table.uri}: partition path {path!r} does not carry the values of "
                f"{', '.join(static)}, so {what} cannot tell whether it is one of them"
            )
        if all(values.get(k) == v for k, v in wanted.items()):
            matched.append(path)
    return sorted(matched)


def _operation(opts: Mapping[str, str], option: ConfigOption[str]) -> str | None:
    """The operation ``option`` names (checked), None when it is not set."""
    return option.get(opts, None)


def _overwrite_mode(opts: Mapping[str, str], sql: SqlCommand) -> str:
    """INSERT OVERWRITE's mode: ``hoodie.datasource.overwrite.mode``, else Spark's
    ``spark.sql.sources.partitionOverwriteMode`` (the session's, which the shim sends)."""
    mode = SP.OVERWRITE_MODE.get(opts)
    if mode is not None:
        return mode
    mode = sql.overwrite_mode.strip().upper()
    if mode not in ("STATIC", "DYNAMIC"):
        raise InvalidOptionError(
            f"spark.sql.sources.partitionOverwriteMode must be STATIC or DYNAMIC, got {sql.overwrite_mode!r}"
        )
    return mode


def _str_map(value: object) -> dict[str, str]:
    if not value:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidOptionError(f"expected a JSON object of options, got {type(value).__name__}")
    return {str(k): str(v) for k, v in value.items() if v is not None}


def _opt_str(value: object) -> str | None:
    return None if value is None else str(value)
