"""RFC-15's MDT metrics: durations and counts of initialize / sync / lookup / scan operations.

Process-wide and thread-safe; ``snapshot()`` returns them, ``hudi-md metadata stats`` prints them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_counts: dict[str, int] = {}
_millis: dict[str, float] = {}


@contextmanager
def timed(name: str) -> Iterator[None]:
    start = time.perf_counter()
    try:
        yield
    finally:
        elapsed = (time.perf_counter() - start) * 1000.0
        with _lock:
            _counts[name] = _counts.get(name, 0) + 1
            _millis[name] = _millis.get(name, 0.0) + elapsed


def snapshot() -> dict[str, dict[str, float]]:
    with _lock:
        return {n: {"count": _counts[n], "total_ms": round(_millis[n], 3)} for n in sorted(_counts)}


def reset() -> None:
    with _lock:
        _counts.clear()
        _millis.clear()
