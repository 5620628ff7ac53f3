"""``hudi_md.write(df, ...)`` on PySpark: the same commit protocol as the local writer, with keys,
tagging and file writing done by Python workers on the executors (``mapInArrow``). The driver only
sees small aggregates (partitions touched, row counts, file-group task specs) and the write
statistics that come back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from hudi_md.errors import HudiMdError, MetadataTableError, RecordMergeError, SchemaEvolutionError
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
from hudi_md.write.result import WriteResult
from hudi_md.write.small_files import SIZED_OPERATIONS, InsertPlan, plan_inserts
from hudi_md.write.tagging import overwrite_scope, records_per_file, replaced_file_groups, small_file_task
from hudi_md.write.writer import CommitResult, HudiWriter, WriteSession

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from hudi_md.table.fs_view import FileSlice
    from hudi_md.table.state import TableState

FID_COLUMN = "_hoodie_md_fid"
SEQ_COLUMN = "_hoodie_md_seq"
# A boolean column of rows an upsert deletes by key instead (MERGE INTO's DELETE clauses; the
# session extension adds it), not a column of the table.
DELETE_FLAG = P.WRITE_DELETE_FLAG
KEY, PART = "_hoodie_record_key", "_hoodie_partition_path"
# the rows' own record keys, kept for a table whose keys are generated (an UPDATE/MERGE/DELETE
# rewrites rows by the keys they have)
GIVEN_KEY = "_hoodie_md_given_key"

# What DataFrame.mapInArrow runs on each Spark partition's record batches
BatchMap = Callable[[Iterable[pa.RecordBatch]], Iterator[pa.RecordBatch]]


def _add_keys(
    cfg: WriteConfig,
    operation: str,
    schema: WriterSchema,
    table: str,
    deletes: bool = False,
    instant: str = "",
) -> BatchMap:
    """Each batch as the table takes it (the writer schema's columns, values converted), with its
    record keys, partition paths and op codes (:func:`hudi_md.write.tagging.operation_codes`);
    ``deletes``: rows whose :data:`DELETE_FLAG` is true are deletes. A table without record key
    fields: the rows' :data:`GIVEN_KEY` where they have one, else keys generated for ``instant``
    by task and row (as Apache Hudi numbers them)."""
    import pyarrow.compute as pc
    from pyspark import TaskContext

    from hudi_md.write import keygen
    from hudi_md.write.tagging import operation_codes, record_keys_of

    def fn(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
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


def _dedupe(cfg: WriteConfig) -> BatchMap:
    """The records of each Spark partition merged by key (partitions hash on partition path and
    key), by the same rule as the local writer's (:func:`hudi_md.read.merge.dedupe`); ``_seq``
    is the records' order in the written DataFrame."""
    merge = cfg.merge_spec()

    def fn(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
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


def _lookup_record_index(
    uri: str, storage_options: dict[str, Any], live: frozenset[tuple[str, str]]
) -> BatchMap:
    """Tag keys with their record-index file group, only when that group is live: an entry left
    behind for a replaced or deleted group must not route an update into it (the row would be
    written as a slice no reader sees)."""

    def fn(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from hudi_md.api import open_table

        table = open_table(uri, {**storage_options, "hoodie.metadata.enable": "true"})
        mdt = table.metadata_table
        if mdt is None:  # the driver found a record index: the MDT went away meanwhile
            raise MetadataTableError(f"{uri}: the metadata table (its record index) did not open")
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


def _read_keys(uri: str, storage_options: dict[str, Any], *, routing: bool = False) -> BatchMap:
    """Executors read the keys of the listed file slices: the live ones, or (``routing``:
    tagging without a record index) the keys updates route to them
    (:meth:`~hudi_md.read.slice_reader.SliceRowReader.routing_keys`)."""

    def fn(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from hudi_md.api import open_table
        from hudi_md.read.slice_reader import SliceRowReader

        table = open_table(uri, storage_options).state
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


Buckets = Mapping[str, list[tuple[str, int]]]


def _assign_inserts(buckets: Buckets, offsets: Mapping[tuple[int, str], int]) -> BatchMap:
    """Each new record (no file group, op ``U``) to its partition's buckets ``(file id, records)``,
    filled in order: the task's new records of a partition are the numbers ``offsets[(Spark
    partition, partition)]`` on (:func:`_insert_offsets`), so every bucket takes exactly its
    records, whichever task holds them."""
    import bisect
    import itertools

    from pyspark import TaskContext

    ends = {p: list(itertools.accumulate(n for _, n in choices)) for p, choices in buckets.items()}

    def fn(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        context = TaskContext.get()
        task = context.partitionId() if context is not None else 0
        seen: dict[str, int] = {}
        for b in batches:
            fids = b.column(b.schema.get_field_index(FID_COLUMN)).to_pylist()
            parts = b.column(b.schema.get_field_index(PART)).to_pylist()
            ops = b.column(b.schema.get_field_index(OP_COLUMN)).to_pylist()
            out = []
            for fid, p, op in zip(fids, parts, ops, strict=True):
                if fid is None and op == "U":
                    choices = buckets[p]  # a KeyError, not a lost record, if the counts were wrong
                    if len(choices) == 1:
                        fid = choices[0][0]
                    else:
                        at = offsets.get((task, p), 0) + seen.get(p, 0)
                        seen[p] = seen.get(p, 0) + 1
                        fid = choices[min(bisect.bisect_right(ends[p], at), len(choices) - 1)][0]
                out.append(fid)
            i = b.schema.get_field_index(FID_COLUMN)
            cols = list(b.columns)
            cols[i] = pa.array(out, pa.string())
            yield pa.RecordBatch.from_arrays(cols, b.schema.names)

    return fn


def _insert_offsets(tagged: Any, partitions: set[str]) -> dict[tuple[int, str], int]:
    """Where each Spark partition's new records of each of ``partitions`` start in that
    partition's order of new records (Spark partition by Spark partition): one counting job."""
    if not partitions:
        return {}
    import pyarrow.compute as pc

    def count(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        context = TaskContext.get()
        task = context.partitionId() if context is not None else 0
        totals: dict[str, int] = {}
        for b in batches:
            t = pa.Table.from_batches([b])
            new = pc.and_(pc.is_null(t.column(FID_COLUMN)), pc.equal(t.column(OP_COLUMN), "U"))
            wanted = pc.is_in(t.column(PART), value_set=pa.array(sorted(partitions), pa.string()))
            for p in t.filter(pc.and_(new, wanted)).column(PART).to_pylist():
                totals[p] = totals.get(p, 0) + 1
        if totals:
            yield pa.RecordBatch.from_arrays(
                [
                    pa.array([task] * len(totals), pa.int32()),
                    pa.array(list(totals), pa.string()),
                    pa.array(list(totals.values()), pa.int64()),
                ],
                ["task", "p", "n"],
            )

    found = sorted(tuple(r) for r in tagged.mapInArrow(count, "task int, p string, n long").collect())
    offsets: dict[tuple[int, str], int] = {}
    running: dict[str, int] = {}
    for task, p, n in found:
        offsets[(task, p)] = running.get(p, 0)
        running[p] = running.get(p, 0) + n
    return offsets


@dataclass(frozen=True)
class _Measure:
    """What the executors measured of the keyed rows, in one job: the partitions written and
    their rows, and the rows' average in-memory (Arrow) size (the local writer's sizing rule)."""

    rows_by_partition: dict[str, int]
    rows: int
    average_row_bytes: int
    # the rows that are records (op U, not deletes): an untagged write's new records
    records_by_partition: dict[str, int] = field(default_factory=dict)


def _measure(keyed: Any) -> _Measure:
    def measure(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow.compute as pc

        for b in batches:
            if not b.num_rows:
                continue
            t = pa.Table.from_batches([b])
            records = pc.cast(pc.equal(t.column(OP_COLUMN), "U"), pa.int64())
            counts = (
                t.append_column("_u", records)
                .group_by(PART)
                .aggregate([([], "count_all"), ("_u", "sum")])
                .combine_chunks()
            )
            size = [0] * counts.num_rows
            size[0] = b.nbytes  # the batch's size once, on its first partition's row
            columns = [counts.column(c).chunk(0) for c in (PART, "count_all", "_u_sum")]
            yield pa.RecordBatch.from_arrays(
                [*columns, pa.array(size, pa.int64())], ["p", "rows", "records", "bytes"]
            )

    from pyspark.sql import functions as F

    found = (
        keyed.mapInArrow(measure, "p string, rows long, records long, bytes long")
        .groupBy("p")
        .agg(F.sum("rows").alias("rows"), F.sum("records").alias("records"), F.sum("bytes").alias("bytes"))
        .collect()
    )
    rows_by_partition = {r[0]: int(r[1]) for r in found}
    rows = sum(rows_by_partition.values())
    size = sum(int(r[3]) for r in found)
    return _Measure(rows_by_partition, rows, size // max(1, rows), {r[0]: int(r[2]) for r in found})


def _write_groups(ctx: WriteContext, tasks: Mapping[tuple[str, str], FileGroupTask]) -> BatchMap:
    def fn(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
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


def write_dataframe(
    df: DataFrame, uri: str, *, operation: str, options: Mapping[str, Any] | None
) -> WriteResult:
    """``hudi_md.write`` of a PySpark DataFrame: the executors write the files, this process (the
    driver) commits; returns what the commit recorded."""
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
    early = (
        _keyed(df, cfg, operation, schema, uri, deletes)
        if schema is not None and cfg.record_key_fields
        else None
    )
    # The same protocol as HudiWriter.write: under the table lock the instant starts (a single
    # writer keeps the lock to the end; under optimistic concurrency control it is taken again
    # only to commit, by finish_commit, which checks for conflicts).
    session = writer.start_write(operation, arrow_schema)
    try:
        if early is None or session.writer_schema != schema:  # another writer changed it meanwhile
            if early is not None:
                early[0].unpersist()
            keyed, measured = _keyed(
                df, session.cfg, operation, session.writer_schema, uri, deletes, session.instant
            )
        else:
            keyed, measured = early
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
    return commit.write_result


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
    assigned, tasks = _assign_file_groups(tagged, looked_up, latest, measured, session, state, keyed)
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
    measured: _Measure,
    session: WriteSession,
    state: TableState,
    keyed: DataFrame,
) -> tuple[DataFrame, dict[tuple[str, str], FileGroupTask]]:
    """New keys to their file groups, as the local writer plans them (small files first, then
    new file groups: :func:`hudi_md.write.small_files.plan_inserts`; bulk_insert: new file
    groups of :func:`~hudi_md.write.tagging.records_per_file` records); the task of every file
    group written (an update of its latest slice, a small file taking new records, or an insert).

    The groups come from one count of the tagged rows by partition, file group and operation (no
    count at all when no key was looked up: the measured records are then the new keys). Where a
    partition's new keys go to more than one group, one more job counts them per Spark partition
    so that each group takes exactly its planned records."""
    cfg, operation = session.cfg, session.operation
    existing: set[tuple[str, str]] = set()
    counts: dict[str, int] = {}
    if looked_up:
        tagged = tagged.persist()
        for p, fid, op, n in tagged.groupBy(PART, FID_COLUMN, OP_COLUMN).count().collect():
            if fid is not None:
                existing.add((p, fid))
            elif op == "U":
                counts[p] = counts.get(p, 0) + int(n)
        keyed.unpersist()  # tagged holds the rows now
    elif operation != "delete":
        counts = {p: n for p, n in measured.records_by_partition.items() if n}
    plan = InsertPlan()
    if operation in SIZED_OPERATIONS:
        plan = plan_inserts(
            cfg.max_file_size, cfg.sizing, state, operation, counts, list(latest.values()), is_mor=cfg.is_mor
        )
        buckets = {p: [(b.file_id, b.records) for b in bs] for p, bs in plan.buckets.items()}
    else:
        per_file = records_per_file(cfg, measured.average_row_bytes)
        buckets = {
            p: [(new_file_id(), min(per_file, c - start)) for start in range(0, c, per_file)]
            for p, c in counts.items()
        }
    offsets = _insert_offsets(tagged, {p for p, choices in buckets.items() if len(choices) > 1})
    assigned = tagged.mapInArrow(_assign_inserts(buckets, offsets), tagged.schema)
    specs = sorted(existing | {(p, fid) for p, choices in buckets.items() for fid, _ in choices})
    tasks: dict[tuple[str, str], FileGroupTask] = {}
    for i, (p, fid) in enumerate(specs):
        s = latest.get((p, fid))
        tasks[(p, fid)] = (
            FileGroupTask(p, fid, "insert", token=f"{i}-0-0")
            if s is None
            else small_file_task(cfg, operation, s, f"{i}-0-0", plan)
        )
    return assigned, tasks


K_RECORD_INDEX = "record_index"
