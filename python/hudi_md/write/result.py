"""What a commit did, as its instant file records it: :class:`WriteResult`, which every write and
every table service that commits returns, and the INFO record logged for each commit."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from hudi_md.formats.commit_metadata import CommitMetadata

__all__ = ["WriteResult", "log_commit"]

log = logging.getLogger(__name__)

# The counters a result carries, in the order they are shown.
_COUNTERS = (
    "rows_inserted",
    "rows_updated",
    "rows_deleted",
    "rows_written",
    "files_added",
    "files_removed",
    "file_groups_replaced",
    "bytes_written",
)


class WriteResult(str):
    """The outcome of one commit. It *is* the instant time, a ``str`` (so code that took the
    instant string from ``hudi_md.write`` keeps working: it compares, hashes, formats and
    serialises to JSON as that string; ``str(result)`` is the plain string), and carries what the
    commit recorded in its instant file (Hudi's commit metadata and its write stats):

    - ``instant``: the instant time (the string itself); ``action``: the timeline action
      (``commit``, ``deltacommit``, ``replacecommit``, ``clean``);
    - ``operation``: Hudi's operation type in lower case (``upsert``, ``insert``, ``bulk_insert``,
      ``delete``, ``insert_overwrite``, ``insert_overwrite_table``, ``delete_partition``,
      ``compact``, ``clean``);
    - ``rows_inserted``, ``rows_updated``, ``rows_deleted``, ``rows_written``: the write stats'
      ``numInserts``, ``numUpdateWrites``, ``numDeletes`` and ``numWrites``, summed (a compaction
      rewrites rows: it counts ``rows_written`` only);
    - ``files_added``: the files the commit wrote (base and log files: its write stats' paths);
    - ``files_removed``: the files it took out of the table's latest snapshot, as its stats name
      them: the base file each merge or compaction rewrote (``prevBaseFile``) and the log files a
      compaction merged (``totalLogFilesCompacted``); for a clean, the files it deleted;
    - ``file_groups_replaced``: the file groups an overwrite or ``delete_partition`` replaced
      (``partitionToReplaceFileIds``: Hudi records the groups, not their files);
    - ``bytes_written``: ``totalWriteBytes``, summed;
    - ``mdt_seconds``: the wall time spent building and writing the commit's metadata-table
      records (0.0 for a table without a metadata table).

    ``to_dict()`` gives them all. A subclass of ``str`` rather than a dataclass, because every
    existing caller treats the return of a write as the instant string (``timeline.get(instant)``,
    f-strings, JSON, sorting, comparing with ``==``), and a ``str`` keeps all of them working.
    """

    instant: str
    action: str
    operation: str
    rows_inserted: int
    rows_updated: int
    rows_deleted: int
    rows_written: int
    files_added: int
    files_removed: int
    file_groups_replaced: int
    bytes_written: int
    mdt_seconds: float

    def __new__(
        cls,
        instant: str,
        *,
        action: str = "",
        operation: str = "",
        rows_inserted: int = 0,
        rows_updated: int = 0,
        rows_deleted: int = 0,
        rows_written: int = 0,
        files_added: int = 0,
        files_removed: int = 0,
        file_groups_replaced: int = 0,
        bytes_written: int = 0,
        mdt_seconds: float = 0.0,
    ) -> WriteResult:
        self = super().__new__(cls, instant)
        fields = {
            "instant": str(instant),
            "action": action,
            "operation": operation,
            "rows_inserted": rows_inserted,
            "rows_updated": rows_updated,
            "rows_deleted": rows_deleted,
            "rows_written": rows_written,
            "files_added": files_added,
            "files_removed": files_removed,
            "file_groups_replaced": file_groups_replaced,
            "bytes_written": bytes_written,
            "mdt_seconds": mdt_seconds,
        }
        for name, value in fields.items():
            object.__setattr__(self, name, value)
        return self

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"a WriteResult is what a commit recorded: {name} cannot be set")

    def __reduce__(self) -> tuple[Any, ...]:
        # str's own pickling would rebuild the instant string alone, without the counters
        fields = self.to_dict()
        instant = fields.pop("instant")
        return (_rebuild, (instant, fields))

    @classmethod
    def of_commit(
        cls, instant: str, action: str, metadata: Mapping[str, Any], *, mdt_seconds: float = 0.0
    ) -> WriteResult:
        """The result of a commit, deltacommit or replacecommit (a write or a compaction) whose
        instant file holds ``metadata`` (``HoodieCommitMetadata`` or
        ``HoodieReplaceCommitMetadata``, with Hudi's field names)."""
        commit = CommitMetadata(metadata, f"{instant}.{action}")
        stats = commit.write_stats()
        return cls(
            instant,
            action=action,
            operation=(commit.operation_type or "").lower(),
            rows_inserted=sum(s.num_inserts for s in stats),
            rows_updated=sum(s.num_update_writes for s in stats),
            rows_deleted=sum(s.num_deletes for s in stats),
            rows_written=sum(s.num_writes for s in stats),
            files_added=sum(len(files) for files in commit.files_added().values()),
            files_removed=sum((1 if s.prev_base_file else 0) + s.total_log_files_compacted for s in stats),
            file_groups_replaced=sum(len(ids) for ids in commit.replaced_file_ids().values()),
            bytes_written=sum(s.total_write_bytes for s in stats),
            mdt_seconds=mdt_seconds,
        )

    @classmethod
    def of_clean(cls, instant: str, metadata: Mapping[str, Any], *, mdt_seconds: float = 0.0) -> WriteResult:
        """The result of a clean whose instant file holds ``metadata`` (``HoodieCleanMetadata``):
        the files it deleted."""
        deleted = metadata.get("totalFilesDeleted")
        if deleted is None:
            deleted = sum(
                len((p or {}).get("successDeleteFiles") or ())
                for p in (metadata.get("partitionMetadata") or {}).values()
            )
        return cls(
            instant, action="clean", operation="clean", files_removed=int(deleted), mdt_seconds=mdt_seconds
        )

    def to_dict(self) -> dict[str, Any]:
        """Every field, by name (the instant as a plain ``str``)."""
        return {
            "instant": self.instant,
            "action": self.action,
            "operation": self.operation,
            **{name: getattr(self, name) for name in _COUNTERS},
            "mdt_seconds": self.mdt_seconds,
        }

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self.to_dict().items() if k != "instant")
        return f"WriteResult({self.instant!r}, {shown})"


def _rebuild(instant: str, fields: dict[str, Any]) -> WriteResult:
    return WriteResult(instant, **fields)


def log_commit(result: WriteResult, table: str) -> WriteResult:
    """Log ``result`` at INFO (one record per commit, the result in the record's ``write_result``
    attribute for handlers that want the numbers); returns it."""
    log.info(
        "committed %s %s on %s: %s, rows +%d ~%d -%d, files +%d -%d, %d file groups replaced, "
        "%d bytes written, metadata table %.3f s",
        result.action,
        result.instant,
        table,
        result.operation,
        result.rows_inserted,
        result.rows_updated,
        result.rows_deleted,
        result.files_added,
        result.files_removed,
        result.file_groups_replaced,
        result.bytes_written,
        result.mdt_seconds,
        extra={"write_result": result, "table": table},
    )
    return result
