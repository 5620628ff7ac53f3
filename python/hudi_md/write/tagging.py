"""Planning a write's files: keys and partition paths of the incoming rows, tagging (which rows
update which existing file group: by the record index, or by the keys of the latest slices
narrowed by footer key ranges and bloom filters), and the file-group tasks: new records go to small
files and new file groups as :mod:`hudi_md.write.small_files` plans them (bulk_insert: new file
groups of :func:`records_per_file` records), whether the rows are written locally or by Spark
executors.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudi_md.errors import InvalidOptionError
from hudi_md.formats.avro_arrow import avro_schema_to_arrow
from hudi_md.index.bloom import BloomFilter
from hudi_md.metadata import keys as K
from hudi_md.metadata.column_ranges import columns_to_index, java_string_key, parquet_footer
from hudi_md.read.merge import dedupe, delete_mask
from hudi_md.read.slice_reader import SliceRowReader
from hudi_md.storage import Storage
from hudi_md.table.config import TableConfig
from hudi_md.table.fs_view import FileSlice
from hudi_md.table.layout import layout_of
from hudi_md.table.state import TableState
from hudi_md.write import keygen
from hudi_md.write.config import PARTITIONS_TO_DELETE, WriteConfig
from hudi_md.write.file_groups import OP_COLUMN, OP_DELETE_RECORD, FileGroupTask, WriteContext, new_file_id
from hudi_md.write.small_files import SIZED_OPERATIONS, InsertPlan, plan_inserts
from hudi_md.write.table_setup import META_FIELDS

KEY_COLUMN = "_hoodie_record_key"
PARTITION_COLUMN = "_hoodie_partition_path"
# Parquet compresses what Arrow holds in memory: aim new files at this share of the maximum size.
_FILL = 0.7

_LOCATED_SCHEMA = pa.schema([("p", pa.string()), ("k", pa.string()), ("fid", pa.string())])


@dataclass
class Tagging:
    """Where incoming keys already are: rows ``(p, k, fid)`` — the partition and key of an
    existing record and the file group holding it — and how many latest slices the key scan had
    to read (without a record index)."""

    located: pa.Table = field(default_factory=_LOCATED_SCHEMA.empty_table)
    stats: dict[str, int] = field(default_factory=dict)


def records_per_file(cfg: WriteConfig, avg_record_bytes: int) -> int:
    """How many records go into one new file group of a bulk_insert (``hoodie.parquet.max.file.size``),
    from the average in-memory (Arrow) size of the incoming records."""
    return max(1, int(cfg.max_file_size * _FILL // max(1, avg_record_bytes)))


def prepare_rows(
    cfg: WriteConfig, data: pa.Table, operation: str, instant: str = "", task: int = 0, start: int = 0
) -> pa.Table:
    """The rows with their record key, partition path and operation (``U``/``D``) columns,
    deduplicated by key when the operation or options ask for it (by the table's merge rules,
    :func:`hudi_md.read.merge.dedupe`). A table without record key fields gets keys generated
    for the write's ``instant`` (:func:`~hudi_md.write.keygen.auto_keys`: ``task``, ``start``)."""
    data = data.drop_columns([c for c in data.column_names if c in META_FIELDS or c == OP_COLUMN])
    keys = record_keys_of(cfg, data, operation, instant, task, start)
    parts = keygen.partition_paths(
        data, cfg.partition_fields, hive_style=cfg.hive_style, url_encode=cfg.url_encode
    )
    rows = data.append_column(KEY_COLUMN, keys).append_column(PARTITION_COLUMN, parts)
    rows = rows.append_column(OP_COLUMN, operation_codes(cfg, rows, operation))
    if needs_dedupe(cfg, operation):
        rows = dedupe(rows, [PARTITION_COLUMN, KEY_COLUMN], cfg.merge_spec())
    if operation not in ("upsert", "delete", "bulk_insert"):
        # Inserts and overwrites write no record flagged deleted (Hudi 1.2 drops them; only
        # bulk_insert writes them as they are)
        rows = rows.filter(pc.not_equal(rows.column(OP_COLUMN), OP_DELETE_RECORD))
    return rows


