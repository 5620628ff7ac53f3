"""Clustering: a partition's small file groups rewritten into few, optionally sorted, new ones, as
Apache Hudi 1.2 plans and runs it (``SparkSizeBasedClusteringPlanStrategy``,
``SparkSortAndSizeExecutionStrategy``).

A clustering is a transaction like a compaction: its plan (``T.clustering.requested``, a
``HoodieRequestedReplaceMetadata`` holding a ``HoodieClusteringPlan``; ``T.replacecommit.requested``
on table version 6), the inflight file, a marker then a base file per output file group, its MDT
deltacommit, then the completed ``T_C.replacecommit`` whose ``partitionToReplaceFileIds`` names the
input file groups. Readers drop the replaced groups at once; the cleaner deletes their files once
no retained commit reads them. A plan is Hudi's own, so Apache Hudi runs plans hudi-md schedules
and hudi-md runs Hudi's.

Planning, per partition: the latest slices whose base file is smaller than
``hoodie.clustering.plan.strategy.small.file.limit`` (a slice without a base file counts as
``hoodie.parquet.max.file.size``), not read by a pending compaction or clustering, largest first,
cut into groups of at most ``…max.bytes.per.group`` input bytes, each written as
``ceil(bytes / …target.file.max.bytes)`` file groups; a partition's last group of a single slice
only when ``…single.group.clustering.enabled``; at most ``…max.num.groups`` groups.

Execution: a group's slices are read merged (MOR log files applied), ordered by the plan's sort
columns (``hoodie.layout.optimize.strategy``: linear, z-order or Hilbert) and written into its
output file groups with their Hudi metadata preserved (``_hoodie_commit_time``,
``_hoodie_commit_seqno``; ``_hoodie_file_name`` names the new file). The record index points every
moved key to its new file group; column stats of the new files are added and partition stats
recomputed, as for any commit.
"""

from __future__ import annotations

import logging
import math
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from hudi_md.config import services as S
from hudi_md.config import write as W
from hudi_md.errors import ClusteringError, CorruptFileError
from hudi_md.formats.commit_metadata import WriteStat
from hudi_md.formats.commit_metadata_writer import (
    commit_metadata_record,
    serialize_instant_metadata,
    stats_by_partition,
)
from hudi_md.read.merge import MergeSpec
from hudi_md.read.slice_reader import read_file_slice
from hudi_md.storage import Storage
from hudi_md.table.config import TableConfig
from hudi_md.table.filenames import BaseFileName, LogFileName
from hudi_md.table.fs_view import BaseFile, FileSlice, LogFile
from hudi_md.table.state import TableState
from hudi_md.table.timeline import CLUSTERING, REPLACE_COMMIT, Instant, State, Timeline, instant_validator
from hudi_md.write.compaction import service_write_context, write_marked_base_file
from hudi_md.write.file_groups import (
    FileGroupTask,
    TaskResult,
    base_file_result,
    new_file_id,
    write_token,
)
from hudi_md.write.mdt_sync import mdt_records_for_commit
from hudi_md.write.plans import (
    TIMELINE,
    pending_clustering_file_groups,
    pending_compaction_file_groups,
    read_plan,
)
from hudi_md.write.result import WriteResult, log_commit
from hudi_md.write.transaction import Transaction, WritableTable

log = logging.getLogger(__name__)

EXECUTION_STRATEGY = "org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy"
OPERATION_TYPE = "CLUSTER"
_MB = 1024 * 1024


