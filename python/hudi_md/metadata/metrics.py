"""RFC-15's MDT metrics: durations and counts of initialize / sync / lookup / scan operations.

Process-wide and thread-safe; ``snapshot()`` returns them, ``hudi-md metadata stats`` prints them.
``cpu_ms`` is the process's CPU time over the operations (every thread's: with one writer, the
MDT upkeep's cost, which the wall clock of a shared machine does not tell).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_counts: dict[str, int] = {}
_millis: dict[str, float] = {}
_cpu_millis: dict[str, float] = {}


@contextmanager
def timed(name: str) -> Iterator[None]:
    start, start_cpu = time.perf_counter(), time.process_time()
    try:
        yield
    finally:
        elapsed = (time.perf_counter() - start) * 1000.0
        cpu = (time.process_time() - start_cpu) * 1000.0
        with _lock:
            _counts[name] = _counts.get(name, 0) + 1
            _millis[name] = _millis.get(name, 0.0) + elapsed
            _cpu_millis[name] = _cpu_millis.get(name, 0.0) + cpu


def snapshot() -> dict[str, dict[str, float]]:
    with _lock:
        return {
            n: {"count": _counts[n], "total_ms": round(_millis[n], 3), "cpu_ms": round(_cpu_millis[n], 3)}
            for n in sorted(_counts)
        }


def reset() -> None:
    with _lock:
        _counts.clear()
        _millis.clear()
        _cpu_millis.clear()