def record_keys_of(
    cfg: WriteConfig,
    data: pa.Table,
    operation: str,
    instant: str,
    task: int,
    start: int,
    given: pa.ChunkedArray | None = None,
) -> pa.Array:
    """The rows' record keys: from the table's key fields, or generated when it has none (an
    upsert or delete of such a table needs the keys its rows have: ``given``)."""
    if cfg.record_key_fields:
        return keygen.record_keys(data, cfg.record_key_fields, cfg.keygen)
    if operation in ("upsert", "delete") and given is None:
        raise InvalidOptionError(
            f"the table has no record key fields (its keys are generated): an {operation} needs the "
            "rows' _hoodie_record_key, as Spark SQL's UPDATE, DELETE and MERGE INTO give it; "
            "write new rows with insert"
        )
    return keygen.auto_keys(instant, task, start, data.num_rows, given)


def operation_codes(cfg: WriteConfig, rows: pa.Table, operation: str) -> pa.Array:
    """The op column of a write's records: ``D`` for a delete operation's keys (a commit-time
    delete), ``X`` for a record flagged deleted (``_hoodie_is_deleted``, a custom delete marker;
    a delete ordered like a record, except under bulk_insert, which writes it as it is), ``U``
    otherwise."""
    n = rows.num_rows
    if operation == "delete":
        return pa.array(["D"] * n, pa.string())
    if operation == "bulk_insert":
        return pa.array(["U"] * n, pa.string())
    flagged = delete_mask(rows, cfg.merge_spec())
    return pc.if_else(flagged, pa.scalar(OP_DELETE_RECORD), pa.scalar("U"))


def needs_dedupe(cfg: WriteConfig, operation: str) -> bool:
    """Whether a write's records are merged by key first (Hudi: upserts and deletes always,
    inserts and bulk inserts with ``hoodie.combine.before.insert``)."""
    return operation in ("upsert", "delete") or cfg.combine_before_insert


def existing_locations(
    state: TableState, partitions: Sequence[str], keys: pa.Array, key_partitions: pa.Array | None = None
) -> Tagging:
    """Where the incoming keys already are, among the latest slices of ``partitions``."""
    out = Tagging()
    view = state.file_system_view()
    mdt = state.metadata_table
    latest = {(s.partition_path, s.file_id): s for s in view.latest_file_slices(list(partitions))}
    if mdt is not None and K.RECORD_INDEX in mdt.available_partitions:
        found = mdt.record_index.table(keys)
        groups = pa.table(
            {"p": [p for p, _ in latest], "fid": [f for _, f in latest]}, schema=_LOCATED_SCHEMA.remove(1)
        )
        found = found.select(["partition_path", "record_key", "file_id"]).rename_columns(
            _LOCATED_SCHEMA.names
        )
        # entries of groups no longer live (replaced, cleaned) route nothing
        out.located = found.join(groups, ["p", "fid"], join_type="left semi").select(_LOCATED_SCHEMA.names)
        return out
    # Without a record index, read the keys of the affected partitions' latest slices.
    reader = SliceRowReader(state)
    wanted: dict[str, set[str]] = defaultdict(set)
    key_list = keys.to_pylist()
    part_list = key_partitions.to_pylist() if key_partitions is not None else [None] * len(key_list)
    for k, p in zip(key_list, part_list, strict=True):
        if p is None:
            for q in partitions:
                wanted[q].add(k)
        else:
            wanted[p].add(k)
    out.stats = {"slices": len(latest), "slices_read": 0}
    found_parts = [out.located]
    for (p, fid), s in latest.items():
        if not wanted[p] or not may_hold_any(state.storage, s, wanted[p]):
            continue
        out.stats["slices_read"] += 1
        slice_keys = reader.routing_keys(s).cast(pa.string())
        hits = slice_keys.filter(pc.is_in(slice_keys, value_set=pa.array(sorted(wanted[p]), pa.string())))
        n = len(hits)
        found_parts.append(
            pa.table(
                [pa.array([p] * n, pa.string()), hits, pa.array([fid] * n, pa.string())],
                schema=_LOCATED_SCHEMA,
            )
        )
    located = pa.concat_tables(found_parts)
    if located.num_rows:  # a key in two slices of its partition: the last slice read holds it
        at = located.append_column("i", pa.array(np.arange(located.num_rows)))
        last = at.group_by(["p", "k"]).aggregate([("i", "max")])["i_max"]
        located = located.take(pa.array(np.sort(last.to_numpy())))
    out.located = located
    return out