@dataclass(frozen=True)
class ClusteringOptions:
    """The ``hoodie.clustering.*`` options of planning and running a clustering."""

    small_file_limit: int
    target_file_max_bytes: int
    max_bytes_per_group: int
    max_num_groups: int
    single_group: bool
    sort_columns: tuple[str, ...]
    layout_strategy: str
    partition_selected: tuple[str, ...]
    partition_regex: str | None
    parquet_max_file_size: int
    inline: bool
    schedule_inline: bool
    inline_max_commits: int
    # writers run pending clusterings (no async job runs them: hoodie.clustering.async.enabled)
    run_pending: bool = True

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> ClusteringOptions:
        return cls(
            small_file_limit=S.CLUSTERING_SMALL_FILE_LIMIT.get(options),
            target_file_max_bytes=S.CLUSTERING_TARGET_FILE_MAX_BYTES.get(options),
            max_bytes_per_group=S.CLUSTERING_MAX_BYTES_PER_GROUP.get(options),
            max_num_groups=S.CLUSTERING_MAX_NUM_GROUPS.get(options),
            single_group=S.CLUSTERING_SINGLE_GROUP.get(options),
            sort_columns=tuple(S.CLUSTERING_SORT_COLUMNS.get(options) or ()),
            layout_strategy=S.LAYOUT_OPTIMIZE_STRATEGY.get(options) or "LINEAR",
            partition_selected=tuple(S.CLUSTERING_PARTITION_SELECTED.get(options) or ()),
            partition_regex=S.CLUSTERING_PARTITION_REGEX.get(options) or None,
            parquet_max_file_size=W.MAX_FILE_SIZE.get(options),
            inline=S.CLUSTERING_INLINE.get(options),
            schedule_inline=S.CLUSTERING_SCHEDULE_INLINE.get(options),
            inline_max_commits=S.CLUSTERING_INLINE_MAX_COMMITS.get(options),
            run_pending=not S.CLUSTERING_ASYNC.get(options),
        )


@dataclass(frozen=True)
class ClusteringGroup:
    """One group of a plan: the slices read, and how many file groups they are written into."""

    slices: tuple[FileSlice, ...]
    num_output_file_groups: int

    @property
    def partition_path(self) -> str:
        return self.slices[0].partition_path


# --- planning ----------------------------------------------------------------------------------------


def _slice_size(s: FileSlice, default: int) -> int:
    return s.base_file.size if s.base_file is not None else default


def _metrics(slices: Sequence[FileSlice], default_base_size: int) -> dict[str, float]:
    """Hudi's ``FileSliceMetricUtils`` figures of a group (recorded in the plan, read by nobody):
    sizes in whole MB, log sizes in bytes."""
    log_size = sum(lf.size for s in slices for lf in s.log_files)
    log_files = sum(len(s.log_files) for s in slices)
    read = (sum((s.base_file.size if s.base_file else 0) for s in slices) + log_size) // _MB
    write = sum(_slice_size(s, default_base_size) for s in slices) // _MB
    return {
        "TOTAL_LOG_FILES_SIZE": float(log_size),
        "TOTAL_LOG_FILES": float(log_files),
        "TOTAL_IO_READ_MB": float(read),
        "TOTAL_IO_WRITE_MB": float(write),
        "TOTAL_IO_MB": float(read + write),
    }


def _partitions(state: TableState, opts: ClusteringOptions) -> list[str]:
    if opts.partition_selected:
        return list(opts.partition_selected)
    partitions = state.partitions()
    if opts.partition_regex:
        pattern = re.compile(opts.partition_regex)
        partitions = [p for p in partitions if pattern.fullmatch(p)]
    return partitions


def _groups_of_partition(
    slices: list[FileSlice], opts: ClusteringOptions
) -> tuple[list[ClusteringGroup], bool]:
    """The partition's groups, and whether ``max.num.groups`` cut them short."""
    default = opts.parquet_max_file_size
    ordered = sorted(slices, key=lambda s: -_slice_size(s, default))  # stable: largest first
    groups: list[ClusteringGroup] = []
    current: list[FileSlice] = []
    total = 0

    def output_groups(size: int) -> int:
        return max(1, math.ceil(size / opts.target_file_max_bytes))

    for s in ordered:
        size = _slice_size(s, default)
        if current and total + size > opts.max_bytes_per_group:
            groups.append(ClusteringGroup(tuple(current), output_groups(total)))
            current, total = [], 0
            if len(groups) >= opts.max_num_groups:
                return groups, True
        current.append(s)
        total += size
    # a last group of one slice is a 1 -> 1 rewrite: worth it to sort, or when asked for
    if current and (len(current) > 1 or opts.single_group or opts.sort_columns):
        groups.append(ClusteringGroup(tuple(current), output_groups(total)))
    return groups, False


