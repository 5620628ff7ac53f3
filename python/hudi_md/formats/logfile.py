"""Reader for Hudi log files (``HoodieLogFormat`` version 1): block framing and block contents.

A log file is a sequence of blocks, each framed as (all integers big-endian)::

    magic "#HUDI#" (6) | blockLength int64 | version int32 | blockType int32 | header map
    | contentLength int64 | content | footer map | trailerLength int64

``blockLength`` counts the bytes after itself up to and including the trailing long; the trailing
long repeats the size of the block before it, magic included (``6 + blockLength``). A map is an
int32 count followed by (int32 key ordinal, int32 byte length, UTF-8 bytes) entries. Block types
and header keys are written as 0-based Java enum ordinals.

Hudi's own reader treats a block it cannot frame as a CORRUPT block and scans on for the next
magic. We refuse instead: a damaged block raises :class:`LogFormatError` naming the file and the
block offset, so corrupted bytes are never merged as data. Contents are decoded lazily, per block,
by the :class:`LogBlock` methods.
"""

from __future__ import annotations

import functools
import importlib.resources
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from enum import IntEnum
from typing import TYPE_CHECKING, Any

from hudi_md.errors import LogFormatError, UnsupportedFeatureError
from hudi_md.formats import avro
from hudi_md.storage import InputFile

if TYPE_CHECKING:
    import pyarrow

    from hudi_md.formats.hfile import HFileReader

__all__ = [
    "MAGIC",
    "BlockHead",
    "DeleteRecord",
    "HeadIncomplete",
    "HeaderKey",
    "LogBlock",
    "LogBlockType",
    "iter_log_blocks",
    "parse_block_head",
    "parse_block_tail",
    "read_log_file",
]

MAGIC = b"#HUDI#"
LOG_FORMAT_VERSION = 1
ROLLBACK_COMMAND = "0"  # HoodieCommandBlockTypeEnum.ROLLBACK_BLOCK ordinal, as a header string

PREFIX_LEN = len(MAGIC) + 8  # magic + blockLength
# version, type, header count, content length, footer count, trailer length
_MIN_V1_BODY = 4 + 4 + 4 + 8 + 4 + 8
# Files up to this size are fetched with one request; larger ones block by block.
_WHOLE_FILE_READ_LIMIT = 16 * 1024 * 1024

# Content versions (first int32 of the content) we know how to decode.
_AVRO_BLOCK_VERSIONS = (1, 2, 3)  # all carry a record count and int32-length-prefixed records
_DELETE_AVRO_VERSION = 3  # versions 1 and 2 were Java/Kryo serialised objects


class LogBlockType(IntEnum):
    """``HoodieLogBlock.HoodieLogBlockType``; the value is the ordinal written on disk."""

    COMMAND = 0
    DELETE = 1
    CORRUPT = 2
    AVRO_DATA = 3
    HFILE_DATA = 4
    PARQUET_DATA = 5
    CDC_DATA = 6


class HeaderKey(IntEnum):
    """``HoodieLogBlock.HeaderMetadataType``; the value is the ordinal written on disk."""

    INSTANT_TIME = 0
    TARGET_INSTANT_TIME = 1
    SCHEMA = 2
    COMMAND_BLOCK_TYPE = 3
    COMPACTED_BLOCK_TIMES = 4
    RECORD_POSITIONS = 5
    BLOCK_IDENTIFIER = 6
    IS_PARTIAL = 7
    BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS = 8


@dataclass(frozen=True)
class DeleteRecord:
    """One entry of a DELETE block.

    ``ordering_value`` is unwrapped from Hudi's wrapper union (see :func:`avro.unwrap_value`);
    Hudi writes ``0`` (an int) when the writer had no ordering value, and a tuple when the table
    has several ordering fields.
    """

    record_key: str | None
    partition_path: str | None
    ordering_value: Any


@functools.lru_cache(maxsize=1)
def delete_list_schema() -> avro.AvroSchema:
    """The parsed ``HoodieDeleteRecordList`` schema, shipped as package data (it is not in the block)."""
    text = (
        importlib.resources.files("hudi_md.formats")
        .joinpath("schemas/HoodieDeleteRecordList.avsc")
        .read_text(encoding="utf-8")
    )
    return avro.parse_schema(text)


