"""Write conflicts under optimistic concurrency control: Apache Hudi's
``SimpleConcurrentFileWritesConflictResolutionStrategy``, as ``TransactionUtils.resolveWriteConflictIfAny``
applies it in the commit's critical section.

Candidates are the instants that may have changed the file groups this commit writes since it
started:

* completed commits, deltacommits and replacecommits (compactions complete as commits) whose
  completion time is after this instant's requested time (Hudi 1.x:
  ``findInstantsModifiedAfterByCompletionTime``);
* pending compactions and clusterings whose plan reads the file groups.

A candidate conflicts when its mutated ``(partition, file id)`` pairs (write statistics, replaced
file groups, plan inputs) intersect this commit's. Inserts into new file groups never conflict;
updates of one file group by two writers do, and the later committer fails with
:class:`~hudi_md.errors.WriteConflictError`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hudi_md.errors import WriteConflictError
from hudi_md.storage import Storage
from hudi_md.table.timeline import CLUSTERING, COMPACTION, WRITE_ACTIONS, Instant, Timeline
from hudi_md.write.plans import FileGroupId, clustering_inputs, compaction_inputs, read_plan


def written_file_groups(commit_metadata: dict[str, Any]) -> set[FileGroupId]:
    """``(partition, file id)`` pairs a commit's metadata says it wrote or replaced."""
    out: set[FileGroupId] = set()
    for partition, stats in (commit_metadata.get("partitionToWriteStats") or {}).items():
        for stat in stats or ():
            if stat.get("fileId"):
                out.add((partition or "", stat["fileId"]))
    for partition, fids in (commit_metadata.get("partitionToReplaceFileIds") or {}).items():
        for fid in fids or ():
            out.add((partition or "", fid))
    return out


def planned_file_groups(storage: Storage, instant: Instant) -> set[FileGroupId]:
    """File groups a pending compaction or clustering plan reads."""
    if instant.action == COMPACTION:
        return {fg for fg, _ in compaction_inputs(read_plan(storage, instant.requested_time, COMPACTION))}
    if instant.action == CLUSTERING:
        return set(clustering_inputs(read_plan(storage, instant.requested_time, CLUSTERING)))
    return set()


def candidate_instants(timeline: Timeline, instant_time: str) -> list[Instant]:
    """Instants a commit started at ``instant_time`` must be checked against."""
    out = []
    for i in timeline:
        if i.requested_time == instant_time:
            continue
        if i.is_completed:
            if i.action in WRITE_ACTIONS and (i.completion_time or i.requested_time) > instant_time:
                out.append(i)
        elif i.action in (COMPACTION, CLUSTERING):
            out.append(i)  # pending table services; pending writes of other writers are not candidates
    return out


def find_conflict(
    storage: Storage, timeline: Timeline, instant_time: str, ours: Iterable[FileGroupId]
) -> WriteConflictError | None:
    """The first conflict of this commit (``instant_time`` writing ``ours``), or None."""
    mine = set(ours)
    if not mine:
        return None
    for other in candidate_instants(timeline, instant_time):
        if other.is_completed:
            theirs = written_file_groups(timeline.metadata(other))
        else:
            theirs = planned_file_groups(storage, other)
        overlap = mine & theirs
        if overlap:
            return WriteConflictError(instant_time, other.requested_time, other.action, sorted(overlap))
    return None
