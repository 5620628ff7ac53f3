"""Column-wise ``column_stats`` / ``partition_stats`` (metadata/stats_columns.py, the stats table
of planning/stats_arrow.stats_table_of_columns) against the record-wise path they replace for
large plans: random records of every wrapper and value type, merges against ``records.merge``
folds, and every fixture table's stats and plans."""

from __future__ import annotations

import datetime
import decimal
import io
import json
import math
import random
import struct
from typing import Any

import fastavro
import pyarrow as pa
import pytest

import hudi_md
from hudi_md.formats.avro import decode_schemaless, parse_schema
from hudi_md.metadata import keys as K
from hudi_md.metadata.files_columns import cell_columns
from hudi_md.metadata.reader import column_stat_of
from hudi_md.metadata.records import is_live, merge, normalize
from hudi_md.metadata.records_builder import metadata_record_schema_json
from hudi_md.metadata.stats_columns import (
    Deletes,
    StatKind,
    StatsColumns,
    StatValues,
    decode_stats_columns,
    merge_stats_runs,
    stats_record_shape,
)
from hudi_md.metadata.stats_index import StatsIndex
from hudi_md.planning import planner
from hudi_md.planning.stats_arrow import build_stats_table, entry_rows, stats_table_of_columns

from fixtures import archives

NS = "org.apache.hudi.avro.model."
V9 = metadata_record_schema_json()


def v8_schema() -> str:
    """The 1.0 schema: no valueType, no ArrayWrapper."""
    schema = json.loads(V9)
    stats = next(f for f in schema["fields"] if f["name"] == "ColumnStatsMetadata")["type"][1]
    stats["fields"] = [f for f in stats["fields"] if f["name"] != "valueType"]
    for f in stats["fields"]:
        if f["name"] in ("minValue", "maxValue"):
            f["type"] = [
                t
                for t in f["type"]
                if not (t == "ArrayWrapper" or (isinstance(t, dict) and t["name"] == "ArrayWrapper"))
            ]
    return json.dumps(schema)


V8 = v8_schema()

# (wrapper, valueType ordinal or None, additionalInfo, value maker): every supported combination
_BIG = 2**62