@dataclass
class LogBlock:
    """One framed block of a log file; ``content`` holds its raw content bytes."""

    block_type: LogBlockType
    header: dict[HeaderKey, str]
    footer: dict[HeaderKey, str]
    file_name: str
    offset: int
    content: bytes

    # --- header accessors ----------------------------------------------------------------------

    @property
    def instant_time(self) -> str | None:
        """The instant that wrote the block (for a command block: the rollback instant)."""
        return self.header.get(HeaderKey.INSTANT_TIME)

    @property
    def target_instant_time(self) -> str | None:
        """For a rollback command block, the instant whose blocks it cancels."""
        return self.header.get(HeaderKey.TARGET_INSTANT_TIME)

    @property
    def schema(self) -> str | None:
        """Writer Avro schema JSON of a data block's records."""
        return self.header.get(HeaderKey.SCHEMA)

    @property
    def is_rollback_command(self) -> bool:
        return (
            self.block_type is LogBlockType.COMMAND
            and self.header.get(HeaderKey.COMMAND_BLOCK_TYPE) == ROLLBACK_COMMAND
        )

    # --- content decoding ----------------------------------------------------------------------

    def _error(self, reason: str) -> LogFormatError:
        return LogFormatError(
            self.file_name, f"{self.block_type.name} block at offset {self.offset}: {reason}"
        )

    def _unsupported(self, reason: str) -> UnsupportedFeatureError:
        return UnsupportedFeatureError(
            f"{self.file_name}: {self.block_type.name} block at offset {self.offset}: {reason}"
        )

    def _require(self, expected: LogBlockType) -> None:
        if self.block_type is not expected:
            raise TypeError(
                f"{self.file_name}: block at offset {self.offset} is {self.block_type.name}, "
                f"not {expected.name}"
            )

    def avro_records(self, reader_schema: str | None = None) -> list[dict[str, Any]]:
        """Records of an AVRO_DATA block, decoded with the header ``SCHEMA`` as writer schema.

        Content: int32 block version, int32 record count, then per record an int32 length and the
        schemaless Avro datum. Each datum must use exactly its declared length: a schema that
        does not match the bytes is reported, not half-decoded.
        """
        self._require(LogBlockType.AVRO_DATA)
        if self.schema is None:
            raise self._error("no SCHEMA header")
        try:
            writer = avro.parse_schema(self.schema)
            reader = avro.parse_schema(reader_schema) if reader_schema is not None else None
        except Exception as exc:
            raise self._error(f"cannot parse Avro schema: {exc}") from exc
        data = self.content
        if len(data) < 8:
            raise self._error(f"content of {len(data)} bytes is too short")
        version, count = struct.unpack_from(">ii", data, 0)
        if version not in _AVRO_BLOCK_VERSIONS:
            raise self._unsupported(f"unknown content version {version}")
        if count < 0:
            raise self._error(f"negative record count {count}")
        records: list[dict[str, Any]] = []
        pos = 8
        view = memoryview(data)
        for i in range(count):
            if pos + 4 > len(data):
                raise self._error(f"record {i} of {count} starts past the end of the content")
            (length,) = struct.unpack_from(">i", data, pos)
            pos += 4
            if length < 0 or pos + length > len(data):
                raise self._error(f"record {i} length {length} runs past the end of the content")
            try:
                record = avro.decode_schemaless(view[pos : pos + length], writer, reader, exact=True)
            except Exception as exc:
                raise self._error(f"cannot decode Avro record {i}: {type(exc).__name__}: {exc}") from exc
            records.append(record)
            pos += length
        if pos != len(data):
            raise self._error(f"{len(data) - pos} unexpected bytes after {count} records")
        return records

    def parquet_table(self) -> pyarrow.Table:
        """The rows of a PARQUET_DATA block (its content is a complete Parquet file)."""
        self._require(LogBlockType.PARQUET_DATA)
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            # ParquetFile, not pq.read_table: no threaded dataset scan (see read/slice_reader.py)
            return pq.ParquetFile(pa.BufferReader(self.content)).read()
        except Exception as exc:
            raise self._error(f"cannot read Parquet content: {type(exc).__name__}: {exc}") from exc

    def delete_records(self) -> list[DeleteRecord]:
        """Keys deleted by a DELETE block.

        Content: int32 version, int32 payload length, payload. Version 3 (every Hudi since 0.11)
        is the Avro binary of ``HoodieDeleteRecordList``; versions 1 and 2 were Java/Kryo
        serialised objects we cannot read.
        """
        self._require(LogBlockType.DELETE)
        data = self.content
        if len(data) < 8:
            raise self._error(f"content of {len(data)} bytes is too short")
        version, length = struct.unpack_from(">ii", data, 0)
        if version in (1, 2):
            raise self._unsupported(
                f"legacy Kryo-serialised content version {version}; "
                f"only version {_DELETE_AVRO_VERSION} (Avro) is supported"
            )
        if version != _DELETE_AVRO_VERSION:
            raise self._unsupported(f"unknown content version {version}")
        if length < 0 or 8 + length != len(data):
            raise self._error(f"payload length {length} does not match the content size {len(data)}")
        try:
            decoded = avro.decode_schemaless(
                memoryview(data)[8:], delete_list_schema(), return_record_name=True, exact=True
            )
            out = [
                DeleteRecord(
                    record_key=item.get("recordKey"),
                    partition_path=item.get("partitionPath"),
                    ordering_value=avro.unwrap_value(item.get("orderingVal")),
                )
                for item in decoded["deleteRecordList"]
            ]
        except UnsupportedFeatureError:
            raise
        except Exception as exc:
            raise self._error(f"cannot decode delete records: {type(exc).__name__}: {exc}") from exc
        return out

    def hfile_bytes(self) -> bytes:
        """The complete HFile embedded in an HFILE_DATA block (MDT log blocks)."""
        self._require(LogBlockType.HFILE_DATA)
        return self.content

    def hfile_reader(self) -> HFileReader:
        """An ``HFileReader`` over :meth:`hfile_bytes` (imported lazily: a separate module)."""
        from hudi_md.formats.hfile import HFileReader

        return HFileReader.from_bytes(self.hfile_bytes(), f"{self.file_name}@{self.offset}")


