"""The plans of pending table services (``T.<action>.requested``), and the file groups they read.

One reading of Hudi's plan records, used by the cleaner, compaction scheduling, pending-service
recovery (``services``) and the conflict check of concurrent writers (``conflicts``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from hudi_md.formats.commit_metadata import parse_instant_metadata
from hudi_md.storage import Storage

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