def _supported(rng: random.Random) -> tuple[str, int | None, str | None, Any]:
    choice = rng.randrange(14)
    if choice == 0:
        return "BooleanWrapper", rng.choice([None, 2, 0]), None, rng.random() < 0.5
    if choice == 1:
        return (
            "IntWrapper",
            rng.choice([None, 3, 0]),
            None,
            rng.choice([0, -1, 1, 2**31 - 1, -(2**31), rng.randrange(-999, 999)]),
        )
    if choice == 2:
        return (
            "LongWrapper",
            rng.choice([None, 4, 0]),
            None,
            rng.choice([0, -(2**63), 2**63 - 1, 2**53 + 1, -(2**53) - 1, rng.randrange(-_BIG, _BIG)]),
        )
    if choice == 3:
        f = rng.choice([0.0, -0.0, 1.5, float("nan"), float("inf"), -float("inf"), rng.uniform(-1e6, 1e6)])
        return "FloatWrapper", rng.choice([None, 5]), None, struct.unpack("<f", struct.pack("<f", f))[0]
    if choice == 4:
        return (
            "DoubleWrapper",
            rng.choice([None, 6]),
            None,
            rng.choice([0.0, -0.0, float("nan"), 1e300, 2.0**60, rng.uniform(-1e9, 1e9)]),
        )
    if choice == 5:
        return (
            "StringWrapper",
            rng.choice([None, 7]),
            None,
            "".join(rng.choice("az09é漢😀 \x00") for _ in range(rng.randrange(0, 9))),
        )
    if choice == 6:
        return (
            "BytesWrapper",
            rng.choice([None, 8, 9]),
            None,
            bytes(rng.randrange(256) for _ in range(rng.randrange(0, 9))),
        )
    if choice == 7:
        scale = rng.randrange(0, 19)
        unscaled = rng.choice([0, -1, 1, 127, -128, 2**63 - 1, -(2**63), rng.randrange(-(10**15), 10**15)])
        n = (unscaled + (unscaled < 0)).bit_length() // 8 + 1  # the fewest bytes
        raw = unscaled.to_bytes(n, "big", signed=True) if rng.random() < 0.9 else b""
        return "BytesWrapper", 10, f"{rng.randrange(1, 39)},{scale}", raw
    if choice == 8:
        return "IntWrapper", 12, None, rng.randrange(-719_162, 2_932_896)
    if choice in (9, 10):
        return (
            rng.choice(["DateWrapper", "LocalDateWrapper"]),
            rng.choice([None, 12]),
            None,
            rng.randrange(-700_000, 2_900_000),
        )
    if choice == 11:
        return (
            "TimestampMicrosWrapper",
            rng.choice([None, 16]),
            None,
            rng.randrange(-62_135_596_800_000_000, 253_402_300_799_999_999),
        )
    ordinal = rng.choice([15, 16, 17, 18, 19, 20])
    span = {15: 10**14, 18: 10**14, 17: 9 * 10**19, 20: 9 * 10**19}.get(ordinal, 10**17)
    return "LongWrapper", ordinal, None, rng.randrange(-span // 10, span // 10)


def _unsupported(rng: random.Random) -> tuple[str, int | None, str | None, Any]:
    """Values the column-wise path does not take (the record-wise path does, or raises)."""
    return rng.choice(
        [
            ("LongWrapper", 14, None, 1_000_000),  # a time
            ("IntWrapper", 13, None, 1000),
            ("BooleanWrapper", 12, None, True),  # a boolean read as a date
            ("BytesWrapper", 11, None, bytes(16)),  # a UUID
            ("BytesWrapper", 10, "38,2", (2**70).to_bytes(9, "big")),  # wider than 8 bytes
            ("DecimalWrapper", None, None, decimal.Decimal("1.500000000000000")),
            ("TimeMicrosWrapper", None, None, datetime.time(1, 2, 3)),
            ("IntWrapper", 12, None, 10**9),  # past year 9999
        ]
    )


def stats_record(rng: random.Random, *, v9: bool = True, unsupported: bool = False, kind: int = 6) -> dict:
    def wrapped(choice: tuple[str, int | None, str | None, Any] | None) -> Any:
        return None if choice is None else (NS + choice[0], {"value": choice[3]})

    pick = _unsupported if unsupported else _supported
    low = pick(rng) if rng.random() < 0.9 else None
    high = (
        (low[0], low[1], low[2], pick(rng)[3] if False else low[3])
        if low is not None and rng.random() < 0.3
        else None
    )
    if high is None and low is not None and rng.random() < 0.8:
        other = _supported(rng)
        high = other if other[0] == low[0] and other[1] == low[1] and other[2] == low[2] else low
    ordinal_source = low or high
    stats = {
        "fileName": rng.choice([None, "", "f1.parquet", "dt=é/x"]),
        "columnName": rng.choice([None, "", "v", "c", "ключ"]),
        "minValue": wrapped(low),
        "maxValue": wrapped(high if rng.random() < 0.9 else None),
        "valueCount": rng.choice([None, 0, 5, 2**62]),
        "nullCount": rng.choice([None, 0, 3]),
        "totalSize": rng.choice([None, 10]),
        "totalUncompressedSize": rng.choice([None, 12]),
        "isDeleted": rng.random() < 0.15,
        "isTightBound": rng.random() < 0.5,
    }
    if v9:
        ordinal = ordinal_source[1] if ordinal_source is not None else rng.choice([None, 4])
        info = ordinal_source[2] if ordinal_source is not None else None
        stats["valueType"] = None if ordinal is None else {"typeOrdinal": ordinal, "additionalInfo": info}
    return {
        "_hoodie_commit_time": None,
        "_hoodie_commit_seqno": None,
        "_hoodie_record_key": None,
        "_hoodie_partition_path": None,
        "_hoodie_file_name": rng.choice([None, "base.hfile"]),
        "key": "",
        "type": kind,
        "filesystemMetadata": None,
        "BloomFilterMetadata": None,
        "ColumnStatsMetadata": stats,
        "recordIndexMetadata": None,
        "SecondaryIndexMetadata": None,
    }


def encode(record: dict, schema: str = V9) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, parse_schema(schema), record)
    return buf.getvalue()