def may_hold_any(storage: Storage, file_slice: FileSlice, keys: set[str]) -> bool:
    """Bloom-index style check from the base file's footer (min/max record key and bloom
    filter): False only when no key can be in the slice. Logs only ever update keys their base
    file holds, so the base file's footer speaks for the whole slice."""
    base = file_slice.base_file
    if base is None:
        return True
    try:
        meta = pq.read_metadata(pa.BufferReader(parquet_footer(storage, base.path, base.size)))
    except (OSError, ValueError, pa.ArrowException):
        return True
    kv = meta.metadata or {}
    lo, hi = kv.get(b"hoodie_min_record_key"), kv.get(b"hoodie_max_record_key")
    candidates = keys
    if lo is not None and hi is not None:
        lo_k, hi_k = java_string_key(lo.decode()), java_string_key(hi.decode())
        candidates = {k for k in keys if lo_k <= java_string_key(k) <= hi_k}
    text = kv.get(b"org.apache.hudi.bloomfilter")
    if candidates and text:
        code = kv.get(b"hoodie_bloom_filter_type_code", b"SIMPLE").decode()
        bloom = BloomFilter.deserialize(text.decode(), code)
        candidates = {k for k in candidates if bloom.might_contain(k)}
    return bool(candidates)


def update_task(
    s: FileSlice, token: str, *, rewrite_base: bool = False, keep_duplicates: bool = False
) -> FileGroupTask:
    """The task updating an existing file group's latest slice ``s`` (``rewrite_base``,
    ``keep_duplicates``: a small file group taking new records, :class:`FileGroupTask`)."""
    return FileGroupTask(
        s.partition_path,
        s.file_id,
        "update",
        base_file=s.base_file.path if s.base_file else None,
        base_instant=s.base_instant,
        prev_commit=s.base_instant,
        token=token,
        file_slice=s,
        rewrite_base=rewrite_base,
        keep_duplicates=keep_duplicates,
    )


def small_file_task(
    cfg: WriteConfig, operation: str, s: FileSlice, token: str, plan: InsertPlan
) -> FileGroupTask:
    """The task writing an existing file group's latest slice ``s``: an update, or a small file
    that takes new records (:mod:`hudi_md.write.small_files`)."""
    small = (s.partition_path, s.file_id) in plan.rewritten
    return update_task(
        s,
        token,
        rewrite_base=cfg.is_mor and small,
        keep_duplicates=small and operation == "insert" and cfg.sizing.allow_duplicate_on_inserts,
    )


