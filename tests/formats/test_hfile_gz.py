"""GZ block payloads (Hadoop's GzipCodec) inflated against Python's gzip module: one member, members
concatenated, and the refusals of a stream that is truncated, inflates past its header's size or
short of it."""

from __future__ import annotations

import gzip
import os

import pytest

from hudi_md.formats.hfile._wire import CODEC_GZ, Corrupt, decompress

DATA = os.urandom(3000) + bytes(70_000) + b"cells" * 5000


@pytest.mark.parametrize("view", [bytes, memoryview])
def test_one_member_inflates_to_what_gzip_gives(view) -> None:
    packed = gzip.compress(DATA)
    assert decompress(CODEC_GZ, view(packed), len(DATA)) == gzip.decompress(packed) == DATA


def test_concatenated_members_inflate_to_what_gzip_gives() -> None:
    packed = gzip.compress(DATA[:5000]) + gzip.compress(DATA[5000:60_000]) + gzip.compress(DATA[60_000:])
    assert decompress(CODEC_GZ, packed, len(DATA)) == gzip.decompress(packed) == DATA


@pytest.mark.parametrize(
    ("packed", "size", "says"),
    [
        (gzip.compress(DATA)[:-20], len(DATA), "truncated"),
        (gzip.compress(DATA), len(DATA) - 1, "past"),
        (gzip.compress(DATA), len(DATA) + 1, "inflates to"),
        (gzip.compress(DATA[:100]) + gzip.compress(DATA[100:]), len(DATA) - 1, "past"),
        (gzip.compress(DATA[:100]) + gzip.compress(DATA[100:])[:-20], len(DATA), "truncated"),
        (b"not gzip at all", len(DATA), "does not inflate"),
    ],
    ids=["truncated", "past", "short", "members-past", "members-truncated", "garbage"],
)
def test_bad_streams_are_refused(packed: bytes, size: int, says: str) -> None:
    with pytest.raises(Corrupt, match=says):
        decompress(CODEC_GZ, packed, size)