def record_wise(value: bytes, key: str, schema: str = V9) -> dict:
    record = normalize(decode_schemaless(value, schema, return_record_name=True))
    record["key"] = key
    return record


def python_values(values: StatValues) -> list[Any]:
    """Typed values back to the Python values the record-wise path holds."""
    out: list[Any] = []
    binary = values.binary.to_pylist()
    for kind, integer, floating, raw, scale in zip(
        values.kind.tolist(),
        values.integer.tolist(),
        values.floating.tolist(),
        binary,
        values.scale.tolist(),
        strict=True,
    ):
        if kind == StatKind.NONE:
            out.append(None)
        elif kind == StatKind.BOOL:
            out.append(bool(integer))
        elif kind == StatKind.INT:
            out.append(integer)
        elif kind == StatKind.FLOAT:
            out.append(floating)
        elif kind == StatKind.DECIMAL:
            out.append(decimal.Decimal(integer).scaleb(-scale))
        elif kind == StatKind.STR:
            out.append(raw.decode("utf-8"))
        elif kind == StatKind.BYTES:
            out.append(raw)
        elif kind == StatKind.DATE:
            out.append(datetime.date(1970, 1, 1) + datetime.timedelta(days=integer))
        elif kind == StatKind.DATETIME:
            out.append(datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=integer))
        else:
            out.append(
                datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
                + datetime.timedelta(microseconds=integer)
            )
    return out