def plan_tasks(
    cfg: WriteConfig,
    state: TableState,
    rows: pa.Table,
    operation: str,
    *,
    claimed: Collection[tuple[str, str]] = (),
) -> tuple[list[tuple[FileGroupTask, pa.Table]], dict[str, list[str]], Tagging]:
    """The file-group tasks of a write (updates of tagged groups and small files taking new
    records, then new groups for the other new records), the file groups an overwrite replaces,
    and the tagging. ``claimed``: file groups this write's earlier tasks write (a streamed
    write's earlier chunks), which take no new records."""
    partitions = sorted(pc.unique(rows.column(PARTITION_COLUMN)).to_pylist())
    tasks: list[tuple[FileGroupTask, pa.Table]] = []
    has_commits = bool(state.timeline.write_timeline())
    scope = overwrite_scope(cfg, operation, partitions, rows.num_rows)
    replaced = replaced_file_groups(state, operation, scope) if has_commits else {}
    tagging = Tagging()
    if operation in ("upsert", "delete") and has_commits:
        tagging = existing_locations(
            state,
            partitions,
            rows.column(KEY_COLUMN).combine_chunks(),
            rows.column(PARTITION_COLUMN).combine_chunks(),
        )
    updates, inserts = _group_rows(rows, tagging)
    sized = operation in SIZED_OPERATIONS
    slices: dict[tuple[str, str], FileSlice] = {}
    if updates or (sized and inserts and has_commits):
        slices = {
            (s.partition_path, s.file_id): s for s in state.file_system_view().latest_file_slices(partitions)
        }
    written = {(p, fid): idx for (p, fid), idx in updates}
    new_groups: list[tuple[str, str, np.ndarray]] = []
    plan = InsertPlan()
    if sized:
        new_records = {p: len(idx) for (p,), idx in inserts}
        plan = plan_inserts(
            cfg.max_file_size,
            cfg.sizing,
            state,
            operation,
            new_records,
            list(slices.values()),
            is_mor=cfg.is_mor,
            claimed=claimed,
        )
        for (p,), idx in inserts:
            start = 0
            for bucket in plan.buckets[p]:
                chunk = idx[start : start + bucket.records]
                start += bucket.records
                if bucket.small_file is None:
                    new_groups.append((p, bucket.file_id, chunk))
                else:
                    group = (p, bucket.file_id)
                    have = written.get(group)
                    written[group] = chunk if have is None else np.sort(np.concatenate([have, chunk]))
    else:
        per_file = records_per_file(cfg, rows.nbytes // max(1, rows.num_rows))
        for (p,), idx in inserts:
            new_groups.extend(
                (p, new_file_id(), idx[start : start + per_file]) for start in range(0, len(idx), per_file)
            )
    for group in sorted(written):
        task = small_file_task(cfg, operation, slices[group], f"{len(tasks)}-0-0", plan)
        tasks.append((task, rows.take(pa.array(written[group]))))
    for p, fid, chunk in new_groups:
        task = FileGroupTask(p, fid, "insert", token=f"{len(tasks)}-0-0")
        tasks.append((task, rows.take(pa.array(chunk))))
    return tasks, replaced, tagging


RowGroups = list[tuple[tuple[str, ...], np.ndarray]]


def _group_rows(rows: pa.Table, tagging: Tagging) -> tuple[RowGroups, RowGroups]:
    """The rows that update a tagged file group, by ``(partition, file id)``, and the upserted
    rows found nowhere (new records), by partition; groups in key order, each group's row
    indexes ascending. A delete of an absent key is in neither: it is a no-op."""
    n = rows.num_rows
    index = pa.array(np.arange(n, dtype=np.int64))
    parts = rows.column(PARTITION_COLUMN).combine_chunks().cast(pa.string())
    upserted = pc.equal(rows.column(OP_COLUMN), "U").combine_chunks().to_numpy(zero_copy_only=False)
    located = np.zeros(n, dtype=bool)
    updates: RowGroups = []
    if tagging.located.num_rows:
        keys = rows.column(KEY_COLUMN).combine_chunks().cast(pa.string())
        probe = pa.table({"p": parts, "k": keys, "i": index})
        hits = probe.join(tagging.located, ["p", "k"], join_type="inner").select(["p", "fid", "i"])
        located[hits["i"].to_numpy()] = True
        updates = _groups(hits, ["p", "fid"])
    fresh = np.flatnonzero(upserted & ~located)
    inserts = _groups(pa.table({"p": parts.take(pa.array(fresh)), "i": pa.array(fresh)}), ["p"])
    return updates, inserts


def _groups(table: pa.Table, by: list[str]) -> RowGroups:
    """``table``'s ``i`` values grouped by the ``by`` columns: groups in key order, ``i``
    ascending in each."""
    if table.num_rows == 0:
        return []
    ordered = table.sort_by([(c, "ascending") for c in [*by, "i"]])
    changed = np.zeros(ordered.num_rows, dtype=bool)
    changed[0] = True
    for c in by:
        column = ordered[c].combine_chunks()
        changed[1:] |= pc.not_equal(column.slice(1), column.slice(0, len(column) - 1)).to_numpy(
            zero_copy_only=False
        )
    starts = np.flatnonzero(changed)
    ends = np.append(starts[1:], ordered.num_rows)
    keys = [ordered[c].take(pa.array(starts)).to_pylist() for c in by]
    indexes = ordered["i"].to_numpy()
    return [(tuple(k), indexes[a:b]) for *k, a, b in zip(*keys, starts, ends, strict=True)]


def overwrite_scope(cfg: WriteConfig, operation: str, written: Sequence[str], rows: int) -> list[str]:
    """The partitions an overwrite replaces, besides those it writes: a delete_partition's
    (``hoodie.datasource.write.partitions.to.delete``; it takes no rows) and a static
    insert_overwrite's (``hoodie.static.overwrite.partition.paths``, whether or not rows go there)."""
    if operation == "delete_partition":
        if rows:
            raise InvalidOptionError(
                "delete_partition takes no rows: name the partitions in " + PARTITIONS_TO_DELETE
            )
        if not cfg.partitions_to_delete:
            raise InvalidOptionError(
                f"delete_partition needs {PARTITIONS_TO_DELETE} (partition paths, comma-separated)"
            )
        return list(cfg.partitions_to_delete)
    if operation == "insert_overwrite":
        return sorted({*written, *cfg.static_overwrite_partitions})
    return list(written)


def replaced_file_groups(
    state: TableState, operation: str, partitions: Sequence[str]
) -> dict[str, list[str]]:
    """Partition → file ids an overwrite replaces: the live groups of the partitions written
    (insert_overwrite) or named (delete_partition), or of the whole table (insert_overwrite_table);
    nothing otherwise."""
    if operation not in ("insert_overwrite", "insert_overwrite_table", "delete_partition"):
        return {}
    scope = state.partitions() if operation == "insert_overwrite_table" else list(partitions)
    replaced: dict[str, list[str]] = {}
    for s in state.file_system_view().latest_file_slices(scope):
        replaced.setdefault(s.partition_path, []).append(s.file_id)
    return replaced


def index_columns(cfg: WriteConfig, config: TableConfig, avro_schema: str) -> list[str]:
    """The columns whose ranges the written files' stats carry: column or partition stats are
    available, or being built by an indexer (whose inflight partitions every commit writes)."""
    maintained = {*config.metadata_partitions, *config.metadata_partitions_inflight}
    if K.COLUMN_STATS not in maintained and K.PARTITION_STATS not in maintained:
        return []
    schema = avro_schema_to_arrow(avro_schema)
    return columns_to_index(
        schema,
        column_list=cfg.column_stats_columns,
        max_columns=cfg.column_stats_max_columns,
        missing_ok=cfg.column_list_from_table,
    )


def write_context(
    uri: str,
    storage_options: dict[str, object],
    cfg: WriteConfig,
    config: TableConfig,
    instant: str,
    avro_schema: str,
    validity: Callable[[str], bool] | None = None,
) -> WriteContext:
    """What a file-group task needs to write its files, locally or on an executor; ``validity``:
    the instant validity of the table's timeline (MOR updates may read their slice)."""
    return WriteContext(
        base_uri=uri,
        storage_options=storage_options,
        instant=instant,
        table_schema_json=avro_schema,
        record_key_fields=cfg.record_key_fields,
        ordering_fields=cfg.ordering_fields,
        merge_mode=cfg.merge_mode,
        is_mor=cfg.is_mor,
        log_block_format=cfg.log_block_format,
        index_columns=index_columns(cfg, config, avro_schema),
        with_bloom=cfg.parquet_bloom_filter,
        layout=layout_of(config),
        index_blooms=K.BLOOM_FILTERS in (*config.metadata_partitions, *config.metadata_partitions_inflight),
        merge=cfg.merge_spec(),
        validity=validity,
    )
