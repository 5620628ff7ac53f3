"""Base file names parsed column-wise (slice_table.base_name_parts) against Arrow's regex engine
running filenames.BASE_FILE_PATTERN: the same names parse, with the same parts."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from hudi_md.table.filenames import BASE_FILE_EXTENSIONS, BASE_FILE_PATTERN, BaseFileName
from hudi_md.table.slice_table import base_file_parts, base_name_parts

TRICKY = [
    "f1-0_1-0-1_20240101000000000.parquet",
    "f1-0_1-0-1_20240101000000000.PARQUET",
    "f1-0_1-0-1_20240101000000000.parquet.crc",
    "f1-0_1-0-1_2024010100000000a.parquet",
    "f1-0_1-0-1_.parquet",
    "f1-0_1-0-1_20240101.",
    "_1-0-1_20240101.parquet",
    "f1__20240101.parquet",
    "f1_1-0-1_2_20240101.parquet",
    "f1_1-0-1_20240101",
    "f.1_t.k_20240101.parquet",
    "f1_tk_20240101.par-quet",
    "f1_tk_\uff12\uff10\uff12\uff14.parquet",  # full-width digits: not ASCII
    "fé_tk_20240101.parquet",
    "f1_tk_20240101.parquét",
    ".f1_20240101.log.1_0-1-0",
    "",
    "_",
    "__",
    "a_b_1.c",
    "a_b_1.c_",
    "a_b_1..c",
    "a_b_.1.c",
]


def _regex_parts(names: pa.Array) -> tuple[np.ndarray, list, list, list]:
    parsed = pc.extract_regex(names, BASE_FILE_PATTERN)
    valid = pc.is_valid(parsed).to_numpy(zero_copy_only=False)
    return (
        valid,
        pc.struct_field(parsed, "file_id").to_pylist(),
        pc.struct_field(parsed, "instant").to_pylist(),
        pc.struct_field(parsed, "extension").to_pylist(),
    )


def _random_name(rng: random.Random) -> str:
    alphabet = "ab1_.-9é"
    if rng.random() < 0.5:
        return BaseFileName.make(
            f"{rng.getrandbits(64):016x}-{rng.randrange(3)}",
            f"{rng.randrange(20)}-{rng.randrange(20)}-{rng.randrange(3)}",
            str(rng.randrange(10**17)),
            rng.choice(["parquet", "hfile", "orc", "x"]),
        )
    return "".join(rng.choice(alphabet) for _ in range(rng.randrange(12)))


@pytest.mark.parametrize("seed", range(4))
def test_base_names_parse_as_the_regex_parses_them(seed: int) -> None:
    rng = random.Random(seed)
    names = TRICKY + [_random_name(rng) for _ in range(3000)]
    rng.shuffle(names)
    arr = pa.array(names, pa.string())
    if seed % 2:  # an offset slice of a chunked column
        arr = pa.chunked_array([pa.array(["x_y_1.p", *names], pa.string()).slice(1)])
    parsed, file_id, instant, extension = base_name_parts(arr)
    valid, r_id, r_instant, r_ext = _regex_parts(pa.array(names, pa.string()))
    assert valid.any() and not valid.all()
    np.testing.assert_array_equal(parsed, valid)
    rows = np.flatnonzero(valid)
    for column, expected in ((file_id, r_id), (instant, r_instant), (extension, r_ext)):
        got = column.to_pylist()
        assert [got[i] for i in rows] == [expected[i] for i in rows]


@pytest.mark.parametrize("seed", range(4))
def test_base_files_are_the_names_the_regex_parses_with_a_base_file_extension(seed: int) -> None:
    """``base_file_parts`` compares extensions in the names' buffer: the names it keeps are those
    the regex parses whose extension, lowercased, is a base file's; their ids and instants are
    the regex's."""
    rng = random.Random(seed)
    cased = [
        "parquet",
        "PARQUET",
        "Parquet",
        "hfile",
        "HFile",
        "orc",
        "ORC",
        "lance",
        "parquez",
        "orcs",
        "or",
    ]
    names = TRICKY + [_random_name(rng) for _ in range(2000)]
    names += [
        BaseFileName.make(f"{i:04x}-0", "0-1-0", str(10**16 + i), rng.choice(cased)) for i in range(500)
    ]
    rng.shuffle(names)
    arr = pa.array(names, pa.string())
    if seed % 2:
        arr = pa.chunked_array([pa.array(["x_y_1.parquet", *names], pa.string()).slice(1)])
    keep, file_id, instant = base_file_parts(arr)
    valid, r_id, r_instant, r_ext = _regex_parts(pa.array(names, pa.string()))
    expected = valid & np.array([e is not None and e.lower() in BASE_FILE_EXTENSIONS for e in r_ext])
    assert expected.any() and not expected.all() and (valid & ~expected).any()
    np.testing.assert_array_equal(keep, expected)
    rows = np.flatnonzero(expected)
    for column, want in ((file_id, r_id), (instant, r_instant)):
        got = column.to_pylist()
        assert [got[i] for i in rows] == [want[i] for i in rows]


def test_names_without_separators() -> None:
    parsed, *_ = base_name_parts(pa.array(["abc", "a.b", ""], pa.string()))
    assert not parsed.any()


@pytest.mark.parametrize(
    "odd", [None, "f.1_t_1.parquet", "f1_t_1.x.parquet", "f1_t_1_.parquet", "f1_t_1.parquet"]
)
def test_listings_of_well_formed_names(odd: str | None) -> None:
    """A listing of plain base file names (each with its own two underscores and one dot), with
    at most one odd name: what the regex says of each."""
    rng = random.Random(7)
    names = [
        BaseFileName.make(
            f"{rng.getrandbits(64):016x}-0", f"0-{rng.randrange(99)}-0", str(rng.randrange(10**17))
        )
        for _ in range(500)
    ]
    if odd is not None:
        names.insert(250, odd)
    parsed, file_id, instant, extension = base_name_parts(pa.array(names, pa.string()))
    valid, r_id, r_instant, r_ext = _regex_parts(pa.array(names, pa.string()))
    np.testing.assert_array_equal(parsed, valid)
    rows = np.flatnonzero(valid)
    assert len(rows) >= 500
    for column, expected in ((file_id, r_id), (instant, r_instant), (extension, r_ext)):
        got = column.to_pylist()
        assert [got[i] for i in rows] == [expected[i] for i in rows]


@pytest.mark.parametrize(
    "wanted",
    [
        ["a", "b", "c"],  # every partition listed
        ["a", "c"],  # one dropped from the partition list, its files record still there
        ["b"],
        [],
        ["a", "b", "c", "d"],  # a partition without a files record
        ["a", "c", "b"],
    ],
)
def test_wanted_files_are_the_rows_of_the_wanted_partitions(wanted: list[str]) -> None:
    from hudi_md.table.slice_table import wanted_files

    files = pa.table(
        {
            "partition_path": ["a", "a", "b", "c", "c", "c"],
            "name": ["1", "2", "3", "4", "5", "6"],
            "size": [1, 2, 3, 4, 5, 6],
        }
    )
    got = wanted_files(files, wanted)
    assert got["name"].to_pylist() == [
        n
        for p, n in zip(*(files[c].to_pylist() for c in ("partition_path", "name")), strict=True)
        if p in wanted
    ]
    assert wanted_files(files, None) is files
