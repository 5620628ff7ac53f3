"""Asynchronous MDT indexing (RFC-45): build an MDT partition while writers keep writing.

hudi-md's protocol, on Apache Hudi 1.2's bytes (:mod:`hudi_md.metadata.indexing`):

1. **Schedule**, under the table lock: the request is checked (a partition hudi-md maintains, not
   available, inflight or planned already, the MDT's ``files`` partition built); the base instant
   is picked ("no holes"); the partition's file groups are created (an MDT deltacommit at an init
   instant, empty log blocks, the file-group count from Hudi's sizing rules); the partition joins
   ``hoodie.table.metadata.partitions.inflight``; ``T.indexing.requested`` holds the plan. From then
   on every commit writes the partition's records too (writers update the available and inflight
   partitions, reading the table config under the lock they commit with), and no reader uses it.
   A failure removes everything the schedule created.
2. **Run**: ``T.indexing.inflight``; the partition's records are built from the table's committed
   files as they are now (not only up to the base instant) and written as the base files of the
   file groups at their init instant, so every writer's log block, whenever it was written, merges
   on top of them in instant order. Records are states (a key's location, a file's stats), so a
   commit both in the base and in a log is applied twice to the same effect. Hence the catch-up of
   RFC-45 has nothing left to replay for hudi-md's writers, and nothing to wait for: a pending
   instant writes the partition when it commits.
3. **Complete**, under the lock, in one step: the partition moves from the inflight to the
   available list (and ``index.json``), then ``T_C.indexing`` is written with the commit metadata.

A run that dies is run again: files of the earlier attempt at the init instant are removed first.
Partitions that are available already are skipped; a plan whose partitions all are just completes.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from hudi_md.errors import InvalidOptionError
from hudi_md.metadata import keys as K
from hudi_md.metadata.indexing import (
    IndexPartitionInfo,
    IndexPlan,
    base_instant,
    indexing_state,
    planned_partitions,
    read_index_plan,
)
from hudi_md.metadata.lifecycle import (
    BuilderFactory,
    IndexOptions,
    PartitionBuilder,
    Progress,
    RecordSource,
    write_index_defs,
)
from hudi_md.metadata.writer import INIT_INSTANT_PREFIX, MetadataTableWriter
from hudi_md.storage import Storage
from hudi_md.table import config as C
from hudi_md.table.config import TableConfig, update_table_config
from hudi_md.table.filenames import LogFileName
from hudi_md.table.timeline import INDEXING, Timeline
from hudi_md.table.timeline_writer import TimelineWriter
from hudi_md.write.config import WriteConfig
from hudi_md.write.transaction import MDT_FOLDER, TIMELINE, Transaction, WritableTable

log = logging.getLogger(__name__)

INDEXABLE = tuple(p for p in K.MAINTAINED_PARTITIONS if p != K.FILES)


def schedule_indexing(table: WritableTable, partitions: Sequence[str]) -> str:
    """Plan building ``partitions`` of the MDT beside running writers; returns the indexing instant."""
    wanted = list(dict.fromkeys(partitions))
    bad = [p for p in wanted if p not in INDEXABLE]
    if not wanted or bad:
        raise InvalidOptionError(
            f"cannot index {', '.join(bad) or 'nothing'}: hudi-md builds {', '.join(INDEXABLE)} "
            "asynchronously (the files partition is built by 'hudi-md metadata create')"
        )
    with table.lock():
        config = TableConfig.load(table.storage)
        if K.FILES not in config.metadata_partitions:
            raise InvalidOptionError(
                f"{table.storage.uri()} has no MDT files partition: build it first (hudi-md metadata create)"
            )
        timeline = table.timeline()
        state = indexing_state(table.storage, config, timeline)
        taken = set(state.available) | set(state.inflight) | planned_partitions(state.pending)
        clash = [p for p in wanted if p in taken]
        if clash:
            raise InvalidOptionError(
                f"{', '.join(clash)} already available, inflight or planned on {table.storage.uri()} "
                "(see hudi-md index show)"
            )
        base = base_instant(timeline)
        if base is None:
            raise InvalidOptionError(f"{table.storage.uri()} has no completed write to index up to")
        plan = IndexPlan(tuple(IndexPartitionInfo(p, base) for p in wanted))
        txn = Transaction.request(table, INDEXING, plan.plan_bytes())
        try:
            writer = table.metadata_writer(config)
            builder = PartitionBuilder(table.storage, writer, WriteConfig.from_options(table.options, config))
            for p in wanted:
                writer.initialize_partition(p, [], num_file_groups=builder.file_groups(p))
            inflight = sorted(set(config.metadata_partitions_inflight) | set(wanted))
            update_table_config(table.storage, {C.METADATA_PARTITIONS_INFLIGHT: ",".join(inflight)})
        except BaseException:
            _undo_schedule(table, txn, wanted)
            raise
        log.info("scheduled indexing %s of %s up to %s", txn.instant, ", ".join(wanted), base)
        return txn.instant


def _undo_schedule(table: WritableTable, txn: Transaction, partitions: Sequence[str]) -> None:
    config = TableConfig.load(table.storage)
    kept = [p for p in config.metadata_partitions_inflight if p not in partitions]
    if kept != list(config.metadata_partitions_inflight):
        update_table_config(table.storage, {C.METADATA_PARTITIONS_INFLIGHT: ",".join(kept)})
    mdt = table.storage.child(MDT_FOLDER)
    for p in partitions:
        inits = _init_instants(table, p)
        if mdt.exists(p):
            mdt.delete(p, recursive=True)
        for t in inits:
            TimelineWriter(mdt, TIMELINE).delete_all(t)
    txn.abandon()


def _init_instants(table: WritableTable, partition: str) -> list[str]:
    """The init instants of a partition's file groups (from its partition metadata and logs)."""
    mdt = table.storage.child(MDT_FOLDER)
    if not mdt.exists(partition):
        return []
    times = set()
    for e in mdt.list(partition):
        parsed = LogFileName.parse(e.name)
        if parsed is not None and parsed.instant.startswith(INIT_INSTANT_PREFIX):
            times.add(parsed.instant)
    return sorted(times)


