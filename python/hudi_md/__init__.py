"""hudi-md: Apache Hudi's metadata table, from Python.

The read API (``open_table``, ``Table``) and the write entry points (``write`` and the
``WriteResult`` it returns, the indexing functions) are imported on first use: ``import hudi_md``
alone loads only the errors (every one of them, from :mod:`hudi_md.errors`), so a tool that only
reads does not pay for the write side (most of the package), nor for pandas.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

# Every error class, so that a caller catches one without importing the module raising it.
from hudi_md.errors import (
    ClusteringError,
    CommitCompletedError,
    CommitMetadataError,
    CommitStateUnknownError,
    CorruptFileError,
    EngineJobError,
    EngineUnavailableError,
    HeartbeatExpiredError,
    HFileFormatError,
    HudiMdError,
    IncompatibleSchemaChangeError,
    IndexingTimeoutError,
    InvalidOptionError,
    LockError,
    LockLostError,
    LockTimeoutError,
    LogFormatError,
    MetadataRequiredError,
    MetadataTableError,
    MetastoreError,
    MissingExtraError,
    MissingSchemaFieldError,
    ParquetFileError,
    PendingClusteringError,
    RecordMergeError,
    SchemaEvolutionError,
    StorageError,
    StorageLayoutError,
    TableConfigError,
    TableExistsError,
    TableNotFoundError,
    UnknownOptionWarning,
    UnsupportedFeatureError,
    UnsupportedSparkVersionError,
    WriteConflictError,
)

if TYPE_CHECKING:
    from hudi_md.api import Table, open_table
    from hudi_md.entry import drop_index, run_indexing, schedule_indexing, write
    from hudi_md.write.result import WriteResult

__version__ = "0.1.0"

__all__ = [
    "ClusteringError",
    "CommitCompletedError",
    "CommitMetadataError",
    "CommitStateUnknownError",
    "CorruptFileError",
    "EngineJobError",
    "EngineUnavailableError",
    "HFileFormatError",
    "HeartbeatExpiredError",
    "HudiMdError",
    "IncompatibleSchemaChangeError",
    "IndexingTimeoutError",
    "InvalidOptionError",
    "LockError",
    "LockLostError",
    "LockTimeoutError",
    "LogFormatError",
    "MetadataRequiredError",
    "MetadataTableError",
    "MetastoreError",
    "MissingExtraError",
    "MissingSchemaFieldError",
    "ParquetFileError",
    "PendingClusteringError",
    "RecordMergeError",
    "SchemaEvolutionError",
    "StorageError",
    "StorageLayoutError",
    "Table",
    "TableConfigError",
    "TableExistsError",
    "TableNotFoundError",
    "UnknownOptionWarning",
    "UnsupportedFeatureError",
    "UnsupportedSparkVersionError",
    "WriteConflictError",
    "WriteResult",
    "__version__",
    "drop_index",
    "open_table",
    "run_indexing",
    "schedule_indexing",
    "write",
]

_API_NAMES = frozenset({"Table", "open_table"})
_ENTRY_NAMES = frozenset({"drop_index", "run_indexing", "schedule_indexing", "write"})


def __getattr__(name: str) -> Any:
    if name in _API_NAMES:
        from hudi_md import api

        value = getattr(api, name)
    elif name in _ENTRY_NAMES:
        from hudi_md import entry

        value = getattr(entry, name)
    elif name == "WriteResult":
        from hudi_md.write.result import WriteResult

        value = WriteResult
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # cached: later lookups find it without calling back here
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


class _Package(types.ModuleType):
    """``hudi_md`` itself. ``hudi_md.write`` is the write function, but it is also the name of the
    subpackage ``hudi_md.write``, and importing that subpackage binds it on this module, over the
    function. Before the imports became lazy the function was always bound last; now the
    subpackage may be imported after it (or before it is first looked up), so the binding is
    refused and ``hudi_md.write`` stays the function (``sys.modules["hudi_md.write"]`` is the
    subpackage, which is all the import system needs)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "write" and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
