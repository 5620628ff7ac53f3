"""Column statistics as Hudi's ``column_stats`` and ``partition_stats`` record them: which
columns are indexed, ranges from Parquet footers and from Arrow rows, Java's orderings.

Writers compute them for the files they write, the MDT's initialisation for the files already
there; both use these functions so the two agree byte for byte.
"""

from __future__ import annotations

import datetime
import struct
from collections.abc import Iterable, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudi_md.config import metadata as M
from hudi_md.errors import InvalidOptionError
from hudi_md.metadata.records_builder import ColumnRange
from hudi_md.storage import Storage

# HoodieRecord.HOODIE_META_COLUMNS_WITH_OPERATION: never counted among the "first N" stats columns.
_META_WITH_OPERATION = frozenset(
    [
        "_hoodie_commit_time",
        "_hoodie_commit_seqno",
        "_hoodie_record_key",
        "_hoodie_partition_path",
        "_hoodie_file_name",
        "_hoodie_operation",
    ]
)
# HoodieTableMetadataUtil.META_COLS_TO_ALWAYS_INDEX, in its TreeMap (sorted) order.
_ALWAYS_INDEXED_META = ["_hoodie_commit_time", "_hoodie_partition_path", "_hoodie_record_key"]
DEFAULT_MAX_COLUMNS_TO_INDEX = M.COLUMN_STATS_MAX_COLUMNS.default
# DecimalWrapper in HoodieMetadata.avsc is decimal(30, 15); wider decimals are not indexed.
_DECIMAL_MAX_PRECISION = 30
_DECIMAL_MAX_SCALE = 15


def java_string_key(s: str) -> bytes:
    # Java's String.compareTo orders by UTF-16 code units; big-endian UTF-16 bytes sort the same way.
    return s.encode("utf-16-be", "surrogatepass")


def min_max_java_strings(keys: Iterable[str]) -> tuple[str | None, str | None]:
    lo = hi = None
    lo_k = hi_k = b""
    for k in keys:
        kk = java_string_key(k)
        if lo is None or kk < lo_k:
            lo, lo_k = k, kk
        if hi is None or kk > hi_k:
            hi, hi_k = k, kk
    return lo, hi


def min_max_java_string_column(column: pa.Array | pa.ChunkedArray) -> tuple[str | None, str | None]:
    """:func:`min_max_java_strings` of a string column; ASCII columns by Arrow's byte order,
    which is Java's there."""
    if not len(column) or not pc.all(pc.string_is_ascii(column)).as_py():
        return min_max_java_strings(column.to_pylist())
    bounds = pc.min_max(column)
    return bounds["min"].as_py(), bounds["max"].as_py()


# --- column statistics -------------------------------------------------------------------------------

_SIGNED_BYTES = bytes((b ^ 0x80) for b in range(256))


def _java_order_key(v: Any) -> Any:
    """Sort key matching the Java ``compareTo`` Hudi applies when merging row-group ranges."""
    if isinstance(v, str):
        return java_string_key(v)
    if isinstance(v, (bytes, bytearray)):
        # ByteBuffer.compareTo compares bytes as signed values.
        return bytes(v).translate(_SIGNED_BYTES)
    return v


def column_ranges_from_parquet(
    metadata: pq.FileMetaData, columns: Sequence[str] | None = None
) -> dict[str, ColumnRange]:
    """Per-column ranges of a Parquet footer, as ``ParquetUtils.readColumnStatsFromMetadata``.

    Columns are leaf paths joined with ``.`` (``columns=None``: all of them). Per row group:
    min/max from the chunk statistics, null count from the statistics (the chunk's value count when
    a chunk has no statistics at all), value count, compressed and uncompressed sizes of the chunk.
    Row groups combine by min of mins, max of maxes and sums (``HoodieColumnRangeMetadata.merge``).
    """
    wanted = None if columns is None else set(columns)
    out: dict[str, ColumnRange] = {}
    for g in range(metadata.num_row_groups):
        rg = metadata.row_group(g)
        for i in range(rg.num_columns):
            chunk = rg.column(i)
            name = chunk.path_in_schema
            if wanted is not None and name not in wanted:
                continue
            stats = chunk.statistics
            lo = hi = None
            if stats is not None and stats.has_min_max:
                lo, hi = stats.min, stats.max
            else:
                lo = hi = _stub_min_max(chunk.physical_type, str(metadata.schema.column(i).logical_type))
            # parquet-mr Statistics.isEmpty(): no min/max and no null count -> nulls = value count.
            empty = stats is None or (not stats.has_min_max and not stats.has_null_count)
            nulls = chunk.num_values if empty else stats.null_count
            rng = ColumnRange(
                column_name=name,
                min_value=lo,
                max_value=hi,
                null_count=nulls,
                value_count=chunk.num_values,
                total_size=chunk.total_compressed_size,
                total_uncompressed_size=chunk.total_uncompressed_size,
            )
            prev = out.get(name)
            out[name] = rng if prev is None else _merge(prev, rng)
    return out


_EPOCH = datetime.datetime(1970, 1, 1)


