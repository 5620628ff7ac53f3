"""Per-instant heartbeats, as Apache Hudi's ``HoodieHeartbeatClient`` writes them.

A writer under optimistic concurrency control keeps ``.hoodie/.heartbeat/<instantTime>`` fresh
while its instant is pending: the (empty) file is rewritten every
``hoodie.client.heartbeat.interval_in_ms`` (default 60 s), and its modification time is the
heartbeat. A pending instant whose heartbeat is older than interval times tolerable misses
(``hoodie.client.heartbeat.tolerable.misses``, default 2), or missing, belongs to a writer that
failed: Hudi's LAZY failed-writes cleaning policy rolls back only those, never a live writer's.

The heartbeat file is written before the instant's ``requested`` file, and deleted once the
instant completes or is rolled back.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Mapping

from hudi_md.storage import Storage
from hudi_md.write.lock import heartbeat_settings

log = logging.getLogger(__name__)

HEARTBEAT_DIR = ".hoodie/.heartbeat"


def heartbeat_path(instant_time: str) -> str:
    return f"{HEARTBEAT_DIR}/{instant_time}"


def last_heartbeat(storage: Storage, instant_time: str) -> float | None:
    """The instant's last heartbeat (epoch seconds), None when it has no heartbeat file."""
    try:
        return storage.info(heartbeat_path(instant_time)).modification_time
    except FileNotFoundError:
        return None


def is_expired(
    storage: Storage, instant_time: str, options: Mapping[str, str] | None, now: float | None = None
) -> bool:
    """Hudi's ``HoodieHeartbeatClient.isHeartbeatExpired``: missing, or older than the allowance."""
    interval, misses = heartbeat_settings(options)
    beat = last_heartbeat(storage, instant_time)
    if beat is None:
        return True
    now = time.time() if now is None else now
    return now - beat > interval * misses


def delete_heartbeat(storage: Storage, instant_time: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        storage.delete(heartbeat_path(instant_time))


class Heartbeat:
    """The heartbeat of one pending instant of this writer, refreshed from a daemon thread."""

    def __init__(self, storage: Storage, instant_time: str, options: Mapping[str, str] | None) -> None:
        self.storage = storage
        self.instant_time = instant_time
        self.interval_s, self.misses = heartbeat_settings(options)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def beat(self) -> None:
        self.storage.write_bytes(heartbeat_path(self.instant_time), b"")

    def start(self) -> None:
        self.beat()
        self._thread = threading.Thread(
            target=self._run, name=f"hudi-md-heartbeat-{self.instant_time}", daemon=True
        )
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.beat()
            except BaseException as e:  # never die loudly; an expired heartbeat is handled
                log.warning("heartbeat of instant %s failed: %s", self.instant_time, e)

    def stop(self, *, delete: bool = True) -> None:
        """Stop refreshing; delete the file (the instant completed, or was rolled back)."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)
        if delete:
            try:
                delete_heartbeat(self.storage, self.instant_time)
            except OSError as e:
                log.warning("could not delete the heartbeat of %s: %s", self.instant_time, e)
