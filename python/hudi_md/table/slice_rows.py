"""File slices as rows: the one conversion between :class:`FileSlice` and the Arrow (or JSON) row
that ``Table.file_slices()`` returns and the Spark planner protocol carries (ARCHITECTURE.md,
"Planner protocol").

A slice row has the columns of :data:`SLICE_COLUMNS`, in that order: the partition path, the file
id, the base instant, the base file (path relative to the table, or a URI when the producer passed
``uri``; null without a base file) and its size (null without a base file), the log files (same
form) and their sizes, and the slice's total size. ``slices_to_arrow`` may append typed
partition values, one column ``p:<partition column>`` each (the Spark planner's plan rows).

A single slice travels as that row in JSON (an element of ``slices_to_arrow(...).to_pylist()``,
e.g. ``read_slice``'s ``slice``); :func:`slice_from_row` reads it back, :func:`slices_from_arrow`
every row of a table or batch.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from hudi_md.errors import InvalidOptionError
from hudi_md.table.filenames import BaseFileName, LogFileName
from hudi_md.table.fs_view import BaseFile, FileSlice, LogFile

PARTITION_PATH = "partition_path"
FILE_ID = "file_id"
BASE_INSTANT = "base_instant"
BASE_FILE = "base_file"
BASE_FILE_SIZE = "base_file_size"
LOG_FILES = "log_files"
LOG_FILE_SIZES = "log_file_sizes"
TOTAL_SIZE = "total_size"
# Prefix of the optional partition-value columns (``p:<partition column>``).
PARTITION_VALUE_PREFIX = "p:"

SLICE_SCHEMA = pa.schema(
    [
        pa.field(PARTITION_PATH, pa.string()),
        pa.field(FILE_ID, pa.string()),
        pa.field(BASE_INSTANT, pa.string()),
        pa.field(BASE_FILE, pa.string()),
        pa.field(BASE_FILE_SIZE, pa.int64()),
        pa.field(LOG_FILES, pa.list_(pa.string())),
        pa.field(LOG_FILE_SIZES, pa.list_(pa.int64())),
        pa.field(TOTAL_SIZE, pa.int64()),
    ]
)
SLICE_COLUMNS: tuple[str, ...] = tuple(SLICE_SCHEMA.names)


def slices_to_arrow(
    slices: Iterable[FileSlice],
    *,
    uri: Callable[[str], str] | None = None,
    partition_schema: pa.Schema | None = None,
    partition_values: Callable[[str], Mapping[str, Any]] | None = None,
) -> pa.Table:
    """One row per slice, sorted by partition path then file id.

    ``uri`` maps a file's table-relative path to what the row holds (default: the path itself).
    With ``partition_schema``, one typed column ``p:<name>`` per field follows the slice columns,
    holding ``partition_values(partition path)[name]`` (called once per partition).
    """
    ordered = sorted(slices, key=lambda s: (s.partition_path, s.file_id))
    rows = pa.table(
        {
            PARTITION_PATH: pa.array([s.partition_path for s in ordered], pa.string()),
            FILE_ID: pa.array([s.file_id for s in ordered], pa.string()),
            BASE_INSTANT: pa.array([s.base_instant for s in ordered], pa.string()),
            BASE_FILE: pa.array([s.base_file.path if s.base_file else None for s in ordered], pa.string()),
            BASE_FILE_SIZE: pa.array(
                [s.base_file.size if s.base_file else None for s in ordered], pa.int64()
            ),
            LOG_FILES: pa.array([[lf.path for lf in s.log_files] for s in ordered], pa.list_(pa.string())),
            LOG_FILE_SIZES: pa.array(
                [[lf.size for lf in s.log_files] for s in ordered], pa.list_(pa.int64())
            ),
            TOTAL_SIZE: pa.array([s.total_size for s in ordered], pa.int64()),
        },
        schema=SLICE_SCHEMA,
    )
    return finish_rows(rows, uri=uri, partition_schema=partition_schema, partition_values=partition_values)


def finish_rows(
    rows: pa.Table,
    *,
    uri: Callable[[str], str] | None = None,
    uri_prefix: str | None = None,
    partition_schema: pa.Schema | None = None,
    partition_values: Callable[[str], Mapping[str, Any]] | None = None,
    partition_value_columns: Callable[[pa.Array], Mapping[str, pa.Array] | None] | None = None,
) -> pa.Table:
    """Slice rows with table-relative paths (``slices_to_arrow``'s without ``uri``) made into what
    a reader wants: paths mapped by ``uri`` (or, the same for every path, ``uri_prefix`` put
    before them, column-wise), and the ``p:<name>`` partition value columns of
    ``partition_schema`` (``partition_values`` called once per partition, unless
    ``partition_value_columns`` gives the columns for all the distinct partition paths at once)."""
    if uri_prefix is not None:
        rows = _map_paths(rows, lambda paths: pc.binary_join_element_wise(uri_prefix, paths, ""))
    elif uri is not None:
        rows = _map_paths(
            rows,
            lambda paths: pa.array([None if p is None else uri(p) for p in paths.to_pylist()], pa.string()),
        )
    if partition_schema is not None and len(partition_schema):
        if partition_values is None:
            raise ValueError("partition_schema needs partition_values")
        partitions = rows[PARTITION_PATH]
        distinct = pc.unique(partitions)
        at = pc.index_in(partitions, value_set=distinct)
        columns = partition_value_columns(distinct) if partition_value_columns is not None else None
        if columns is None:
            known = [partition_values(p) for p in distinct.to_pylist()]
            columns = {f.name: pa.array([k.get(f.name) for k in known], f.type) for f in partition_schema}
        for f in partition_schema:
            values = columns.get(f.name)
            if values is None:
                values = pa.nulls(len(distinct), f.type)
            rows = rows.append_column(pa.field(PARTITION_VALUE_PREFIX + f.name, f.type), values.take(at))
    return rows


def _map_paths(rows: pa.Table, mapped: Callable[[pa.Array], pa.Array]) -> pa.Table:
    base = rows[BASE_FILE].combine_chunks()
    logs = rows[LOG_FILES].combine_chunks()
    new_base = mapped(base)
    offsets = pc.subtract(logs.offsets, logs.offsets[0])  # a slice's offsets start where it does
    new_logs = pa.ListArray.from_arrays(offsets, mapped(logs.flatten()), mask=logs.is_null())
    return rows.set_column(rows.schema.get_field_index(BASE_FILE), BASE_FILE, new_base).set_column(
        rows.schema.get_field_index(LOG_FILES), LOG_FILES, new_logs
    )


def slices_from_arrow(
    rows: pa.Table | pa.RecordBatch, *, uri_of: Callable[[str], str] | None = None
) -> list[FileSlice]:
    """The slices of ``slices_to_arrow``'s rows (extra columns are ignored); ``uri_of`` as for
    :func:`slice_from_row`."""
    return [slice_from_row(row, uri_of=uri_of) for row in rows.to_pylist()]


def slice_from_row(row: Mapping[str, Any], *, uri_of: Callable[[str], str] | None = None) -> FileSlice:
    """The slice of one row (a ``slices_to_arrow`` row as a dict, e.g. parsed from JSON).

    File paths are relative to the table, or, with ``uri_of`` (the table storage's ``uri``, which
    made them), the URIs it gives the files' logical paths (under the storage path for a federated
    layout); :class:`InvalidOptionError` for a file elsewhere, a name that is not a base / log
    file name, or a missing column.
    """
    missing = [c for c in (PARTITION_PATH, FILE_ID, BASE_INSTANT, BASE_FILE, LOG_FILES) if c not in row]
    if missing:
        raise InvalidOptionError(f"file slice row without {', '.join(missing)}: {dict(row)!r}")
    partition = row[PARTITION_PATH] or ""

    def name_of(path: str) -> str:
        name = posixpath.basename(path)
        if uri_of is not None:
            want = uri_of(f"{partition}/{name}" if partition else name)
            if _plain(path) != _plain(want):
                raise InvalidOptionError(f"slice file {path} is not the table's file {want}")
        return name

    base = None
    if row[BASE_FILE]:
        parsed = BaseFileName.parse(name_of(row[BASE_FILE]))
        if parsed is None:
            raise InvalidOptionError(f"not a base file name: {row[BASE_FILE]}")
        size = int(row.get(BASE_FILE_SIZE) or 0)
        base = BaseFile(partition, parsed.name, size, parsed.file_id, parsed.instant)
    logs = []
    paths: Sequence[str] = row[LOG_FILES] or []
    sizes: Sequence[int] = row.get(LOG_FILE_SIZES) or []
    if len(sizes) != len(paths):
        raise InvalidOptionError(f"file slice row with {len(paths)} log files and {len(sizes)} sizes")
    for path, size in zip(paths, sizes, strict=True):
        log = LogFileName.parse(name_of(path))
        if log is None:
            raise InvalidOptionError(f"not a log file name: {path}")
        logs.append(
            LogFile(partition, log.name, int(size), log.file_id, log.instant, log.version, log.write_token)
        )
    return FileSlice(partition, row[FILE_ID] or "", row[BASE_INSTANT] or "", base, tuple(logs))


def _plain(uri: str) -> str:
    """A URI without the ``file:`` forms a local path may come back in."""
    for prefix in ("file://", "file:"):
        if uri.startswith(prefix):
            return uri[len(prefix) :]
    return uri