def plan_clustering(
    storage: Storage, state: TableState, opts: ClusteringOptions
) -> tuple[dict[str, Any], list[ClusteringGroup]] | None:
    """The ``HoodieRequestedReplaceMetadata`` of a clustering of the table's small file groups,
    and its groups; None when nothing qualifies."""
    busy = set(pending_compaction_file_groups(storage, state.timeline))
    busy |= set(pending_clustering_file_groups(storage, state.timeline))
    view = state.file_system_view()
    groups: list[ClusteringGroup] = []
    missing: list[str] = []  # partitions the group cap cut short or left out (Hudi records them)
    for partition in _partitions(state, opts):
        if len(groups) >= opts.max_num_groups:
            missing.append(partition)
            continue
        eligible = [
            s
            for s in view.latest_file_slices([partition])
            if (s.partition_path, s.file_id) not in busy
            and (s.base_file.size if s.base_file is not None else 0) < opts.small_file_limit
        ]
        found, cut = _groups_of_partition(eligible, opts)
        room = opts.max_num_groups - len(groups)
        if cut or len(found) > room:
            missing.append(partition)
        groups.extend(found[:room])
    if not groups:
        return None
    params = {S.CLUSTERING_SORT_COLUMNS.key: ",".join(opts.sort_columns)} if opts.sort_columns else {}
    plan = {
        "operationType": OPERATION_TYPE,
        "clusteringPlan": {
            "inputGroups": [
                {
                    "slices": [_slice_info(storage, s) for s in g.slices],
                    "metrics": _metrics(g.slices, opts.parquet_max_file_size),
                    "numOutputFileGroups": g.num_output_file_groups,
                    "extraMetadata": None,
                    "version": 1,
                }
                for g in groups
            ],
            "strategy": {"strategyClassName": EXECUTION_STRATEGY, "strategyParams": params, "version": 1},
            "extraMetadata": {},
            "version": 1,
            "preserveHoodieMetadata": True,
            "missingSchedulePartitions": missing,
        },
        "extraMetadata": {},
        "version": 1,
    }
    return plan, groups


def _slice_info(storage: Storage, s: FileSlice) -> dict[str, Any]:
    """A slice as Hudi's plan records it: full paths of its files."""
    return {
        "dataFilePath": storage.uri(s.base_file.path) if s.base_file is not None else "",
        "deltaFilePaths": [storage.uri(lf.path) for lf in s.log_files],
        "fileId": s.file_id,
        "partitionPath": s.partition_path,
        "bootstrapFilePath": "",
        "version": 1,
    }


def plan_groups(storage: Storage, plan: Mapping[str, Any]) -> list[ClusteringGroup]:
    """The groups of a clustering plan (hudi-md's or Apache Hudi's), their slices read back from
    storage; :class:`ClusteringError` when a file the plan reads is gone."""
    out = []
    for group in (plan.get("clusteringPlan") or {}).get("inputGroups") or ():
        slices = tuple(_plan_slice(storage, info) for info in group.get("slices") or ())
        if slices:
            out.append(ClusteringGroup(slices, int(group.get("numOutputFileGroups") or 1)))
    return out


