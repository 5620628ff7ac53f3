"""The archived timeline of table version 8+ (Hudi 1.x): the LSM timeline in ``.hoodie/timeline/history``.

Layout (``LSMTimeline``, hudi-common)::

    _version_                       UTF-8 text: the current snapshot (manifest) version N
    manifest_<N>                    JSON {"files": [{"fileName": ..., "fileLen": ...}, ...]}
    <min>_<max>_<level>.parquet     rows of HoodieLSMTimelineInstant (parquet-avro)

Readers take ``_version_`` (or, when it is missing or unreadable, the largest ``manifest_<N>``
listed), read that manifest and read only the Parquet files it names: files outside the current
manifest are leftovers of a compaction or of a failed write and are never read. One row per archived
action: ``instantTime``, ``completionTime``, ``action`` (the completed action: a compaction is
``commit``), ``metadata`` (the completed instant file's bytes), ``plan`` (the requested file's bytes
for clean, compaction, log compaction, replacecommit and clustering), ``version`` (1). An instant
may appear in two files after a retried archival; like ``ArchivedTimelineV2`` the first row read
wins.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow.parquet as pq

from hudi_md.errors import CommitMetadataError
from hudi_md.storage import Storage
from hudi_md.table.timeline import Instant, State, Timeline

__all__ = [
    "HISTORY_PATH",
    "ArchivedInstant",
    "ManifestEntry",
    "archived_instant_bytes",
    "archived_instant_metadata",
    "archived_timeline",
    "file_level",
    "file_range",
    "history_path_of",
    "is_data_file",
    "latest_manifest",
    "latest_snapshot_version",
    "load_archived_timeline",
    "manifest_json",
    "manifest_versions",
    "parse_manifest",
    "read_archived_rows",
    "read_data_file",
    "read_manifest",
]

HISTORY_PATH = ".hoodie/timeline/history"
VERSION_FILE = "_version_"
MANIFEST_PREFIX = "manifest_"
_MANIFEST_RE = re.compile(r"^manifest_(\d+)$")
# LSMTimeline.ARCHIVE_FILE_PATTERN (matched against the whole name: a `.parquet` suffix and nothing else).
_FILE_RE = re.compile(r"^(\d+)_(\d+)_(\d)\.parquet$")
COLUMNS = ("instantTime", "completionTime", "action", "metadata", "plan", "version")


@dataclass(frozen=True)
class ManifestEntry:
    file_name: str
    file_len: int


@dataclass(frozen=True)
class ArchivedInstant:
    """One row of the LSM timeline. ``file_name`` is the Parquet file it was read from."""

    requested_time: str
    completion_time: str | None
    action: str
    metadata: bytes | None
    plan: bytes | None
    version: int
    file_name: str

    def to_instant(self) -> Instant:
        return Instant(
            self.requested_time, self.action, State.COMPLETED, self.completion_time, self.file_name
        )


# --- names -------------------------------------------------------------------------------------------


def file_level(name: str) -> int:
    """The LSM level of a data file (``LSMTimeline.getFileLayer``: 0 for names that do not parse)."""
    m = _FILE_RE.match(name)
    return int(m.group(3)) if m else 0


def file_range(name: str) -> tuple[str, str]:
    m = _FILE_RE.match(name)
    if not m:
        raise ValueError(f"unexpected archival file name: {name}")
    return m.group(1), m.group(2)


def is_data_file(name: str) -> bool:
    return name.endswith(".parquet")


def history_path_of(storage: Storage) -> str:
    """``.hoodie/<hoodie.timeline.path>/<hoodie.timeline.history.path>`` of a v8+ table."""
    from hudi_md.table.config import TableConfig

    try:
        config = TableConfig.load(storage)
    except Exception:
        return HISTORY_PATH  # a table without readable properties uses the defaults
    return f".hoodie/{config.timeline_folder}/{config.timeline_history_path}"


# --- manifests ---------------------------------------------------------------------------------------


def manifest_versions(storage: Storage, history_path: str = HISTORY_PATH) -> list[int]:
    """Versions of every ``manifest_<N>`` in the folder (``LSMTimeline.allSnapshotVersions``)."""
    out = []
    for status in storage.list(history_path):
        m = _MANIFEST_RE.match(status.name)
        if m and not status.is_dir:
            out.append(int(m.group(1)))
    return sorted(out)


def latest_snapshot_version(storage: Storage, history_path: str = HISTORY_PATH) -> int:
    """The version in ``_version_``; the largest listed manifest when that file is missing or
    unreadable; -1 when there is none (``LSMTimeline.latestSnapshotVersion``)."""
    try:
        return int(storage.read_bytes(f"{history_path}/{VERSION_FILE}").decode("utf-8").strip())
    except (FileNotFoundError, ValueError, UnicodeDecodeError):
        pass
    versions = manifest_versions(storage, history_path)
    return max(versions) if versions else -1


def parse_manifest(data: bytes, name: str = "<manifest>") -> list[ManifestEntry]:
    """``HoodieLSMTimelineManifest.fromJsonString``: an empty file is an empty manifest."""
    if not data:
        return []
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise CommitMetadataError(name, f"manifest is not valid JSON: {exc}") from exc
    files = value.get("files") if isinstance(value, dict) else None
    if files is None:
        return []
    return [ManifestEntry(str(f["fileName"]), int(f.get("fileLen") or 0)) for f in files]


def read_manifest(storage: Storage, version: int, history_path: str = HISTORY_PATH) -> list[ManifestEntry]:
    if version < 0:
        return []
    path = f"{history_path}/{MANIFEST_PREFIX}{version}"
    return parse_manifest(storage.read_bytes(path), storage.uri(path))


def latest_manifest(storage: Storage, history_path: str = HISTORY_PATH) -> list[ManifestEntry]:
    return read_manifest(storage, latest_snapshot_version(storage, history_path), history_path)


def manifest_json(entries: Sequence[ManifestEntry]) -> str:
    """``HoodieLSMTimelineManifest.toJsonString``: Jackson's default pretty printer over the
    manifest's one field (arrays inline with spaces, objects on indented lines, `` : `` separators)."""
    if not entries:
        return '{\n  "files" : [ ]\n}'
    items = [
        "{\n"
        f'    "fileName" : {json.dumps(e.file_name, ensure_ascii=False)},\n'
        f'    "fileLen" : {int(e.file_len)}\n'
        "  }"
        for e in entries
    ]
    return '{\n  "files" : [ ' + ", ".join(items) + " ]\n}"