# --- framing ---------------------------------------------------------------------------------------


class _Cursor:
    """Bounds-checked big-endian reads over one block's bytes; overruns are format errors."""

    def __init__(self, data: memoryview, name: str, offset: int) -> None:
        self.data = data
        self.pos = 0
        self.name = name
        self.offset = offset

    def error(self, reason: str) -> LogFormatError:
        return LogFormatError(self.name, f"block at offset {self.offset}: {reason}")

    def take(self, n: int, what: str) -> memoryview:
        if n < 0 or self.pos + n > len(self.data):
            raise self.error(
                f"{what} ({n} bytes at block byte {self.pos}) runs past the declared block length "
                "(into the trailing length)"
            )
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def int32(self, what: str) -> int:
        return int(struct.unpack(">i", self.take(4, what))[0])

    def int64(self, what: str) -> int:
        return int(struct.unpack(">q", self.take(8, what))[0])

    def metadata_map(self, what: str) -> dict[HeaderKey, str]:
        count = self.int32(f"{what} entry count")
        if count < 0:
            raise self.error(f"negative {what} entry count {count}")
        out: dict[HeaderKey, str] = {}
        for _ in range(count):
            ordinal = self.int32(f"{what} key")
            length = self.int32(f"{what} value length")
            raw = self.take(length, f"{what} value")
            try:
                key = HeaderKey(ordinal)
            except ValueError:
                raise UnsupportedFeatureError(
                    f"{self.name}: block at offset {self.offset} has unknown {what} key ordinal {ordinal}"
                ) from None
            try:
                out[key] = bytes(raw).decode("utf-8")
            except UnicodeDecodeError as exc:
                raise self.error(f"{what} value of {key.name} is not UTF-8: {exc}") from exc
        return out


@dataclass(frozen=True)
class BlockHead:
    """What precedes a block's content: its type, header, and where the content lies in the body
    (the bytes after the block length field)."""

    block_type: LogBlockType
    header: dict[HeaderKey, str]
    content_start: int
    content_length: int


class HeadIncomplete(Exception):
    """The bytes given to :func:`parse_block_head` end before the content starts."""


def parse_block_head(body: memoryview, block_length: int, name: str, offset: int) -> BlockHead:
    """Decode a block's version, type, header and content length from the start of its body.

    ``body`` may be a prefix of the body; :class:`HeadIncomplete` when it ends before the content
    length field does (the caller reads more). Lengths are checked against ``block_length``.
    """

    def error(reason: str) -> LogFormatError:
        return LogFormatError(name, f"block at offset {offset}: {reason}")

    if len(body) < 4:
        raise HeadIncomplete
    (version,) = struct.unpack(">i", body[:4])
    if version == 0:
        raise UnsupportedFeatureError(
            f"{name}: block at offset {offset} uses the legacy version-0 log format, which is not supported"
        )
    if version != LOG_FORMAT_VERSION:
        raise error(f"unknown log format version {version}")
    if block_length < _MIN_V1_BODY:
        raise error(f"block length {block_length} is shorter than the smallest block ({_MIN_V1_BODY})")
    # The fields between the version and the trailing long must fit in that span.
    span = block_length - 8
    cur = _Cursor(body[: min(len(body), span)], name, offset)
    cur.pos = 4
    try:
        ordinal = cur.int32("block type")
        try:
            block_type = LogBlockType(ordinal)
        except ValueError:
            raise cur.error(f"unknown block type ordinal {ordinal}") from None
        if block_type is LogBlockType.CDC_DATA:
            raise UnsupportedFeatureError(
                f"{name}: CDC log blocks are not supported (block at offset {offset})"
            )
        if block_type is LogBlockType.CORRUPT:
            raise cur.error("block is marked CORRUPT_BLOCK")
        header = cur.metadata_map("header")
        content_length = cur.int64("content length")
    except LogFormatError:
        if len(body) < span:
            raise HeadIncomplete from None  # the field may run into bytes not read yet
        raise
    if content_length < 0 or cur.pos + content_length > span:
        raise cur.error(
            f"content ({content_length} bytes at block byte {cur.pos}) runs past the declared block "
            "length (into the trailing length)"
        )
    return BlockHead(block_type, header, cur.pos, content_length)