def same_value(a: Any, b: Any) -> bool:
    """Equal, of the same type, floats bit for bit but NaN, decimals with their exponent."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, decimal.Decimal):
        return a == b and a.as_tuple().exponent == b.as_tuple().exponent
    if isinstance(a, datetime.datetime):
        return a == b and (a.tzinfo is None) == (b.tzinfo is None)
    return a == b


def rows_of(stats: StatsColumns) -> dict[str, tuple]:
    return {
        k: (f, c, n, v, lo, hi)
        for k, f, c, n, v, lo, hi in zip(
            stats.keys.to_pylist(),
            stats.file_name.to_pylist(),
            stats.column_name.to_pylist(),
            stats.null_count.to_pylist(),
            stats.value_count.to_pylist(),
            python_values(stats.min),
            python_values(stats.max),
            strict=True,
        )
    }


def expected_rows(folded: dict[str, dict | None]) -> dict[str, tuple]:
    out = {}
    for key, rec in folded.items():
        if rec is None or not is_live(rec):
            continue
        cs = rec["ColumnStatsMetadata"]
        out[key] = (
            cs.get("fileName") or "",
            cs.get("columnName") or "",
            cs.get("nullCount"),
            cs.get("valueCount"),
            cs.get("minValue"),
            cs.get("maxValue"),
        )
    return out


def assert_same_rows(got: dict[str, tuple], want: dict[str, tuple]) -> None:
    assert sorted(got) == sorted(want)
    for key, row in want.items():
        mine = got[key]
        assert mine[:4] == row[:4], key
        assert same_value(mine[4], row[4]) and same_value(mine[5], row[5]), (key, mine, row)


def run_of(keys: list[str], values: list[bytes], schema: str = V9):
    return decode_stats_columns(cell_columns([k.encode() for k in keys], values), schema)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("schema", ["v9", "v8"])
def test_decoded_records_equal_the_record_decoder(seed: int, schema: str) -> None:
    rng = random.Random(seed)
    text = V9 if schema == "v9" else V8
    keys = sorted({f"k{rng.randrange(10**6):07d}" for _ in range(rng.randrange(1, 400))})
    records = [stats_record(rng, v9=schema == "v9") for _ in keys]
    values = [encode(r, text) for r in records]
    run = run_of(keys, values, text)
    assert run is not None
    got = merge_stats_runs([run], 6)
    assert got is not None
    want = expected_rows({k: record_wise(v, k, text) for k, v in zip(keys, values, strict=True)})
    assert want  # the records are live and decoded: the comparison below is not vacuous
    assert_same_rows(rows_of(got), want)


def test_every_kind_is_decoded() -> None:
    """The random records reach every kind (so the test above compares each of them)."""
    rng = random.Random(0)
    keys = [f"k{i:05d}" for i in range(3000)]
    values = [encode(stats_record(rng)) for _ in keys]
    run = run_of(keys, values)
    assert run is not None
    got = merge_stats_runs([run], 6)
    assert got is not None
    assert set(got.min.kind.tolist()) == set(range(10))


@pytest.mark.parametrize("seed", range(12))
def test_values_not_taken_are_refused(seed: int) -> None:
    rng = random.Random(seed)
    keys = [f"k{i:03d}" for i in range(40)]
    records = [stats_record(rng) for _ in keys]
    for r in records:
        r["ColumnStatsMetadata"]["isDeleted"] = False
    wrapper, ordinal, info, value = _unsupported(rng)
    bad = records[17]["ColumnStatsMetadata"]
    bad[rng.choice(["minValue", "maxValue"])] = (NS + wrapper, {"value": value})
    bad["valueType"] = None if ordinal is None else {"typeOrdinal": ordinal, "additionalInfo": info}
    values = [encode(r) for r in records]
    run = run_of(keys, values)
    assert run is None or merge_stats_runs([run], 6) is None
    records[17] = stats_record(random.Random(1))
    records[17]["ColumnStatsMetadata"]["isDeleted"] = False
    good = run_of(keys, [encode(r) for r in records])
    assert good is not None and merge_stats_runs([good], 6) is not None


def test_cut_padded_and_foreign_records_are_refused() -> None:
    rng = random.Random(3)
    keys = [f"k{i:03d}" for i in range(50)]
    records = [stats_record(rng) for _ in keys]
    values = [encode(r) for r in records]
    assert run_of(keys, values) is not None
    files_record = {
        **records[10],
        "filesystemMetadata": {"a": {"size": 1, "isDeleted": False}},
        "ColumnStatsMetadata": None,
    }
    for bad in (
        [*values[:10], values[10][:-1], *values[11:]],  # cut short
        [*values[:10], values[10] + b"\x00", *values[11:]],  # bytes left over
        [*values[:10], encode(files_record), *values[11:]],  # a files record
        [
            *values[:10],
            encode(
                {
                    **records[10],
                    "recordIndexMetadata": {
                        "partitionName": "x",
                        "fileIdHighBits": 1,
                        "fileIdLowBits": 2,
                        "fileIndex": 0,
                        "fileId": None,
                        "instantTime": None,
                        "fileIdEncoding": 0,
                        "position": None,
                    },
                }
            ),
            *values[11:],
        ],
        [*values[:10], b"\x02\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", *values[11:]],  # a runaway varint
        [*values[:10], values[10][:5], *values[11:]],
    ):
        assert run_of(keys, bad) is None
    # a record of another type than the partition's
    run = run_of(keys, [encode({**r, "type": 3 if i == 7 else 6}) for i, r in enumerate(records)])
    assert run is not None and merge_stats_runs([run], 6) is None
    # schemas of other shapes
    files_schema = json.loads(V9)
    files_schema["fields"] = [f for f in files_schema["fields"] if f["name"] != "SecondaryIndexMetadata"][:-2]
    assert stats_record_shape(json.dumps(files_schema)) is None
    assert stats_record_shape(V9) is not None and stats_record_shape(V8) is not None
    assert run_of(keys, values, V8) is None  # V9 bytes read with the V8 schema


@pytest.mark.parametrize("seed", range(10))
def test_merged_runs_equal_the_record_merge(seed: int) -> None:
    """Runs (a base file, then log blocks, some of them deletes) with keys written again: the merge
    equals folding the records with ``records.merge`` (deletes emptying a key), live ones kept."""
    rng = random.Random(seed)
    pool = [f"k{i:03d}" for i in range(rng.randrange(1, 80))]
    events: list = []
    folded: dict[str, dict | None] = {}
    for _ in range(rng.randrange(1, 7)):
        if rng.random() < 0.2:
            deleted = rng.sample(pool, rng.randrange(0, len(pool) + 1))
            events.append(Deletes(deleted))
            for k in deleted:
                folded[k] = None
            continue
        keys = sorted(rng.sample(pool, rng.randrange(1, len(pool) + 1)))
        records = []
        for _ in keys:
            r = stats_record(rng)
            cs = r["ColumnStatsMetadata"]
            cs["valueCount"] = rng.choice([None, 0, 7])  # sums stay int64 (else: refused)
            if rng.random() < 0.6:  # mergeable: numbers of one wrapper, so min/max fold
                cs["minValue"] = (NS + "LongWrapper", {"value": rng.randrange(-100, 100)})
                cs["maxValue"] = (NS + "LongWrapper", {"value": rng.randrange(-100, 100)})
                cs["valueType"] = {"typeOrdinal": 4, "additionalInfo": None}
                cs["isTightBound"] = rng.random() < 0.3
                cs["isDeleted"] = rng.random() < 0.1
            records.append(r)
        values = [encode(r) for r in records]
        run = run_of(keys, values)
        assert run is not None
        events.append(run)
        for k, v in zip(keys, values, strict=True):
            folded[k] = merge(folded.get(k), record_wise(v, k))
    got = merge_stats_runs(events, 6)
    assert got is not None
    assert_same_rows(rows_of(got), expected_rows(folded))


# --- the stats table: built from the columns = built from the records --------------------------

COLUMN_TYPES = {
    "i8": pa.int8(),
    "i32": pa.int32(),
    "i64": pa.int64(),
    "u64": pa.uint64(),
    "f32": pa.float32(),
    "f64": pa.float64(),
    "d": pa.decimal128(12, 3),
    "d256": pa.decimal256(40, 3),
    "s": pa.string(),
    "b": pa.binary(),
    "flag": pa.bool_(),
    "day": pa.date32(),
    "ts": pa.timestamp("us"),
    "tsz": pa.timestamp("us", tz="UTC"),
    "tsny": pa.timestamp("ms", tz="America/New_York"),
}


def _kind(t: pa.DataType) -> str:
    numeric = pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)
    return "number" if numeric else str(t)[:4]


def _value_for(t: pa.DataType, rng: random.Random, exact: bool) -> tuple[str, int | None, str | None, Any]:
    """A bound of a column of type ``t``; not ``exact``: one Arrow may not hold exactly in it."""
    if pa.types.is_integer(t):
        bits = t.bit_width
        if not exact:
            return "LongWrapper", 4, None, rng.choice([min(2 ** (bits - 1), 2**63 - 1), -(2**63)])
        low = 0 if pa.types.is_unsigned_integer(t) else -(2 ** (bits - 1))
        return "LongWrapper", 4, None, rng.choice([0, 5, 2 ** (bits - 1) - 1, low])
    if pa.types.is_floating(t):
        if not exact:
            return "LongWrapper", 4, None, 2**53 + 1
        return rng.choice(
            [
                ("DoubleWrapper", 6, None, rng.choice([0.5, -0.0, float("nan"), 1e10])),
                ("LongWrapper", 4, None, rng.choice([3, -(2**53)])),
            ]
        )
    if pa.types.is_decimal(t):
        info = "12,3" if exact else "12,2"
        return "BytesWrapper", 10, info, rng.choice([1234, -5, 0]).to_bytes(8, "big", signed=True)
    if pa.types.is_string(t):
        return "StringWrapper", 7, None, rng.choice(["a", "é", ""])
    if pa.types.is_binary(t):
        return "BytesWrapper", 8, None, rng.choice([b"", b"\xff", b"a"])
    if pa.types.is_boolean(t):
        return "BooleanWrapper", 2, None, rng.random() < 0.5
    if pa.types.is_date(t):
        return "IntWrapper", 12, None, rng.randrange(-1000, 1000)
    return "LongWrapper", rng.choice([16, 19]), None, rng.randrange(-(10**15), 10**15)


def stats_table_matches(seed: int) -> bool:
    """Whether the column-wise table was built (when it is, it equals the record-built one)."""
    rng = random.Random(seed)
    schema = pa.schema([pa.field(n, t) for n, t in COLUMN_TYPES.items()])
    partitions = [f"p{i}" for i in range(rng.randrange(1, 60))]
    names = [*COLUMN_TYPES, "gone"]
    keys, values, entries = [], [], []
    for p in partitions:
        for name in rng.sample(names, rng.randrange(0, len(names))):
            t = COLUMN_TYPES.get(name, pa.int64())
            # mostly the column's own kind; sometimes another (kept as null) or one not exact
            # sometimes a bound of another kind (kept as null), rarely one not held exactly
            others = [o for o in COLUMN_TYPES.values() if _kind(o) != _kind(t)]
            source = rng.choice(others) if rng.random() < 0.15 else t
            chosen = _value_for(source, rng, exact=rng.random() > 0.002)
            record = stats_record(rng)
            cs = record["ColumnStatsMetadata"]
            cs.update(
                fileName=p,
                columnName=name,
                minValue=(NS + chosen[0], {"value": chosen[3]}),
                maxValue=(NS + chosen[0], {"value": chosen[3]}) if rng.random() < 0.9 else None,
                valueType={"typeOrdinal": chosen[1], "additionalInfo": chosen[2]},
                isDeleted=False,
            )
            keys.append(K.partition_stats_key(name, p))
            values.append(encode(record))
        entries.append(p)
    order = sorted(range(len(keys)), key=lambda i: keys[i])
    keys, values = [keys[i] for i in order], [values[i] for i in order]
    run = run_of(keys, values)
    assert run is not None
    columns = merge_stats_runs([run], 6)
    assert columns is not None
    by_id = {K.partition_index_id(p): p for p in partitions}
    partition = pa.array([by_id[k[12:24]] for k in columns.keys.to_pylist()], pa.string())
    got = stats_table_of_columns(columns, pa.table({"p": partition}), pa.table({"p": entries}), schema)
    stats = [column_stat_of(by_id[k[12:24]], record_wise(v, k)) for k, v in zip(keys, values, strict=True)]
    stats.sort(key=lambda s: (s.column_name, s.partition_path, s.file_name))
    rows = entry_rows(entries)
    assert rows is not None
    want = build_stats_table(stats, lambda s: s.partition_path, rows, schema)
    if got is None:
        return False
    assert not want.scalar_rows
    assert dict(got.bound_types) == dict(want.bound_types)
    assert got.table.schema == want.table.schema
    assert got.table.equals(want.table)
    return True


def test_stats_table_equals_the_record_built_one() -> None:
    """Random stats of every column type, mostly of the column's kind: the column-wise table
    equals the one built from the records, and is built for most of them (it refuses only bounds
    it cannot hold exactly, which the record-built table sends to the scalar evaluator)."""
    built = sum(stats_table_matches(seed) for seed in range(40))
    assert built >= 25


# --- fixture tables: column-wise stats and plans = record-wise ---------------------------------

MDT_ARCHIVES = [a for a in archives() if "v6_empty" not in a]


def _filters(values: list[Any], column: str) -> list[list[tuple[str, str, Any]]]:
    out = []
    for v in values[:3]:
        for op in ("=", "<", ">=", "!="):
            out.append([(column, op, v)])
    return out


@pytest.mark.parametrize("archive", MDT_ARCHIVES)
def test_fixture_stats_and_plans_column_wise(archive: str, table_path, monkeypatch) -> None:
    path = str(table_path(archive))
    table = hudi_md.open_table(path)
    mdt = table.metadata_table
    if mdt is None or not {"column_stats", "partition_stats"} & mdt.available_partitions:
        pytest.skip("no stats in the metadata table")
    partitions = table.partitions()
    compared = 0
    for index in sorted({"column_stats", "partition_stats"} & mdt.available_partitions):
        every = mdt.stats._read_stats(index, None, partitions)
        columns = sorted({s.column_name for s in every})
        found = mdt.stats.stats_columns(index, columns, partitions)
        assert found is not None  # every stats record Hudi wrote takes the column-wise path
        stats, partition = found
        got = {
            (p, f, c): (n, v, lo, hi)
            for p, f, c, n, v, lo, hi in zip(
                partition.to_pylist(),
                stats.file_name.to_pylist(),
                stats.column_name.to_pylist(),
                stats.null_count.to_pylist(),
                stats.value_count.to_pylist(),
                python_values(stats.min),
                python_values(stats.max),
                strict=True,
            )
        }
        want = {
            (s.partition_path, s.file_name, s.column_name): (
                s.null_count,
                s.value_count,
                s.min_value,
                s.max_value,
            )
            for s in mdt.stats._read_stats(index, columns, partitions)
        }
        assert sorted(got) == sorted(want)
        for k, row in want.items():
            assert got[k][:2] == row[:2] and same_value(got[k][2], row[2]) and same_value(got[k][3], row[3])
        compared += len(want)
    assert compared
    # plans: every filter on a column with stats, the Arrow pruning on, column-wise vs record-wise
    monkeypatch.setattr(planner, "ARROW_MIN_ENTRIES", 0)
    schema = table.schema
    samples: dict[str, list[Any]] = {}
    for s in mdt.stats._read_stats(
        "column_stats" if "column_stats" in mdt.available_partitions else "partition_stats", None, partitions
    ):
        if s.min_value is not None and schema.get_field_index(s.column_name) >= 0:
            samples.setdefault(s.column_name, []).append(s.min_value)
    used = 0
    # one table each way, opened once: its MDT reader keeps the stats it decoded across plans
    ours_table, theirs_table = hudi_md.open_table(path), hudi_md.open_table(path)
    for column, values in sorted(samples.items()):
        for f in _filters(values, column):
            try:
                ours = ours_table.plan(f)
            except Exception:  # a literal the filter syntax does not take for this column
                continue
            with monkeypatch.context() as m:
                m.setattr(StatsIndex, "stats_columns", lambda *a, **k: None)
                theirs = theirs_table.plan(f)
            assert sorted(s.file_id for s in ours.slices) == sorted(s.file_id for s in theirs.slices), (
                column,
                f,
            )
            assert ours.counters == theirs.counters
            used += 1
    assert used


def test_column_wise_path_runs_in_fixture_plans(table_path, monkeypatch) -> None:
    """The plans compared above did take the column-wise path."""
    archive = next(a for a in MDT_ARCHIVES if "v9_txns_simple_meta" in a)
    path = str(table_path(archive))
    monkeypatch.setattr(planner, "ARROW_MIN_ENTRIES", 0)
    calls: list[Any] = []
    original = StatsIndex.stats_columns

    def spy(self, *args):
        out = original(self, *args)
        calls.append(out)
        return out

    monkeypatch.setattr(StatsIndex, "stats_columns", spy)
    table = hudi_md.open_table(path)
    column = next(f.name for f in table.schema if pa.types.is_integer(f.type) and not f.name.startswith("_"))
    table.plan([(column, ">=", 0)])
    assert calls and all(c is not None for c in calls)
    assert isinstance(calls[0][0], StatsColumns)
