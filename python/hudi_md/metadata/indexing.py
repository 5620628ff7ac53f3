"""Asynchronous MDT indexing (RFC-45) as Apache Hudi 1.2 lays it out: the ``indexing`` action's plan
and commit metadata, the base instant and the instants to catch up, and the indexing state of a table
(which MDT partitions are available, inflight, or planned by a pending ``indexing`` instant).

On disk (``../shared/reference/hudi-rfcs-45-36-60.md`` §1): ``T.indexing.requested`` holds a
``HoodieIndexPlan``, ``T.indexing.inflight`` is empty, ``T_C.indexing`` holds a
``HoodieIndexCommitMetadata``; both carry one ``HoodieIndexPartitionInfo`` per MDT partition (its
``indexUptoInstant`` is the base instant). ``hoodie.table.metadata.partitions`` lists the partitions
readers may use, ``hoodie.table.metadata.partitions.inflight`` those being built.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hudi_md.errors import CommitMetadataError, CorruptFileError
from hudi_md.formats.commit_metadata import parse_instant_metadata
from hudi_md.formats.commit_metadata_writer import serialize_instant_metadata
from hudi_md.storage import Storage
from hudi_md.table.config import TableConfig
from hudi_md.table.timeline import (
    CLEAN,
    CLUSTERING,
    COMMIT,
    COMPACTION,
    DELTA_COMMIT,
    INDEXING,
    LOG_COMPACTION,
    REPLACE_COMMIT,
    RESTORE,
    ROLLBACK,
    Instant,
    Timeline,
)

INDEX_PLAN_VERSION = 1
# BaseHoodieTimeline.getWriteTimeline: the actions whose pending instants leave a hole.
_WRITE_TIMELINE_ACTIONS = frozenset(
    {COMMIT, DELTA_COMMIT, COMPACTION, LOG_COMPACTION, REPLACE_COMMIT, CLUSTERING}
)
# Pending non-write instants before the base instant that the catch-up starts from.
_CATCHUP_START_ACTIONS = frozenset({CLEAN, RESTORE, ROLLBACK})


@dataclass(frozen=True)
class IndexPartitionInfo:
    """``HoodieIndexPartitionInfo``: one MDT partition an ``indexing`` instant builds."""

    partition: str
    up_to_instant: str
    extra_metadata: Mapping[str, str] = field(default_factory=dict)
    version: int = 1

    def to_record(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "metadataPartitionPath": self.partition,
            "indexUptoInstant": self.up_to_instant,
            "extraMetadata": dict(self.extra_metadata),
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any], where: str) -> IndexPartitionInfo:
        partition, upto = record.get("metadataPartitionPath"), record.get("indexUptoInstant")
        if isinstance(upto, Mapping):  # a historical variant typed it as HoodieInstantInfo
            upto = upto.get("commitTime")
        if not isinstance(partition, str) or not partition or not isinstance(upto, str):
            raise CommitMetadataError(where, f"index partition info without partition or instant: {record!r}")
        return cls(partition, upto, dict(record.get("extraMetadata") or {}), int(record.get("version") or 1))


@dataclass(frozen=True)
class IndexPlan:
    """``HoodieIndexPlan`` (the requested file) and, with an operation type, the commit metadata."""

    partitions: tuple[IndexPartitionInfo, ...]
    version: int = INDEX_PLAN_VERSION

    @property
    def partition_names(self) -> list[str]:
        return [p.partition for p in self.partitions]

    def plan_bytes(self, *, sync_marker: bytes | None = None) -> bytes:
        """``T.indexing.requested`` (``sync_marker``: the Avro container's, random by default)."""
        record = {"version": self.version, "indexPartitionInfos": [p.to_record() for p in self.partitions]}
        return serialize_instant_metadata("index_plan", record, sync_marker=sync_marker)

    def commit_bytes(self, operation_type: str | None = None, *, sync_marker: bytes | None = None) -> bytes:
        """``T_C.indexing``: the same partition infos (Hudi 1.2 leaves ``operationType`` null)."""
        record = {
            "version": self.version,
            "operationType": operation_type,
            "indexPartitionInfos": [p.to_record() for p in self.partitions],
        }
        return serialize_instant_metadata("index_commit", record, sync_marker=sync_marker)

    @classmethod
    def from_bytes(cls, data: bytes, where: str) -> IndexPlan:
        record = parse_instant_metadata(data, where)
        infos = record.get("indexPartitionInfos") or []
        if not isinstance(infos, list):
            raise CommitMetadataError(where, "indexPartitionInfos is not a list")
        return cls(
            tuple(IndexPartitionInfo.from_record(i, where) for i in infos),
            int(record.get("version") or INDEX_PLAN_VERSION),
        )


def base_instant(timeline: Timeline) -> str | None:
    """The instant an index is built up to: the last completed write instant (commit,
    deltacommit, compaction, log compaction, replacecommit, clustering) requested before the
    earliest pending one, so that no instant before it is still being written ("no holes";
    ``getContiguousCompletedWriteTimeline``). None when there is no completed write instant."""
    pending = [i.requested_time for i in timeline.pending() if i.action in _WRITE_TIMELINE_ACTIONS]
    first_pending = min(pending, default=None)
    completed = [
        i.requested_time
        for i in timeline.completed()
        if i.action in _WRITE_TIMELINE_ACTIONS and (first_pending is None or i.requested_time < first_pending)
    ]
    return max(completed, default=None)


def catchup_instants(timeline: Timeline, base: str) -> list[Instant]:
    """The instants an indexer must account for after building up to ``base``: every instant
    requested at or after the start, which is the earliest pending clean, restore or rollback
    requested before ``base`` (it may still change what ``base`` saw) or else ``base`` itself;
    ``indexing`` instants are not among them (``RunIndexActionExecutor``)."""
    earlier = [
        i.requested_time
        for i in timeline.pending()
        if i.action in _CATCHUP_START_ACTIONS and i.requested_time < base
    ]
    start = min(earlier, default=base)
    return [i for i in timeline if i.requested_time >= start and i.action != INDEXING]


@dataclass(frozen=True)
class PendingIndexing:
    instant: Instant
    plan: IndexPlan | None  # None when the requested file cannot be read
    error: str | None = None


@dataclass(frozen=True)
class IndexingState:
    """Which MDT partitions readers may use, which are being built, and by which instants."""

    available: list[str]
    inflight: list[str]
    pending: list[PendingIndexing]
    completed: list[tuple[Instant, IndexPlan | None]]

    def to_dict(self) -> dict[str, Any]:
        def plan_of(plan: IndexPlan | None) -> list[dict[str, str]] | None:
            if plan is None:
                return None
            return [{"partition": p.partition, "up_to_instant": p.up_to_instant} for p in plan.partitions]

        return {
            "available": self.available,
            "inflight": self.inflight,
            "pending_indexing": [
                {
                    "instant": p.instant.requested_time,
                    "state": p.instant.state.name.lower(),
                    "partitions": plan_of(p.plan),
                    **({"error": p.error} if p.error else {}),
                }
                for p in self.pending
            ],
            "completed_indexing": [
                {"instant": i.requested_time, "completed": i.completion_time, "partitions": plan_of(plan)}
                for i, plan in self.completed
            ],
        }


def read_index_plan(storage: Storage, timeline_path: str, instant_time: str) -> IndexPlan:
    """The plan of ``instant_time`` (``T.indexing.requested``)."""
    path = f"{timeline_path}/{instant_time}.{INDEXING}.requested"
    return IndexPlan.from_bytes(storage.read_bytes(path), storage.uri(path))


def indexing_state(storage: Storage, config: TableConfig, timeline: Timeline) -> IndexingState:
    """The indexing state of a table: the two partition lists of ``hoodie.properties`` and the
    ``indexing`` instants of its active timeline with their plans (or commit metadata)."""
    pending: list[PendingIndexing] = []
    completed: list[tuple[Instant, IndexPlan | None]] = []
    for instant in timeline.of_actions(INDEXING):
        if instant.is_completed:
            path = f"{config.timeline_path}/{instant.file_name}"
            try:
                completed.append((instant, IndexPlan.from_bytes(storage.read_bytes(path), storage.uri(path))))
            except (CorruptFileError, FileNotFoundError):
                completed.append((instant, None))
            continue
        try:
            pending.append(
                PendingIndexing(
                    instant, read_index_plan(storage, config.timeline_path, instant.requested_time)
                )
            )
        except (CorruptFileError, FileNotFoundError) as e:
            pending.append(PendingIndexing(instant, None, str(e)))
    return IndexingState(
        sorted(config.metadata_partitions), sorted(config.metadata_partitions_inflight), pending, completed
    )


def planned_partitions(pending: Sequence[PendingIndexing]) -> set[str]:
    """MDT partitions some pending ``indexing`` instant plans to build."""
    return {p for item in pending if item.plan is not None for p in item.plan.partition_names}
