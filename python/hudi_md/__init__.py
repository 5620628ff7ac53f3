"""hudi-md: Apache Hudi's metadata table, from Python."""

from __future__ import annotations

from hudi_md.api import Table, open_table
from hudi_md.entry import drop_index, run_indexing, schedule_indexing, write
from hudi_md.errors import (
    CommitMetadataError,
    CorruptFileError,
    HFileFormatError,
    HudiMdError,
    IndexingTimeoutError,
    InvalidOptionError,
    LogFormatError,
    MetadataTableError,
    TableConfigError,
    TableNotFoundError,
    UnsupportedFeatureError,
    WriteConflictError,
)

__version__ = "0.1.0"

__all__ = [
    "CommitMetadataError",
    "CorruptFileError",
    "HFileFormatError",
    "HudiMdError",
    "IndexingTimeoutError",
    "InvalidOptionError",
    "LogFormatError",
    "MetadataTableError",
    "Table",
    "TableConfigError",
    "TableNotFoundError",
    "UnsupportedFeatureError",
    "WriteConflictError",
    "__version__",
    "drop_index",
    "open_table",
    "run_indexing",
    "schedule_indexing",
    "write",
]
