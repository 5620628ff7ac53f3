"""The active timeline: instants of layout 1 (v6, flat in ``.hoodie``) and layout 2 (v8+, ``T_C.action``)."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from enum import Enum
from typing import Any

from hudi_md.errors import CommitMetadataError, InvalidOptionError
from hudi_md.storage import Storage

COMMIT = "commit"
DELTA_COMMIT = "deltacommit"
REPLACE_COMMIT = "replacecommit"
CLUSTERING = "clustering"
COMPACTION = "compaction"
LOG_COMPACTION = "logcompaction"
CLEAN = "clean"
ROLLBACK = "rollback"
RESTORE = "restore"
SAVEPOINT = "savepoint"
INDEXING = "indexing"
SCHEMA_COMMIT = "schemacommit"

ACTIONS = frozenset(
    {
        COMMIT,
        DELTA_COMMIT,
        REPLACE_COMMIT,
        CLUSTERING,
        COMPACTION,
        LOG_COMPACTION,
        CLEAN,
        ROLLBACK,
        RESTORE,
        SAVEPOINT,
        INDEXING,
        SCHEMA_COMMIT,
    }
)
# Actions whose completed instants add data files (compaction completes as commit, clustering as
# replacecommit, log compaction as deltacommit).
WRITE_ACTIONS = frozenset({COMMIT, DELTA_COMMIT, REPLACE_COMMIT})
# The action a pending instant completes as.
COMPLETES_AS = {COMPACTION: COMMIT, CLUSTERING: REPLACE_COMMIT, LOG_COMPACTION: DELTA_COMMIT}


class State(Enum):
    REQUESTED = 0
    INFLIGHT = 1
    COMPLETED = 2


@dataclass(frozen=True)
class Instant:
    """One instant. ``action`` is the completed action for completed instants (compaction → commit)."""

    requested_time: str
    action: str
    state: State
    completion_time: str | None = None
    file_name: str = ""

    @property
    def is_completed(self) -> bool:
        return self.state is State.COMPLETED

    def sort_key(self) -> tuple[str, int]:
        return (self.requested_time, self.state.value)

    def __str__(self) -> str:
        done = f"_{self.completion_time}" if self.completion_time else ""
        return f"[{self.requested_time}{done}__{self.action}__{self.state.name}]"


# Layout 2: `T_C.action`, `T.action.requested`, `T.action.inflight`, `T.inflight` (COW commit).
_NAME_RE = re.compile(r"^(\d+)(?:_(\d+))?(\.[a-z]+)(\.[a-z]+)?$")


def parse_instant_file(name: str, layout_version: int, mtime: float | None = None) -> Instant | None:
    """Parse a timeline file name; None for files that are not instants."""
    m = _NAME_RE.match(name)
    if not m:
        return None
    requested, completion, ext1, ext2 = m.group(1), m.group(2), m.group(3)[1:], m.group(4)
    if ext2 is None:
        if ext1 == "inflight":
            return Instant(requested, COMMIT, State.INFLIGHT, None, name)
        if ext1 not in ACTIONS:
            return None
        if layout_version < 2 and completion is None:
            completion = _mtime_to_instant(mtime) if mtime is not None else None
        return Instant(requested, COMPLETES_AS.get(ext1, ext1), State.COMPLETED, completion, name)
    state_name = ext2[1:]
    if ext1 not in ACTIONS or state_name not in ("requested", "inflight"):
        return None
    state = State.REQUESTED if state_name == "requested" else State.INFLIGHT
    return Instant(requested, ext1, state, None, name)


def _mtime_to_instant(mtime: float) -> str:
    # Hudi 1.x reading a layout-1 timeline takes the completed file's modification time as the
    # completion time; millisecond instant format.
    dt = datetime.fromtimestamp(mtime, tz=timezone.utc)
    return dt.strftime("%Y%m%d%H%M%S") + f"{dt.microsecond // 1000:03d}"


def resolve_instant(as_of: str | None) -> str | None:
    """A user's point in time as an instant time: ``20240101``, ``2024-01-01 12:30:00`` or
    ``20240101123000000`` (shorter forms padded to the 17-digit format); None stays None."""
    if as_of is None:
        return None
    digits = "".join(ch for ch in str(as_of).strip() if ch.isdigit())
    if len(digits) < 8:
        raise InvalidOptionError(f"as_of must be an instant time like 20240101123000000, got {as_of!r}")
    return (digits + "0" * 17)[:17] if len(digits) < 17 else digits


def instant_to_datetime(instant: str) -> datetime:
    """Parse ``yyyyMMddHHmmss[SSS]`` (naive; the table's timeline zone is not applied)."""
    if len(instant) >= 17:
        return datetime.strptime(instant[:17] + "000", "%Y%m%d%H%M%S%f")
    return datetime.strptime(instant[:14], "%Y%m%d%H%M%S")


class Timeline:
    """An immutable, sorted view of instants with lazy, cached access to their metadata."""

    def __init__(
        self,
        instants: Iterable[Instant],
        *,
        reader: Callable[[Instant], bytes] | None = None,
        name: str = "",
        _cache: dict[tuple[str, str, str], Any] | None = None,
    ) -> None:
        self.instants: tuple[Instant, ...] = tuple(sorted(instants, key=Instant.sort_key))
        self._reader = reader
        self.name = name
        self._cache: dict[tuple[str, str, str], Any] = _cache if _cache is not None else {}
        self._lock = threading.Lock()

    @classmethod
    def load(cls, storage: Storage, timeline_path: str, layout_version: int) -> Timeline:
        """List the timeline folder (one listing request) and parse every instant file."""
        latest: dict[tuple[str, str], Instant] = {}
        for status in storage.list(timeline_path):
            if status.is_dir:
                continue
            instant = parse_instant_file(status.name, layout_version, status.modification_time)
            if instant is None:
                continue
            # Keep only the furthest state of each instant (completed > inflight > requested);
            # pending actions are keyed by their completed action so `T.compaction.requested` and
            # `T_C.commit` are one instant.
            key = (instant.requested_time, COMPLETES_AS.get(instant.action, instant.action))
            prev = latest.get(key)
            if prev is None or instant.state.value > prev.state.value:
                latest[key] = instant

        def read(instant: Instant) -> bytes:
            return storage.read_bytes(f"{timeline_path}/{instant.file_name}")

        return cls(latest.values(), reader=read, name=storage.uri(timeline_path))

    # --- filtering -------------------------------------------------------------------------------

    def _derive(self, instants: Iterable[Instant]) -> Timeline:
        return Timeline(instants, reader=self._reader, name=self.name, _cache=self._cache)

    def filter(self, predicate: Callable[[Instant], bool]) -> Timeline:
        return self._derive(i for i in self.instants if predicate(i))

    def completed(self) -> Timeline:
        return self.filter(lambda i: i.is_completed)

    def pending(self) -> Timeline:
        return self.filter(lambda i: not i.is_completed)

    def of_actions(self, *actions: str) -> Timeline:
        wanted = set(actions)
        return self.filter(lambda i: i.action in wanted)

    def write_timeline(self) -> Timeline:
        """Completed instants that add data files: commit, deltacommit, replacecommit."""
        return self.filter(lambda i: i.is_completed and i.action in WRITE_ACTIONS)

    def until(self, as_of: str | None) -> Timeline:
        """Instants requested at or before ``as_of`` (time travel); all of them when None."""
        if as_of is None:
            return self
        return self.filter(lambda i: i.requested_time <= as_of)

    def between(self, start: str | None, end: str | None) -> Timeline:
        """Instants with ``start < requested_time <= end`` (Hudi's incremental range on tables of
        version 6)."""
        return self.filter(
            lambda i: (start is None or i.requested_time > start) and (end is None or i.requested_time <= end)
        )

    def completed_between(self, start: str | None, end: str | None) -> Timeline:
        """Completed instants with ``start < completion time <= end`` (Hudi 1.x's incremental
        range on tables of version 8 and later; an instant without a completion time, as a
        metastore may hold, counts by its requested time)."""

        def done_at(i: Instant) -> str:
            return i.completion_time or i.requested_time

        return self.filter(
            lambda i: (
                i.is_completed
                and (start is None or done_at(i) > start)
                and (end is None or done_at(i) <= end)
            )
        )

    # --- queries ---------------------------------------------------------------------------------

    def __iter__(self) -> Iterator[Instant]:
        return iter(self.instants)

    def __len__(self) -> int:
        return len(self.instants)

    def __bool__(self) -> bool:
        return bool(self.instants)

    def last(self) -> Instant | None:
        return self.instants[-1] if self.instants else None

    def first(self) -> Instant | None:
        return self.instants[0] if self.instants else None

    def times(self) -> set[str]:
        return {i.requested_time for i in self.instants}

    def contains(self, requested_time: str) -> bool:
        return any(i.requested_time == requested_time for i in self.instants)

    def get(self, requested_time: str, action: str | None = None) -> Instant | None:
        for i in self.instants:
            if i.requested_time == requested_time and (action is None or i.action == action):
                return i
        return None

    def completion_time_of(self, requested_time: str) -> str | None:
        for i in self.instants:
            if i.requested_time == requested_time and i.is_completed:
                return i.completion_time or i.requested_time
        return None

    # --- metadata --------------------------------------------------------------------------------

    def read_bytes(self, instant: Instant) -> bytes:
        if self._reader is None:
            raise CommitMetadataError(instant.file_name, "timeline has no storage to read from")
        return self._reader(instant)

    def metadata(self, instant: Instant) -> dict[str, Any]:
        """The decoded instant file (JSON or Avro, whichever the file is), cached per instant."""
        key = (instant.requested_time, instant.action, instant.state.name)
        with self._lock:
            if key in self._cache:
                return self._cache[key]
        from hudi_md.formats.commit_metadata import parse_instant_metadata

        try:
            data = self.read_bytes(instant)
        except FileNotFoundError as e:
            raise CommitMetadataError(f"{self.name}/{instant.file_name}", "instant file disappeared") from e
        value = parse_instant_metadata(data, f"{self.name}/{instant.file_name}")
        with self._lock:
            self._cache[key] = value
        return value

    def replaced_file_ids(self) -> dict[tuple[str, str], str]:
        """``(partition, file_id) -> replacing instant`` over completed replacecommits of this timeline."""
        out: dict[tuple[str, str], str] = {}
        for instant in self.instants:
            if not (instant.is_completed and instant.action == REPLACE_COMMIT):
                continue
            meta = self.metadata(instant)
            for partition, file_ids in (meta.get("partitionToReplaceFileIds") or {}).items():
                for file_id in file_ids or ():
                    out.setdefault((partition, file_id), instant.requested_time)
        return out

    def __repr__(self) -> str:
        return f"Timeline({self.name!r}, {len(self.instants)} instants)"


def instant_validator(timeline: Timeline, as_of: str | None = None) -> InstantValidity:
    """The ``is_valid_instant`` predicate Hudi's log scanner applies, for ``timeline`` read as of ``as_of``.

    Valid: completed commits, deltacommits and replacecommits at or before ``as_of``, and
    instants older than the first of them that are not pending (committed, then archived:
    ``containsOrBeforeTimelineStarts``). Pending instants, failed writes and anything after
    ``as_of`` are not. The predicate pickles (writers send it to Spark executors).
    """
    writes = [i.requested_time for i in timeline.write_timeline()]
    return InstantValidity(
        completed=frozenset(t for t in writes if as_of is None or t <= as_of),
        pending=frozenset(i.requested_time for i in timeline.pending()),
        first=min(writes, default=None),
        as_of=as_of,
    )


@dataclass(frozen=True)
class InstantValidity:
    """Which instants' log blocks a reader merges (see :func:`instant_validator`)."""

    completed: frozenset[str]
    pending: frozenset[str]
    first: str | None
    as_of: str | None = None

    def __call__(self, instant: str) -> bool:
        if self.as_of is not None and instant > self.as_of:
            return False
        if instant in self.completed:
            return True
        if instant in self.pending:
            return False
        return self.first is not None and instant < self.first