def run_indexing(
    table: WritableTable,
    instant: str | None = None,
    *,
    progress: Progress | None = None,
    builder: BuilderFactory | None = None,
) -> str | None:
    """Build what the pending ``indexing`` instant (the earliest when ``instant`` is None) plans
    and complete it; returns the instant, or None when nothing is pending.

    ``builder``: where the records come from (default: :class:`PartitionBuilder`, this process;
    ``hudi_md.spark.indexing`` has one that reads on a Spark cluster's executors)."""
    config = TableConfig.load(table.storage)
    state = indexing_state(table.storage, config, table.timeline())
    pending = [p for p in state.pending if instant is None or p.instant.requested_time == instant]
    if not pending:
        if instant is not None:
            raise InvalidOptionError(f"no pending indexing instant {instant} in {table.storage.uri()}")
        return None
    item = min(pending, key=lambda p: p.instant.requested_time)
    t = item.instant.requested_time
    plan = item.plan or read_index_plan(table.storage, config.timeline_path, t)
    txn = Transaction.resume(table, t, INDEXING)
    txn.start(if_missing=True)
    todo = [p for p in plan.partition_names if p not in config.metadata_partitions]
    writer = table.metadata_writer(config)
    source: RecordSource | None = None
    for p in todo:
        inits = _init_instants(table, p)
        if p not in config.metadata_partitions_inflight or not inits:
            raise InvalidOptionError(
                f"indexing {t} of {p} lost its file groups (partition not inflight or not initialised); "
                f"drop it (hudi-md index drop --partitions {p}) and schedule it again"
            )
        init = inits[0]
        _remove_earlier_attempt(table, p, init)
        if source is None:  # one listing of the table for every partition of the plan
            cfg = WriteConfig.from_options(table.options, config)
            make = builder or _local_builder
            source = make(table.storage, writer, cfg, progress)
        writer.write_partition_records(p, init, writer.existing_file_group_count(p), source.batches(p))
    with table.lock() as lock:
        config = TableConfig.load(table.storage)
        available = sorted(set(config.metadata_partitions) | set(plan.partition_names))
        inflight = [p for p in config.metadata_partitions_inflight if p not in plan.partition_names]
        update_table_config(
            table.storage,
            {C.METADATA_PARTITIONS: ",".join(available), C.METADATA_PARTITIONS_INFLIGHT: ",".join(inflight)},
        )
        if source is not None:
            write_index_defs(table.storage, todo, source.columns)
        txn.complete(plan.commit_bytes(), lock=lock)
    log.info("indexing %s completed: %s available", t, ", ".join(plan.partition_names))
    return t


def _local_builder(
    storage: Storage, writer: MetadataTableWriter, cfg: IndexOptions | None, progress: Progress | None
) -> RecordSource:
    return PartitionBuilder(storage, writer, cfg, progress=progress)


def _remove_earlier_attempt(table: WritableTable, partition: str, init: str) -> None:
    """Base files and later log versions an interrupted run wrote at the init instant (the empty
    ``.log.1`` of each file group is the schedule's and stays)."""
    mdt = table.storage.child(MDT_FOLDER)
    for e in mdt.list(partition):
        name = e.name
        if name.endswith(f"_{init}.hfile") or (f"_{init}.log." in name and ".log.1_" not in name):
            mdt.delete(e.path)


def pending_indexing_instants(timeline: Timeline) -> list[str]:
    return [i.requested_time for i in timeline.pending().of_actions(INDEXING)]
