"""Writing the LSM timeline (``.hoodie/timeline/history``) as Hudi 1.x's ``LSMTimelineWriter``
does: archived actions as level-0 Parquet files, manifests and ``_version_``, compaction of 10
files of a level into one of the next, and cleaning of files no retained manifest references."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from hudi_md.formats.commit_metadata_writer import schema_json
from hudi_md.storage import Storage
from hudi_md.table.archived import (
    MANIFEST_PREFIX,
    VERSION_FILE,
    ManifestEntry,
    file_level,
    file_range,
    is_data_file,
    latest_manifest,
    latest_snapshot_version,
    manifest_json,
    manifest_versions,
    read_data_file,
    read_manifest,
)
from hudi_md.table.timeline import (
    CLEAN,
    CLUSTERING,
    COMPACTION,
    LOG_COMPACTION,
    REPLACE_COMMIT,
    Instant,
    State,
)
from hudi_md.write.transaction import delete_markers

log = logging.getLogger(__name__)

TIMELINE = ".hoodie/timeline"
LSM_INSTANT_VERSION = 1  # LSMTimeline.LSM_TIMELINE_INSTANT_VERSION_1
COMPACTION_BATCH_SIZE = 10  # hoodie.timeline.compaction.batch.size
COMPACTION_TARGET_MAX_BYTES = 1024 * 1024 * 1024  # hoodie.timeline.compaction.target.file.max.bytes
MANIFEST_VERSIONS_RETAINED = 3  # manifest versions LSMTimelineWriter.clean keeps (Hudi default)


@dataclass
class ActiveAction:
    """All files of one action on the active timeline (``ActiveAction``): the completed one and its
    requested and inflight files where present."""

    requested_time: str
    action: str  # the completed action (compaction -> commit)
    completion_time: str | None
    completed: str  # file names, relative to the timeline folder
    requested: str | None = None
    inflight: str | None = None
    pending_action: str | None = None  # action of the pending files (compaction, clustering, ...)
    # Hadoop checksum siblings (`.<name>.crc`, left by Hudi on a local file system) of these files
    crc_files: list[str] = field(default_factory=list)

    @property
    def pending_files(self) -> list[str]:
        return [f for f in (self.requested, self.inflight) if f]

    @property
    def files(self) -> list[str]:
        return [*self.pending_files, self.completed]

    def instant(self) -> Instant:
        return Instant(
            self.requested_time, self.action, State.COMPLETED, self.completion_time, self.completed
        )


def crc_name(name: str) -> str:
    """Hadoop's checksum file of ``name`` (ChecksumFileSystem, e.g. the local file system)."""
    return f".{name}.crc"


