"""Hudi data file names: base files and log files (``FSUtils`` / ``HoodieLogFile`` conventions)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TypeAlias

# .<fileId>_<instant>.log.<version>_<writeToken>[.cdc]
_LOG_RE = re.compile(r"^\.([^._]+)_([^.]*)\.(log|archive)\.(\d+)(_((\d+)-(\d+)-(\d+))(\.cdc)?)?$")
# <fileId>_<writeToken>_<instant>.<ext> (also parsed column-wise: slice_table.base_name_parts, tested against
# Arrow's regex engine running this pattern)
BASE_FILE_PATTERN = (
    r"^(?P<file_id>[^_]+)_(?P<write_token>[^_]+)_(?P<instant>\d+)\.(?P<extension>[A-Za-z0-9]+)$"
)
_BASE_RE = re.compile(BASE_FILE_PATTERN)

BASE_FILE_EXTENSIONS = frozenset({"parquet", "hfile", "orc", "lance"})

# LogFileName.sort_key: instant, version, the write token's numbers (or the token), is_cdc
LogSortKey: TypeAlias = tuple[str, int, tuple[int, ...] | tuple[str], bool]


@dataclass(frozen=True, order=True)
class BaseFileName:
    file_id: str
    write_token: str
    instant: str
    extension: str
    name: str

    @classmethod
    def parse(cls, name: str) -> BaseFileName | None:
        m = _BASE_RE.match(name)
        if not m or m.group(4).lower() not in BASE_FILE_EXTENSIONS:
            return None
        return cls(m.group(1), m.group(2), m.group(3), m.group(4), name)

    @staticmethod
    def make(file_id: str, write_token: str, instant: str, extension: str = "parquet") -> str:
        return f"{file_id}_{write_token}_{instant}.{extension}"


@dataclass(frozen=True)
class LogFileName:
    file_id: str
    instant: str  # v6: base instant of the slice; v8+: the deltacommit that wrote the file
    version: int
    write_token: str
    is_cdc: bool
    name: str

    @classmethod
    def parse(cls, name: str) -> LogFileName | None:
        m = _LOG_RE.match(name)
        if not m or m.group(3) != "log":
            return None
        return cls(m.group(1), m.group(2), int(m.group(4)), m.group(6) or "", bool(m.group(10)), name)

    def sort_key(self) -> LogSortKey:
        """Hudi's ``LogFileComparator``: instant, version, write token, suffix."""
        return (self.instant, self.version, _token_key(self.write_token), self.is_cdc)

    @staticmethod
    def make(file_id: str, instant: str, version: int, write_token: str) -> str:
        return f".{file_id}_{instant}.log.{version}_{write_token}"


def _token_key(token: str) -> tuple[int, ...] | tuple[str]:
    parts = token.split("-")
    try:
        return tuple(int(p) for p in parts)
    except ValueError:
        return (token,)


def parse_data_file(name: str) -> BaseFileName | LogFileName | None:
    """A base or log file name, or None for anything else (partition metadata, markers, ...)."""
    if name.startswith("."):
        return LogFileName.parse(name)
    return BaseFileName.parse(name)
