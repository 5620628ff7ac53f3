"""MDT record keys and shard routing, byte-compatible with Hudi (``HashID``, ``HoodieTableMetadataUtil``)."""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import xxhash

from hudi_md.formats.arrow_buffers import byte_buffers

if TYPE_CHECKING:
    import pyarrow as pa

NON_PARTITIONED_NAME = "."
ALL_PARTITIONS_KEY = "__all_partitions__"

# MDT partition names and the record type of their records.
FILES = "files"
COLUMN_STATS = "column_stats"
BLOOM_FILTERS = "bloom_filters"
RECORD_INDEX = "record_index"
PARTITION_STATS = "partition_stats"
# The partitions hudi-md builds and keeps in step with every commit, in build order.
MAINTAINED_PARTITIONS = (FILES, COLUMN_STATS, PARTITION_STATS, BLOOM_FILTERS, RECORD_INDEX)
SECONDARY_INDEX_PREFIX = "secondary_index_"
EXPRESSION_INDEX_PREFIX = "expr_index_"

TYPE_ALL_PARTITIONS = 1
TYPE_FILES = 2
TYPE_COLUMN_STATS = 3
TYPE_BLOOM_FILTER = 4
TYPE_RECORD_INDEX = 5
TYPE_PARTITION_STATS = 6
TYPE_SECONDARY_INDEX = 7

_XXH_SEED = 0xFFFFFFFFDABADABA  # Hudi's 0xdabadaba, sign-extended to 64 bits


def java_string_hash(s: str) -> int:
    """Java ``String.hashCode`` (over UTF-16 code units, 32-bit wrap-around)."""
    b = s.encode("utf-16-be")
    h = 0
    for i in range(0, len(b), 2):
        h = (31 * h + ((b[i] << 8) | b[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def file_group_index(key: str, num_file_groups: int) -> int:
    """``mapRecordKeyToFileGroupIndex``: which of ``n`` file groups holds ``key``."""
    if num_file_groups <= 1:
        return 0
    h = java_string_hash(key)
    a = h if h == -(1 << 31) else abs(h)  # Java Math.abs overflows on MIN_VALUE
    r = a % num_file_groups if a >= 0 else -((-a) % num_file_groups)  # Java truncated remainder
    return abs(r)


def file_group_indexes(keys: Sequence[str], num_file_groups: int) -> list[int]:
    """:func:`file_group_index` of many keys at once (vectorised over UTF-16 code units: one
    numpy step per character position instead of a Python loop per character)."""
    if num_file_groups <= 1 or not keys:
        return [0] * len(keys)
    encoded = [k.encode("utf-16-be") for k in keys]
    lengths = np.fromiter((len(e) // 2 for e in encoded), dtype=np.int64, count=len(encoded))
    units = np.frombuffer(b"".join(encoded), dtype=">u2").astype(np.uint32)
    return _indexes_of_units(units, lengths, num_file_groups).tolist()


def file_group_indexes_of_column(keys: pa.Array, num_file_groups: int) -> np.ndarray:
    """:func:`file_group_indexes` of an Arrow string column. ASCII keys hash from the column's
    bytes directly (their UTF-8 bytes are their UTF-16 code units); others go through Python."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if num_file_groups <= 1 or not len(keys):
        return np.zeros(len(keys), dtype=np.int64)
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    if keys.null_count:
        raise ValueError("MDT record keys must not be null")
    if not pa.types.is_string(keys.type) or not pc.all(pc.string_is_ascii(keys)).as_py():
        return np.asarray(file_group_indexes(keys.to_pylist(), num_file_groups), dtype=np.int64)
    offsets, data = byte_buffers(keys)
    units = data[offsets[0] : offsets[-1]].astype(np.uint32)
    return _indexes_of_units(units, np.diff(offsets).astype(np.int64), num_file_groups)


def _indexes_of_units(units: np.ndarray, lengths: np.ndarray, num_file_groups: int) -> np.ndarray:
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    h = np.zeros(len(lengths), dtype=np.uint32)
    for pos in range(int(lengths.max()) if len(lengths) else 0):
        idx = np.nonzero(lengths > pos)[0]
        h[idx] = h[idx] * np.uint32(31) + units[starts[idx] + pos]  # uint32 wraps like Java int
    signed = h.astype(np.int64)
    signed[signed >= 1 << 31] -= 1 << 32
    a = np.where(signed == -(1 << 31), signed, np.abs(signed))  # Java Math.abs(MIN_VALUE) < 0
    return np.abs(np.fmod(a, num_file_groups))  # fmod: Java's truncated remainder


def partition_id(partition_path: str) -> str:
    return partition_path or NON_PARTITIONED_NAME


def _xxh64_b64(s: str) -> str:
    return base64.b64encode(xxhash.xxh64(s.encode("utf-8"), seed=_XXH_SEED).digest()).decode("ascii")


def _md5_b64(s: str) -> str:
    return base64.b64encode(hashlib.md5(s.encode("utf-8")).digest()).decode("ascii")


def column_index_id(column: str) -> str:
    return _xxh64_b64(column)


def partition_index_id(partition_path: str) -> str:
    return _xxh64_b64(partition_id(partition_path))


def partition_index_ids(partition_paths: Sequence[str]) -> list[str]:
    """:func:`partition_index_id` of many partitions: the digests Base64-encoded together (each
    padded to 9 bytes, so each takes 12 characters whose last is its ``=``)."""
    if not partition_paths:
        return []
    digest = xxhash.xxh64_digest
    padded = (
        b"\0".join([digest(partition_id(p).encode("utf-8"), seed=_XXH_SEED) for p in partition_paths]) + b"\0"
    )
    text = bytearray(base64.b64encode(padded))
    text[11::12] = b"=" * len(partition_paths)
    encoded = text.decode("ascii")
    return [encoded[i : i + 12] for i in range(0, len(encoded), 12)]


def file_index_id(file_name: str) -> str:
    return _md5_b64(file_name)


def column_stats_key(column: str, partition_path: str, file_name: str) -> str:
    return column_index_id(column) + partition_index_id(partition_path) + file_index_id(file_name)


def partition_stats_key(column: str, partition_path: str) -> str:
    return column_index_id(column) + partition_index_id(partition_path)


def bloom_filter_key(partition_path: str, file_name: str) -> str:
    return partition_index_id(partition_path) + file_index_id(file_name)


def files_key(partition_path: str) -> str:
    return partition_id(partition_path)


def escape_secondary_key(s: str) -> str:
    return s.replace("\\", "\\\\").replace("$", "\\$").replace("\0", "\\\0")


_FG_RE = re.compile(r"^(.*?)-?(\d{4})(?:-(\d+))?$")


def file_group_index_of(file_id: str) -> int:
    """The shard index of an MDT file group id (``record-index-0007-0`` → 7; 0.10-era ``files-0000``)."""
    m = _FG_RE.match(file_id)
    if not m:
        raise ValueError(f"not an MDT file group id: {file_id!r}")
    return int(m.group(2))


def record_type_of_partition(partition: str) -> int:
    if partition == FILES:
        return TYPE_FILES
    if partition == COLUMN_STATS:
        return TYPE_COLUMN_STATS
    if partition == BLOOM_FILTERS:
        return TYPE_BLOOM_FILTER
    if partition == RECORD_INDEX:
        return TYPE_RECORD_INDEX
    if partition == PARTITION_STATS:
        return TYPE_PARTITION_STATS
    if partition.startswith(SECONDARY_INDEX_PREFIX):
        return TYPE_SECONDARY_INDEX
    return TYPE_COLUMN_STATS