class LSMTimelineWriter:
    """Writes and maintains the LSM timeline in ``history_path`` (``LSMTimelineWriter``)."""

    def __init__(
        self,
        storage: Storage,
        history_path: str,
        timeline_path: str = TIMELINE,
        *,
        batch_size: int = COMPACTION_BATCH_SIZE,
        target_max_bytes: int = COMPACTION_TARGET_MAX_BYTES,
        versions_retained: int = MANIFEST_VERSIONS_RETAINED,
    ) -> None:
        self.storage = storage
        self.path = history_path
        self.timeline_path = timeline_path
        self.batch_size = batch_size
        self.target_max_bytes = target_max_bytes
        self.versions_retained = versions_retained

    def _file(self, name: str) -> str:
        return f"{self.path}/{name}"

    def _remove(self, name: str, listed: set[str] | None = None) -> None:
        """Delete ``name`` and its Hadoop checksum sibling where present: a stale ``.crc`` beside
        a rewritten file would fail Hudi's checksummed reads on a local file system."""
        for n in (name, crc_name(name)):
            if (n in listed) if listed is not None else self.storage.exists(self._file(n)):
                with contextlib.suppress(FileNotFoundError):
                    self.storage.delete(self._file(n))

    # --- rows ---

    def row(self, action: ActiveAction) -> dict[str, Any]:
        """``MetadataConversionUtils.createLSMTimelineInstant``."""
        metadata = self._read(action.completed) or None  # an empty completed file has no metadata
        plan: bytes | None = None
        pending = action.pending_action
        if pending == CLEAN:
            p = action.requested or action.inflight
            plan = self._read(p) if p else None
        elif pending in (REPLACE_COMMIT, CLUSTERING):
            if action.requested:
                plan = self._read(action.requested) or None
            if action.inflight:
                plan = self._read(action.inflight) or plan
        elif pending in (COMPACTION, LOG_COMPACTION):
            # the plan is always the requested file
            name = f"{action.requested_time}.{pending}.requested"
            plan = self._read(name)
        return {
            "instantTime": action.requested_time,
            "completionTime": action.completion_time,
            "action": action.action,
            "metadata": metadata,
            "plan": plan,
            "version": LSM_INSTANT_VERSION,
        }

    def _read(self, name: str) -> bytes | None:
        try:
            return self.storage.read_bytes(f"{self.timeline_path}/{name}")
        except FileNotFoundError:
            return None

    def _write_rows(self, name: str, rows: list[dict[str, Any]]) -> None:
        from hudi_md.write.base_file import write_base_file

        schema = schema_json("HoodieLSMTimelineInstant")
        table = pa.table(
            {
                "instantTime": pa.array([r["instantTime"] for r in rows], pa.string()),
                "completionTime": pa.array([r["completionTime"] for r in rows], pa.string()),
                "action": pa.array([r["action"] for r in rows], pa.string()),
                "metadata": pa.array([r["metadata"] for r in rows], pa.binary()),
                "plan": pa.array([r["plan"] for r in rows], pa.binary()),
                "version": pa.array([r["version"] for r in rows], pa.int32()),
            }
        )
        write_base_file(self.storage, self._file(name), table, avro_schema_json=schema, bloom=None)

    # --- writing ---

    def write(self, actions: Sequence[ActiveAction]) -> str | None:
        """Write ``actions`` as a new level-0 file and commit it to a new manifest; returns its
        name, or None when the same file was already committed by an earlier (interrupted) run."""
        if not actions:
            raise ValueError("the instant actions to write should not be empty")
        name = f"{actions[0].requested_time}_{actions[-1].requested_time}_0.parquet"
        if self.storage.exists(self._file(name)):
            if name in {e.file_name for e in latest_manifest(self.storage, self.path)}:
                log.info("skip archiving for the redundant file %s", name)
                return None
            self._remove(name)  # written, never committed: rewrite
        for a in actions:
            delete_markers(self.storage, a.requested_time)
        self._write_rows(name, [self.row(a) for a in actions])
        self.update_manifest([], name)
        return name

    def _entry(self, name: str) -> ManifestEntry:
        return ManifestEntry(name, self.storage.info(self._file(name)).size)

    def update_manifest(self, remove: Sequence[str], add: str) -> int:
        """Write ``manifest_<N+1>`` = latest manifest - ``remove`` + ``add``, then ``_version_``."""
        version = latest_snapshot_version(self.storage, self.path)
        entries = [
            e for e in read_manifest(self.storage, version, self.path) if e.file_name not in set(remove)
        ]
        entries.append(self._entry(add))
        new_version = 1 if version < 0 else version + 1
        manifest = f"{MANIFEST_PREFIX}{new_version}"
        listed = {s.name for s in self.storage.list(self.path)}
        self._remove(manifest, listed)  # left by a write that failed before `_version_`
        self.storage.write_atomic(self._file(manifest), manifest_json(entries).encode("utf-8"))
        self._remove(VERSION_FILE, listed)
        self.storage.write_atomic(self._file(VERSION_FILE), str(new_version).encode("utf-8"))
        return new_version

    # --- compaction and cleaning ---

    def compact_and_clean(self) -> list[str]:
        """Compact full levels (level 0 first, then each next level that fills up), then clean;
        returns the names of the compacted files written."""
        manifest = latest_manifest(self.storage, self.path)
        level = 0
        written = []
        name = self._compact_level(manifest, level)
        while name is not None:
            written.append(name)
            manifest.append(self._entry(name))
            level += 1
            name = self._compact_level(manifest, level)
        self.clean(level)
        return written

    def _compact_level(self, manifest: list[ManifestEntry], level: int) -> str | None:
        files = sorted((e for e in manifest if file_level(e.file_name) == level), key=lambda e: e.file_name)
        if len(files) < self.batch_size:
            return None
        candidates = self._candidates(files)
        if len(candidates) < 2:
            return None
        lo = min(file_range(c)[0] for c in candidates)
        hi = max(file_range(c)[1] for c in candidates)
        name = f"{lo}_{hi}_{file_level(candidates[0]) + 1}.parquet"
        self._remove(name)
        rows: list[dict[str, Any]] = []
        for c in candidates:
            rows.extend(read_data_file(self.storage, self._file(c)))
        self._write_rows(name, rows)
        self.update_manifest(candidates, name)
        log.info("compacted LSM timeline files %s into %s", candidates, name)
        return name

    def _candidates(self, files: Sequence[ManifestEntry]) -> list[str]:
        """``LSMTimelineWriter.getCandidateFiles``: up to ``batch_size`` consecutive files of at
        most ``target_max_bytes`` together (a single file over the limit is skipped)."""
        out: list[str] = []
        total = 0
        for e in files:
            total += e.file_len
            out.append(e.file_name)
            if len(out) >= self.batch_size:
                break
            if total > self.target_max_bytes:
                if len(out) < 2:
                    total = 0
                    out.clear()
                else:
                    break
        return out

    def clean(self, compacted_levels: int = 0) -> None:
        """Keep the newest ``versions_retained + compacted_levels`` manifests and the data files
        they name; delete older manifests, then unreferenced data files."""
        versions = manifest_versions(self.storage, self.path)
        keep_count = self.versions_retained + compacted_levels
        if len(versions) <= keep_count:
            return
        keep = sorted(versions, reverse=True)[:keep_count]
        files_to_keep = {e.file_name for v in keep for e in read_manifest(self.storage, v, self.path)}
        listed = {s.name for s in self.storage.list(self.path) if not s.is_dir}
        for v in versions:
            if v not in keep:
                self._remove(f"{MANIFEST_PREFIX}{v}", listed)
        for name in sorted(listed):
            if is_data_file(name) and not name.startswith(".") and name not in files_to_keep:
                self._remove(name, listed)
