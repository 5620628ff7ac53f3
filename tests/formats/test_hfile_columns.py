"""HFileWriter.append_columns writes the same bytes as append_all of the same cells."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from hudi_md.errors import InvalidOptionError
from hudi_md.formats.hfile import HFileReader, HFileWriter
from hudi_md.storage import BytesInputFile

ALPHABET = "abcxyz019-_/é漢😀"


def _keys(rng: random.Random, n: int) -> list[str]:
    keys = {"".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 30))) for _ in range(n)}
    return sorted(keys, key=lambda k: k.encode("utf-8"))


def _writer(block_size: int) -> HFileWriter:
    return HFileWriter(block_size=block_size, compression="GZ", create_time_ms=1)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("block_size", [64, 700, 1 << 20])
def test_append_columns_equals_append_all(seed: int, block_size: int) -> None:
    rng = random.Random(seed)
    keys = _keys(rng, rng.randint(1, 3000))
    shared = [bytes(rng.randrange(256) for _ in range(rng.randint(0, 90))) for _ in range(3)]
    codes = [rng.randrange(len(shared)) for _ in keys]
    values = [shared[c] for c in codes]
    split = rng.randint(0, len(keys))  # some cells through append_all first: blocks carry over

    expected = _writer(block_size)
    expected.append_all(zip(keys, values, strict=True))
    actual = _writer(block_size)
    actual.append_all(zip(keys[:split], values[:split], strict=True))
    dictionary = pa.DictionaryArray.from_arrays(
        pa.array(codes[split:], pa.int32()), pa.array(shared, pa.binary())
    )
    if seed % 2:
        actual.append_columns(pa.array(keys[split:], pa.string()), dictionary)
    else:  # plain binary columns, sliced (non-zero array offsets)
        padded_keys = pa.array(["z", *keys[split:]], pa.string()).slice(1)
        padded_values = pa.array([b"?", *values[split:]], pa.binary()).slice(1)
        actual.append_columns(padded_keys.cast(pa.binary()), padded_values)
    data = actual.finish()
    assert data == expected.finish()
    cells = list(HFileReader(BytesInputFile(data)).scan())
    assert [(k, v) for k, v in cells] == [(k.encode("utf-8"), v) for k, v in zip(keys, values, strict=True)]


def test_append_columns_rejects_bad_cells() -> None:
    w = _writer(1 << 20)
    with pytest.raises(InvalidOptionError, match="out-of-order key"):
        w.append_columns(pa.array(["b", "a"]), pa.array([b"", b""]))
    with pytest.raises(InvalidOptionError, match="duplicate key"):
        w.append_columns(pa.array(["a", "a"]), pa.array([b"", b""]))
    with pytest.raises(InvalidOptionError, match="must not be empty"):
        w.append_columns(pa.array(["", "a"]), pa.array([b"", b""]))
    with pytest.raises(InvalidOptionError, match="must not be null"):
        w.append_columns(pa.array(["a", None]), pa.array([b"", b""]))
    with pytest.raises(InvalidOptionError, match="row limit"):
        w.append_columns(pa.array(["x" * 40000]), pa.array([b""]))
    w.append_columns(pa.array(["m"]), pa.array([b"1"]))
    with pytest.raises(InvalidOptionError, match="duplicate key"):
        w.append_columns(pa.array(["m"]), pa.array([b"1"]))
    with pytest.raises(InvalidOptionError, match="out-of-order key"):
        w.append_all([("a", b"")])
