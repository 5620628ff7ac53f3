"""MOR compaction (every file slice with log files becomes a new base file), and the MDT's own
compaction. A compaction is a transaction: its plan (``T.compaction.requested``), a marker then
a base file per slice, its MDT deltacommit, then the completed commit.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import pyarrow as pa

from hudi_md.errors import UnsupportedFeatureError
from hudi_md.formats.commit_metadata import WriteStat
from hudi_md.formats.commit_metadata_writer import (
    commit_metadata_record,
    serialize_instant_metadata,
    stats_by_partition,
)
from hudi_md.metadata import keys as K
from hudi_md.metadata import table_services as mdt_services
from hudi_md.metadata.column_ranges import columns_to_index
from hudi_md.metadata.lifecycle import indexed_columns
from hudi_md.metadata.reader import load_table_state
from hudi_md.read.merge import MergeSpec
from hudi_md.read.slice_reader import read_file_slice
from hudi_md.storage import Storage
from hudi_md.table.config import TableConfig
from hudi_md.table.filenames import LogFileName
from hudi_md.table.fs_view import BaseFile, FileSlice, LogFile
from hudi_md.table.layout import layout_of
from hudi_md.table.state import TableState
from hudi_md.table.timeline import COMPACTION, instant_validator
from hudi_md.write.file_groups import FileGroupTask, TaskResult, WriteContext, write_parquet_file
from hudi_md.write.mdt_sync import mdt_records_for_commit
from hudi_md.write.plans import pending_clustering_file_groups, pending_compaction_file_groups
from hudi_md.write.result import WriteResult, log_commit
from hudi_md.write.schema import with_meta_fields
from hudi_md.write.transaction import Transaction, WritableTable

log = logging.getLogger(__name__)


def plan_compaction(storage: Storage, state: TableState) -> tuple[dict[str, Any], list[FileSlice]] | None:
    """The compaction plan of every MOR slice with log files, or None (nothing to compact). Not
    the file groups a pending compaction, log compaction or clustering reads (Hudi's compaction
    planner excludes them)."""
    if not state.config.is_mor:
        return None
    busy = set(pending_compaction_file_groups(storage, state.timeline))
    busy |= set(pending_clustering_file_groups(storage, state.timeline))
    slices = [
        s
        for s in state.file_system_view().latest_file_slices(state.partitions())
        if s.log_files and (s.partition_path, s.file_id) not in busy
    ]
    if not slices:
        return None
    plan: dict[str, Any] = {
        "operations": [
            {
                "baseInstantTime": s.base_instant,
                "deltaFilePaths": [lf.name for lf in s.log_files],
                "dataFilePath": s.base_file.name if s.base_file else None,
                "fileId": s.file_id,
                "partitionPath": s.partition_path,
                "metrics": {},
                "bootstrapFilePath": None,
            }
            for s in slices
        ],
        "extraMetadata": None,
        "version": 2,
        "strategy": None,
        "preserveHoodieMetadata": True,
    }
    return plan, slices


def _writer_schema(state: TableState) -> str:
    """The table's Avro writer schema as Apache Hudi's ``TableSchemaResolver`` finds it: the latest
    completed write that records one (a write may record none, or an empty one), else
    ``hoodie.table.create.schema``."""
    timeline = state.timeline
    for instant in reversed(timeline.write_timeline().instants):
        text = (timeline.metadata(instant).get("extraMetadata") or {}).get("schema")
        if text:
            return str(text)
    if state.config.create_schema:
        return state.config.create_schema
    raise UnsupportedFeatureError(
        "compaction needs the table's writer schema: no completed write records one, and "
        "hoodie.properties has no hoodie.table.create.schema"
    )


def service_write_context(table: WritableTable, state: TableState, instant: str) -> tuple[WriteContext, str]:
    """How a table service (compaction, clustering) writes base files at ``instant``: the table's
    writer schema (returned too, for the commit's ``schema``), the columns every writer indexes
    (index.json's, else Hudi's first 32) and the bloom filter in every footer."""
    avro_schema = _writer_schema(state)
    avro_with_meta = json.dumps(with_meta_fields(json.loads(avro_schema)), separators=(",", ":"))
    indexed = indexed_columns(table.storage)
    index_columns = (
        columns_to_index(state.schema, column_list=indexed, missing_ok=True)
        if state.config.metadata_partitions
        else []
    )
    ctx = WriteContext(
        base_uri=table.uri,
        storage_options=table.storage_options,
        instant=instant,
        table_schema_json=avro_with_meta,
        record_key_fields=state.config.record_key_fields,
        ordering_fields=state.config.ordering_fields,
        merge_mode=state.config.record_merge_mode,
        is_mor=state.config.is_mor,
        log_block_format="avro",
        index_columns=index_columns,
        with_bloom=True,
        layout=layout_of(state.config),
        index_blooms=K.BLOOM_FILTERS
        in (*state.config.metadata_partitions, *state.config.metadata_partitions_inflight),
    )
    return ctx, avro_schema


def write_marked_base_file(
    txn: Transaction, ctx: WriteContext, task: FileGroupTask, rows: pa.Table
) -> tuple[str, Any, Any]:
    """A table service's new base file for ``task``: its marker first (so that the rollback of a
    failed attempt finds the file), the rows' ``_hoodie_file_name`` set to it, then the file.
    Returns its path, the writer's result and the bloom filter."""
    name = task.file_name(txn.instant, False)
    txn.mark(task.partition_path, name, "CREATE")
    rows = rows.set_column(
        rows.schema.get_field_index("_hoodie_file_name"),
        "_hoodie_file_name",
        pa.array([name] * rows.num_rows, pa.string()),
    )
    path, (res, bloom) = write_parquet_file(ctx, txn.table.storage, task, rows, name)
    return path, res, bloom


