"""Log blocks located without reading their content: the framing of a log file (type, header,
footer, where the content lies), with the content left in the file to be read in parts.

The metadata table's log blocks hold HFiles. A lookup needs only the blocks of those HFiles that
hold its keys, so reading a whole multi-megabyte log file to find one key is the cost this module
removes: :func:`iter_log_frames` reads a block's head and its tail (footer and trailing length,
plus the last ``tail_bytes`` of its content, where an HFile keeps its index), and the content is a
file of its own (:meth:`LogBlockFrame.content_file`) that a reader range-reads.

The checks are those of :func:`hudi_md.formats.logfile.iter_log_blocks` (magic, lengths within
the file, the trailing length, header and footer filling the block), made on the bytes that frame
the content; the content's own checks are its reader's (an HFile's checksums and index).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

from hudi_md.errors import LogFormatError
from hudi_md.formats.logfile import (
    MAGIC,
    PREFIX_LEN,
    ROLLBACK_COMMAND,
    HeaderKey,
    HeadIncomplete,
    LogBlock,
    LogBlockType,
    parse_block_head,
    parse_block_tail,
)
from hudi_md.storage import InputFile, InputSlice, RangeCachedFile

__all__ = ["LogBlockFrame", "first_reads", "iter_log_frames"]

# A file up to this size is read with one request: about what framing a block reads anyway.
WHOLE_FILE_BYTES = 64 << 10
# The first read at a block: its head (an MDT block's schema header is ~9 KiB); a longer head is
# read again in full.
HEAD_BYTES = 16 << 10
# Read with a block's footer: the end of its content, where an HFile keeps its trailer, root index
# and file info (the schema again, ~9 KiB); an HFile opened on the content reads this much of its
# end (see HFileReader's open_tail_bytes), so its opening sends no request of its own.
TAIL_BYTES = 32 << 10
# The end of a file read with its head (see :func:`first_reads`): the last block's tail read, with
# room for its footer (an MDT block's is a few bytes).
END_BYTES = TAIL_BYTES + (4 << 10)


def first_reads(size: int) -> list[tuple[int, int]]:
    """The ranges ``(offset, length)`` framing a file of ``size`` bytes reads first, which can be
    sent at once: the whole file when small, else its head and its end. The end answers the last
    block's tail read, which otherwise waits for the head (on an object store, a round trip more
    per file). Read into the file's :class:`RangeCachedFile`, :func:`iter_log_frames` finds them."""
    if size <= WHOLE_FILE_BYTES:  # larger than its head and end together
        return [(0, size)] if size else []
    return [(0, HEAD_BYTES), (size - END_BYTES, END_BYTES)]


@dataclass(frozen=True)
class LogBlockFrame:
    """One block of a log file, located: its type, header and footer, and where its content is."""

    block_type: LogBlockType
    header: dict[HeaderKey, str]
    footer: dict[HeaderKey, str]
    file_name: str
    offset: int
    content_offset: int
    content_length: int
    source: InputFile

    @property
    def instant_time(self) -> str | None:
        return self.header.get(HeaderKey.INSTANT_TIME)

    @property
    def target_instant_time(self) -> str | None:
        return self.header.get(HeaderKey.TARGET_INSTANT_TIME)

    @property
    def schema(self) -> str | None:
        return self.header.get(HeaderKey.SCHEMA)

    @property
    def is_rollback_command(self) -> bool:
        return (
            self.block_type is LogBlockType.COMMAND
            and self.header.get(HeaderKey.COMMAND_BLOCK_TYPE) == ROLLBACK_COMMAND
        )

    def content_file(self) -> InputFile:
        """The content as a file of its own (range reads go to the log file)."""
        return InputSlice(
            self.source, self.content_offset, self.content_length, f"{self.file_name}@{self.offset}"
        )

    def load(self) -> LogBlock:
        """The block with its content read (one request unless the content was read already)."""
        content = self.source.read(self.content_offset, self.content_length)
        return LogBlock(
            block_type=self.block_type,
            header=self.header,
            footer=self.footer,
            file_name=self.file_name,
            offset=self.offset,
            content=bytes(content),
        )


def iter_log_frames(
    source: InputFile,
    *,
    whole_file_bytes: int = WHOLE_FILE_BYTES,
    head_bytes: int = HEAD_BYTES,
    tail_bytes: int = TAIL_BYTES,
) -> Iterator[LogBlockFrame]:
    """The blocks of a log file in file order, framed and checked, contents left unread.

    A file of at most ``whole_file_bytes`` is read whole; a larger one costs two requests per
    block (its head; its footer with the last ``tail_bytes`` of the content), kept for the
    content's reader. Errors as :func:`hudi_md.formats.logfile.iter_log_blocks`.
    """
    name = source.name
    cache = source if isinstance(source, RangeCachedFile) else RangeCachedFile(source)
    size = cache.size()
    if size == 0:
        return
    if size <= whole_file_bytes:
        cache.prefetch(0, size)
    offset = 0
    while offset < size:
        if offset + PREFIX_LEN > size:
            raise LogFormatError(
                name,
                f"block at offset {offset}: truncated, only {size - offset} bytes left for a block prefix",
            )
        want = min(size - offset, max(head_bytes, PREFIX_LEN))
        while True:
            head = memoryview(cache.prefetch(offset, want))
            magic = bytes(head[: len(MAGIC)])
            if magic != MAGIC:
                raise LogFormatError(
                    name, f"block at offset {offset}: bad magic {magic!r}, expected {MAGIC!r}"
                )
            (block_length,) = struct.unpack(">q", head[len(MAGIC) : PREFIX_LEN])
            end = offset + PREFIX_LEN + block_length
            if block_length < 8:
                raise LogFormatError(name, f"block at offset {offset}: invalid block length {block_length}")
            if end > size:
                raise LogFormatError(
                    name,
                    f"block at offset {offset}: declared block length {block_length} runs past the end "
                    f"of the file ({size} bytes)",
                )
            try:
                parsed = parse_block_head(head[PREFIX_LEN:], block_length, name, offset)
                break
            except HeadIncomplete:
                if want >= end - offset:
                    raise LogFormatError(
                        name, f"block at offset {offset}: header runs past the block"
                    ) from None
                want = min(end - offset, 4 * want)
        body_start = offset + PREFIX_LEN
        content_offset = body_start + parsed.content_start
        content_end = content_offset + parsed.content_length
        if end - content_end < 12:
            raise LogFormatError(
                name,
                f"block at offset {offset}: no room for the footer after the content "
                f"(block byte {content_end - body_start})",
            )
        tail_from = max(content_offset, content_end - tail_bytes)
        # on through the head of the next block, if any: its first read then sends no request
        tail_to = min(size, end + max(head_bytes, PREFIX_LEN))
        tail = memoryview(cache.prefetch(tail_from, tail_to - tail_from))[: end - tail_from]
        footer = parse_block_tail(
            tail[content_end - tail_from :], content_end - body_start, block_length, name, offset
        )
        yield LogBlockFrame(
            block_type=parsed.block_type,
            header=parsed.header,
            footer=footer,
            file_name=name,
            offset=offset,
            content_offset=content_offset,
            content_length=parsed.content_length,
            source=cache,
        )
        offset = end
