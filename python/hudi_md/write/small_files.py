"""Small-file handling: which file groups a write's new records go to, as Apache Hudi 1.2's
``UpsertPartitioner`` (and, on MERGE_ON_READ, ``SparkUpsertDeltaCommitPartitioner``) decides it.

For ``insert`` and ``upsert``, the new records of a partition first fill its *small files*:

* COPY_ON_WRITE: the latest base files smaller than ``hoodie.parquet.small.file.limit``;
* MERGE_ON_READ: the latest slices without log files whose base file is smaller than the limit,
  smallest first, at most ``hoodie.merge.small.file.group.candidates.limit`` of them (Hudi's
  indexes that hudi-md writes for, simple, bloom and the record index, cannot index log files, so
  Hudi only pads slices it can rewrite whole). Such a group, its new records and this write's
  updates of it are merged into a new base file, not appended to a log;

file groups that a pending clustering or compaction reads excluded. A small file takes
``(max file size - its size) // average record size`` records; the rest start new file groups of
``max file size / average record size`` records each (``hoodie.copyonwrite.insert.auto.split``;
else ``hoodie.copyonwrite.insert.split.size``). ``insert_overwrite`` sizes its new file groups
the same way and packs nothing (its partitioner has no small files). ``bulk_insert`` is not
planned here.

The average record size is Hudi's ``AverageRecordSizeEstimator``'s: of the newest
``_hoodie.record.size.estimator.max.commits`` completed commits and deltacommits, the first that
wrote more than ``hoodie.record.size.estimation.threshold`` x the small file limit bytes (a
deltacommit counts its base files only) gives ``ceil(bytes / records)``; else
``hoodie.copyonwrite.record.size.estimate``.

Where Hudi spreads a partition's new records over these buckets by the hash of their keys,
weighted by the bucket's share, hudi-md assigns them in order (the first ``n`` to the first bucket
and so on): the same buckets with exactly their planned counts.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hudi_md.config import write as W
from hudi_md.errors import HudiMdError
from hudi_md.formats.commit_metadata import CommitMetadata
from hudi_md.table.filenames import BaseFileName
from hudi_md.table.fs_view import FileSlice
from hudi_md.table.state import TableState
from hudi_md.table.timeline import COMMIT, DELTA_COMMIT, Timeline
from hudi_md.write.file_groups import new_file_id
from hudi_md.write.plans import pending_clustering_file_groups, pending_compaction_file_groups

# The operations whose new records go through Hudi's UpsertPartitioner: small files first
# (insert, upsert) or new file groups only (the overwrites).
PACKING_OPERATIONS = ("insert", "upsert")
SIZED_OPERATIONS = (*PACKING_OPERATIONS, "insert_overwrite", "insert_overwrite_table")


@dataclass(frozen=True)
class FileSizing:
    """The options that size where new records go (:mod:`hudi_md.config.write` declares them)."""

    small_file_limit: int
    candidates_limit: int
    record_size_estimate: int
    estimation_threshold: float
    estimator_max_commits: int
    metadata_size: int
    auto_split: bool
    insert_split_size: int
    allow_duplicate_on_inserts: bool

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> FileSizing:
        sizing = cls(
            small_file_limit=W.SMALL_FILE_LIMIT.get(options),
            candidates_limit=W.SMALL_FILE_GROUP_CANDIDATES_LIMIT.get(options),
            record_size_estimate=W.RECORD_SIZE_ESTIMATE.get(options),
            estimation_threshold=W.RECORD_SIZE_ESTIMATION_THRESHOLD.get(options),
            estimator_max_commits=W.RECORD_SIZE_ESTIMATOR_MAX_COMMITS.get(options),
            metadata_size=W.RECORD_SIZE_ESTIMATOR_METADATA_SIZE.get(options),
            auto_split=W.INSERT_AUTO_SPLIT.get(options),
            insert_split_size=W.INSERT_SPLIT_SIZE.get(options),
            allow_duplicate_on_inserts=W.ALLOW_DUPLICATE_ON_INSERTS.get(options),
        )
        # Hudi divides by these (and fails the write with an ArithmeticException); refuse up front
        if sizing.record_size_estimate <= 0:
            raise W.RECORD_SIZE_ESTIMATE.invalid(sizing.record_size_estimate, "must be > 0")
        if not sizing.auto_split and sizing.insert_split_size <= 0:
            raise W.INSERT_SPLIT_SIZE.invalid(sizing.insert_split_size, "must be > 0")
        return sizing


@dataclass(frozen=True)
class InsertBucket:
    """Where ``records`` of a partition's new records go: a small file group (``small_file``, its
    latest slice) or a new file group."""

    partition_path: str
    file_id: str
    records: int
    small_file: FileSlice | None = None


@dataclass
class InsertPlan:
    """The buckets of each partition's new records (in the order they are filled), and the small
    file groups whose updates in this write also go to a new base file on MERGE_ON_READ (every
    small file of a partition with new records, as Hudi's ``getSmallFileIds``)."""

    buckets: dict[str, list[InsertBucket]] = field(default_factory=dict)
    rewritten: set[tuple[str, str]] = field(default_factory=set)
    average_record_size: int | None = None


def plan_inserts(
    max_file_size: int,
    sizing: FileSizing,
    state: TableState,
    operation: str,
    new_records: Mapping[str, int],
    latest: Sequence[FileSlice],
    *,
    is_mor: bool,
    claimed: Iterable[tuple[str, str]] = (),
) -> InsertPlan:
    """The buckets of the ``new_records`` of each partition (an operation of
    :data:`SIZED_OPERATIONS`); ``latest``: the latest slices of those partitions; ``claimed``:
    file groups this write already writes (a streamed write's earlier chunks), never small files."""
    plan = InsertPlan()
    wanted = {p: n for p, n in new_records.items() if n > 0}
    if not wanted:
        return plan
    average = plan.average_record_size = average_record_size(sizing, state.timeline)
    small: dict[str, list[FileSlice]] = {}
    if operation in PACKING_OPERATIONS and sizing.small_file_limit > 0 and state.timeline.write_timeline():
        small = small_files(sizing, state, [s for s in latest if s.partition_path in wanted], is_mor, claimed)
    for p in sorted(wanted):
        candidates = small.get(p, [])
        plan.rewritten.update((p, s.file_id) for s in candidates)
        plan.buckets[p] = assign_inserts(max_file_size, sizing, average, p, wanted[p], candidates)
    return plan


def small_files(
    sizing: FileSizing,
    state: TableState,
    latest: Sequence[FileSlice],
    is_mor: bool,
    claimed: Iterable[tuple[str, str]] = (),
) -> dict[str, list[FileSlice]]:
    """The small files of each partition among its ``latest`` slices, smallest first."""
    if not latest:
        return {}
    # Hudi's MOR view leaves out the slices a pending compaction reads (they cannot be rewritten
    # whole) before it picks the smallest; a pending clustering's groups go after the pick (it
    # would replace them without these records, and rejects updates to them), as do the groups
    # this write already writes
    compacted = pending_compaction_file_groups(state.storage, state.timeline) if is_mor else {}
    out: dict[str, list[FileSlice]] = {}
    for s in latest:
        base = s.base_file
        if base is None or base.size >= sizing.small_file_limit or (s.partition_path, s.file_id) in compacted:
            continue
        if is_mor and s.log_files:
            continue  # its log records would have to be compacted first
        out.setdefault(s.partition_path, []).append(s)
    excluded = {*pending_clustering_file_groups(state.storage, state.timeline), *claimed}
    for p, slices in out.items():
        slices.sort(key=lambda s: (s.base_file.size if s.base_file else 0, s.file_id))
        picked = slices[: max(0, sizing.candidates_limit)] if is_mor else slices
        out[p] = [s for s in picked if (s.partition_path, s.file_id) not in excluded]
    return out


def assign_inserts(
    max_file_size: int,
    sizing: FileSizing,
    average: int,
    partition: str,
    records: int,
    small: Sequence[FileSlice],
) -> list[InsertBucket]:
    """``records`` new records of ``partition``: each small file takes what it has room for, the
    rest go to new file groups."""
    average = max(1, average)
    buckets: list[InsertBucket] = []
    left = records
    for s in small:
        size = s.base_file.size if s.base_file else 0
        take = min((max_file_size - size) // average, left)
        if take > 0:
            buckets.append(InsertBucket(partition, s.file_id, take, s))
            left -= take
            if left <= 0:
                break
    if left > 0:
        per_group = math.ceil(max_file_size / average) if sizing.auto_split else sizing.insert_split_size
        per_group = max(1, per_group)
        groups = math.ceil(left / per_group)
        for g in range(groups):
            n = per_group if g < groups - 1 else left - (groups - 1) * per_group
            buckets.append(InsertBucket(partition, new_file_id(), n))
    return buckets


def average_record_size(sizing: FileSizing, timeline: Timeline) -> int:
    """Hudi's ``AverageRecordSizeEstimator.averageBytesPerRecord`` over the completed commits and
    deltacommits of ``timeline`` (replacecommits are left out: a clustering's records are smaller
    than those written; a compaction completes as a commit)."""
    threshold = int(sizing.estimation_threshold * sizing.small_file_limit)
    writes = [i for i in timeline.completed() if i.action in (COMMIT, DELTA_COMMIT)]
    for instant in list(reversed(writes))[: max(0, sizing.estimator_max_commits)]:
        try:
            stats = CommitMetadata(timeline.metadata(instant), instant.file_name).write_stats()
        except (HudiMdError, OSError, ValueError):
            continue  # as Hudi: a commit whose metadata cannot be read measures nothing
        if instant.action == DELTA_COMMIT:
            # a deltacommit's log files hold updates in another format: its base files only
            base = [s for s in stats if s.path and BaseFileName.parse(s.path.rsplit("/", 1)[-1])]
            written = sum(s.total_write_bytes - sizing.metadata_size for s in base)
            records = sum(s.num_writes for s in base)
        else:
            written = sum(s.total_write_bytes for s in stats) - len(stats) * sizing.metadata_size
            records = sum(s.num_writes for s in stats)
        if written > threshold and records > 0:
            return math.ceil(written / records)
    return sizing.record_size_estimate