# --- rows --------------------------------------------------------------------------------------------


def read_data_file(storage: Storage, path: str, columns: Sequence[str] = COLUMNS) -> list[dict[str, Any]]:
    """Rows of one LSM Parquet file (columns missing from an older file read as None)."""
    pf = pq.ParquetFile(io.BytesIO(storage.read_bytes(path)))
    present = [c for c in columns if c in pf.schema_arrow.names]
    rows = pf.read(columns=present).to_pylist()
    for r in rows:
        for c in columns:
            r.setdefault(c, None)
    return rows


def read_archived_rows(
    storage: Storage,
    history_path: str = HISTORY_PATH,
    *,
    start: str | None = None,
    end: str | None = None,
    columns: Sequence[str] = COLUMNS,
) -> list[ArchivedInstant]:
    """Every archived instant of the current snapshot, sorted by instant time.

    ``start``/``end`` (inclusive) skip files whose name range misses them, as Hudi's
    ``TimeRangeFilter`` does, and rows outside the range.
    """
    seen: dict[str, ArchivedInstant] = {}
    for entry in latest_manifest(storage, history_path):
        name = entry.file_name
        if start is not None or end is not None:
            lo, hi = file_range(name)
            if (start is not None and hi < start) or (end is not None and lo > end):
                continue
        for r in read_data_file(storage, f"{history_path}/{name}", columns):
            t = r.get("instantTime")
            if t is None or t in seen:
                continue
            if (start is not None and t < start) or (end is not None and t > end):
                continue
            seen[t] = ArchivedInstant(
                requested_time=t,
                completion_time=r.get("completionTime"),
                action=r.get("action") or "",
                metadata=r.get("metadata"),
                plan=r.get("plan"),
                version=int(r["version"]) if r.get("version") is not None else 1,
                file_name=name,
            )
    return sorted(seen.values(), key=lambda a: a.requested_time)


def load_archived_timeline(storage: Storage, history_path: str = HISTORY_PATH) -> list[Instant]:
    """The archived instants (all completed) as :class:`Instant` s, sorted by instant time.

    ``Instant.file_name`` is the LSM Parquet file holding the instant.
    """
    rows = read_archived_rows(storage, history_path, columns=("instantTime", "completionTime", "action"))
    return [r.to_instant() for r in rows]


def archived_instant_bytes(
    storage: Storage,
    instant: Instant | str,
    history_path: str = HISTORY_PATH,
    *,
    plan: bool = False,
) -> bytes | None:
    """The stored bytes of one archived instant: its completed file (or, with ``plan``, its plan);
    None when the instant is not archived or the field is empty."""
    t = instant if isinstance(instant, str) else instant.requested_time
    rows = read_archived_rows(storage, history_path, start=t, end=t)
    if not rows:
        return None
    return rows[0].plan if plan else rows[0].metadata


def archived_instant_metadata(
    storage: Storage,
    instant: Instant | str,
    history_path: str = HISTORY_PATH,
    *,
    plan: bool = False,
) -> dict[str, Any] | None:
    """The decoded metadata (JSON or Avro, as the active timeline stores it) of one archived instant."""
    from hudi_md.formats.commit_metadata import parse_instant_metadata

    data = archived_instant_bytes(storage, instant, history_path, plan=plan)
    if data is None:
        return None
    t = instant if isinstance(instant, str) else instant.requested_time
    return parse_instant_metadata(data, f"{storage.uri(history_path)}[{t}]")


def archived_timeline(storage: Storage, history_path: str = HISTORY_PATH) -> Timeline:
    """The archived instants as a :class:`Timeline` whose ``metadata()`` reads the archived bytes
    (all rows are read once, with their metadata)."""
    rows = {r.requested_time: r for r in read_archived_rows(storage, history_path)}

    def read(instant: Instant) -> bytes:
        row = rows.get(instant.requested_time)
        return (row.metadata or b"") if row is not None else b""

    return Timeline((r.to_instant() for r in rows.values()), reader=read, name=storage.uri(history_path))
