"""Writing one file group's share of a commit. Runs wherever the rows are (a Spark executor's
Python worker, or the local process): it reads and writes storage directly and returns only
statistics, never rows, to the committing driver.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any, TypedDict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_md.formats.commit_metadata import WriteStat
from hudi_md.metadata.column_ranges import ranges_of_table
from hudi_md.metadata.records_builder import ColumnRange
from hudi_md.read.merge import MergeSpec
from hudi_md.storage import Storage
from hudi_md.table.fs_view import FileSlice
from hudi_md.table.layout import table_storage

OP_COLUMN = "_hoodie_md_op"  # only between tagging and writing: "U" upsert, "D" delete (by key),
OP_DELETE_RECORD = "X"  # ... and "X" a record flagged deleted (_hoodie_is_deleted), ordered like one
META_COLUMNS = [
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
]


def new_file_id() -> str:
    return f"{uuid.uuid4()}-0"


def write_token(task_partition_id: int, stage_id: int = 0, attempt_id: int = 0) -> str:
    return f"{task_partition_id}-{stage_id}-{attempt_id}"


@dataclass(frozen=True)
class WriteContext:
    """What every file-group task of one commit shares (pickled to executors)."""

    base_uri: str
    storage_options: dict[str, Any]
    instant: str
    table_schema_json: str  # Avro schema of the table, meta fields included
    record_key_fields: list[str]
    ordering_fields: list[str]
    merge_mode: str
    is_mor: bool
    log_block_format: str
    index_columns: list[str]
    with_bloom: bool
    # the table's storage layout (hoodie.properties' layout keys and table name; empty: default)
    layout: dict[str, str] = field(default_factory=dict)
    # Whether a task returns its base file's bloom filter (the MDT's bloom_filters partition is
    # available or being indexed): each is ~430 KB, too much to hold for every file of a
    # 100k-file commit when nothing indexes it (it is in the file's footer either way).
    index_blooms: bool = True
    # the table's merge rules (None: built from the fields above) and, for MOR updates that must
    # read their slice, which log blocks count (the timeline's instant validity)
    merge: MergeSpec | None = None
    validity: Callable[[str], bool] | None = None

    def storage(self) -> Storage:
        return table_storage(Storage(self.base_uri, self.storage_options), self.layout)


@dataclass(frozen=True)
class FileGroupTask:
    partition_path: str
    file_id: str
    kind: str  # "insert" (new file group) | "update" (existing file group)
    base_file: str | None = None  # relative path of the current base file (updates)
    base_instant: str | None = None
    prev_commit: str | None = None
    token: str = "0-0-0"  # write token, fixed at planning so markers can name the exact file
    file_slice: FileSlice | None = None  # the latest slice an update writes onto
    # A small file group taking new records (hudi_md.write.small_files). On MERGE_ON_READ its
    # records are merged into a new base file, as on COPY_ON_WRITE: Hudi's indexes hudi-md writes
    # for cannot find records in log files, so new records never go to one.
    rewrite_base: bool = False
    # The insert operation's records are appended to the stored rows as they are, not merged by
    # key (hoodie.merge.allow.duplicate.on.inserts: Hudi's concat handle)
    keep_duplicates: bool = False

    def writes_log(self, is_mor: bool) -> bool:
        return is_mor and self.kind == "update" and not self.rewrite_base

    def file_name(self, instant: str, is_mor: bool) -> str:
        if self.writes_log(is_mor):
            return f".{self.file_id}_{instant}.log.1_{self.token}"
        return f"{self.file_id}_{self.token}_{instant}.parquet"


@dataclass
class TaskResult:
    """What writing one file group produced: its write stat, and what the MDT records of the
    commit are built from (column ranges, bloom filter, record keys inserted and deleted)."""

    write_stat: WriteStat
    column_ranges: dict[str, ColumnRange] = field(default_factory=dict)
    bloom: str | None = None
    bloom_type: str | None = None
    # the keys of the rows a new base file holds, a string column (one Python object per key
    # would cost more than the MDT records built from them)
    inserted_keys: pa.Array | list[str] = field(default_factory=list)
    deleted_keys: list[str] = field(default_factory=list)

    def to_json(self) -> str:
        keys = self.inserted_keys
        d = asdict(replace(self, inserted_keys=[]))
        d["inserted_keys"] = keys.to_pylist() if isinstance(keys, pa.Array) else list(keys)
        d["write_stat"] = self.write_stat.to_record()
        d["column_ranges"] = {k: _jsonable_range(v) for k, v in self.column_ranges.items()}
        return json.dumps(d, default=str)

    @classmethod
    def from_json(cls, text: str, arrow_types: dict[str, pa.DataType]) -> TaskResult:
        d = json.loads(text)
        ranges = {k: _range_from_json(v, arrow_types.get(k)) for k, v in d.pop("column_ranges").items()}
        raw = d.pop("write_stat")
        stat = WriteStat.from_record(raw.get("partitionPath") or "", raw)
        return cls(stat, column_ranges=ranges, **d)


def _jsonable_range(r: ColumnRange) -> dict[str, Any]:
    return {
        "column_name": r.column_name,
        "min_value": _enc(r.min_value),
        "max_value": _enc(r.max_value),
        "null_count": r.null_count,
        "value_count": r.value_count,
        "total_size": r.total_size,
        "total_uncompressed_size": r.total_uncompressed_size,
    }


def _enc(v: Any) -> Any:
    import datetime
    import decimal

    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, bytes):
        return {"b": v.hex()}
    if isinstance(v, decimal.Decimal):
        return {"d": str(v)}
    if isinstance(v, datetime.datetime):
        return {"ts": v.isoformat()}
    if isinstance(v, datetime.date):
        return {"date": v.isoformat()}
    return str(v)


def _dec(v: Any) -> Any:
    import datetime
    import decimal

    if isinstance(v, dict):
        if "b" in v:
            return bytes.fromhex(v["b"])
        if "d" in v:
            return decimal.Decimal(v["d"])
        if "ts" in v:
            return datetime.datetime.fromisoformat(v["ts"])
        if "date" in v:
            return datetime.date.fromisoformat(v["date"])
    return v


def _range_from_json(d: dict[str, Any], _type: Any) -> ColumnRange:
    return ColumnRange(
        d["column_name"],
        _dec(d["min_value"]),
        _dec(d["max_value"]),
        d["null_count"],
        d["value_count"],
        d["total_size"],
        d["total_uncompressed_size"],
    )


# --- stats of rows written to a log file ---------------------------------------------------------


class _StatCounts(TypedDict):
    """What a base file's and a log file's write stats share (WriteStat.base / WriteStat.delta)."""

    size: int
    num_writes: int
    num_inserts: int
    num_updates: int
    num_deletes: int
    prev_commit: str | None


def _write_stat(
    task: FileGroupTask,
    path: str,
    size: int,
    *,
    num_writes: int,
    num_inserts: int,
    num_updates: int,
    num_deletes: int,
    is_log: bool,
    total_log_records: int = 0,
    total_log_blocks: int = 0,
) -> WriteStat:
    counts: _StatCounts = {
        "size": size,
        "num_writes": num_writes,
        "num_inserts": num_inserts,
        "num_updates": num_updates,
        "num_deletes": num_deletes,
        "prev_commit": task.prev_commit,
    }
    if is_log:
        base = task.base_file.rsplit("/", 1)[-1] if task.base_file else ""
        return WriteStat.delta(
            task.partition_path,
            task.file_id,
            path,
            base_file=base,
            total_log_records=total_log_records,
            total_log_blocks=total_log_blocks,
            **counts,
        )
    prev_base = task.base_file.rsplit("/", 1)[-1] if task.base_file else None
    return WriteStat.base(task.partition_path, task.file_id, path, prev_base_file=prev_base, **counts)


# --- the task ----------------------------------------------------------------------------------


def execute(ctx: WriteContext, task: FileGroupTask, rows: pa.Table, task_partition_id: int = 0) -> TaskResult:
    """Write ``rows`` (data + ``_hoodie_record_key``/``_hoodie_partition_path`` + op column) to the group."""
    storage = ctx.storage()
    ops = rows.column(OP_COLUMN)
    upserts = rows.filter(pc.equal(ops, "U")).drop_columns([OP_COLUMN])
    flagged = rows.filter(pc.equal(ops, OP_DELETE_RECORD)).drop_columns([OP_COLUMN])
    deletes = rows.filter(pc.equal(ops, "D"))
    deleted_keys = deletes.column("_hoodie_record_key").to_pylist()
    token = task.token
    if task.kind == "insert":
        return _write_new_base(ctx, storage, task, upserts, token, task_partition_id)
    if task.writes_log(ctx.is_mor):
        return _append_log(ctx, storage, task, upserts, flagged, deleted_keys, token, task_partition_id)
    if task.keep_duplicates:
        return _concat_base(ctx, storage, task, upserts, token, task_partition_id)
    incoming = (
        pa.concat_tables([upserts, flagged], promote_options="default") if flagged.num_rows else upserts
    )
    # the flagged records are deletes whether or not a marker column says so (MOR's MERGE INTO
    # DELETE, merged into a small file's base file here rather than logged)
    is_flagged = pa.array(np.arange(incoming.num_rows) >= upserts.num_rows)
    return _merge_base(ctx, storage, task, incoming, deleted_keys, token, task_partition_id, is_flagged)


def _arrow_schema(ctx: WriteContext) -> pa.Schema:
    from hudi_md.formats.avro_arrow import avro_schema_to_arrow

    return avro_schema_to_arrow(ctx.table_schema_json)


def _with_meta(
    ctx: WriteContext, data: pa.Table, task: FileGroupTask, file_name: str, task_partition_id: int
) -> pa.Table:
    from hudi_md.formats.avro_arrow import align_to_schema

    n = data.num_rows
    meta = {
        "_hoodie_commit_time": pa.array([ctx.instant] * n, pa.string()),
        "_hoodie_commit_seqno": pc.binary_join_element_wise(
            f"{ctx.instant}_{task_partition_id}_", pc.cast(pa.array(np.arange(n)), pa.string()), ""
        ),
        "_hoodie_record_key": data.column("_hoodie_record_key"),
        "_hoodie_partition_path": pa.array([task.partition_path] * n, pa.string()),
        "_hoodie_file_name": pa.array([file_name] * n, pa.string()),
    }
    schema = _arrow_schema(ctx)
    cols = {}
    for f in schema:
        if f.name in meta:
            cols[f.name] = meta[f.name]
        elif data.schema.get_field_index(f.name) >= 0:
            cols[f.name] = data.column(f.name)
        else:
            cols[f.name] = pa.nulls(n, f.type)
    return align_to_schema(pa.table(cols), schema)


def write_parquet_file(
    ctx: WriteContext, storage: Storage, task: FileGroupTask, table: pa.Table, name: str
) -> tuple[str, Any]:
    from hudi_md.index.bloom import BloomFilter
    from hudi_md.write.base_file import write_base_file

    path = f"{task.partition_path}/{name}" if task.partition_path else name
    bloom = BloomFilter.create() if ctx.with_bloom else None
    result = write_base_file(storage, path, table, avro_schema_json=ctx.table_schema_json, bloom=bloom)
    return path, (result, bloom)


def base_file_result(
    ctx: WriteContext,
    stat: WriteStat,
    res: Any,
    bloom: Any,
    *,
    inserted_keys: pa.Array | list[str],
    deleted_keys: list[str] | None = None,
) -> TaskResult:
    """The result of writing a base file: its stats of the indexed columns and, when the MDT's
    bloom_filters partition wants it, its bloom filter."""
    return TaskResult(
        stat,
        {k: v for k, v in res.column_stats.items() if k in ctx.index_columns},
        bloom.serialize() if bloom and ctx.index_blooms else None,
        "DYNAMIC_V0" if bloom and ctx.index_blooms else None,
        inserted_keys=inserted_keys,
        deleted_keys=deleted_keys or [],
    )


def _write_new_base(
    ctx: WriteContext, storage: Storage, task: FileGroupTask, upserts: pa.Table, token: str, tpid: int
) -> TaskResult:
    name = f"{task.file_id}_{token}_{ctx.instant}.parquet"
    table = _with_meta(ctx, upserts, task, name, tpid)
    path, (res, bloom) = write_parquet_file(ctx, storage, task, table, name)
    stat = _write_stat(
        task,
        path,
        res.file_size,
        num_writes=table.num_rows,
        num_inserts=table.num_rows,
        num_updates=0,
        num_deletes=0,
        is_log=False,
    )
    return base_file_result(
        ctx, stat, res, bloom, inserted_keys=table.column("_hoodie_record_key").combine_chunks()
    )


def _merge_spec(ctx: WriteContext) -> MergeSpec:
    if ctx.merge is not None:
        return ctx.merge
    return MergeSpec(
        record_key_fields=list(ctx.record_key_fields),
        ordering_fields=list(ctx.ordering_fields),
        merge_mode=ctx.merge_mode if ctx.ordering_fields else "COMMIT_TIME_ORDERING",
        use_meta_key=True,
    )


def _merge_base(
    ctx: WriteContext,
    storage: Storage,
    task: FileGroupTask,
    incoming_rows: pa.Table,
    deleted_keys: list[str],
    token: str,
    tpid: int,
    flagged: pa.Array | None = None,
) -> TaskResult:
    """COW update: a new version of the base file, the write's records merged with the stored
    rows by the table's rules (:func:`hudi_md.read.merge.merge_with_stored`), deleted keys removed;
    ``flagged``: which incoming records are deletes ordered like records."""
    import pyarrow.parquet as pq

    from hudi_md.formats.avro_arrow import align_to_schema
    from hudi_md.read.merge import merge_with_stored

    assert task.base_file is not None
    old = pq.ParquetFile(pa.BufferReader(storage.read_bytes(task.base_file))).read()
    name = f"{task.file_id}_{token}_{ctx.instant}.parquet"
    incoming = _with_meta(ctx, incoming_rows, task, name, tpid)
    schema = incoming.schema
    old = align_to_schema(old, schema)
    old_keys = old.column("_hoodie_record_key")
    deleted = pa.array(deleted_keys, pa.string())
    merged = merge_with_stored(old, incoming, _merge_spec(ctx), table=ctx.base_uri, flagged=flagged)
    keep = pc.and_(merged.keep_stored, pc.invert(pc.is_in(old_keys.combine_chunks(), value_set=deleted)))
    kept = old.filter(keep)
    kept = kept.set_column(
        schema.get_field_index("_hoodie_file_name"),
        "_hoodie_file_name",
        pa.array([name] * kept.num_rows, pa.string()),
    )
    written = incoming.filter(merged.write_incoming)
    old_key_set = old_keys.combine_chunks()
    gone = old.filter(pc.invert(keep)).column("_hoodie_record_key").combine_chunks()
    written_keys = written.column("_hoodie_record_key").combine_chunks()
    num_updated = int(pc.sum(pc.is_in(written_keys, value_set=old_key_set)).as_py() or 0)
    removed = gone.filter(pc.invert(pc.is_in(gone, value_set=written_keys)))
    new = pa.concat_tables([kept, written])
    path, (res, bloom) = write_parquet_file(ctx, storage, task, new, name)
    stat = _write_stat(
        task,
        path,
        res.file_size,
        num_writes=new.num_rows,
        num_inserts=written.num_rows - num_updated,
        num_updates=num_updated,
        num_deletes=len(removed),
        is_log=False,
    )
    new_keys = written_keys.filter(pc.invert(pc.is_in(written_keys, value_set=old_key_set)))
    return base_file_result(
        ctx,
        stat,
        res,
        bloom,
        inserted_keys=new_keys if len(new_keys) else [],
        deleted_keys=removed.to_pylist(),
    )


def _concat_base(
    ctx: WriteContext, storage: Storage, task: FileGroupTask, incoming_rows: pa.Table, token: str, tpid: int
) -> TaskResult:
    """An insert into a small file group: a new version of its base file holding every stored
    row, then every incoming one, as they are (Hudi's concat handle): a key already stored, or
    twice in the write, is held twice, as an insert into a new file group would leave it. The
    record index takes every written key at this group, as for a new file group."""
    import pyarrow.parquet as pq

    from hudi_md.formats.avro_arrow import align_to_schema

    assert task.base_file is not None
    name = f"{task.file_id}_{token}_{ctx.instant}.parquet"
    incoming = _with_meta(ctx, incoming_rows, task, name, tpid)
    old = pq.ParquetFile(pa.BufferReader(storage.read_bytes(task.base_file))).read()
    old = align_to_schema(old, incoming.schema)
    old = old.set_column(
        incoming.schema.get_field_index("_hoodie_file_name"),
        "_hoodie_file_name",
        pa.array([name] * old.num_rows, pa.string()),
    )
    new = pa.concat_tables([old, incoming])
    path, (res, bloom) = write_parquet_file(ctx, storage, task, new, name)
    stat = _write_stat(
        task,
        path,
        res.file_size,
        num_writes=new.num_rows,
        num_inserts=incoming.num_rows,
        num_updates=0,
        num_deletes=0,
        is_log=False,
    )
    return base_file_result(
        ctx, stat, res, bloom, inserted_keys=incoming.column("_hoodie_record_key").combine_chunks()
    )


def _append_log(
    ctx: WriteContext,
    storage: Storage,
    task: FileGroupTask,
    upserts: pa.Table,
    flagged: pa.Table,
    deleted_keys: list[str],
    token: str,
    tpid: int,
) -> TaskResult:
    """MOR update: one new log file for this deltacommit (a data block and/or a delete block).

    As Apache Hudi's append handle writes them: updates go to the data block, deleted keys to
    the delete block with the default ordering value (a delete by key wins over every earlier
    record), records flagged deleted to the delete block with their own ordering value (ordered
    like records when read). The slice is read (key and ordering columns) only where the merge
    must know the stored state: a null ordering value there (refused), and whether a flagged
    delete wins, so that the record index stays exact."""
    from hudi_md.formats.logfile import DeleteRecord
    from hudi_md.formats.logfile_writer import avro_data_block, delete_block, parquet_data_block

    merge = _merge_spec(ctx)
    event = merge.event_time and bool(merge.ordering_fields)
    flagged_keys = flagged.column("_hoodie_record_key").to_pylist() if flagged.num_rows else []
    removed = list(deleted_keys)
    if event and (upserts.num_rows or flagged.num_rows):
        removed += _check_against_slice(ctx, storage, task, upserts, flagged, merge)
    elif flagged_keys:
        removed += flagged_keys  # commit time: a later delete always wins
    name = f".{task.file_id}_{ctx.instant}.log.1_{token}"
    path = f"{task.partition_path}/{name}" if task.partition_path else name
    content = b""
    records = _with_meta(ctx, upserts, task, task.file_id, tpid) if upserts.num_rows else None
    if records is not None:
        if ctx.log_block_format == "parquet":
            content += parquet_data_block(records, ctx.table_schema_json, ctx.instant)
        else:
            content += avro_data_block(_to_avro_rows(records), ctx.table_schema_json, ctx.instant)
    entries = [DeleteRecord(k, task.partition_path, 0) for k in deleted_keys]
    if flagged_keys:
        values = _ordering_values(flagged, merge) if event else [0] * len(flagged_keys)
        entries += [
            DeleteRecord(k, task.partition_path, v) for k, v in zip(flagged_keys, values, strict=True)
        ]
    if entries:
        content += delete_block(entries, ctx.instant)
    storage.write_bytes(path, content)
    ranges = ranges_of_table(records, ctx.index_columns) if records is not None else {}
    n = records.num_rows if records is not None else 0
    stat = _write_stat(
        task,
        path,
        len(content),
        num_writes=n,
        num_inserts=0,
        num_updates=n,
        num_deletes=len(entries),
        is_log=True,
        total_log_records=n + len(entries),
        total_log_blocks=int(records is not None) + int(bool(entries)),
    )
    return TaskResult(stat, ranges, None, None, inserted_keys=[], deleted_keys=sorted(set(removed)))


# Hudi's ordering value wrappers (HoodieAvroUtils.wrapValueIntoAvro) for each Arrow type.
def _wrapper(t: pa.DataType) -> str | None:
    if pa.types.is_boolean(t):
        return "BooleanWrapper"
    if pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_int32(t):
        return "IntWrapper"
    if pa.types.is_int64(t):
        return "LongWrapper"
    if pa.types.is_float32(t):
        return "FloatWrapper"
    if pa.types.is_float64(t):
        return "DoubleWrapper"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "StringWrapper"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "BytesWrapper"
    return None  # dates, timestamps, decimals: the plain value's own wrapper


def _ordering_values(rows: pa.Table, merge: MergeSpec) -> list[Any]:
    """Each flagged record's ordering value, wrapped as Hudi wraps the column's Java type."""
    from hudi_md.formats.logfile_writer import WrappedValue

    columns: list[list[object]] = []
    for name in merge.ordering_fields:
        if name not in rows.column_names:
            columns.append([None] * rows.num_rows)
            continue
        col = rows.column(name)
        wrapper = _wrapper(col.type)
        values = col.to_pylist()
        if pa.types.is_timestamp(col.type) and col.type.tz is None:
            import datetime

            values = [None if v is None else v.replace(tzinfo=datetime.timezone.utc) for v in values]
        columns.append([v if wrapper is None or v is None else WrappedValue(wrapper, v) for v in values])
    if len(columns) == 1:
        return columns[0]
    return [WrappedValue("ArrayWrapper", list(vs)) for vs in zip(*columns, strict=True)]


def _check_against_slice(
    ctx: WriteContext,
    storage: Storage,
    task: FileGroupTask,
    upserts: pa.Table,
    flagged: pa.Table,
    merge: MergeSpec,
) -> list[str]:
    """Event time, MOR: refuse records whose key's base-file row has a null ordering value (Hudi
    1.2 then writes a slice it cannot read), and return the flagged deletes that win over the
    slice's current rows (the keys this commit removes from the record index)."""
    import pyarrow.parquet as pq

    from hudi_md.errors import RecordMergeError
    from hudi_md.read.merge import merge_with_stored

    keys = pa.concat_arrays(
        [t.column("_hoodie_record_key").combine_chunks() for t in (upserts, flagged) if t.num_rows]
    )
    for t in (upserts, flagged):
        if not t.num_rows:
            continue
        nulls = None
        for f in merge.ordering_fields:
            isnull = t.column(f).is_null() if f in t.column_names else pa.array([True] * t.num_rows)
            nulls = isnull if nulls is None else pc.or_(nulls, isnull)
        if nulls is not None and pc.any(nulls).as_py():
            bad = t.filter(nulls).column("_hoodie_record_key").to_pylist()
            raise RecordMergeError(
                f"{ctx.base_uri}: records of key(s) {', '.join(bad[:5])} have a null ordering value and "
                "would update stored rows; under EVENT_TIME_ORDERING Apache Hudi cannot order them (its "
                "MOR table is then unreadable). Give them ordering values. Nothing was written",
                bad,
            )
    columns = ["_hoodie_record_key", *merge.ordering_fields]
    if task.base_file is not None and _may_hold_nulls(storage, task, merge.ordering_fields):
        base = pq.ParquetFile(pa.BufferReader(storage.read_bytes(task.base_file)))
        present = [c for c in columns if c in base.schema_arrow.names]
        from hudi_md.read.merge import stored_ordering_nulls

        bad = stored_ordering_nulls(base.read(columns=present), keys, merge)
        if bad:
            raise RecordMergeError(
                f"{ctx.base_uri}: stored rows of key(s) {', '.join(bad[:5])} have a null ordering value; "
                "under EVENT_TIME_ORDERING Apache Hudi cannot order an update against them (its MOR "
                "table is then unreadable). Nothing was written",
                bad,
            )
    if not flagged.num_rows:
        return []
    current = _slice_rows(ctx, storage, task, merge, columns)
    flagged_meta = flagged.select([c for c in columns if c in flagged.column_names])
    current = current.select([c for c in flagged_meta.column_names])
    from hudi_md.formats.avro_arrow import align_to_schema

    current = align_to_schema(current, flagged_meta.schema)
    deletes = flagged_meta.append_column("_hoodie_is_deleted", pa.array([True] * flagged.num_rows))
    outcome = merge_with_stored(current, deletes, merge)
    gone = current.filter(pc.invert(outcome.keep_stored))
    return gone.column("_hoodie_record_key").to_pylist()


