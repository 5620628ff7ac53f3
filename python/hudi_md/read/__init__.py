"""Reading table rows: one file slice at a time, as Arrow (base files, and MOR base + log merging)."""

from __future__ import annotations

from hudi_md.formats.avro_arrow import (
    META_COLUMNS,
    align_to_schema,
    avro_records_to_arrow,
    avro_schema_to_arrow,
)
from hudi_md.read.merge import (
    COMMIT_TIME_ORDERING,
    EVENT_TIME_ORDERING,
    LogRecordBuffer,
    MergeSpec,
    merge_with_base,
)
from hudi_md.read.slice_reader import (
    instant_validator,
    read_base_file,
    read_file_slice,
    scan_log_blocks,
    table_schema,
)

__all__ = [
    "COMMIT_TIME_ORDERING",
    "EVENT_TIME_ORDERING",
    "META_COLUMNS",
    "LogRecordBuffer",
    "MergeSpec",
    "align_to_schema",
    "avro_records_to_arrow",
    "avro_schema_to_arrow",
    "instant_validator",
    "merge_with_base",
    "read_base_file",
    "read_file_slice",
    "scan_log_blocks",
    "table_schema",
]
