"""The plans of pending table services (``T.<action>.requested``), and the file groups they read.

One reading of Hudi's plan records, used by the cleaner, compaction scheduling, pending-service
recovery (``recovery``) and the conflict check of concurrent writers (``conflicts``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from hudi_md.errors import CorruptFileError, PendingClusteringError
from hudi_md.formats.commit_metadata import parse_instant_metadata
from hudi_md.storage import Storage
from hudi_md.table.timeline import CLUSTERING, COMPACTION, LOG_COMPACTION, REPLACE_COMMIT, Timeline

TIMELINE = ".hoodie/timeline"

FileGroupId = tuple[str, str]


def read_plan(storage: Storage, instant_time: str, action: str) -> dict[str, Any] | None:
    """The plan in ``T.<action>.requested`` (None when the file is gone or holds nothing). A plan
    that does not parse raises the typed :class:`~hudi_md.errors.CorruptFileError`."""
    path = f"{TIMELINE}/{instant_time}.{action}.requested"
    try:
        data = storage.read_bytes(path)
    except FileNotFoundError:
        return None
    return parse_instant_metadata(data, storage.uri(path)) or None


def compaction_inputs(plan: Mapping[str, Any] | None) -> Iterator[tuple[FileGroupId, str]]:
    """``((partition, file id), base instant)`` of each slice a (log) compaction plan reads."""
    for op in (plan or {}).get("operations") or ():
        yield (op.get("partitionPath") or "", op["fileId"]), op.get("baseInstantTime") or ""


def clustering_inputs(plan: Mapping[str, Any] | None) -> Iterator[FileGroupId]:
    """``(partition, file id)`` of each file group a clustering plan reads."""
    for group in ((plan or {}).get("clusteringPlan") or {}).get("inputGroups") or ():
        for s in group.get("slices") or ():
            yield s.get("partitionPath") or "", s["fileId"]


def pending_compaction_file_groups(storage: Storage, timeline: Timeline) -> dict[FileGroupId, str]:
    """``(partition, file id) -> base instant`` of every file slice a pending (requested or
    inflight) compaction or log compaction reads, from their plans."""
    out: dict[FileGroupId, str] = {}
    for instant in timeline.pending().of_actions(COMPACTION, LOG_COMPACTION):
        try:
            plan = read_plan(storage, instant.requested_time, instant.action) or {}
        except CorruptFileError:
            plan = {}
        out.update(compaction_inputs(plan))
    return out


def pending_clustering_file_groups(storage: Storage, timeline: Timeline) -> dict[FileGroupId, str]:
    """``(partition, file id) -> clustering instant`` of every file group a pending clustering
    plan reads (Apache Hudi's: hudi-md does not cluster). A plan that cannot be read claims
    nothing here."""
    out: dict[FileGroupId, str] = {}
    for instant in timeline.pending().of_actions(CLUSTERING, REPLACE_COMMIT):
        try:
            plan = read_plan(storage, instant.requested_time, instant.action) or {}
        except CorruptFileError:
            plan = {}
        out.update(dict.fromkeys(clustering_inputs(plan), instant.requested_time))
    return out


def check_no_clustered_updates(
    storage: Storage, timeline: Timeline, file_groups: Iterable[FileGroupId]
) -> None:
    """Refuse a write into file groups a pending clustering plan reads, as Apache Hudi's
    ``SparkRejectUpdateStrategy`` does (HoodieClusteringUpdateException): the clustering would
    replace them without the write's records. Inserts go to new file groups and are never
    refused."""
    wanted = set(file_groups)
    if not wanted:
        return
    clustered = pending_clustering_file_groups(storage, timeline)
    hit = sorted(fg for fg in wanted if fg in clustered)
    if hit:
        raise PendingClusteringError(clustered[hit[0]], hit)
