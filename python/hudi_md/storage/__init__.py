"""Storage access over fsspec; every request is counted.

All reads and listings of a table go through one :class:`Storage`, so the number of requests a
plan needs is a figure a test can check (``Storage.stats``).
"""

from __future__ import annotations

from hudi_md.storage.base import (
    BytesInputFile,
    FileStatus,
    InputFile,
    SimulatedCrash,
    Storage,
    StorageStats,
    set_fault_hook,
)
from hudi_md.storage.ranges import InputSlice, RangeCachedFile

__all__ = [
    "BytesInputFile",
    "FileStatus",
    "InputFile",
    "InputSlice",
    "RangeCachedFile",
    "SimulatedCrash",
    "Storage",
    "StorageStats",
    "set_fault_hook",
]
