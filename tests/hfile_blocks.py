"""The deflate streams of an HFile's GZ data blocks, as written on disk, beside their payloads:
tests that check which zlib level wrote a block compare the stream with zlib's own output."""

from __future__ import annotations

from hudi_md.formats.hfile import HFileReader
from hudi_md.formats.hfile._layout import HEADER_SIZE, MAGIC_DATA, TRAILER_SIZE, block_payload, parse_header


def gz_data_blocks(data: bytes) -> list[tuple[bytes, bytes]]:
    """Every data block's (raw deflate stream, uncompressed payload) of a GZ HFile."""
    codec = HFileReader.from_bytes(data).trailer.compression_codec
    out, pos = [], 0
    while pos < len(data) - TRAILER_SIZE:
        h = parse_header(data, pos)
        if h.magic == MAGIC_DATA:
            member = data[pos + HEADER_SIZE : pos + h.on_disk_data_size]
            # one gzip member per block: a 10-byte header, the stream, an 8-byte trailer
            out.append((member[10:-8], block_payload(data, pos, h, codec, verify=True)))
        pos += h.total_size
    return out