def compact(table: WritableTable) -> WriteResult | None:
    """Plan and run a compaction (the caller holds the lock and has resolved pending services);
    returns what its commit recorded (the compaction instant; None: nothing to compact)."""
    state = table.state()
    planned = plan_compaction(table.storage, state)
    if planned is None:
        return None
    plan, slices = planned
    txn = Transaction.request(table, COMPACTION, serialize_instant_metadata("compaction_plan", plan))
    return execute_compaction(txn, state, slices)


def execute_compaction(txn: Transaction, state: TableState, slices: list[FileSlice]) -> WriteResult:
    """Run the requested compaction ``txn`` over ``slices``: inflight, a marker then a new base
    file per slice, the MDT deltacommit, then the completed commit; returns what it recorded."""
    table = txn.table
    txn.start()
    schema = state.schema
    merge = MergeSpec.from_config(state.config)
    valid = instant_validator(state.timeline)
    ctx, avro_schema = service_write_context(table, state, txn.instant)
    index_columns = ctx.index_columns
    results = []
    for i, s in enumerate(slices):
        rows = read_file_slice(table.storage, s, schema=schema, merge=merge, is_valid_instant=valid)
        task = FileGroupTask(
            s.partition_path, s.file_id, "insert", token=f"{i}-0-0", prev_commit=s.base_instant
        )
        path, res, bloom = write_marked_base_file(txn, ctx, task, rows)
        stat = WriteStat.base(
            s.partition_path,
            s.file_id,
            path,
            prev_commit=s.base_instant,
            num_writes=rows.num_rows,
            size=res.file_size,
            # the base file and log files the new base file replaces (Hudi's merge handle records
            # the base file as prevBaseFile too)
            prev_base_file=s.base_file.name if s.base_file is not None else None,
            log_files_compacted=len(s.log_files),
        )
        results.append(
            TaskResult(
                stat,
                {k: v for k, v in res.column_stats.items() if k in index_columns},
                bloom.serialize() if bloom else None,
                "DYNAMIC_V0" if bloom else None,
            )
        )
    meta = commit_metadata_record(
        stats_by_partition(r.write_stat for r in results),
        operation_type="COMPACT",
        extra_metadata={"schema": avro_schema},
        compacted=True,
    )
    config = TableConfig.load(table.storage)
    mdt_started = time.perf_counter()
    if config.metadata_partitions:
        types = {f.name: f.type for f in schema}
        records = mdt_records_for_commit(
            txn.instant,
            results,
            (set(config.metadata_partitions) | set(config.metadata_partitions_inflight)) - {K.RECORD_INDEX},
            types,
            before=state,
        )
        # UPSERT_PREPPED: Hudi's operation type for every MDT deltacommit
        txn.write_metadata(config, records)
    mdt_seconds = time.perf_counter() - mdt_started if config.metadata_partitions else 0.0
    txn.complete(serialize_instant_metadata("commit", meta))
    done = WriteResult.of_commit(txn.instant, "commit", meta, mdt_seconds=mdt_seconds)
    return log_commit(done, table.storage.uri())


def plan_slices(storage: Storage, plan: dict[str, Any]) -> list[FileSlice] | None:
    """The file slices a compaction plan reads; None when one of their files is missing."""
    out = []
    for op in plan.get("operations") or ():
        p = op.get("partitionPath") or ""
        fid = op["fileId"]
        base_instant = op.get("baseInstantTime") or ""
        try:
            base = None
            if op.get("dataFilePath"):
                name = op["dataFilePath"].rsplit("/", 1)[-1]
                size = storage.info(f"{p}/{name}" if p else name).size
                base = BaseFile(p, name, size, fid, base_instant)
            logs = []
            for path in op.get("deltaFilePaths") or ():
                name = path.rsplit("/", 1)[-1]
                parsed = LogFileName.parse(name)
                if parsed is None:
                    return None
                size = storage.info(f"{p}/{name}" if p else name).size
                logs.append(LogFile(p, name, size, fid, parsed.instant, parsed.version, parsed.write_token))
        except FileNotFoundError:
            return None
        out.append(FileSlice(p, fid, base_instant, base, tuple(sorted(logs, key=LogFile.sort_key))))
    return out


def compact_metadata_table(table: WritableTable, *, force: bool = False) -> str | None:
    """Compact the MDT when due (``force``: now), taking the lock."""
    with table.lock():
        config = TableConfig.load(table.storage)
        if not config.metadata_partitions:
            return None
        mw = table.metadata_writer(config)
        reader = load_table_state(table.storage, {"hoodie.metadata.enable": "true"}).metadata_table
        if reader is None:  # no `files` partition: nothing to compact
            return None
        return mdt_services.compact(mw, reader) if force else mdt_services.compact_if_due(mw, reader)
