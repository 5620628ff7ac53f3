"""Avro longs decoded many at once (``avro_columns.varints``) against fastavro's encoding of them."""

from __future__ import annotations

import io

import fastavro
import numpy as np
import pytest

from hudi_md.formats.avro_columns import PADDING, Unexpected, varints

LONG = fastavro.parse_schema("long")
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _encoded(values: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """fastavro's bytes of ``values`` one after another (and the padding), with where each starts."""
    out = io.BytesIO()
    starts = []
    for v in values:
        starts.append(out.tell())
        fastavro.schemaless_writer(out, LONG, v)
    return np.frombuffer(out.getvalue() + bytes(PADDING), np.uint8), np.array(starts, np.int64)


RNG = np.random.default_rng(17)
CASES = {
    "one byte each": RNG.integers(-64, 64, 5000).tolist(),
    "two bytes each": RNG.integers(64, 8000, 5000).tolist(),
    "lengths of 1 to 5 bytes mixed": RNG.integers(-(2**33), 2**33, 5000).tolist(),
    "mostly one byte, a few long": [3 if i % 97 else 10**12 for i in range(5000)],
    "the extremes": [0, -1, 1, 63, -64, 64, -65, INT64_MIN, INT64_MAX, INT64_MIN + 1, INT64_MAX - 1],
    "all ten bytes": [INT64_MIN, INT64_MAX] * 50,
    "one": [300],
}


@pytest.mark.parametrize("values", CASES.values(), ids=CASES.keys())
def test_varints_decode_what_fastavro_encodes_and_end_where_the_next_starts(values: list[int]) -> None:
    buf, starts = _encoded(values)
    decoded, after = varints(buf, starts)
    assert decoded.dtype == np.int64
    assert decoded.tolist() == values
    ends = np.append(starts[1:], len(buf) - PADDING)
    assert after.tolist() == ends.tolist()


def test_varints_of_a_subset_of_positions_read_only_those() -> None:
    values = CASES["lengths of 1 to 5 bytes mixed"]
    buf, starts = _encoded(values)
    pick = np.arange(0, len(values), 7)
    decoded, after = varints(buf, starts[pick])
    assert decoded.tolist() == [values[i] for i in pick]
    assert after.tolist() == [int(starts[i]) + len(_encoded([values[i]])[0]) - PADDING for i in pick]


def test_no_positions_decode_to_nothing() -> None:
    decoded, after = varints(np.zeros(PADDING, np.uint8), np.zeros(0, np.int64))
    assert decoded.size == 0 and after.size == 0


@pytest.mark.parametrize("where", ["every value", "one value of many"])
def test_a_varint_longer_than_ten_bytes_is_refused(where: str) -> None:
    overlong = bytes([0x80] * 11 + [0x01])
    if where == "every value":
        buf = np.frombuffer(overlong * 3 + bytes(PADDING), np.uint8)
        starts = np.arange(3, dtype=np.int64) * len(overlong)
    else:
        good, good_starts = _encoded([5, 6])
        buf = np.frombuffer(good.tobytes()[:-PADDING] + overlong + bytes(PADDING), np.uint8)
        starts = np.append(good_starts, len(good) - PADDING)
    with pytest.raises(Unexpected):
        varints(buf, starts)
