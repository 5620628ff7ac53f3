"""Asynchronous MDT indexing (RFC-45): build an MDT partition while writers keep writing.

hudi-md's protocol, on Apache Hudi 1.2's bytes (:mod:`hudi_md.metadata.indexing`):

1. **Schedule**, under the table lock: the request is checked (a partition hudi-md maintains, not
   available, inflight or planned already, the MDT's ``files`` partition built, the columns of a
   ``column_stats`` request in the schema); the base instant is picked ("no holes"); the
   partition's file groups are created (an MDT deltacommit at an init instant, empty log blocks,
   the file-group count from Hudi's sizing rules); the partition joins
   ``hoodie.table.metadata.partitions.inflight``; ``T.indexing.requested`` holds the plan. From then
   on every commit writes the partition's records too (writers update the available and inflight
   partitions, reading the table config under the lock they commit with), and no reader uses it.
   A failure removes everything the schedule created.
2. **Run**: ``T.indexing.inflight``. First the writes that started before the schedule, and so
   may not write the new partition, are waited for (those with a live heartbeat; at most
   ``hoodie.metadata.index.check.timeout.seconds``, then the indexing is rolled back whole,
   :class:`IndexingTimeoutError`). Then the table's committed files are listed once, and the
   partition's records are built from them and written as the base files of the file groups at
   their init instant, so every writer's log block, whenever it was written, merges on top of them.
   Records are states (a key's location, a file's stats), so a commit both in the base and in a
   log block comes to the same state.
3. **Catch-up and completion**, under the lock, in one step: every instant that completed after the
   listing must have its MDT deltacommit (Hudi's catch-up rule); if one has none (a writer that
   did not sync the MDT), the partition is built again, under the lock. Partition stats of the
   data partitions written during the build are recomputed from their files (writers could only
   merge bounds into an unfinished partition) and written as the MDT deltacommit of ``T``. Then the
   partition moves from the inflight to the available list (and ``index.json``), and ``T_C.indexing``
   is written with the commit metadata.

A run that dies is run again: files of the earlier attempt at the init instant are removed first;
file groups a rollback or restore removed meanwhile are created again. Partitions that are
available already are skipped; a plan whose partitions all are just completes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hudi_md.config import metadata as M
from hudi_md.errors import CorruptFileError, IndexingTimeoutError, InvalidOptionError
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
    drop_index_defs,
    write_index_defs,
)
from hudi_md.metadata.records_builder import MdtRecord
from hudi_md.metadata.writer import INIT_INSTANT_PREFIX, MetadataTableWriter
from hudi_md.storage import Storage
from hudi_md.table import config as C
from hudi_md.table.config import TableConfig, update_table_config
from hudi_md.table.filenames import LogFileName
from hudi_md.table.timeline import (
    CLEAN,
    INDEXING,
    RESTORE,
    ROLLBACK,
    Instant,
    Timeline,
)
from hudi_md.table.timeline_writer import TimelineWriter
from hudi_md.write.config import WriteConfig, with_indexed_columns
from hudi_md.write.heartbeat import is_expired, last_heartbeat
from hudi_md.write.transaction import MDT_FOLDER, TIMELINE, Transaction, WritableTable

log = logging.getLogger(__name__)

INDEXABLE = tuple(p for p in K.MAINTAINED_PARTITIONS if p != K.FILES)
# Hudi's key and default (HoodieMetadataConfig): how long the indexer waits for writers.
CHECK_TIMEOUT_KEY = M.INDEX_CHECK_TIMEOUT.key
DEFAULT_CHECK_TIMEOUT_S = float(M.INDEX_CHECK_TIMEOUT.default)
# A build whose files a clean or rollback removed while it read them is made again from a new
# listing; a table that changes faster than it can be listed this many times is refused.
MAX_BUILD_ATTEMPTS = 4
_POLL_S = 0.5
# The actions whose instants write data (the write timeline) and whose MDT deltacommit a
# catch-up expects; clean, rollback and restore write MDT records too.
_WRITE_ACTIONS = frozenset(
    {"commit", "deltacommit", "replacecommit", "compaction", "logcompaction", "clustering"}
)
_CATCHUP_ACTIONS = _WRITE_ACTIONS | {CLEAN, ROLLBACK, RESTORE}


# --- schedule -----------------------------------------------------------------------------------------


def schedule_indexing(
    table: WritableTable, partitions: Sequence[str], *, columns: Sequence[str] | None = None
) -> str:
    """Plan building ``partitions`` of the MDT beside running writers; returns the indexing instant.

    ``columns``: the columns ``column_stats`` (and ``partition_stats``) index, written to
    ``index.json`` now so that every writer indexes the same ones (default: the writer's
    ``hoodie.metadata.index.column.stats.column.list``, else Hudi's first 32 columns)."""
    wanted = list(dict.fromkeys(partitions))
    bad = [p for p in wanted if p not in INDEXABLE]
    if not wanted or bad:
        raise InvalidOptionError(
            f"cannot index {', '.join(bad) or 'nothing'}: hudi-md builds {', '.join(INDEXABLE)} "
            "asynchronously (the files partition is built by 'hudi-md metadata create')"
        )
    if columns and K.COLUMN_STATS not in wanted:
        raise InvalidOptionError(
            "columns name what column_stats indexes (partition_stats indexes the same ones); "
            "plan column_stats to name them"
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
        if columns:
            _check_columns(table, columns)
        plan = IndexPlan(tuple(IndexPartitionInfo(p, base) for p in wanted))
        txn = Transaction.request(table, INDEXING, plan.plan_bytes(), timeline=timeline)
        try:
            if columns:
                write_index_defs(table.storage, [K.COLUMN_STATS], list(columns))
            _create_file_groups(table, config, wanted)
        except BaseException:
            _remove_partitions(table, wanted)
            txn.abandon()
            raise
        log.info("scheduled indexing %s of %s up to %s", txn.instant, ", ".join(wanted), base)
        return txn.instant


def _check_columns(table: WritableTable, columns: Sequence[str]) -> None:
    schema = table.state({M.METADATA_ENABLE.key: "false"}).schema
    missing = [c for c in columns if schema is None or schema.get_field_index(c.split(".")[0]) < 0]
    if missing:
        raise InvalidOptionError(
            f"cannot index column(s) {', '.join(missing)}: not in the schema of {table.storage.uri()}"
        )


def _create_file_groups(table: WritableTable, config: TableConfig, partitions: Sequence[str]) -> None:
    """The partitions' file groups (empty, at an init instant) and their place in the inflight
    list: from here on every commit writes them. The caller holds the lock."""
    writer = table.metadata_writer(config)
    builder = PartitionBuilder(table.storage, writer, _index_options(table, config))
    for p in partitions:
        writer.initialize_partition(p, [], num_file_groups=builder.file_groups(p))
    inflight = sorted(set(TableConfig.load(table.storage).metadata_partitions_inflight) | set(partitions))
    update_table_config(table.storage, {C.METADATA_PARTITIONS_INFLIGHT: ",".join(inflight)})


def _remove_partitions(table: WritableTable, partitions: Sequence[str], *, defs: bool = True) -> None:
    """Undo :func:`_create_file_groups` (and, with ``defs``, the partitions' ``index.json``
    entries: the columns a schedule named): the inflight list first, so no writer writes them any
    more, then their files, their init instants and an MDT deltacommit of theirs."""
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
    if defs:
        drop_index_defs(table.storage, [p for p in partitions if p not in config.metadata_partitions])


def _init_instants(table: WritableTable, partition: str) -> list[str]:
    """The init instants of a partition's file groups (from its log files)."""
    mdt = table.storage.child(MDT_FOLDER)
    if not mdt.exists(partition):
        return []
    times = set()
    for e in mdt.list(partition):
        parsed = LogFileName.parse(e.name)
        if parsed is not None and parsed.instant.startswith(INIT_INSTANT_PREFIX):
            times.add(parsed.instant)
    return sorted(times)


def _index_options(table: WritableTable, config: TableConfig) -> IndexOptions:
    """The writer's options, with the columns ``index.json`` names for column_stats when the
    options name none (what every writer of the table indexes)."""
    return with_indexed_columns(WriteConfig.from_options(table.options, config), table.storage)


# --- run ----------------------------------------------------------------------------------------------


@dataclass
class _Build:
    """What one build listed: the completed instants it saw, the instants whose records were
    logged into each partition already (left out of its column stats), the columns it indexed."""

    seen: frozenset[str]
    logged: dict[str, frozenset[str]]
    columns: list[str]


def run_indexing(
    table: WritableTable,
    instant: str | None = None,
    *,
    progress: Progress | None = None,
    builder: BuilderFactory | None = None,
    timeout_s: float | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> str | None:
    """Build what the pending ``indexing`` instant (the earliest when ``instant`` is None) plans
    and complete it; returns the instant, or None when nothing is pending.

    ``builder``: where the records come from (default: :class:`PartitionBuilder`, this process;
    ``hudi_md.spark.indexing`` has one that reads on a Spark cluster's executors). ``timeout_s``:
    how long to wait for writes that began before the schedule (default
    ``hoodie.metadata.index.check.timeout.seconds``, 900)."""
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
    build: _Build | None = None
    if todo:
        limit = timeout_s if timeout_s is not None else _check_timeout(table)
        _ensure_file_groups(table, t, todo)
        _wait_for_earlier_writes(table, t, plan, limit, sleep)
        build = _build(table, todo, builder, progress)
    with table.lock() as lock:
        config = TableConfig.load(table.storage)
        if todo and K.FILES not in config.metadata_partitions:
            abandon_pending_indexing(table, t, plan)
            raise InvalidOptionError(
                f"indexing {t} of {', '.join(todo)} was rolled back: the MDT of {table.storage.uri()} was "
                "deleted while it ran (no files partition); build the MDT, then schedule the indexing again"
            )
        if build is not None:
            why, anew = _build_again_why(table, config, todo, build)
            if why:
                log.warning("indexing %s: building %s again under the lock: %s", t, ", ".join(todo), why)
                if anew:
                    _remove_partitions(table, todo, defs=False)
                    _create_file_groups(table, config, todo)
                build = _build(table, todo, builder, progress)
            if K.PARTITION_STATS in todo:
                _remove_mdt_instant(table, t, todo)  # an earlier run's, that died before completing
                records = _tight_partition_stats(table, config, build)
                if records:
                    txn.write_metadata(config, records, partitions=[K.PARTITION_STATS])
        available = sorted(set(config.metadata_partitions) | set(plan.partition_names))
        inflight = [p for p in config.metadata_partitions_inflight if p not in plan.partition_names]
        update_table_config(
            table.storage,
            {C.METADATA_PARTITIONS: ",".join(available), C.METADATA_PARTITIONS_INFLIGHT: ",".join(inflight)},
        )
        if build is not None:
            write_index_defs(table.storage, todo, build.columns)
        txn.complete(plan.commit_bytes(), lock=lock)
    log.info("indexing %s completed: %s available", t, ", ".join(plan.partition_names))
    return t


def _check_timeout(table: WritableTable) -> float:
    value = M.INDEX_CHECK_TIMEOUT.get(table.options)
    if value < 0:
        raise M.INDEX_CHECK_TIMEOUT.invalid(value, "must be a number of seconds >= 0")
    return float(value)


def _ensure_file_groups(table: WritableTable, t: str, partitions: Sequence[str]) -> None:
    """Create again, under the lock, the file groups of planned partitions that a rollback or
    restore removed (they drop the whole MDT when it has to be rebuilt)."""
    if not _lost(table, TableConfig.load(table.storage), partitions):
        return
    with table.lock():
        config = TableConfig.load(table.storage)
        lost = _lost(table, config, partitions)
        if K.FILES not in config.metadata_partitions:
            raise InvalidOptionError(
                f"indexing {t} of {', '.join(lost)}: {table.storage.uri()} has no MDT files partition "
                "any more; drop the indexing (hudi-md index drop) and build the MDT first"
            )
        if lost:
            log.warning("indexing %s: creating the file groups of %s again", t, ", ".join(lost))
            _remove_partitions(table, lost, defs=False)
            _create_file_groups(table, config, lost)


def _lost(table: WritableTable, config: TableConfig, partitions: Sequence[str]) -> list[str]:
    inflight = set(config.metadata_partitions_inflight)
    return [p for p in partitions if p not in inflight or not _init_instants(table, p)]


def _wait_for_earlier_writes(
    table: WritableTable, t: str, plan: IndexPlan, limit_s: float, sleep: Callable[[float], None]
) -> None:
    """Wait until no write that began before the schedule is still running: such a writer read
    the table config before the partitions were inflight and may not write them (hudi-md's own
    writers re-read it at commit; others need not). A pending instant without a live heartbeat is
    not waited for: its writer is gone, and the next writer rolls it back."""
    deadline = time.monotonic() + limit_s
    while True:
        waiting = [
            i.requested_time
            for i in table.timeline().pending()
            if i.requested_time < t and i.action in _WRITE_ACTIONS and _alive(table, i)
        ]
        if not waiting:
            return
        left = deadline - time.monotonic()
        if left <= 0:
            abandon_indexing(table, t, plan)
            raise IndexingTimeoutError(t, waiting, limit_s, table.storage.uri(), CHECK_TIMEOUT_KEY)
        log.info("indexing %s waits for %s", t, ", ".join(waiting))
        sleep(min(_POLL_S, left))


def _alive(table: WritableTable, instant: Instant) -> bool:
    if last_heartbeat(table.storage, instant.requested_time) is None:
        return False
    return not is_expired(table.storage, instant.requested_time, table.options)


def _build(
    table: WritableTable, partitions: Sequence[str], builder: BuilderFactory | None, progress: Progress | None
) -> _Build:
    """List the table once and write the partitions' base files from it. A file removed while
    it was read (a clean, a rollback) makes the build start again from a new listing.

    Commits that completed since the schedule logged their records into the partitions; those
    that completed before the listing are in it too. Record-index entries and bloom filters are
    states, the same whether merged once or twice; column stats are not (Hudi adds the counts of
    two records of one file), so the build leaves out the files of instants that logged them.
    The logged instants are read after the listing: an instant that logs later completes later."""
    for attempt in range(1, MAX_BUILD_ATTEMPTS + 1):
        config = TableConfig.load(table.storage)
        writer = table.metadata_writer(config)
        make = builder or _local_builder
        source = make(table.storage, writer, _index_options(table, config), progress)
        seen = frozenset(i.requested_time for i in source.table.timeline.completed())
        source.logged = {p: _logged_instants(table, p) for p in partitions}
        try:
            for p in partitions:
                init = _init_instants(table, p)[0]
                _remove_earlier_attempt(table, p, init)
                groups = writer.existing_file_group_count(p)
                writer.write_partition_records(p, init, groups, source.batches(p))
        except FileNotFoundError as e:
            if attempt == MAX_BUILD_ATTEMPTS:
                raise
            log.info("a file went while the index was built (%s); listing the table again", e)
            continue
        return _Build(seen, dict(source.logged), list(source.columns))
    raise AssertionError("unreachable")


def _logged_instants(table: WritableTable, partition: str) -> frozenset[str]:
    """The instants with a log file in MDT ``partition`` (table version 8+ names log files by the
    instant that wrote them), but the init instants."""
    mdt = table.storage.child(MDT_FOLDER)
    out = set()
    for e in mdt.list(partition) if mdt.exists(partition) else []:
        parsed = LogFileName.parse(e.name)
        if parsed is not None and not parsed.instant.startswith(INIT_INSTANT_PREFIX):
            out.add(parsed.instant)
    return frozenset(out)


def _build_again_why(
    table: WritableTable, config: TableConfig, todo: Sequence[str], build: _Build
) -> tuple[str, bool]:
    """Why the build cannot complete as it is (empty when it can), and whether the partitions'
    file groups must be made anew first: they went (a rollback or restore rebuilt the MDT), or
    another writer compacted them (Apache Hudi 1.2's MDT compaction compacts inflight partitions:
    the build, at the init instant, would sit in an older slice than the compaction's); or an
    instant the build listed was rolled back since; or one that completed after the listing did
    not write the partitions."""
    lost = _lost(table, config, todo)
    if lost:
        return f"the file groups of {', '.join(lost)} went", True
    compacted = [p for p in todo if _compacted(table, p)]
    if compacted:
        return f"another writer compacted {', '.join(compacted)} while it was being built", True
    undone = _rolled_back_since(table, build.seen)
    if undone:
        return f"instant(s) {', '.join(undone)} it listed were rolled back", False
    late = _not_caught_up(table, build.seen, todo)
    if late:
        return f"commit(s) {', '.join(late)} completed without writing them", False
    return "", False


def _compacted(table: WritableTable, partition: str) -> bool:
    """Whether a base file of ``partition`` is at another instant than its init instant."""
    mdt = table.storage.child(MDT_FOLDER)
    init = set(_init_instants(table, partition))
    for e in mdt.list(partition):
        if e.name.endswith(".hfile") and e.name.rsplit("_", 1)[-1].removesuffix(".hfile") not in init:
            return True
    return False


def _rolled_back_since(table: WritableTable, seen: frozenset[str]) -> list[str]:
    timeline = table.timeline()
    undone: list[str] = []
    for i in _completed_after(table, seen):
        if i.action not in (ROLLBACK, RESTORE):
            continue
        try:
            meta = timeline.metadata(i)
        except (CorruptFileError, FileNotFoundError):
            continue
        targets = list(meta.get("commitsRollback") or []) + [
            str(x.get("commitTime")) for x in meta.get("instantsRollback") or [] if isinstance(x, dict)
        ]
        for r in (meta.get("hoodieRestoreMetadata") or {}).values():
            for m in r or []:
                targets.extend((m or {}).get("commitsRollback") or [])
        undone.extend(x for x in targets if x in seen)
    return sorted(set(undone))


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


def _completed_after(table: WritableTable, seen: frozenset[str]) -> list[Instant]:
    return [
        i
        for i in table.timeline().completed()
        if i.requested_time not in seen and i.action in _CATCHUP_ACTIONS
    ]


def _not_caught_up(table: WritableTable, seen: frozenset[str], todo: Sequence[str]) -> list[str]:
    """Commits that completed after the build's listing but did not write the partitions being
    built (RFC-45's indexing check): no MDT deltacommit of the same time (a writer that did not
    sync the MDT), or one without a partition the commit had records for (Apache Hudi 1.2's
    writers with streaming MDT writes update only the partitions their options enable). Their
    records are in neither the base files nor a log block. What a commit must have written: the
    record index when it inserted or deleted records, column and partition stats when it wrote
    records (a log of deletes has none)."""
    mdt = table.storage.child(MDT_FOLDER)
    mdt_timeline = Timeline.load(mdt, TIMELINE, 2)
    synced = {i.requested_time: i for i in mdt_timeline.completed()}
    # older MDT instants may be archived: only what the MDT's active timeline covers is judged
    first = min((t for t in synced if not t.startswith(INIT_INSTANT_PREFIX)), default="")
    timeline = table.timeline()
    late = []
    for i in _completed_after(table, seen):
        if i.requested_time <= first:
            continue
        mdt_instant = synced.get(i.requested_time)
        if mdt_instant is None:
            late.append(i.requested_time)
            continue
        if i.action not in _WRITE_ACTIONS:
            continue
        expected = _partitions_expected(timeline, i, todo)
        if not expected:
            continue
        try:
            written = set((mdt_timeline.metadata(mdt_instant).get("partitionToWriteStats") or {}).keys())
        except (CorruptFileError, FileNotFoundError):
            written = set()
        if expected - written:
            late.append(i.requested_time)
    return late


def _partitions_expected(timeline: Timeline, instant: Instant, todo: Sequence[str]) -> set[str]:
    """Which of the partitions being built a data commit must have written records to."""
    try:
        meta = timeline.metadata(instant)
    except (CorruptFileError, FileNotFoundError):
        return set()
    inserted = written = 0
    for stats in (meta.get("partitionToWriteStats") or {}).values():
        for st in stats or ():
            inserted += int(st.get("numInserts") or 0) + int(st.get("numDeletes") or 0)
            written += int(st.get("numInserts") or 0) + int(st.get("numUpdateWrites") or 0)
    out = set()
    if K.RECORD_INDEX in todo and inserted:
        out.add(K.RECORD_INDEX)
    out |= {p for p in (K.COLUMN_STATS, K.PARTITION_STATS) if p in todo and written}
    return out


def _tight_partition_stats(table: WritableTable, config: TableConfig, build: _Build) -> list[MdtRecord]:
    """Partition stats, from their files, of the data partitions written by commits that logged
    into the unfinished partition or completed after the build's listing: their writers could
    only merge bounds (the partition's column stats were not readable yet), and Hudi adds the
    counts of merged records, so the partition's record is wider than its files. The caller holds
    the lock, so no commit changes them meanwhile."""
    logged = build.logged.get(K.PARTITION_STATS, frozenset())
    touched: set[str] = set()
    timeline = table.timeline()
    for i in timeline.completed():
        if i.action not in _WRITE_ACTIONS or (
            i.requested_time in build.seen and i.requested_time not in logged
        ):
            continue
        try:
            meta = timeline.metadata(i)
        except (CorruptFileError, FileNotFoundError):
            continue
        touched.update((meta.get("partitionToWriteStats") or {}).keys())
        touched.update((meta.get("partitionToReplaceFileIds") or {}).keys())
    if not touched:
        return []
    writer = table.metadata_writer(config)
    source = PartitionBuilder(table.storage, writer, _index_options(table, config))
    live = [p for p in source.data_partitions if p in touched]
    return source.records_of(K.PARTITION_STATS, live) if live else []


# --- abandon --------------------------------------------------------------------------------------------


def abandon_indexing(table: WritableTable, instant: str, plan: IndexPlan | None) -> list[str]:
    """Roll back a pending ``indexing`` instant whole, under the lock; see
    :func:`abandon_pending_indexing`."""
    with table.lock():
        return abandon_pending_indexing(table, instant, plan)


def abandon_pending_indexing(table: WritableTable, instant: str, plan: IndexPlan | None) -> list[str]:
    """Roll back a pending ``indexing`` instant whole: the partitions it was building that are not
    available yet (inflight list, file groups, init instants, ``index.json`` entries), its MDT
    deltacommit and its instant files. The caller holds the lock. Returns the partitions removed."""
    config = TableConfig.load(table.storage)
    planned = plan.partition_names if plan is not None else []
    building = [p for p in planned if p not in config.metadata_partitions]
    _remove_partitions(table, building)
    _remove_mdt_instant(table, instant, building)
    Transaction.resume(table, instant, INDEXING).abandon()
    log.info("indexing %s rolled back (%s removed)", instant, ", ".join(building) or "nothing")
    return building


def _remove_mdt_instant(table: WritableTable, instant: str, partitions: Sequence[str]) -> None:
    """The indexing instant's own MDT deltacommit (the partition stats its completion writes),
    which only ever writes partitions it builds: no MDT compaction folds those in."""
    mdt = table.storage.child(MDT_FOLDER)
    if not mdt.exists(TIMELINE):
        return
    for p in partitions:
        if mdt.exists(p):
            for e in mdt.list(p):
                if f"_{instant}.log." in e.name:
                    mdt.delete(e.path)
    TimelineWriter(mdt, TIMELINE).delete_all(instant)


def pending_indexing_instants(timeline: Timeline) -> list[str]:
    return [i.requested_time for i in timeline.pending().of_actions(INDEXING)]
