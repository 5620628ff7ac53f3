"""The table lock: a lock file under ``.hoodie`` (Hudi's file-system lock provider's place)."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from types import TracebackType

from hudi_md.errors import HudiMdError
from hudi_md.storage import Storage

LOCK_FILE = ".hoodie/.locks/hudi-md.lock"
DEFAULT_TIMEOUT_S = 60.0
# A lock older than this is considered abandoned by a crashed writer (Hudi's default lock expiry).
EXPIRE_S = 600.0


class LockTimeoutError(HudiMdError):
    """The table lock could not be acquired in time."""


class TableLock:
    def __init__(self, storage: Storage, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.storage = storage
        self.timeout_s = timeout_s
        self.held = False

    def acquire(self) -> None:
        owner = json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "time": time.time()}).encode()
        deadline = time.monotonic() + self.timeout_s
        delay = 0.05
        while True:
            if self.storage.create_exclusive(LOCK_FILE, owner):
                self.held = True
                return
            if self._expired():
                self.storage.delete(LOCK_FILE)
                continue
            if time.monotonic() > deadline:
                raise LockTimeoutError(
                    f"could not lock {self.storage.uri(LOCK_FILE)} within {self.timeout_s}s"
                )
            time.sleep(delay)
            delay = min(delay * 2, 1.0)

    def _expired(self) -> bool:
        try:
            info = json.loads(self.storage.read_bytes(LOCK_FILE))
            return time.time() - float(info.get("time", 0)) > EXPIRE_S
        except (FileNotFoundError, ValueError):
            return False

    def release(self) -> None:
        if self.held:
            with contextlib.suppress(FileNotFoundError):
                self.storage.delete(LOCK_FILE)
            self.held = False

    def __enter__(self) -> TableLock:
        self.acquire()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()
