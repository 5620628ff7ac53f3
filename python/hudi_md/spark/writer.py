"""``hudi_md.write(df, ...)`` on PySpark: the same commit protocol as the local writer, with keys,
tagging and file writing done by Python workers on the executors (``mapInArrow``). The driver only
sees small aggregates (partitions touched, row counts, file-group task specs) and the write
statistics that come back.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from hudi_md.errors import HudiMdError, RecordMergeError, SchemaEvolutionError
from hudi_md.spark import protocol as P
from hudi_md.spark.reader import session_s3a_conf
from hudi_md.storage.hadoop_s3a import is_s3_path, s3a_storage_options
from hudi_md.write.config import WriteConfig
from hudi_md.write.evolution import WriterSchema
from hudi_md.write.file_groups import (
    META_COLUMNS,
    OP_COLUMN,
    OP_DELETE_RECORD,
    FileGroupTask,
    TaskResult,
    WriteContext,
    new_file_id,
)
from hudi_md.write.tagging import overwrite_scope, records_per_file, replaced_file_groups, update_task
from hudi_md.write.writer import CommitResult, HudiWriter, WriteSession

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from hudi_md.table.fs_view import FileSlice

FID_COLUMN = "_hoodie_md_fid"
SEQ_COLUMN = "_hoodie_md_seq"
# A boolean column of rows an upsert deletes by key instead (MERGE INTO's DELETE clauses; the
# session extension adds it), not a column of the table.
DELETE_FLAG = P.WRITE_DELETE_FLAG
KEY, PART = "_hoodie_record_key", "_hoodie_partition_path"
# the rows' own record keys, kept for a table whose keys are generated (an UPDATE/MERGE/DELETE
# rewrites rows by the keys they have)
GIVEN_KEY = "_hoodie_md_given_key"


def _add_keys(
    cfg: WriteConfig,
    operation: str,
    schema: WriterSchema,
    table: str,
    deletes: bool = False,
    instant: str = "",
):
    """Each batch as the table takes it (the writer schema's columns, values converted), with its
    record keys, partition paths and op codes (:func:`hudi_md.write.tagging.operation_codes`);
    ``deletes``: rows whose :data:`DELETE_FLAG` is true are deletes. A table without record key
    fields: the rows' :data:`GIVEN_KEY` where they have one, else keys generated for ``instant``
    by task and row (as Apache Hudi numbers them)."""
    import pyarrow.compute as pc
    from pyspark import TaskContext

    from hudi_md.write import keygen
    from hudi_md.write.tagging import operation_codes, record_keys_of

    def fn(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        context = TaskContext.get()
        task = context.partitionId() if context is not None else 0
        row = 0
        for b in batches:
            t = pa.Table.from_batches([b])
            flags = t.column(DELETE_FLAG) if deletes else None
            if flags is not None:
                t = t.drop_columns([DELETE_FLAG])
            given = t.column(GIVEN_KEY) if GIVEN_KEY in t.column_names else None
            t = schema.conform(t.drop_columns([GIVEN_KEY]) if given is not None else t, table)
            keys = record_keys_of(cfg, t, operation, instant, task, row, given)
            row += t.num_rows
            parts = keygen.partition_paths(
                t, cfg.partition_fields, hive_style=cfg.hive_style, url_encode=cfg.url_encode
            )
            t = t.append_column(KEY, keys).append_column(PART, parts)
            codes = operation_codes(cfg, t, operation)
            if flags is not None:
                # as Apache Hudi 1.2 runs a MERGE INTO's DELETE: on COPY_ON_WRITE a delete by key,
                # on MERGE_ON_READ a delete ordered like a record (by the source row's ordering
                # value: an older one leaves the stored row)
                delete = pa.scalar(OP_DELETE_RECORD if cfg.is_mor else "D")
                codes = pc.if_else(pc.fill_null(flags, False), delete, codes)
            t = t.append_column(OP_COLUMN, codes)
            yield from t.to_batches()

    return fn


def _dedupe(cfg: WriteConfig):
    """The records of each Spark partition merged by key (partitions hash on partition path and
    key), by the same rule as the local writer's (:func:`hudi_md.read.merge.dedupe`); ``_seq``
    is the records' order in the written DataFrame."""
    merge = cfg.merge_spec()

    def fn(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from hudi_md.read.merge import dedupe

        collected = [b for b in batches if b.num_rows]
        if not collected:
            return
        t = dedupe(pa.Table.from_batches(collected), [PART, KEY], merge, order=SEQ_COLUMN)
        yield from t.drop_columns([SEQ_COLUMN]).to_batches()

    return fn


_TYPED_ERRORS = (
    "SchemaEvolutionError",
    "MissingSchemaFieldError",
    "IncompatibleSchemaChangeError",
    "RecordMergeError",
)


def _typed_error(e: BaseException) -> HudiMdError | None:
    """The hudi-md error an executor raised, from the text Spark brings back (a Python worker's
    traceback inside a Py4J or Spark exception); None when it is not one of the record errors."""
    import re

    from hudi_md import errors

    text = str(e)
    for name in _TYPED_ERRORS:
        m = re.search(rf"hudi_md\.errors\.{name}: (.*)", text)
        if m:
            cls = getattr(errors, name)
            message = m.group(1).strip()
            if cls in (errors.MissingSchemaFieldError, errors.IncompatibleSchemaChangeError):
                cls = errors.SchemaEvolutionError
            if cls is errors.RecordMergeError:
                return errors.RecordMergeError(message)
            return cls(message)
    return None


_GROUPS = pa.schema([("p", pa.string()), ("fid", pa.string())])


def _lookup_record_index(uri: str, storage_options: dict[str, Any], live: frozenset[tuple[str, str]]):
    """Tag keys with their record-index file group, only when that group is live: an entry left
    behind for a replaced or deleted group must not route an update into it (the row would be
    written as a slice no reader sees)."""

    def fn(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from hudi_md.api import open_table

        table = open_table(uri, {**storage_options, "hoodie.metadata.enable": "true"})
        mdt = table.metadata_table
        groups = pa.table({"p": [p for p, _ in live], "fid": [f for _, f in live]}, schema=_GROUPS)
        for b in batches:
            keys = b.column(b.schema.get_field_index(KEY)).cast(pa.string())
            parts = b.column(b.schema.get_field_index(PART)).cast(pa.string())
            found = mdt.record_index.table(keys).select(["record_key", "partition_path", "file_id"])
            found = found.rename_columns(["k", "p", "fid"]).join(groups, ["p", "fid"], join_type="left semi")
            probe = pa.table({"k": keys, "p": parts, "i": pa.array(np.arange(b.num_rows))})
            hits = probe.join(found, ["k", "p"], join_type="inner")
            fids = np.full(b.num_rows, None, object)
            fids[hits["i"].to_numpy()] = np.asarray(hits["fid"].to_pylist(), object)
            yield pa.RecordBatch.from_arrays(
                [*b.columns, pa.array(fids, pa.string())], [*b.schema.names, FID_COLUMN]
            )

    return fn


def _read_keys(uri: str, storage_options: dict[str, Any], *, routing: bool = False):
    """Executors read the keys of the listed file slices: the live ones, or (``routing``:
    tagging without a record index) the keys updates route to them
    (:meth:`~hudi_md.read.slice_reader.SliceRowReader.routing_keys`)."""

    def fn(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from hudi_md.api import open_table
        from hudi_md.read.slice_reader import SliceRowReader

        table = open_table(uri, storage_options)
        view = table.file_system_view()
        reader = SliceRowReader(table)
        for b in batches:
            for p, fid in zip(b.column(0).to_pylist(), b.column(1).to_pylist(), strict=True):
                for s in view.latest_file_slices([p]):
                    if s.file_id != fid:
                        continue
                    keys = reader.routing_keys(s) if routing else reader.keys(s)
                    n = len(keys)
                    yield pa.RecordBatch.from_arrays(
                        [
                            pa.array([p] * n, pa.string()),
                            keys,
                            pa.array([fid] * n, pa.string()),
                        ],
                        ["_p", "_k", FID_COLUMN],
                    )

    return fn


def _assign_inserts(new_fids: Mapping[str, list[str]]):
    import zlib

    def fn(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            fids = b.column(b.schema.get_field_index(FID_COLUMN)).to_pylist()
            keys = b.column(b.schema.get_field_index(KEY)).to_pylist()
            parts = b.column(b.schema.get_field_index(PART)).to_pylist()
            ops = b.column(b.schema.get_field_index(OP_COLUMN)).to_pylist()
            out = []
            for fid, k, p, op in zip(fids, keys, parts, ops, strict=True):
                if fid is None and op == "U":
                    choices = new_fids[p]
                    fid = choices[zlib.crc32(k.encode("utf-8")) % len(choices)]
                out.append(fid)
            i = b.schema.get_field_index(FID_COLUMN)
            cols = list(b.columns)
            cols[i] = pa.array(out, pa.string())
            yield pa.RecordBatch.from_arrays(cols, b.schema.names)

    return fn


@dataclass(frozen=True)
class _Measure:
    """What the executors measured of the keyed rows, in one job: the partitions written and
    their rows, and the rows' average in-memory (Arrow) size (the local writer's sizing rule)."""

    rows_by_partition: dict[str, int]
    rows: int
    average_row_bytes: int


def _measure(keyed: Any) -> _Measure:
    def measure(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            if not b.num_rows:
                continue
            counts = pa.Table.from_batches([b]).group_by(PART).aggregate([([], "count_all")]).combine_chunks()
            size = [0] * counts.num_rows
            size[0] = b.nbytes  # the batch's size once, on its first partition's row
            columns = [counts.column(PART).chunk(0), counts.column("count_all").chunk(0)]
            yield pa.RecordBatch.from_arrays([*columns, pa.array(size, pa.int64())], ["p", "rows", "bytes"])

    from pyspark.sql import functions as F

    found = (
        keyed.mapInArrow(measure, "p string, rows long, bytes long")
        .groupBy("p")
        .agg(F.sum("rows").alias("rows"), F.sum("bytes").alias("bytes"))
        .collect()
    )
    rows_by_partition = {r[0]: int(r[1]) for r in found}
    rows = sum(rows_by_partition.values())
    size = sum(int(r[2]) for r in found)
    return _Measure(rows_by_partition, rows, size // max(1, rows))


def _write_groups(ctx: WriteContext, tasks: Mapping[tuple[str, str], FileGroupTask]):
    def fn(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow.compute as pc

        from hudi_md.write.file_groups import execute

        collected = [b for b in batches if b.num_rows]
        if not collected:
            return
        t = pa.Table.from_batches(collected)
        groups = t.group_by([PART, FID_COLUMN]).aggregate([])
        out = []
        for p, fid in zip(
            groups.column(PART).to_pylist(), groups.column(FID_COLUMN).to_pylist(), strict=True
        ):
            if fid is None:
                continue  # deletes of keys that are not in the table
            mask = pc.and_(pc.equal(t.column(PART), p), pc.equal(t.column(FID_COLUMN), fid))
            rows = t.filter(mask).drop_columns([FID_COLUMN])
            task = tasks[(p, fid)]
            out.append(execute(ctx, task, rows, 0).to_json())
        yield pa.RecordBatch.from_arrays([pa.array(out, pa.string())], ["result"])

    return fn


def write_dataframe(df: DataFrame, uri: str, *, operation: str, options: Mapping[str, Any] | None) -> str:
    from hudi_md.errors import InvalidOptionError
    from hudi_md.spark.arrow_types import spark_schema_to_arrow
    from hudi_md.write.config import OPERATIONS

    if operation not in OPERATIONS:
        raise InvalidOptionError(f"operation must be one of {', '.join(OPERATIONS)}, got {operation!r}")
    # Hudi's meta columns of the input (rows read from a Hudi table) are the writer's to fill, as
    # Apache Hudi drops them.
    if is_s3_path(uri):  # the session's S3A settings, as Spark's own writers would use them
        options = s3a_storage_options(uri, dict(options or {}), session_s3a_conf(df.sparkSession))
    writer = HudiWriter(uri, options)
    cfg = WriteConfig.from_options(writer.options, writer.config())
    meta = [c for c in df.columns if c in META_COLUMNS]
    if KEY in meta and not cfg.record_key_fields:
        # generated keys: the rows' own are how an UPDATE, DELETE or MERGE INTO finds them
        df = df.withColumnRenamed(KEY, GIVEN_KEY)
        meta.remove(KEY)
    if meta:
        df = df.drop(*meta)
    deletes = DELETE_FLAG in df.columns  # a MERGE INTO's rows: some of them deletes by key
    if deletes and operation != "upsert":
        raise InvalidOptionError(f"rows flagged {DELETE_FLAG} are written by an upsert, not {operation}")
    arrow_schema = spark_schema_to_arrow(df.drop(DELETE_FLAG, GIVEN_KEY).schema)
    storage_options = dict(writer.storage_options)
    # Before anything is written: the writer schema, and the records as the table takes them
    # (converted, keyed, merged by key; one Spark job measures them, so a value or in-batch merge
    # the table refuses fails here).
    schema = writer.writer_schema_before_recovery(arrow_schema, operation, cfg)
    # generated keys carry the instant: keyed once it exists
    early = schema is not None and bool(cfg.record_key_fields)
    keyed, measured = _keyed(df, cfg, operation, schema, uri, deletes) if early else (None, None)
    # The same protocol as HudiWriter.write: under the table lock the instant starts (a single
    # writer keeps the lock to the end; under optimistic concurrency control it is taken again
    # only to commit, by finish_commit, which checks for conflicts).
    session = writer.start_write(operation, arrow_schema)
    try:
        if keyed is None or session.writer_schema != schema:  # another writer changed it meanwhile
            if keyed is not None:
                keyed.unpersist()
            keyed, measured = _keyed(
                df, session.cfg, operation, session.writer_schema, uri, deletes, session.instant
            )
        commit = _write_started(df, keyed, measured, writer, session, uri, storage_options, arrow_schema)
    except BaseException as e:
        typed = _typed_error(e) if not isinstance(e, HudiMdError) else None
        if isinstance(e, (SchemaEvolutionError, RecordMergeError)) or typed is not None:
            writer.refuse_write(session)
            if typed is not None:
                raise typed from None
            raise
        writer.abandon_write(session)
        raise
    writer.end_write(session, commit)
    return commit.instant


def _keyed(
    df: DataFrame,
    cfg: WriteConfig,
    operation: str,
    schema: WriterSchema,
    uri: str,
    deletes: bool = False,
    instant: str = "",
) -> tuple[Any, _Measure]:
    """The written DataFrame as the table takes it (cached), measured; a record the table
    refuses raises its typed error. ``instant``: the write's, for generated keys."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    from hudi_md.spark.arrow_types import arrow_schema_to_spark_json
    from hudi_md.write.tagging import needs_dedupe

    data_type = (
        StructType.fromJson(arrow_schema_to_spark_json(schema.schema))
        if schema.keeps_records
        else df.drop(GIVEN_KEY).schema
    )
    keyed_schema = StructType(
        [*data_type.fields, *(StructField(c, StringType()) for c in (KEY, PART, OP_COLUMN))]
    )
    keyed = df.mapInArrow(_add_keys(cfg, operation, schema, uri, deletes, instant), keyed_schema)
    if needs_dedupe(cfg, operation):
        with_seq = keyed.withColumn(SEQ_COLUMN, F.monotonically_increasing_id())
        keyed = with_seq.repartition(PART, KEY).mapInArrow(_dedupe(cfg), keyed_schema)
    if operation not in ("upsert", "delete", "bulk_insert"):
        keyed = keyed.where(F.col(OP_COLUMN) != OP_DELETE_RECORD)  # as the local writer: none written
    keyed = keyed.persist()
    try:
        measured = _measure(keyed)
    except BaseException as e:
        keyed.unpersist()
        typed = _typed_error(e)
        if typed is not None:
            raise typed from None
        raise
    return keyed, measured


def _write_started(
    df: DataFrame,
    keyed: Any,
    measured: _Measure,
    writer: HudiWriter,
    session: WriteSession,
    uri: str,
    storage_options: dict[str, Any],
    arrow_schema: pa.Schema,
) -> CommitResult:
    """Tagging, file-group tasks, then the files, on the executors; the commit (MDT
    deltacommit, completion) on the driver."""
    cfg, operation = session.cfg, session.operation
    partitions = sorted(measured.rows_by_partition)
    has_commits = bool(session.timeline.write_timeline())
    state = writer.state()
    latest = (
        {(s.partition_path, s.file_id): s for s in state.file_system_view().latest_file_slices(partitions)}
        if has_commits
        else {}
    )
    tagged, looked_up = _tag(keyed, session, uri, storage_options, latest, has_commits)
    per_file = records_per_file(cfg, measured.average_row_bytes)
    assigned, tasks = _assign_file_groups(tagged, looked_up, latest, per_file, measured, operation, keyed)
    rows = measured.rows if operation == "delete_partition" else len(partitions)
    scope = overwrite_scope(cfg, operation, partitions, rows)
    replaced = replaced_file_groups(state, operation, scope) if has_commits else {}
    writer.prepare_files(session, list(tasks.values()))
    ctx = writer.write_context(session)
    n = max(1, len(tasks))
    results_df = assigned.repartition(n, PART, FID_COLUMN).mapInArrow(
        _write_groups(ctx, tasks), "result string"
    )
    types = {f.name: f.type for f in session.writer_schema.schema} or {f.name: f.type for f in arrow_schema}
    results = [TaskResult.from_json(r[0], types) for r in results_df.collect()] if tasks else []
    for cached in (keyed, tagged, assigned):
        cached.unpersist()
    replaced_keys = None
    if replaced and K_RECORD_INDEX in session.config.metadata_partitions:
        # The record-index deletes of the replaced groups' keys: read on the executors.
        groups = [(p, fid) for p, fids in replaced.items() for fid in fids]
        replaced_keys = [
            r[0]
            for r in df.sparkSession.createDataFrame(groups, "p string, f string")
            .repartition(max(1, len(groups)))
            .mapInArrow(_read_keys(uri, storage_options), f"_p string, _k string, {FID_COLUMN} string")
            .select("_k")
            .collect()
        ]
    return writer.finish_commit(session, results, replaced, replaced_keys)


def _tag(
    keyed: DataFrame,
    session: WriteSession,
    uri: str,
    storage_options: dict[str, Any],
    latest: Mapping[tuple[str, str], FileSlice],
    has_commits: bool,
) -> tuple[DataFrame, bool]:
    """The keyed rows with the file group each key already lives in (null: a new key), by the
    record index or by joining the keys of the latest slices, read on the executors; and whether
    any key was looked up (False: every key is new)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    if not (session.operation in ("upsert", "delete") and has_commits):
        return keyed.withColumn(FID_COLUMN, F.lit(None).cast("string")), False
    if K_RECORD_INDEX in session.config.metadata_partitions:
        tagged_schema = StructType([*keyed.schema.fields, StructField(FID_COLUMN, StringType())])
        lookup = _lookup_record_index(uri, storage_options, frozenset(latest))
        return keyed.mapInArrow(lookup, tagged_schema), True
    slices = keyed.sparkSession.createDataFrame([(p, f) for p, f in latest], "p string, f string")
    existing_keys = slices.repartition(max(1, len(latest))).mapInArrow(
        _read_keys(uri, storage_options, routing=True), f"_p string, _k string, {FID_COLUMN} string"
    )
    existing_keys = existing_keys.dropDuplicates(["_p", "_k"])
    joined = keyed.join(
        existing_keys,
        (keyed[PART] == existing_keys["_p"]) & (keyed[KEY] == existing_keys["_k"]),
        "left",
    ).drop("_p", "_k")
    return joined, True


def _assign_file_groups(
    tagged: DataFrame,
    looked_up: bool,
    latest: Mapping[tuple[str, str], FileSlice],
    per_file: int,
    measured: _Measure,
    operation: str,
    keyed: DataFrame,
) -> tuple[DataFrame, dict[tuple[str, str], FileGroupTask]]:
    """New keys spread over new file groups of ``per_file`` records each; the task of every file
    group written (an update of its latest slice, or an insert).

    The groups come from one count of the tagged rows by partition, file group and operation (no
    count at all when no key was looked up: every row is then a new key of its partition). Where a
    partition's new keys need more than one new group, which of those the keys' hashes leave
    empty is only known from the rows: then the groups are found by a pass over the assigned ones."""
    from pyspark.sql import functions as F

    existing: set[tuple[str, str]] = set()
    if looked_up:
        tagged = tagged.persist()
        counts: dict[str, int] = {}
        for p, fid, op, n in tagged.groupBy(PART, FID_COLUMN, OP_COLUMN).count().collect():
            if fid is not None:
                existing.add((p, fid))
            elif op == "U":
                counts[p] = counts.get(p, 0) + int(n)
        keyed.unpersist()  # tagged holds the rows now
    else:
        counts = {} if operation == "delete" else dict(measured.rows_by_partition)
    new_fids = {p: [new_file_id() for _ in range(max(1, math.ceil(c / per_file)))] for p, c in counts.items()}
    assigned = tagged.mapInArrow(_assign_inserts(new_fids), tagged.schema)
    if all(len(fids) == 1 for fids in new_fids.values()):
        specs = sorted(existing | {(p, fids[0]) for p, fids in new_fids.items()})
    else:
        assigned = assigned.persist()
        specs = sorted(
            {
                (r[0], r[1])
                for r in assigned.select(PART, FID_COLUMN)
                .where(F.col(FID_COLUMN).isNotNull())
                .distinct()
                .collect()
            }
        )
    tasks: dict[tuple[str, str], FileGroupTask] = {}
    for i, (p, fid) in enumerate(specs):
        s = latest.get((p, fid))
        tasks[(p, fid)] = (
            FileGroupTask(p, fid, "insert", token=f"{i}-0-0") if s is None else update_task(s, f"{i}-0-0")
        )
    return assigned, tasks


K_RECORD_INDEX = "record_index"