def _stub_min_max(physical: str, logical: str) -> Any:
    """What Hudi reads as min and max of a chunk without a value (only nulls, or none at all):
    parquet-mr's statistics of a numeric or boolean chunk then still answer their primitive default
    (0, 0.0, false), which Hudi converts by the logical type (epoch day, epoch microsecond); a
    binary chunk answers null. Stored the same way so Hudi's validator finds the ranges it computes
    itself; pruning is unaffected, as such a chunk has no value to compare."""
    if physical not in ("INT32", "INT64", "FLOAT", "DOUBLE", "BOOLEAN"):
        return None
    if physical == "BOOLEAN":
        return False
    if physical in ("FLOAT", "DOUBLE"):
        return 0.0
    if logical == "Date":
        return datetime.date(1970, 1, 1)
    if logical.startswith("Timestamp"):
        return _EPOCH.replace(tzinfo=datetime.timezone.utc) if "isAdjustedToUTC=true" in logical else _EPOCH
    if logical.startswith("Decimal"):
        return None  # not written by hudi-md (decimals are fixed-length binary)
    if logical == "None" or logical.startswith("Int("):
        return 0
    return None


def _merge(a: ColumnRange, b: ColumnRange) -> ColumnRange:
    def pick(x: Any, y: Any, smaller: bool) -> Any:
        if x is None:
            return y
        if y is None:
            return x
        kx, ky = _java_order_key(x), _java_order_key(y)
        if smaller:
            return x if kx <= ky else y
        return x if kx >= ky else y

    return ColumnRange(
        column_name=a.column_name,
        min_value=pick(a.min_value, b.min_value, True),
        max_value=pick(a.max_value, b.max_value, False),
        null_count=a.null_count + b.null_count,
        value_count=a.value_count + b.value_count,
        total_size=a.total_size + b.total_size,
        total_uncompressed_size=a.total_uncompressed_size + b.total_uncompressed_size,
    )


# --- which columns the column_stats index covers -------------------------------------------------------


def columns_to_index(
    schema: pa.Schema,
    *,
    column_list: Sequence[str] | None = None,
    max_columns: int = DEFAULT_MAX_COLUMNS_TO_INDEX,
    meta_fields: bool = True,
    record_type: str = "AVRO",
    missing_ok: bool = False,
) -> list[str]:
    """Columns Hudi 1.x indexes in ``column_stats`` (``HoodieTableMetadataUtil.getColumnsToIndex``).

    With ``meta_fields`` (``hoodie.populate.meta.fields``), ``_hoodie_commit_time``,
    ``_hoodie_partition_path`` and ``_hoodie_record_key`` come first. Then either the explicit
    ``column_list`` (``hoodie.metadata.index.column.stats.column.list``; dotted names reach into
    structs) or the first ``max_columns`` top-level non-meta columns, keeping only supported types:
    no structs, lists or maps, no decimals wider than decimal(30, 15)'s range, and with
    ``record_type="SPARK"`` also no binary or fixed (hence no decimal) columns. A listed column
    the schema lacks is an error, or, with ``missing_ok`` (a list the table's ``index.json``
    names, which may outlive a column), skipped.
    """
    out: dict[str, None] = {}
    if meta_fields:
        out.update(dict.fromkeys(_ALWAYS_INDEXED_META))
    if column_list:
        for name in column_list:
            if name in _ALWAYS_INDEXED_META:
                continue
            if missing_ok and schema.get_field_index(name.split(".")[0]) < 0:
                continue
            if _is_supported(_field_type(schema, name), record_type):
                out.setdefault(name, None)
        return list(out)
    picked = 0
    for f in schema:
        if picked >= max_columns:
            break
        if f.name in _META_WITH_OPERATION or not _is_supported(f.type, record_type):
            continue
        out.setdefault(f.name, None)
        picked += 1
    return list(out)


def _field_type(schema: pa.Schema, dotted: str) -> pa.DataType:
    parts = dotted.split(".")
    index = schema.get_field_index(parts[0])
    if index < 0:
        raise InvalidOptionError(f"column {dotted!r} (column stats column list) is not in the table schema")
    t = schema.field(index).type
    for part in parts[1:]:
        if not pa.types.is_struct(t) or t.get_field_index(part) < 0:
            raise InvalidOptionError(
                f"column {dotted!r} (column stats column list) is not in the table schema"
            )
        t = t.field(part).type
    return t


def _is_supported(t: pa.DataType, record_type: str) -> bool:
    """``isColumnTypeSupported`` in Arrow terms (Avro type of the Spark conversion)."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_decimal(t) and (
        t.precision + (_DECIMAL_MAX_SCALE - t.scale) > _DECIMAL_MAX_PRECISION or t.scale > _DECIMAL_MAX_SCALE
    ):
        return False
    if pa.types.is_struct(t) or pa.types.is_map(t) or _is_list_type(t):
        return False
    if record_type.upper() != "AVRO":
        # Spark records: Avro BYTES and FIXED (which is how decimals are written) are not indexed.
        if pa.types.is_decimal(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t):
            return False
        if pa.types.is_fixed_size_binary(t):
            return False
    return True


def _is_list_type(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)


def ranges_of_table(table: pa.Table, columns: Sequence[str]) -> dict[str, ColumnRange]:
    out = {}
    for c in columns:
        if table.schema.get_field_index(c) < 0:
            continue
        col = table.column(c)
        try:
            mm = pc.min_max(col)
            lo, hi = mm["min"].as_py(), mm["max"].as_py()
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
            continue
        out[c] = ColumnRange(c, lo, hi, col.null_count, len(col), 0, 0)
    return out


def parquet_footer(storage: Storage, path: str, size: int) -> bytes:
    """The Parquet footer only: two range reads instead of the whole file."""
    tail = storage.read_range(path, size - 8, 8)
    (footer_len,) = struct.unpack("<i", tail[:4])
    start = size - 8 - footer_len
    return b"PAR1" + storage.read_range(path, start, footer_len + 8)
