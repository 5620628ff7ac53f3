"""Decoding of timeline instant files (commit, deltacommit, replacecommit, clean, rollback, ...).

Hudi writes instant metadata in two encodings, and the file name does not say which:

* JSON (Jackson) for commit / deltacommit / replacecommit metadata in table version 6 (and their
  ``.inflight`` files);
* Avro object container files (``Obj\\x01`` magic, schema embedded, one record) for every commit in
  table versions 8+, and for clean, rollback, compaction, clustering, indexing, restore and
  savepoint plans and metadata in all versions.

So :func:`parse_instant_metadata` sniffs the bytes. Both encodings use the same field names
(``partitionToWriteStats``, ``extraMetadata``, ...), and the result is a plain dict either way. An
empty file (requested commits, some inflight files) decodes to ``{}``, as in Hudi.
:class:`CommitMetadata` adds typed accessors for commit-like metadata.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hudi_md.errors import CommitMetadataError
from hudi_md.formats.avro import read_container

__all__ = [
    "CommitMetadata",
    "WriteStat",
    "parse_commit_metadata",
    "parse_instant_metadata",
    "rolled_back_instants",
]

_AVRO_MAGIC = b"Obj\x01"


def parse_instant_metadata(data: bytes, name: str) -> dict[str, Any]:
    """Decode one timeline instant file into a plain dict with Hudi's field names.

    ``name`` is used in error messages only. Raises :class:`CommitMetadataError` when the bytes are
    neither a JSON object nor an Avro container holding at least one record.
    """
    if len(data) == 0:
        return {}
    if data[:4] == _AVRO_MAGIC:
        records = read_container(data, name)
        if not records:
            raise CommitMetadataError(name, "Avro container holds no record")
        # Hudi writes exactly one record and reads only the first.
        record = records[0]
        if not isinstance(record, dict):
            raise CommitMetadataError(name, f"Avro record is a {type(record).__name__}, not a record")
        return record
    try:
        text = bytes(data).decode("utf-8-sig")
        value = json.loads(text)
    except (UnicodeDecodeError, ValueError) as exc:
        raise CommitMetadataError(name, f"neither Avro nor valid JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise CommitMetadataError(name, f"JSON metadata is a {type(value).__name__}, not an object")
    return value


def _int(value: Any) -> int:
    """Counts are Java primitive longs in ``HoodieWriteStat``; a JSON/Avro null reads as 0."""
    return 0 if value is None else int(value)


def _prev_commit(value: Any) -> str | None:
    # New file groups carry the literal string "null" (Java's String.valueOf(null)).
    return None if value is None or value == "null" else str(value)


@dataclass(frozen=True)
class WriteStat:
    """One ``HoodieWriteStat``: what one write handle did to one file group. The one type for the
    write statistics hudi-md reads (from any Hudi's commits) and writes (data commits, compaction,
    the MDT's deltacommits).

    ``path`` is relative to the table base path (``None`` in some inflight files). A delta stat
    (``HoodieDeltaWriteStat``: a log file written) names the slice's base file in ``base_file``
    (``""`` when there is none) and the log files in ``log_files``; a plain stat (a base file
    written) has neither, as Hudi leaves them null. Null counts read as 0.
    """

    partition_path: str
    file_id: str | None
    path: str | None
    prev_commit: str | None
    num_writes: int
    num_deletes: int
    num_update_writes: int
    num_inserts: int
    file_size_in_bytes: int
    total_write_bytes: int
    base_file: str | None
    log_files: tuple[str, ...]
    cdc_stats: tuple[tuple[str, int], ...] = ()
    # What writers record besides (HoodieDeltaWriteStat's log position, compaction counters).
    is_delta: bool = False
    log_version: int | None = None
    log_offset: int | None = None
    prev_base_file: str | None = None
    total_log_records: int = 0
    total_log_blocks: int = 0
    total_log_files_compacted: int = 0

    @property
    def file_name(self) -> str | None:
        """Base name of :attr:`path`."""
        return None if self.path is None else posixpath.basename(self.path)

    @classmethod
    def base(
        cls,
        partition_path: str,
        file_id: str,
        path: str,
        *,
        size: int,
        num_writes: int,
        num_inserts: int = 0,
        num_updates: int = 0,
        num_deletes: int = 0,
        prev_commit: str | None = None,
        prev_base_file: str | None = None,
        log_files_compacted: int = 0,
    ) -> WriteStat:
        """The stat of a base file written (a create, merge or compaction handle's)."""
        return cls(
            partition_path,
            file_id,
            path,
            prev_commit,
            num_writes,
            num_deletes,
            num_updates,
            num_inserts,
            size,
            size,
            None,
            (),
            prev_base_file=prev_base_file,
            total_log_files_compacted=log_files_compacted,
        )

    @classmethod
    def delta(
        cls,
        partition_path: str,
        file_id: str,
        path: str,
        *,
        size: int,
        num_writes: int,
        num_inserts: int = 0,
        num_updates: int = 0,
        num_deletes: int = 0,
        prev_commit: str | None = None,
        base_file: str = "",
        log_version: int = 1,
        total_log_records: int = 0,
        total_log_blocks: int = 0,
    ) -> WriteStat:
        """The stat of a log file written (an append handle's)."""
        return cls(
            partition_path,
            file_id,
            path,
            prev_commit,
            num_writes,
            num_deletes,
            num_updates,
            num_inserts,
            size,
            size,
            base_file,
            (posixpath.basename(path),),
            is_delta=True,
            log_version=log_version,
            log_offset=0,
            total_log_records=total_log_records,
            total_log_blocks=total_log_blocks,
        )

    def to_record(self) -> dict[str, Any]:
        """The ``HoodieWriteStat`` fields this stat sets (the rest are filled by
        :func:`hudi_md.formats.commit_metadata_writer.write_stat_record`)."""
        record: dict[str, Any] = {
            "fileId": self.file_id,
            "path": self.path,
            "prevCommit": self.prev_commit or "null",
            "numWrites": self.num_writes,
            "numDeletes": self.num_deletes,
            "numUpdateWrites": self.num_update_writes,
            "numInserts": self.num_inserts,
            "totalWriteBytes": self.total_write_bytes,
            "totalWriteErrors": 0,
            "partitionPath": self.partition_path,
            "fileSizeInBytes": self.file_size_in_bytes,
            "totalLogRecords": self.total_log_records,
            "totalLogBlocks": self.total_log_blocks,
            "totalLogFilesCompacted": self.total_log_files_compacted,
            "prevBaseFile": self.prev_base_file,
        }
        if self.is_delta:
            record.update(
                baseFile=self.base_file or "",
                logFiles=list(self.log_files),
                logVersion=self.log_version,
                logOffset=self.log_offset,
            )
        if self.cdc_stats:
            record["cdcStats"] = dict(self.cdc_stats)
        return record

    @classmethod
    def from_record(cls, partition: str, stat: Mapping[str, Any]) -> WriteStat:
        """A stat as read from commit metadata (``partition``: the map key it was under)."""
        stat_partition = stat.get("partitionPath")
        cdc = stat.get("cdcStats") or {}
        log_files = tuple(stat.get("logFiles") or ())
        return cls(
            partition_path=partition if stat_partition is None else str(stat_partition),
            file_id=stat.get("fileId"),
            path=stat.get("path"),
            prev_commit=_prev_commit(stat.get("prevCommit")),
            num_writes=_int(stat.get("numWrites")),
            num_deletes=_int(stat.get("numDeletes")),
            num_update_writes=_int(stat.get("numUpdateWrites")),
            num_inserts=_int(stat.get("numInserts")),
            file_size_in_bytes=_int(stat.get("fileSizeInBytes")),
            total_write_bytes=_int(stat.get("totalWriteBytes")),
            base_file=stat.get("baseFile") or None,
            log_files=log_files,
            cdc_stats=tuple((str(k), _int(v)) for k, v in cdc.items()),
            is_delta=bool(log_files),
            log_version=stat.get("logVersion") if log_files else None,
            log_offset=stat.get("logOffset") if log_files else None,
            prev_base_file=stat.get("prevBaseFile"),
            total_log_records=_int(stat.get("totalLogRecords")),
            total_log_blocks=_int(stat.get("totalLogBlocks")),
            total_log_files_compacted=_int(stat.get("totalLogFilesCompacted")),
        )


@dataclass(frozen=True, eq=False)
class CommitMetadata:
    """Typed view of commit-like metadata (``HoodieCommitMetadata`` / ``HoodieReplaceCommitMetadata``).

    ``raw`` is the dict from :func:`parse_instant_metadata`; ``name`` names the file in errors.
    """

    raw: Mapping[str, Any]
    name: str = "<commit metadata>"

    @classmethod
    def from_bytes(cls, data: bytes, name: str) -> CommitMetadata:
        return cls(parse_instant_metadata(data, name), name)

    def _mapping(self, key: str) -> Mapping[str, Any]:
        value = self.raw.get(key)
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise CommitMetadataError(self.name, f"{key} is a {type(value).__name__}, not a map")
        return value

    @property
    def extra_metadata(self) -> Mapping[str, str]:
        return self._mapping("extraMetadata")

    @property
    def schema(self) -> str | None:
        """The writer's Avro schema JSON (``extraMetadata["schema"]``); empty strings read as None."""
        return self.extra_metadata.get("schema") or None

    @property
    def operation_type(self) -> str | None:
        """``UPSERT``, ``INSERT``, ``BULK_INSERT``, ``INSERT_OVERWRITE``, ``DELETE_PREPPED``, ..."""
        value = self.raw.get("operationType")
        return None if value is None else str(value)

    @property
    def compacted(self) -> bool:
        return bool(self.raw.get("compacted") or False)

    def write_stats(self) -> list[WriteStat]:
        """Every write stat, in file order, partition by partition."""
        out: list[WriteStat] = []
        for partition, stats in self._mapping("partitionToWriteStats").items():
            out.extend(self._stats_of(str(partition), stats))
        return out

    def _stats_of(self, partition: str, stats: object) -> list[WriteStat]:
        if stats is None:
            return []
        if not isinstance(stats, list):
            raise CommitMetadataError(self.name, f"write stats of partition {partition!r} are not a list")
        return [self._write_stat(partition, s) for s in stats]

    def _write_stat(self, partition: str, stat: object) -> WriteStat:
        if not isinstance(stat, Mapping):
            raise CommitMetadataError(self.name, f"a write stat of partition {partition!r} is not a map")
        try:
            return WriteStat.from_record(partition, stat)
        except (TypeError, ValueError, AttributeError) as exc:
            raise CommitMetadataError(
                self.name, f"malformed write stat in partition {partition!r}: {exc}"
            ) from exc

    def replaced_file_ids(self) -> dict[str, list[str]]:
        """``partitionToReplaceFileIds`` of a replacecommit (insert overwrite, clustering); else ``{}``."""
        return {str(p): list(ids or ()) for p, ids in self._mapping("partitionToReplaceFileIds").items()}

    def files_added(self) -> dict[str, dict[str, int]]:
        """Files this commit wrote, as ``{partition: {file name: size}}``.

        The same derivation the MDT ``files`` partition uses: the base name of each stat's
        ``path`` with its ``fileSizeInBytes`` (for delta writes ``path`` is the log file, so log
        files are included), plus CDC log files from ``cdcStats``. When one file appears in
        several stats (appends within one commit) the largest size wins, since a file only grows.
        Names listed in ``logFiles`` carry no size of their own and are covered by ``path``.
        The partition is the map key (``""`` for a non-partitioned table).
        """
        out: dict[str, dict[str, int]] = {}
        for partition, stats in self._mapping("partitionToWriteStats").items():
            files = out.setdefault(str(partition), {})
            for stat in self._stats_of(str(partition), stats):
                entries = list(stat.cdc_stats)
                if stat.path:
                    entries.insert(0, (stat.path, stat.file_size_in_bytes))
                for path, size in entries:
                    file_name = posixpath.basename(path)
                    files[file_name] = max(size, files.get(file_name, size))
        return out


def parse_commit_metadata(data: bytes, name: str) -> CommitMetadata:
    """:func:`parse_instant_metadata` wrapped in a :class:`CommitMetadata`."""
    return CommitMetadata.from_bytes(data, name)


def rolled_back_instants(metadata: Mapping[str, Any]) -> list[str]:
    """Instant times undone by a rollback, from ``HoodieRollbackMetadata`` or ``HoodieRollbackPlan``.

    Completed rollbacks list them in ``commitsRollback`` (and ``instantsRollback`` with actions);
    requested rollbacks carry ``instantToRollback``.
    """
    commits = metadata.get("commitsRollback")
    if commits:
        return [str(c) for c in commits]
    instants = metadata.get("instantsRollback")
    if instants:
        return [str(i["commitTime"]) for i in instants if i and i.get("commitTime")]
    target = metadata.get("instantToRollback")
    if isinstance(target, Mapping) and target.get("commitTime"):
        return [str(target["commitTime"])]
    return []
