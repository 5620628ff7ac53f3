"""Base Parquet files written the way Hudi 1.1+ (table version 9) writes them, and their column stats.

What is reproduced exactly (checked against the fixture tables written by Hudi 1.1.1 / parquet-mr
1.13.1): the meta columns and their values, the footer key/values (``parquet.avro.schema`` in
Hudi's writer form, ``writer.model.name``, the bloom filter, its type code and the min/max record
keys, in parquet-mr's order), the Parquet physical and logical types of every Avro type Hudi-on-Spark
produces (strings, ints, longs, ``timestamp-micros`` as INT64 ``TIMESTAMP(UTC, MICROS)``, dates,
decimals as ``FIXED_LEN_BYTE_ARRAY`` of the precision's minimal width, ...), GZIP compression,
format version 1 with v1 data pages and ``PLAIN_DICTIONARY``, page checksums, column and offset
indexes, 1 MiB pages. Column statistics are derived from the footer exactly as
``ParquetUtils.readColumnStatsFromMetadata`` does.

parquet-mr's per-column fallback from dictionary to plain encoding is reproduced by deciding it up
front from the same test on the same values (:func:`dictionary_columns`), and its 20,000-row page
limit is kept. What pyarrow cannot match: the root group name (parquet-avro names it after the record),
the row-group cut (parquet-mr measures buffered bytes, pyarrow counts rows: estimated here from the
in-memory size, so files under ``hoodie.parquet.block.size`` keep a single row group as Hudi's
do), and lists, which pyarrow writes in the standard 3-level layout where parquet-avro writes the
legacy 2-level one (``repeated group array``). Spark, parquet-avro and pyarrow read both.
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudi_md.errors import InvalidOptionError
from hudi_md.formats.avro_arrow import align_to_schema, avro_schema_to_arrow
from hudi_md.index.bloom import DYNAMIC_V0, BloomFilter
from hudi_md.metadata.column_ranges import (
    column_ranges_from_parquet,
    columns_to_index,
    min_max_java_string_column,
)
from hudi_md.metadata.records_builder import ColumnRange
from hudi_md.storage.base import Storage
from hudi_md.write.schema import avro_schema_json as _schema_text
from hudi_md.write.schema import with_meta_fields, writer_schema

__all__ = [
    "DEFAULT_BLOCK_SIZE",
    "DEFAULT_PAGE_SIZE",
    "META_COLUMNS",
    "BaseFileResult",
    "ColumnRange",
    "add_meta_columns",
    "column_ranges_from_parquet",
    "columns_to_index",
    "write_base_file",
]

META_COLUMNS = [
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
]
DEFAULT_BLOCK_SIZE = 120 * 1024 * 1024  # hoodie.parquet.block.size
DEFAULT_PAGE_SIZE = 1024 * 1024  # hoodie.parquet.page.size
# Footer keys (HoodieBloomFilterWriteSupport, parquet-avro's AvroWriteSupport).
AVRO_SCHEMA_KEY = "parquet.avro.schema"
WRITER_MODEL_KEY = "writer.model.name"
BLOOM_FILTER_KEY = "org.apache.hudi.bloomfilter"
BLOOM_TYPE_CODE_KEY = "hoodie_bloom_filter_type_code"
MIN_RECORD_KEY = "hoodie_min_record_key"
MAX_RECORD_KEY = "hoodie_max_record_key"


@dataclass(frozen=True)
class BaseFileResult:
    path: str  # as given, relative to the storage root
    file_size: int
    num_records: int
    min_record_key: str | None
    max_record_key: str | None
    column_stats: dict[str, ColumnRange] = field(default_factory=dict)


# --- meta columns ------------------------------------------------------------------------------------


def add_meta_columns(
    data: pa.Table,
    *,
    instant: str,
    partition_path: str,
    file_name: str,
    record_keys: pa.Array | pa.ChunkedArray | Sequence[str],
    task_partition_id: int,
    seqno_start: int = 0,
) -> pa.Table:
    """``data`` with Hudi's five meta columns in front (replacing any it already has).

    ``_hoodie_commit_seqno`` is ``HoodieRecord.generateSequenceId``:
    ``<instant>_<task partition id>_<record index>``, the index counting from ``seqno_start``.
    ``partition_path`` is ``""`` for a non-partitioned table.
    """
    n = data.num_rows
    keys = record_keys if isinstance(record_keys, (pa.Array, pa.ChunkedArray)) else pa.array(record_keys)
    if len(keys) != n:
        raise InvalidOptionError(f"{len(keys)} record keys for {n} rows")
    if keys.null_count:
        raise InvalidOptionError("record keys must not be null")
    if not pa.types.is_string(keys.type):
        keys = keys.cast(pa.string())
    prefix = f"{instant}_{task_partition_id}_"
    meta = {
        "_hoodie_commit_time": pa.repeat(pa.scalar(instant, pa.string()), n),
        "_hoodie_commit_seqno": pa.array(
            [f"{prefix}{i}" for i in range(seqno_start, seqno_start + n)], pa.string()
        ),
        "_hoodie_record_key": keys,
        "_hoodie_partition_path": pa.repeat(pa.scalar(partition_path, pa.string()), n),
        "_hoodie_file_name": pa.repeat(pa.scalar(file_name, pa.string()), n),
    }
    columns = list(meta.values())
    fields = [pa.field(name, pa.string()) for name in META_COLUMNS]
    for f, column in zip(data.schema, data.columns, strict=True):
        if f.name not in meta:
            fields.append(f)
            columns.append(column)
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))


# --- writing -----------------------------------------------------------------------------------------


def write_base_file(
    storage: Storage,
    relative_path: str,
    table: pa.Table,
    *,
    avro_schema_json: str,
    bloom: BloomFilter | None,
    record_key_column: str = "_hoodie_record_key",
    compression: str = "gzip",
    block_size: int = DEFAULT_BLOCK_SIZE,
    page_size: int = DEFAULT_PAGE_SIZE,
) -> BaseFileResult:
    """Write ``table`` as one Hudi base Parquet file through ``storage.write_bytes``.

    ``avro_schema_json`` is the table's Avro schema with meta fields, in either form (see
    :mod:`hudi_md.write.schema`); the footer gets Hudi's writer form and the columns the Parquet
    types parquet-avro gives that schema. Record keys are added to ``bloom`` (when given) in row
    order, as ``HoodieAvroWriteSupport.add`` does; the bloom filter and the min/max record keys go
    to the footer only with a bloom filter, exactly like Hudi. ``compression`` takes Hudi's codec
    names (``hoodie.parquet.compression.codec``); ``block_size`` and ``page_size`` are
    ``hoodie.parquet.block.size`` and ``hoodie.parquet.page.size``.
    """
    footer_schema, arrow_schema = _prepared_schema(
        avro_schema_json, all(c in table.column_names for c in META_COLUMNS)
    )
    extra = [c for c in table.column_names if c not in arrow_schema.names]
    if extra:
        raise InvalidOptionError(f"columns {extra} are not in the Avro schema of {relative_path}")
    data = align_to_schema(table, arrow_schema)
    for f, column in zip(arrow_schema, data.columns, strict=True):
        if not f.nullable and column.null_count:
            raise InvalidOptionError(f"column {f.name!r} is not nullable in the schema but has nulls")

    key_column = pa.array([], pa.string())
    if record_key_column in data.column_names:
        key_column = data.column(record_key_column)
        if key_column.null_count:
            raise InvalidOptionError(f"{record_key_column} has null values")
    elif bloom is not None:
        raise InvalidOptionError(f"no {record_key_column} column to fill the bloom filter from")
    min_key, max_key = min_max_java_string_column(key_column)

    footer: dict[str, str] = {AVRO_SCHEMA_KEY: footer_schema, WRITER_MODEL_KEY: "avro"}
    if bloom is not None:
        bloom.add_column(key_column)
        # Key order of HoodieBloomFilterWriteSupport.finalizeMetadata's HashMap as parquet-mr writes it.
        if bloom.type_code == DYNAMIC_V0:
            footer[BLOOM_TYPE_CODE_KEY] = bloom.type_code
        footer[BLOOM_FILTER_KEY] = bloom.serialize()
        if min_key is not None and max_key is not None:
            footer[MIN_RECORD_KEY] = min_key
            footer[MAX_RECORD_KEY] = max_key

    payload = _parquet_bytes(
        data, footer, compression=compression, block_size=block_size, page_size=page_size
    )
    storage.write_bytes(relative_path, payload)
    metadata = pq.ParquetFile(pa.BufferReader(payload)).metadata
    return BaseFileResult(
        path=relative_path,
        file_size=len(payload),
        num_records=data.num_rows,
        min_record_key=min_key,
        max_record_key=max_key,
        column_stats=column_ranges_from_parquet(metadata, None),
    )


@functools.lru_cache(maxsize=16)
def _prepared_schema(avro_schema_json: str, with_meta: bool) -> tuple[str, pa.Schema]:
    """The footer's schema text and the Arrow schema of a writer schema: the same for every file
    of a write (a bulk insert of 1M partitions writes 1M files), so derived once."""
    schema_obj = writer_schema(json.loads(avro_schema_json))
    if with_meta:
        schema_obj = with_meta_fields(schema_obj)  # no-op when the schema already has them
    return _schema_text(schema_obj), avro_schema_to_arrow(schema_obj)


@functools.lru_cache(maxsize=1)
def _writer_parameters() -> frozenset[str]:
    return frozenset(inspect.signature(pq.ParquetWriter.__init__).parameters)


# parquet-mr's ParquetProperties defaults (1.13, Hudi 1.2's): a page ends at 20,000 rows at most,
# and the first page of a column chunk decides whether dictionary encoding is kept.
PAGE_ROW_COUNT_LIMIT = 20_000


def dictionary_columns(data: pa.Table, page_size: int) -> list[str]:
    """The column paths parquet-mr would keep dictionary-encoded in ``data``'s first row group.

    parquet-mr (``FallbackValuesWriter``) dictionary-encodes the first page of each column chunk,
    then keeps the dictionary only if it paid off: ids plus dictionary smaller than the values in
    plain encoding (``DictionaryValuesWriter.isCompressionSatisfying``); otherwise the chunk is
    written plain. Mostly-unique columns (keys, sequence numbers, measures) fall back, and with a
    dictionary kept they took ~12 % more bytes than Apache Hudi's files for the same rows. pyarrow
    has no such test, so the decision is made here on the first page's values (parquet-mr's first
    page: up to 20,000 rows, or ``page_size`` / 4 dictionary ids) and handed to pyarrow per column.
    Nested columns keep the dictionary (their leaves are rarely unique values)."""
    first_page = data.slice(0, min(data.num_rows, PAGE_ROW_COUNT_LIMIT, max(1, page_size // 4)))
    kept: list[str] = []
    for f, column in zip(data.schema, first_page.columns, strict=True):
        if pa.types.is_nested(f.type):
            kept.extend(_leaf_paths(f.name, f.type))
        elif not _plain_only(f.type) and _dictionary_pays_off(column):
            kept.append(f.name)
    return kept


def _leaf_paths(prefix: str, arrow_type: pa.DataType) -> list[str]:
    """Parquet leaf column paths under a column, in the compliant nested layout pyarrow writes."""
    if pa.types.is_struct(arrow_type):
        return [p for child in arrow_type for p in _leaf_paths(f"{prefix}.{child.name}", child.type)]
    if pa.types.is_map(arrow_type):
        return [
            *_leaf_paths(f"{prefix}.key_value.key", arrow_type.key_type),
            *_leaf_paths(f"{prefix}.key_value.value", arrow_type.item_type),
        ]
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return _leaf_paths(f"{prefix}.list.element", arrow_type.value_type)
    return [prefix]


def _dictionary_pays_off(column: pa.ChunkedArray) -> bool:
    values = column.drop_null()
    n = len(values)
    if n == 0:  # nulls only: no values, nothing to beat (parquet-mr writes the chunk plain)
        return False
    distinct = pc.unique(values)
    d = len(distinct)
    width = _plain_width(column.type)
    if width is None:  # variable length: PLAIN is a 4-byte length and the bytes
        raw = 4 * n + pc.sum(pc.binary_length(values)).as_py()
        dictionary = 4 * d + (pc.sum(pc.binary_length(distinct)).as_py() or 0)
    else:
        raw, dictionary = width * n, width * d
    # RLE/bit-packed ids: a bit-width byte, then ids of ceil(log2(d)) bits (bit-packed runs of 8).
    bit_width = (d - 1).bit_length()
    ids = 1 + -(-n * bit_width // 8)
    return ids + dictionary < raw


def _plain_only(arrow_type: pa.DataType) -> bool:
    """Types parquet-mr's v1 writer never dictionary-encodes: booleans, and FIXED_LEN_BYTE_ARRAY
    (decimals here) — "dictionary encoding was not enabled in PARQUET 1.0" for them."""
    return (
        pa.types.is_boolean(arrow_type)
        or pa.types.is_decimal(arrow_type)
        or pa.types.is_fixed_size_binary(arrow_type)
    )


def _plain_width(arrow_type: pa.DataType) -> int | None:
    """Bytes per value in PLAIN encoding; None for variable-length types."""
    if pa.types.is_dictionary(arrow_type):
        return _plain_width(arrow_type.value_type)
    if pa.types.is_binary(arrow_type) or pa.types.is_string(arrow_type):
        return None
    if pa.types.is_large_binary(arrow_type) or pa.types.is_large_string(arrow_type):
        return None
    # ints, floats, dates, times and timestamps: INT32/INT64/FLOAT/DOUBLE of their width (smaller
    # ints are INT32 in Parquet)
    return max(4, arrow_type.bit_width // 8)


def _writer_options(page_size: int, compression: str) -> dict[str, Any]:
    """ParquetWriter options closest to parquet-mr 1.13 under Hudi's defaults; options this pyarrow
    lacks are left out (older versions behave like the defaults chosen here or cannot do better)."""
    wanted: dict[str, Any] = {
        "version": "1.0",  # parquet-mr writes format version 1 ...
        "data_page_version": "1.0",  # ... with v1 data pages and PLAIN_DICTIONARY
        # Hudi/parquet-mr say "uncompressed" where pyarrow says "none".
        "compression": "none" if compression.lower() == "uncompressed" else compression,
        "use_dictionary": True,  # hoodie.parquet.dictionary.enabled; per column: dictionary_columns
        "data_page_size": page_size,
        "max_rows_per_page": PAGE_ROW_COUNT_LIMIT,
        "dictionary_pagesize_limit": page_size,  # parquet-mr's dictionary page size = page size
        "write_statistics": True,
        "coerce_timestamps": "us",  # Avro timestamp-micros / local-timestamp-micros
        "allow_truncated_timestamps": False,
        "use_compliant_nested_type": True,
        "store_schema": False,  # no ARROW:schema key: the footer holds only what Hudi writes
        "write_page_index": True,  # parquet-mr writes column and offset indexes
        "write_page_checksum": True,  # parquet.page.write-checksum.enabled defaults to true
        "store_decimal_as_integer": False,  # decimals stay FIXED_LEN_BYTE_ARRAY like Spark's legacy format
        "write_time_adjusted_to_utc": True,  # parquet-avro marks time-millis/micros as UTC-adjusted
    }
    accepted = _writer_parameters()
    return {k: v for k, v in wanted.items() if k in accepted}


def _parquet_bytes(
    data: pa.Table, footer: Mapping[str, str], *, compression: str, block_size: int, page_size: int
) -> bytes:
    sink = pa.BufferOutputStream()
    options = _writer_options(page_size, compression)
    options["use_dictionary"] = dictionary_columns(data, page_size)
    with pq.ParquetWriter(sink, data.schema, **options) as writer:
        writer.write_table(data, row_group_size=_rows_per_group(data, block_size))
        # Schema metadata is not written when store_schema is off (and storing the Arrow schema
        # would copy the ~431 KB bloom filter into ARROW:schema), so the footer keys go in directly,
        # in insertion order, which is parquet-mr's order for Hudi's keys.
        writer.add_key_value_metadata(dict(footer))
    return sink.getvalue().to_pybytes()


def _rows_per_group(data: pa.Table, block_size: int) -> int:
    """Rows per row group so that a group holds about ``block_size`` bytes of (uncompressed) data."""
    if data.num_rows == 0:
        return 1
    per_row = max(1, data.nbytes // data.num_rows)
    return max(1, min(data.num_rows, block_size // per_row))
