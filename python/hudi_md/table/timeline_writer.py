"""Writing layout-2 timeline files: ``T.a.requested`` → ``T.a.inflight`` → ``T_C.a``.

Each transition is one file written whole, in the order Hudi uses, so a reader listing the folder at
any moment sees a consistent state: an instant counts as completed only once ``T_C.<action>``
exists. Where the file system renames atomically (local disk, HDFS) each file is written to a hidden
temporary name and renamed (:meth:`Storage.write_atomic`), so a crash never leaves a torn instant
file; on object stores one PUT is atomic already. Timeline listings skip the temporary names.
"""

from __future__ import annotations

import threading
import time
from datetime import datetime, timezone
from typing import Protocol

from hudi_md.errors import CommitStateUnknownError, StorageError
from hudi_md.storage import Storage
from hudi_md.table.timeline import COMMIT, COMPLETES_AS, Instant, State

_clock_lock = threading.Lock()
_last_instant = ""


def new_instant_time(*, utc: bool = False, after: str | None = None) -> str:
    """A fresh ``yyyyMMddHHmmssSSS`` instant, strictly increasing within this process and > ``after``.

    Hudi's default timeline zone is the JVM's local zone (``hoodie.table.timeline.timezone=LOCAL``).
    """
    global _last_instant
    with _clock_lock:
        while True:
            now = datetime.now(timezone.utc) if utc else datetime.now()
            value = now.strftime("%Y%m%d%H%M%S") + f"{now.microsecond // 1000:03d}"
            floor = max(_last_instant, after or "")
            if value > floor:
                _last_instant = value
                return value
            time.sleep(0.001)


class InstantObserver(Protocol):
    """Told of every instant state a :class:`TimelineWriter` wrote, after it is on storage (the
    metastore's timeline mirror, ``hudi_md.metastore.mirror``)."""

    def requested(self, instant_time: str, action: str, content: bytes) -> None: ...

    def inflight(self, instant_time: str, action: str, content: bytes) -> None: ...

    def completed(self, instant: Instant, content: bytes) -> None: ...

    def removed(self, instant_time: str) -> None:
        """Every file of the instant is gone (rolled back, or abandoned before it ran)."""
        ...


class TimelineWriter:
    """Writes instant files into one timeline folder (data table or MDT); ``observer`` hears of
    every state written."""

    def __init__(self, storage: Storage, timeline_path: str, observer: InstantObserver | None = None) -> None:
        self.storage = storage
        self.path = timeline_path
        self.observer = observer

    def _file(self, name: str) -> str:
        return f"{self.path}/{name}"

    def requested(self, instant_time: str, action: str, content: bytes = b"") -> Instant:
        name = f"{instant_time}.{action}.requested"
        self.storage.write_atomic(self._file(name), content)
        if self.observer is not None:
            self.observer.requested(instant_time, action, content)
        return Instant(instant_time, action, State.REQUESTED, None, name)

    def inflight_file(self, instant_time: str, action: str) -> str:
        # A COW commit's inflight file is `T.inflight`, without the action (Hudi's convention).
        name = f"{instant_time}.inflight" if action == COMMIT else f"{instant_time}.{action}.inflight"
        return self._file(name)

    def inflight(self, instant_time: str, action: str, content: bytes = b"") -> Instant:
        path = self.inflight_file(instant_time, action)
        name = path.rsplit("/", 1)[-1]
        self.storage.write_atomic(path, content)
        if self.observer is not None:
            self.observer.inflight(instant_time, action, content)
        return Instant(instant_time, action, State.INFLIGHT, None, name)

    def complete(
        self, instant_time: str, action: str, content: bytes, *, completion_time: str | None = None
    ) -> Instant:
        done_action = COMPLETES_AS.get(action, action)
        completion = completion_time or new_instant_time(after=instant_time)
        name = f"{instant_time}_{completion}.{done_action}"
        path = self._file(name)
        try:
            self.storage.write_atomic(path, content, overwrite=False)
        except StorageError as exc:
            # The commit point: a request whose answer was lost may still have written the file.
            try:
                landed = self.storage.exists(path) and self.storage.read_bytes(path) == content
            except (StorageError, FileNotFoundError) as check:
                raise CommitStateUnknownError(instant_time, action, self.storage.uri(path), exc) from check
            if not landed:
                raise  # not committed: the instant stays pending, for the next writer to roll back
        done = Instant(instant_time, done_action, State.COMPLETED, completion, name)
        if self.observer is not None:
            self.observer.completed(done, content)
        return done

    def delete_all(self, instant_time: str) -> None:
        """Remove every file of ``instant_time`` in this timeline, whatever its action and state
        (an MDT instant undone with the data instant or the build that made it)."""
        for e in self.storage.list(self.path):
            if e.name.startswith(f"{instant_time}.") or e.name.startswith(f"{instant_time}_"):
                self.storage.delete(e.path)

    def delete_pending(self, instant: Instant) -> None:
        """Remove every pending file of an instant (after a rollback), inflight first. A completed
        commit may have been a compaction (a replacecommit a clustering, a deltacommit a log
        compaction): their pending files carry the pending action's name."""
        t = instant.requested_time
        actions = [instant.action] + [a for a, done in COMPLETES_AS.items() if done == instant.action]
        names = [f"{t}.inflight"] if instant.action == COMMIT else []
        for action in actions:
            names += [f"{t}.{action}.inflight", f"{t}.{action}.requested"]
        for name in names:
            if self.storage.exists(self._file(name)):
                self.storage.delete(self._file(name))
        if self.observer is not None:
            self.observer.removed(t)