def _plan_slice(storage: Storage, info: Mapping[str, Any]) -> FileSlice:
    p = info.get("partitionPath") or ""
    fid = info["fileId"]

    def rel(path: str) -> tuple[str, int]:
        name = path.rsplit("/", 1)[-1]
        full = f"{p}/{name}" if p else name
        try:
            return name, storage.info(full).size
        except FileNotFoundError:
            raise ClusteringError(
                f"clustering plan reads {storage.uri(full)}, which is gone: the plan cannot run"
            ) from None

    base = None
    base_instant = ""
    if info.get("dataFilePath"):
        name, size = rel(info["dataFilePath"])
        parsed = BaseFileName.parse(name)
        base_instant = parsed.instant if parsed is not None else ""
        base = BaseFile(p, name, size, fid, base_instant)
    logs = []
    for path in info.get("deltaFilePaths") or ():
        name, size = rel(path)
        lf = LogFileName.parse(name)
        if lf is None:
            raise ClusteringError(f"clustering plan names {path!r}, which is not a log file name")
        base_instant = base_instant or lf.instant
        logs.append(LogFile(p, name, size, fid, lf.instant, lf.version, lf.write_token))
    return FileSlice(p, fid, base_instant, base, tuple(sorted(logs, key=LogFile.sort_key)))


# --- the timeline ----------------------------------------------------------------------------------


def clustering_action(config: TableConfig) -> str:
    """The pending action of a clustering: ``clustering`` from table version 8, ``replacecommit``
    before."""
    return CLUSTERING if config.table_version >= 8 else REPLACE_COMMIT


def is_clustering_plan(plan: Mapping[str, Any] | None) -> bool:
    return bool(plan) and (
        (plan or {}).get("operationType") == OPERATION_TYPE or bool((plan or {}).get("clusteringPlan"))
    )


def pending_clusterings(storage: Storage, timeline: Timeline) -> list[Instant]:
    """Pending clustering instants, oldest first (a pending replacecommit counts when its plan is
    a clustering plan, as on table version 6)."""
    out = []
    for instant in timeline.pending().of_actions(CLUSTERING, REPLACE_COMMIT):
        if instant.action == CLUSTERING:
            out.append(instant)
            continue
        try:
            plan = read_plan(storage, instant.requested_time, instant.action)
        except CorruptFileError:
            continue
        if is_clustering_plan(plan):
            out.append(instant)
    return sorted(out, key=lambda i: i.requested_time)


def commits_since_last_clustering(timeline: Timeline) -> int:
    """Completed commits, deltacommits and replacecommits after the last completed clustering (all
    of them when there was none): what ``hoodie.clustering.inline.max.commits`` counts."""
    completed = timeline.completed().write_timeline()
    count = 0
    for instant in reversed(completed.instants):
        if instant.action == REPLACE_COMMIT:
            try:
                op = timeline.metadata(instant).get("operationType")
            except CorruptFileError:
                op = None
            if op == OPERATION_TYPE:
                break
        count += 1
    return count


# --- scheduling and running -------------------------------------------------------------------------


def schedule(table: WritableTable, opts: ClusteringOptions) -> str | None:
    """Write a clustering plan (requested only; the caller holds the lock); its instant, or None
    when nothing qualifies."""
    state = table.state()
    planned = plan_clustering(table.storage, state, opts)
    if planned is None:
        return None
    plan, groups = planned
    action = clustering_action(state.config)
    txn = Transaction.request(table, action, serialize_instant_metadata("requested_replace", plan))
    log.info(
        "scheduled clustering %s: %d groups of %d file slices",
        txn.instant,
        len(groups),
        sum(len(g.slices) for g in groups),
    )
    return txn.instant


def run(table: WritableTable, instant: Instant, opts: ClusteringOptions) -> WriteResult:
    """Run the pending clustering ``instant`` (the caller holds the lock): an earlier attempt's
    files and MDT deltacommit are undone first, then it runs from its plan."""
    t = instant.requested_time
    plan = read_plan(table.storage, t, instant.action)
    if not is_clustering_plan(plan):
        raise ClusteringError(f"instant {t} ({instant.action}) on {table.storage.uri()} is not a clustering")
    assert plan is not None
    if instant.state is State.INFLIGHT:
        _undo_attempt(table, t, instant.action, plan)
    groups = plan_groups(table.storage, plan)
    txn = Transaction.resume(table, t, instant.action)
    return execute(txn, table.state(), plan, groups, opts)