def _may_hold_nulls(storage: Storage, task: FileGroupTask, columns: list[str]) -> bool:
    """From the base file's footer: whether any of ``columns`` may hold a null (no statistics,
    or a null count above zero)."""
    import pyarrow.parquet as pq

    from hudi_md.metadata.column_ranges import parquet_footer

    base = task.file_slice.base_file if task.file_slice is not None else None
    if base is None or task.base_file is None:
        return True
    try:
        meta = pq.read_metadata(pa.BufferReader(parquet_footer(storage, task.base_file, base.size)))
    except (OSError, ValueError, pa.ArrowException):
        return True
    names = meta.schema.to_arrow_schema().names
    for rg in range(meta.num_row_groups):
        group = meta.row_group(rg)
        for c in columns:
            if c not in names:
                return True
            stats = group.column(names.index(c)).statistics
            if stats is None or not stats.has_null_count or stats.null_count:
                return True
    return False


def _slice_rows(
    ctx: WriteContext, storage: Storage, task: FileGroupTask, merge: MergeSpec, columns: list[str]
) -> pa.Table:
    """The current merged rows (``columns``) of the slice an update writes onto."""
    from hudi_md.read.slice_reader import read_file_slice

    schema = _arrow_schema(ctx)
    file_slice = task.file_slice
    if file_slice is None or ctx.validity is None:
        raise RuntimeError("an update task that reads its slice needs the slice and the instant validity")
    return read_file_slice(
        storage,
        file_slice,
        schema=schema,
        merge=merge,
        is_valid_instant=ctx.validity,
        columns=[c for c in columns if c in schema.names],
    )


def _to_avro_rows(table: pa.Table) -> list[dict[str, Any]]:
    """Rows as fastavro expects them for the table's Avro schema (decimals, dates, timestamps)."""
    return table.to_pylist()
