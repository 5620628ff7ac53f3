"""The strided cell walk of an HFile data block (``_layout._cell_starts``) against walking the
cells one at a time: the same cell starts, or the same error, on blocks of every shape of length
runs (constant, runs, alternating, random), with and without MVCC bytes (one- and multi-byte),
and on blocks cut off or overrun anywhere."""

from __future__ import annotations

import random
import struct
from collections.abc import Callable

import numpy as np
import pytest

from hudi_md.formats.hfile import _layout
from hudi_md.formats.hfile._layout import Corrupt, cell_positions


def _put_cell(row: bytes, value: bytes, mvcc: bytes | None) -> bytes:
    key = struct.pack(">H", len(row)) + row + b"\x00" + struct.pack(">q", 0) + b"\x04"
    return struct.pack(">II", len(key), len(value)) + key + value + (mvcc or b"")


def _block(rng: random.Random, n: int, shape: str, mvcc: bool) -> bytes:
    cells = []
    value_len = rng.randrange(0, 40)
    for i in range(n):
        if shape == "runs" and rng.random() < 0.02:
            value_len = rng.randrange(0, 40)
        elif shape == "alternating":
            value_len = 7 if i % 2 else 11
        elif shape == "random":
            value_len = rng.randrange(0, 40)
        row = f"k{i:08d}".encode()
        stamp = None
        if mvcc:  # mostly one-byte VLongs, now and then a multi-byte one (0x8f: 1 byte follows)
            stamp = b"\x8f\x90" if rng.random() < 0.01 else bytes([rng.choice([0, 5, 127, 0x90, 0xFF])])
        cells.append(_put_cell(row, rng.randbytes(value_len), stamp))
    return b"".join(cells)


def _one_by_one(payload: bytes, mvcc: bool) -> np.ndarray:
    starts, pos = _layout._loop_cells(payload, 0, len(payload), len(payload), has_mvcc=mvcc, has_tags=False)
    _layout._check_end(pos, len(payload))
    return np.asarray(starts, np.int64)


def _outcome(walk: Callable[[bytes, bool], np.ndarray], payload: bytes, mvcc: bool) -> object:
    try:
        return walk(payload, mvcc).tolist()
    except _layout._Truncated as e:  # as cell_positions reports it
        return ("Corrupt", f"cell at {e.args[0]} is truncated")
    except Corrupt as e:
        return ("Corrupt", str(e))


@pytest.mark.parametrize("shape", ["constant", "runs", "alternating", "random"])
@pytest.mark.parametrize("mvcc", [False, True])
def test_strided_walk_finds_the_cells_of_a_one_by_one_walk(shape: str, mvcc: bool) -> None:
    rng = random.Random(f"{shape}-{mvcc}")
    for n in (1, 2, 3, 17, 200, 5000):
        payload = _block(rng, n, shape, mvcc)
        strided = _layout._cell_starts(
            payload, np.frombuffer(payload, np.uint8), has_mvcc=mvcc, has_tags=False
        )
        assert strided.tolist() == _one_by_one(payload, mvcc).tolist(), (shape, n)
        assert len(cell_positions(payload, has_mvcc=mvcc, has_tags=False)) == n


@pytest.mark.parametrize("mvcc", [False, True])
def test_cut_or_overrun_blocks_fail_as_a_one_by_one_walk_does(mvcc: bool) -> None:
    rng = random.Random(mvcc)
    payload = _block(rng, 300, "runs", mvcc)
    for cut in sorted(rng.sample(range(1, len(payload)), 60)):
        for damaged in (payload[:cut], payload[:cut] + b"\x00" * rng.randrange(1, 5)):

            def strided(p: bytes, m: bool) -> np.ndarray:
                return _layout._cell_starts(p, np.frombuffer(p, np.uint8), has_mvcc=m, has_tags=False)

            assert _outcome(strided, damaged, mvcc) == _outcome(_one_by_one, damaged, mvcc), cut
    # a length no writer makes, in the first cell and in one of a run
    for at in (0, int(_one_by_one(payload, mvcc)[150])):
        big = bytearray(payload)
        big[at + 4 : at + 8] = struct.pack(">I", 1 << 31)
        with pytest.raises(Corrupt, match=r"overruns|truncated") as raised:
            cell_positions(bytes(big), has_mvcc=mvcc, has_tags=False)
        assert (type(raised.value).__name__, str(raised.value)) == _outcome(_one_by_one, bytes(big), mvcc)


@pytest.mark.parametrize("mvcc", [False, True])
@pytest.mark.parametrize("case", ["plain", "length-in-value", "other-key-length", "long-vlong", "cut"])
def test_cells_found_by_their_key_length_are_the_walks(case: str, mvcc: bool) -> None:
    """Where every key has the first's length, the cells are the positions of those length bytes
    that chain from one to the next: the one-by-one walk's cells, also where values' lengths or
    bytes hold the same four bytes. A key of another length, a longer MVCC VLong or a cut block
    make that chain fail, and the walk finds the cells (or the error)."""
    rng = random.Random(f"{case}-{mvcc}")
    stamp = b"\x00" if mvcc else None
    # key length 21: values of 21 bytes hold the same bytes as their length
    cells = [
        _put_cell(f"k{i:08d}".encode(), rng.randbytes(rng.randrange(0, 300)), stamp) for i in range(3000)
    ]
    key_length = cells[0][:4]
    if case == "length-in-value":
        for i in range(100, 3000, 100):
            cells[i] = _put_cell(b"k%08d" % i, b"ab" + key_length + rng.randbytes(8) + key_length, stamp)
    elif case == "other-key-length":
        cells[900] = _put_cell(b"k00000900x", b"v", stamp)
    elif case == "long-vlong" and mvcc:
        cells[2000] = cells[2000][:-1] + b"\x8f\x90"
    payload = b"".join(cells)
    if case == "cut":
        payload = payload[: len(payload) - 3]
    buf = np.frombuffer(payload, np.uint8)
    same_bytes = sum(payload[p : p + 4] == key_length for p in range(len(payload) - 7))
    assert same_bytes > 3000 or case not in ("plain", "length-in-value")  # not only the cells' own
    chained = _layout._chained_starts(buf, has_mvcc=mvcc)
    one_by_one = _outcome(_one_by_one, payload, mvcc)
    assert (chained is not None) == (
        case in ("plain", "length-in-value") or (case == "long-vlong" and not mvcc)
    )
    if chained is not None:
        assert chained.tolist() == one_by_one
    walked = _outcome(
        lambda p, m: _layout._cell_starts(p, np.frombuffer(p, np.uint8), has_mvcc=m, has_tags=False),
        payload,
        mvcc,
    )
    assert walked == one_by_one