class PendingInstant:
    """One instant on its way to completion: ``requested`` → ``inflight`` → completed.

    The one place an instant's state is written, for the data timeline and the MDT's alike
    (:class:`hudi_md.write.transaction.Transaction` adds the lock, markers and MDT records of a
    data instant on top).
    """

    def __init__(self, timeline: TimelineWriter, instant_time: str, action: str) -> None:
        self.timeline = timeline
        self.time = instant_time
        self.action = action

    @classmethod
    def begin(
        cls,
        timeline: TimelineWriter,
        instant_time: str,
        action: str,
        plan: bytes = b"",
        *,
        inflight: bytes = b"",
    ) -> PendingInstant:
        """Write ``T.a.requested`` (holding ``plan``), then ``T.a.inflight``."""
        pending = cls.request(timeline, instant_time, action, plan)
        pending.start(inflight)
        return pending

    @classmethod
    def request(
        cls, timeline: TimelineWriter, instant_time: str, action: str, plan: bytes = b""
    ) -> PendingInstant:
        """Only ``T.a.requested``: a plan to be run (now, or by whoever finds it pending)."""
        timeline.requested(instant_time, action, plan)
        return cls(timeline, instant_time, action)

    def start(self, content: bytes = b"", *, if_missing: bool = False) -> None:
        """``T.a.inflight`` (``if_missing``: unless an earlier attempt wrote it already)."""
        if if_missing and self.timeline.storage.exists(self.timeline.inflight_file(self.time, self.action)):
            return
        self.timeline.inflight(self.time, self.action, content)

    def complete(self, metadata: bytes, *, completion_time: str | None = None) -> Instant:
        """``T_C.a``, written whole: the commit point."""
        return self.timeline.complete(self.time, self.action, metadata, completion_time=completion_time)

    def abandon(self) -> None:
        """Remove the instant's pending files (inflight first, so a plan is never left half-run)."""
        self.timeline.delete_pending(Instant(self.time, self.action, State.INFLIGHT))

    @classmethod
    def revert(cls, timeline: TimelineWriter, instant: Instant) -> PendingInstant:
        """Hudi's ``revertCompleteToInflight``: make sure the completed instant's pending file is
        there, then delete its completed file; from then on readers see it as a failed write."""
        t = instant.requested_time
        actions = [instant.action] + [a for a, done in COMPLETES_AS.items() if done == instant.action]
        names = [f"{t}.inflight"] if instant.action == COMMIT else []
        names += [f"{t}.{a}.inflight" for a in actions]
        if not any(timeline.storage.exists(f"{timeline.path}/{n}") for n in names):
            timeline.inflight(t, instant.action, b"")
        timeline.storage.delete(f"{timeline.path}/{instant.file_name}")
        return cls(timeline, t, instant.action)
