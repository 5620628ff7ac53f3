"""Which storage failures are worth sending again, and how often (Hudi's
``hoodie.filesystem.operation.retry.*`` keys); the typed error a request raises when it fails."""

from __future__ import annotations

import errno
import random
from dataclasses import dataclass
from typing import Any

from hudi_md.config import storage as S

# StorageError is defined with every other error; named here too, where it was first.
from hudi_md.errors import InvalidOptionError, StorageError

__all__ = [
    "RETRY_ENABLE",
    "RETRY_INITIAL_INTERVAL_MS",
    "RETRY_MAX_INTERVAL_MS",
    "RETRY_MAX_NUMBERS",
    "RetryPolicy",
    "StorageError",
    "is_transient",
]

# Hudi's keys for retrying file-system operations (FileSystemRetryConfig; hudi_md.config.storage).
RETRY_ENABLE = S.RETRY_ENABLE.key
RETRY_MAX_NUMBERS = S.RETRY_MAX_NUMBERS.key
RETRY_INITIAL_INTERVAL_MS = S.RETRY_INITIAL_INTERVAL_MS.key
RETRY_MAX_INTERVAL_MS = S.RETRY_MAX_INTERVAL_MS.key

# Markers of failures worth retrying, as object-store clients word them (S3 503 SlowDown, 500
# InternalError, throttling, request timeouts, dropped connections).
_TRANSIENT_MARKERS = (
    "SlowDown",
    "Slow Down",
    "reduce your request rate",
    "ServiceUnavailable",
    "Service Unavailable",
    "503",
    "InternalError",
    "Throttl",
    "TooManyRequests",
    "RequestTimeout",
    "timed out",
    "Timeout",
    "Connection reset",
    "Connection aborted",
    "ConnectionClosed",
    "ServerDisconnected",
    "EndpointConnectionError",
)
# EBUSY and EREMOTEIO: s3fs's translations of 503 SlowDown / ServiceUnavailable and of 500
# InternalError (its message then names neither).
_TRANSIENT_ERRNOS = frozenset(
    {
        errno.EAGAIN,
        errno.ETIMEDOUT,
        errno.ECONNRESET,
        errno.ECONNABORTED,
        errno.ECONNREFUSED,
        errno.EPIPE,
        errno.EBUSY,
        getattr(errno, "EREMOTEIO", 121),
    }
)


def is_transient(exc: BaseException) -> bool:
    """Whether a storage failure may succeed when the same request is sent again."""
    if isinstance(
        exc, (FileNotFoundError, FileExistsError, IsADirectoryError, NotADirectoryError, PermissionError)
    ):
        return False
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return True
    if isinstance(exc, OSError) and exc.errno in _TRANSIENT_ERRNOS:
        return True
    text = f"{type(exc).__name__}: {exc}"
    return any(m in text for m in _TRANSIENT_MARKERS)


@dataclass(frozen=True)
class RetryPolicy:
    """How often a request that failed transiently is sent again: ``attempts`` in all, sleeping
    ``initial_s`` doubling up to ``max_s`` (with jitter) in between. Hudi's keys configure it; on by
    default for remote file systems (object stores throttle), off for the local disk."""

    attempts: int = 1
    initial_s: float = 0.1
    max_s: float = 2.0

    @classmethod
    def from_options(cls, options: dict[str, Any], *, remote: bool) -> RetryPolicy:
        # every key read (and so checked) whether or not retries are on
        enabled = S.RETRY_ENABLE.get(options, remote)
        retries = S.RETRY_MAX_NUMBERS.get(options)
        initial = S.RETRY_INITIAL_INTERVAL_MS.get(options) / 1000
        ceiling = S.RETRY_MAX_INTERVAL_MS.get(options) / 1000
        if not enabled:
            return cls(attempts=1)
        if retries < 0 or initial < 0 or ceiling < 0:
            raise InvalidOptionError(f"{RETRY_MAX_NUMBERS} and the retry intervals must not be negative")
        return cls(attempts=retries + 1, initial_s=initial, max_s=ceiling)

    def delay(self, attempt: int) -> float:
        return min(self.max_s, self.initial_s * 2 ** (attempt - 1)) * (0.5 + random.random() / 2)