def drop(table: WritableTable, instant: Instant) -> None:
    """Roll back a pending clustering whose plan cannot run (torn, or a file it reads is gone):
    an attempt's files and MDT deltacommit, then its pending files (nothing ran from a plan that
    never landed whole)."""
    t = instant.requested_time
    try:
        plan = read_plan(table.storage, t, instant.action) or {}
    except CorruptFileError:
        plan = {}
    _undo_attempt(table, t, instant.action, plan)
    requested = f"{TIMELINE}/{t}.{instant.action}.requested"
    if table.storage.exists(requested):
        table.storage.delete(requested)


def _undo_attempt(table: WritableTable, instant_time: str, action: str, plan: Mapping[str, Any]) -> None:
    """An inflight clustering's partial work, in the plan's partitions (its new file ids are not
    in the plan)."""
    from hudi_md.write.rollback import undo_service_attempt

    partitions = {
        info.get("partitionPath") or ""
        for g in (plan.get("clusteringPlan") or {}).get("inputGroups") or ()
        for info in g.get("slices") or ()
    }
    undo_service_attempt(table, instant_time, action, dict.fromkeys(partitions))
    log.warning("rolled back the unfinished attempt of clustering %s", instant_time)


def _chunks(rows: pa.Table, n: int) -> list[pa.Table]:
    """``rows`` cut into ``n`` contiguous parts of equal size (no empty part)."""
    n = max(1, min(n, rows.num_rows))
    bounds = [rows.num_rows * i // n for i in range(n + 1)]
    return [rows.slice(bounds[i], bounds[i + 1] - bounds[i]) for i in range(n)]


def execute(
    txn: Transaction,
    state: TableState,
    plan: Mapping[str, Any],
    groups: Sequence[ClusteringGroup],
    opts: ClusteringOptions,
) -> WriteResult:
    """Run the requested clustering ``txn``: inflight, a marker then a base file per output file
    group, the MDT deltacommit, then the completed replacecommit; returns what it recorded."""
    table = txn.table
    txn.start()
    table.check_step("clustering_inflight")
    schema = state.schema
    merge = MergeSpec.from_config(state.config)
    valid = instant_validator(state.timeline)
    ctx, avro_schema = service_write_context(table, state, txn.instant)
    # the sort columns are the plan's (its strategy parameters carry the option), the layout the runner's
    strategy = (plan.get("clusteringPlan") or {}).get("strategy") or {}
    sort_columns = list(S.CLUSTERING_SORT_COLUMNS.get(strategy.get("strategyParams") or {}) or ())
    results: list[TaskResult] = []
    replaced: dict[str, list[str]] = {}
    task_index = 0
    for group in groups:
        parts = [
            read_file_slice(table.storage, s, schema=schema, merge=merge, is_valid_instant=valid)
            for s in group.slices
        ]
        rows = pa.concat_tables(parts) if parts else schema.empty_table()
        if sort_columns and rows.num_rows:
            from hudi_md.write.layout_order import sorted_by_layout

            rows = sorted_by_layout(rows, sort_columns, opts.layout_strategy)
        for s in group.slices:
            replaced.setdefault(s.partition_path, []).append(s.file_id)
        for chunk in _chunks(rows, group.num_output_file_groups) if rows.num_rows else []:
            task = FileGroupTask(group.partition_path, new_file_id(), "insert", token=write_token(task_index))
            task_index += 1
            path, res, bloom = write_marked_base_file(txn, ctx, task, chunk)
            stat = WriteStat.base(
                task.partition_path,
                task.file_id,
                path,
                prev_commit="null",
                num_writes=chunk.num_rows,
                num_inserts=chunk.num_rows,
                size=res.file_size,
            )
            keys = chunk.column("_hoodie_record_key").combine_chunks()
            results.append(base_file_result(ctx, stat, res, bloom, inserted_keys=keys))
        table.check_step("clustering_group_written")
    meta = commit_metadata_record(
        stats_by_partition(r.write_stat for r in results),
        operation_type=OPERATION_TYPE,
        extra_metadata={"schema": avro_schema},
        partition_to_replace_file_ids=replaced,
    )
    config = TableConfig.load(table.storage)
    mdt_started = time.perf_counter()
    if config.metadata_partitions:
        types = {f.name: f.type for f in schema}
        available = set(config.metadata_partitions) | set(config.metadata_partitions_inflight)
        records = mdt_records_for_commit(
            txn.instant,
            results,
            available,
            types,
            before=state,
            replaced=replaced,
            replaced_keys=(),  # every key of the replaced groups is written again, elsewhere
        )
        txn.write_metadata(config, records, partitions=available)
    mdt_seconds = time.perf_counter() - mdt_started if config.metadata_partitions else 0.0
    table.check_step("clustering_before_complete")
    txn.complete(serialize_instant_metadata("replacecommit", meta))
    done = WriteResult.of_commit(txn.instant, REPLACE_COMMIT, meta, mdt_seconds=mdt_seconds)
    return log_commit(done, table.storage.uri())


def schedule_and_run(table: WritableTable, opts: ClusteringOptions) -> WriteResult | None:
    """Schedule a clustering and run it (the caller holds the lock); None: nothing to cluster."""
    t = schedule(table, opts)
    found = table.timeline().get(t) if t is not None else None
    return run(table, found, opts) if found is not None else None


def cluster(table: WritableTable, opts: ClusteringOptions) -> list[WriteResult]:
    """Run every pending clustering (oldest first), or, when none is pending, schedule one and run
    it (the caller holds the lock). Returns what each recorded."""
    done = [run(table, i, opts) for i in pending_clusterings(table.storage, table.timeline())]
    if not done:
        new = schedule_and_run(table, opts)
        done += [new] if new is not None else []
    return done


_WARNED: set[str] = set()


def warn_if_never_due(opts: ClusteringOptions, keep_max_commits: int, uri: str) -> None:
    """Warn once per table when inline clustering can never be due: the commits since the last
    clustering are counted on the active timeline, which archival keeps to
    ``hoodie.keep.max.commits`` (Apache Hudi 1.2 counts so too, and never clusters then either)."""
    if not (opts.inline or opts.schedule_inline) or opts.inline_max_commits <= keep_max_commits:
        return
    if uri in _WARNED:
        return
    _WARNED.add(uri)
    log.warning(
        "%s: hoodie.clustering.inline.max.commits=%d is above hoodie.keep.max.commits=%d: archival "
        "keeps fewer commits on the active timeline than inline clustering counts, so it never runs; "
        "raise hoodie.keep.min.commits and hoodie.keep.max.commits above it",
        uri,
        opts.inline_max_commits,
        keep_max_commits,
    )


def run_inline(table: WritableTable, opts: ClusteringOptions) -> list[WriteResult]:
    """After a commit (the caller holds the lock): with ``hoodie.clustering.inline``, pending
    clusterings run, then a new one is scheduled and run once
    ``hoodie.clustering.inline.max.commits`` commits completed since the last; with
    ``hoodie.clustering.schedule.inline`` only the plan is written."""
    if not (opts.inline or opts.schedule_inline):
        return []
    due = commits_since_last_clustering(table.timeline()) >= opts.inline_max_commits
    if opts.inline:
        done = [run(table, i, opts) for i in pending_clusterings(table.storage, table.timeline())]
        if due and not done:
            new = schedule_and_run(table, opts)
            done += [new] if new is not None else []
        return done
    if due and not pending_clusterings(table.storage, table.timeline()):
        schedule(table, opts)
    return []