def parse_block_tail(
    tail: memoryview, tail_start: int, block_length: int, name: str, offset: int
) -> dict[HeaderKey, str]:
    """The footer of a block from ``tail``: the bytes from the end of its content (block byte
    ``tail_start``) to the end of the block (footer map and trailing length), which must be
    exactly that."""
    (trailer,) = struct.unpack(">q", tail[len(tail) - 8 :])
    if trailer != len(MAGIC) + block_length:
        raise LogFormatError(
            name,
            f"block at offset {offset}: trailing length {trailer} disagrees with the header block "
            f"length {block_length} (expected {len(MAGIC) + block_length})",
        )
    cur = _Cursor(tail[: len(tail) - 8], name, offset)
    footer = cur.metadata_map("footer")
    if cur.pos != len(cur.data):
        raise cur.error(
            f"header, content and footer end at block byte {tail_start + cur.pos}, "
            f"but the trailing length sits at {tail_start + len(cur.data)}"
        )
    return footer


def _parse_block(body: memoryview, block_length: int, name: str, offset: int) -> LogBlock:
    """Decode the framing of one block; ``body`` is the ``block_length`` bytes after the length field."""
    try:
        head = parse_block_head(body, block_length, name, offset)
    except HeadIncomplete:
        raise LogFormatError(name, f"block at offset {offset}: header runs past the block") from None
    end = head.content_start + head.content_length
    if block_length - end < 12:
        raise LogFormatError(
            name, f"block at offset {offset}: no room for the footer after the content (block byte {end})"
        )
    footer = parse_block_tail(body[end:block_length], end, block_length, name, offset)
    return LogBlock(
        block_type=head.block_type,
        header=head.header,
        footer=footer,
        file_name=name,
        offset=offset,
        content=bytes(body[head.content_start : end]),
    )


def iter_log_blocks(source: InputFile) -> Iterator[LogBlock]:
    """Yield the blocks of a log file in file order, validating each block's framing.

    Small files are read with a single request; larger ones with two requests per block (prefix,
    then body). Raises :class:`LogFormatError` on bad magic, lengths past the end of the file, a
    trailing length that disagrees with the header, an unknown version or block type, and
    :class:`UnsupportedFeatureError` on CDC and legacy version-0 blocks. An empty file has no
    blocks.
    """
    name = source.name
    size = source.size()
    if size == 0:
        return
    whole: memoryview | None = None
    if size <= _WHOLE_FILE_READ_LIMIT:
        whole = memoryview(source.read_all())
        size = len(whole)

    def read(off: int, n: int) -> memoryview:
        if whole is not None:
            return whole[off : off + n]
        return memoryview(source.read(off, n))

    offset = 0
    while offset < size:
        if offset + PREFIX_LEN > size:
            raise LogFormatError(
                name,
                f"block at offset {offset}: truncated, only {size - offset} bytes left for a block prefix",
            )
        prefix = read(offset, PREFIX_LEN)
        magic = bytes(prefix[: len(MAGIC)])
        if magic != MAGIC:
            raise LogFormatError(name, f"block at offset {offset}: bad magic {magic!r}, expected {MAGIC!r}")
        (block_length,) = struct.unpack(">q", prefix[len(MAGIC) :])
        end = offset + PREFIX_LEN + block_length
        if block_length < 8:
            raise LogFormatError(name, f"block at offset {offset}: invalid block length {block_length}")
        if end > size:
            raise LogFormatError(
                name,
                f"block at offset {offset}: declared block length {block_length} runs past the end of "
                f"the file ({size} bytes)",
            )
        body = read(offset + PREFIX_LEN, block_length)
        yield _parse_block(body, block_length, name, offset)
        offset = end


def read_log_file(source: InputFile) -> list[LogBlock]:
    """All blocks of a log file (see :func:`iter_log_blocks` for the checks made)."""
    return list(iter_log_blocks(source))
