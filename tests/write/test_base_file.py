"""Base Parquet files as Hudi 1.1 writes them: schemas, footers, column statistics, and what
pyarrow and Spark read back. Hudi's own files in the fixtures are the reference throughout."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import hudi_md
from hudi_md.errors import InvalidOptionError
from hudi_md.index.bloom import SIMPLE, BloomFilter
from hudi_md.storage.base import Storage
from hudi_md.write.base_file import (
    DEFAULT_PAGE_SIZE,
    META_COLUMNS,
    add_meta_columns,
    column_ranges_from_parquet,
    columns_to_index,
    dictionary_columns,
    write_base_file,
)
from hudi_md.write.schema import (
    META_FIELDS,
    arrow_to_avro_schema,
    avro_schema_json,
    with_meta_fields,
    writer_schema,
)

INSTANT = "20260307162434124"

# Fixture tables whose MDT has a column_stats partition (v9 written by Hudi 1.1.1, v8 by 1.0.x).
STATS_TABLES = [
    "sample_table/cow/v9_txns_simple_meta.zip",
    "sample_table/cow/v9_txns_complex_meta.zip",
    "sample_table/cow/v9_txns_nonpart_meta.zip",
    "sample_table/cow/v9_timebasedkeygen_nonhivestyle.zip",
    "sample_table/mor/avro/v9_txns_simple_meta.zip",
    "sample_table/mor/avro/v9_txns_complex_meta.zip",
    "sample_table/mor/avro/v9_txns_nonpart_meta.zip",
    "quickstart_trips_table/mor/avro/v8_trips_8i3u1d.zip",
]


# --- helpers -------------------------------------------------------------------------------------------


def _base_files(table: Path) -> list[Path]:
    return [p for p in sorted(table.rglob("*.parquet")) if ".hoodie" not in p.relative_to(table).parts]


def _properties(table: Path) -> dict[str, str]:
    out = {}
    for line in (table / ".hoodie" / "hoodie.properties").read_text().splitlines():
        if line and not line.startswith("#") and "=" in line:
            key, value = line.split("=", 1)
            out[key] = re.sub(r"\\(.)", r"\1", value)  # Java properties escapes (\: and \=)
    return out


def _commit_schemas(table: Path) -> set[str]:
    timeline = table / ".hoodie" / "timeline"
    folder = timeline if timeline.is_dir() else table / ".hoodie"
    out = set()
    for f in folder.iterdir():
        if f.suffix in (".commit", ".deltacommit", ".replacecommit") or f.name.endswith("commit"):
            try:
                schema = json.loads(f.read_text()).get("extraMetadata", {}).get("schema")
            except (UnicodeDecodeError, ValueError):
                continue  # v8+ commits that are Avro, not JSON
            if schema:
                out.add(schema)
    return out


def _legacy_lists_nullable(t: pa.DataType) -> pa.DataType:
    """parquet-avro's 2-level lists (``repeated group array``) cannot say whether elements may be
    null, so pyarrow reads them as non-null; Spark's DDL arrays (and the create schema) allow nulls."""
    if pa.types.is_list(t):
        return pa.list_(pa.field("element", _legacy_lists_nullable(t.value_type), True))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _legacy_lists_nullable(f.type), f.nullable) for f in t])
    if pa.types.is_map(t):
        item = t.item_field
        return pa.map_(t.key_type, pa.field("value", _legacy_lists_nullable(item.type), item.nullable))
    return t


def _sample_data(n: int = 6) -> pa.Table:
    """One column of every type Hudi-on-Spark writes, with nulls."""

    def nth_null(values: list[Any], every: int = 4) -> list[Any]:
        return [None if i % every == every - 1 else v for i, v in enumerate(values)]

    ts0 = dt.datetime(2024, 1, 15, 10, 30, tzinfo=dt.timezone.utc)
    return pa.table(
        {
            "id": pa.array([f"TXN-{i:03d}" for i in range(n)], pa.string()),
            "i8": pa.array(nth_null([i - 3 for i in range(n)]), pa.int8()),
            "i16": pa.array([i * 1000 for i in range(n)], pa.int16()),
            "i32": pa.array(nth_null([i * 100000 for i in range(n)]), pa.int32()),
            "i64": pa.array([1700000000000 + i for i in range(n)], pa.int64()),
            "f32": pa.array(nth_null([i / 4 for i in range(n)]), pa.float32()),
            "f64": pa.array([i / 3 for i in range(n)], pa.float64()),
            "flag": pa.array(nth_null([i % 2 == 0 for i in range(n)]), pa.bool_()),
            "amount": pa.array([Decimal(f"{1250 + i}.25") for i in range(n)], pa.decimal128(15, 2)),
            "fee": pa.array(nth_null([Decimal(f"{i}.50") for i in range(n)]), pa.decimal128(10, 2)),
            "big": pa.array([Decimal(f"{i}.0123456789") for i in range(n)], pa.decimal128(38, 10)),
            "d": pa.array([dt.date(2024, 1, 15) + dt.timedelta(days=i) for i in range(n)], pa.date32()),
            "ts": pa.array(
                nth_null([ts0 + dt.timedelta(hours=i) for i in range(n)]), pa.timestamp("us", "UTC")
            ),
            "ts_ntz": pa.array([dt.datetime(2024, 2, 1, 8, i) for i in range(n)], pa.timestamp("us")),
            "bin": pa.array(nth_null([bytes([i, 255 - i]) for i in range(n)]), pa.binary()),
            "s": pa.array(
                nth_null([{"a": f"a{i}", "b": {"c": i}} for i in range(n)], 3),
                pa.struct([("a", pa.string()), ("b", pa.struct([("c", pa.int32())]))]),
            ),
            "arr": pa.array(
                [[{"x": f"x{i}", "y": i}, {"x": None, "y": -i}] if i % 3 else None for i in range(n)],
                pa.list_(pa.struct([("x", pa.string()), ("y", pa.int32())])),
            ),
            "tags": pa.array([["t", None] if i % 2 else [] for i in range(n)], pa.list_(pa.string())),
            "m": pa.array(
                [[("k1", {"p": 1.5 * i, "q": True}), ("k2", None)] if i % 2 else None for i in range(n)],
                pa.map_(pa.string(), pa.struct([("p", pa.float64()), ("q", pa.bool_())])),
            ),
            "region": pa.array(["us"] * n, pa.string()),
        }
    )


def _schema_json(data: pa.Table) -> str:
    return avro_schema_json(with_meta_fields(arrow_to_avro_schema(data.schema, "t_record", "hoodie.t")))


def _write(
    tmp_path: Path, data: pa.Table, bloom: BloomFilter | None, **kw: Any
) -> tuple[Path, Any, pa.Table]:
    name = f"a079bdb3-731c-4894-b855-abfcd6921007-0_3-27-53_{INSTANT}.parquet"
    table = add_meta_columns(
        data,
        instant=INSTANT,
        partition_path="region=us",
        file_name=name,
        record_keys=data.column("id"),
        task_partition_id=3,
    )
    result = write_base_file(
        Storage(str(tmp_path)),
        f"region=us/{name}",
        table,
        avro_schema_json=_schema_json(data),
        bloom=bloom,
        **kw,
    )
    return tmp_path / "region=us" / name, result, table


# --- schemas -----------------------------------------------------------------------------------------


def test_arrow_schema_of_every_fixture_base_file_gives_hudis_avro_schemas(
    all_archives: list[str], table_path: Callable[[str], Path]
) -> None:
    checked_files = checked_commits = 0
    for archive in all_archives:
        table = table_path(archive)
        files = _base_files(table)
        if not files:
            continue
        create_text = _properties(table)["hoodie.table.create.schema"]
        create = json.loads(create_text)
        for path in files:
            pf = pq.ParquetFile(path)
            fields = [
                pa.field(f.name, _legacy_lists_nullable(f.type), f.nullable)
                for f in pf.schema_arrow
                if f.name not in META_COLUMNS
            ]
            ours = arrow_to_avro_schema(pa.schema(fields), create["name"], create["namespace"])
            # Table form: byte-identical to hoodie.table.create.schema.
            assert avro_schema_json(ours) == create_text, path
            footer = pf.metadata.metadata.get(b"parquet.avro.schema")
            if footer is not None:
                # Writer form plus meta fields: byte-identical to the footer; idempotent.
                assert avro_schema_json(with_meta_fields(writer_schema(ours))) == footer.decode(), path
                assert avro_schema_json(writer_schema(json.loads(footer))) == footer.decode()
            checked_files += 1
        for commit_schema in _commit_schemas(table):
            assert avro_schema_json(writer_schema(create)) == commit_schema, archive
            checked_commits += 1
    assert checked_files >= 150 and checked_commits >= 5


def test_meta_fields_and_naming_rules() -> None:
    assert [f["name"] for f in META_FIELDS] == META_COLUMNS
    schema = pa.schema(
        [
            pa.field("k", pa.string(), nullable=False),
            pa.field("s", pa.struct([pa.field("amt", pa.decimal128(5, 1))])),
            pa.field("l", pa.list_(pa.field("element", pa.int64(), nullable=False))),
        ]
    )
    out = arrow_to_avro_schema(schema, "r", "ns")
    assert out == {
        "type": "record",
        "name": "r",
        "namespace": "ns",
        "fields": [
            {"name": "k", "type": "string"},
            {
                "name": "s",
                "type": [
                    {
                        "type": "record",
                        "name": "s",
                        "namespace": "ns.r",
                        "fields": [
                            {
                                "name": "amt",
                                "type": [
                                    {
                                        "type": "fixed",
                                        "name": "fixed",
                                        "namespace": "ns.r.s.amt",
                                        "size": 3,
                                        "logicalType": "decimal",
                                        "precision": 5,
                                        "scale": 1,
                                    },
                                    "null",
                                ],
                            }
                        ],
                    },
                    "null",
                ],
            },
            {"name": "l", "type": [{"type": "array", "items": "long"}, "null"]},
        ],
    }
    w = writer_schema(out)
    assert w["fields"][0] == {"name": "k", "type": "string"}  # required: no default
    assert w["fields"][2] == {
        "name": "l",
        "type": ["null", {"type": "array", "items": "long"}],
        "default": None,
    }
    assert with_meta_fields(with_meta_fields(out)) == with_meta_fields(out)


# --- meta columns --------------------------------------------------------------------------------------


def test_add_meta_columns() -> None:
    data = pa.table({"id": ["b", "a"], "_hoodie_commit_time": ["old", "old"], "v": [1, 2]})
    out = add_meta_columns(
        data,
        instant=INSTANT,
        partition_path="",
        file_name="f.parquet",
        record_keys=pa.array(["b", "a"]),
        task_partition_id=2,
    )
    assert out.column_names == [*META_COLUMNS, "id", "v"]
    assert out.to_pylist()[1] == {
        "_hoodie_commit_time": INSTANT,
        "_hoodie_commit_seqno": f"{INSTANT}_2_1",
        "_hoodie_record_key": "a",
        "_hoodie_partition_path": "",
        "_hoodie_file_name": "f.parquet",
        "id": "a",
        "v": 2,
    }
    with pytest.raises(InvalidOptionError):
        add_meta_columns(
            data, instant=INSTANT, partition_path="", file_name="f", record_keys=["x"], task_partition_id=0
        )


# --- writing -------------------------------------------------------------------------------------------


def test_written_file_reads_back_in_pyarrow_and_spark(tmp_path: Path, spark: Any) -> None:
    data = _sample_data()
    path, result, table = _write(tmp_path, data, BloomFilter.create())
    assert result.num_records == 6 and result.file_size == path.stat().st_size
    assert result.path == f"region=us/{path.name}"

    back = pq.read_table(path)
    assert back.column_names == table.column_names
    assert back.to_pylist() == table.to_pylist()
    assert back.schema.field("i8").type == pa.int32()  # Avro int, as parquet-avro writes it

    rows = spark.read.parquet(str(path)).collect()
    assert len(rows) == table.num_rows
    for got, want in zip(rows, table.to_pylist(), strict=True):
        got_d = got.asDict(recursive=True)
        assert got_d.keys() == want.keys()
        for name, value in want.items():
            assert _spark_value(got_d[name], name) == _spark_value(value, name), (name, got_d[name], value)
    dtypes = dict(spark.read.parquet(str(path)).dtypes)
    assert (
        dtypes["amount"] == "decimal(15,2)"
        and dtypes["ts"] == "timestamp"
        and dtypes["ts_ntz"] == "timestamp_ntz"
    )
    assert dtypes["i8"] == "int" and dtypes["d"] == "date" and dtypes["bin"] == "binary"


def _spark_value(v: Any, name: str) -> Any:
    """Values as comparable plain data: Spark returns timestamps as naive local datetimes,
    binaries as bytearray and maps as dicts (pyarrow gives lists of pairs)."""
    if isinstance(v, dt.datetime):
        if name == "ts":
            # TimestampType: an instant; compare epoch microseconds.
            return round((v if v.tzinfo else v.astimezone()).timestamp() * 1_000_000)
        return v.replace(tzinfo=None)
    if isinstance(v, (bytes, bytearray)):
        return bytes(v)
    if name == "m" and isinstance(v, list):
        return dict(v)
    if isinstance(v, dict):
        return {k: _spark_value(x, k) for k, x in v.items()}
    if isinstance(v, list):
        return [_spark_value(x, name) for x in v]
    return v


def test_parquet_layout_matches_hudis_files(tmp_path: Path, table_path: Callable[[str], Path]) -> None:
    path, _, _ = _write(tmp_path, _sample_data(), BloomFilter.create())
    ours = pq.ParquetFile(path)
    fixture = table_path("sample_table/cow/v9_txns_simple_meta.zip")
    (theirs_path,) = [
        p for p in _base_files(fixture) if p.name.endswith("_1-27-53_20260307162434124.parquet")
    ]
    theirs = pq.ParquetFile(theirs_path)

    def leaf(pf: pq.ParquetFile, name: str) -> Any:
        return pf.schema.column(pf.schema.names.index(name))

    # Same physical + logical types as Hudi gave the same kinds of columns.
    pairs = {
        "id": "txn_id",
        "i64": "txn_ts",
        "ts": "txn_datetime",
        "d": "txn_date",
        "amount": "amount",
        "fee": "fee_amount",
        "flag": "is_international",
        "region": "region",
    }
    for mine, hudis in pairs.items():
        a, b = leaf(ours, mine), leaf(theirs, hudis)
        assert (a.physical_type, str(a.logical_type), a.converted_type, a.max_definition_level) == (
            b.physical_type,
            str(b.logical_type),
            b.converted_type,
            b.max_definition_level,
        ), mine
    assert leaf(ours, "amount").length == 7 and leaf(ours, "fee").length == 5  # FIXED_LEN_BYTE_ARRAY(7/5)
    md = ours.metadata
    assert md.format_version == theirs.metadata.format_version == "1.0"
    assert md.num_row_groups == 1
    rg = md.row_group(0)
    for i in range(rg.num_columns):
        chunk = rg.column(i)
        assert chunk.compression == "GZIP"
        assert chunk.has_column_index and chunk.has_offset_index  # parquet-mr writes page indexes
        assert "RLE_DICTIONARY" not in chunk.encodings  # v1 pages: PLAIN_DICTIONARY like parquet-mr
    assert "PLAIN_DICTIONARY" in rg.column(0).encodings


def test_footer_is_what_hudi_writes(tmp_path: Path, table_path: Callable[[str], Path]) -> None:
    data = _sample_data()
    path, result, table = _write(tmp_path, data, BloomFilter.create())
    footer = {k.decode(): v.decode() for k, v in pq.ParquetFile(path).metadata.metadata.items()}
    assert set(footer) == {
        "parquet.avro.schema",
        "writer.model.name",
        "hoodie_bloom_filter_type_code",
        "org.apache.hudi.bloomfilter",
        "hoodie_min_record_key",
        "hoodie_max_record_key",
    }
    assert footer["writer.model.name"] == "avro"
    assert footer["parquet.avro.schema"] == avro_schema_json(writer_schema(json.loads(_schema_json(data))))
    assert footer["hoodie_bloom_filter_type_code"] == "DYNAMIC_V0"
    assert (footer["hoodie_min_record_key"], footer["hoodie_max_record_key"]) == ("TXN-000", "TXN-005")
    assert (result.min_record_key, result.max_record_key) == ("TXN-000", "TXN-005")
    bloom = BloomFilter.deserialize(
        footer["org.apache.hudi.bloomfilter"], footer["hoodie_bloom_filter_type_code"]
    )
    keys = table.column("_hoodie_record_key").to_pylist()
    assert all(bloom.might_contain(k) for k in keys) and not bloom.might_contain("TXN-999")
    # Physically in parquet-mr's order (pyarrow's reader hands them back hashed).
    raw = path.read_bytes()
    order = [
        "parquet.avro.schema",
        "writer.model.name",
        "hoodie_bloom_filter_type_code",
        "org.apache.hudi.bloomfilter",
        "hoodie_min_record_key",
        "hoodie_max_record_key",
    ]
    assert sorted(order, key=lambda k: raw.rfind(k.encode())) == order

    # Rewriting a fixture file gives its footer key/values exactly.
    fixture = table_path("sample_table/cow/v9_txns_simple_meta.zip")
    for src in _base_files(fixture):
        theirs = {k.decode(): v.decode() for k, v in pq.ParquetFile(src).metadata.metadata.items()}
        if "parquet.avro.schema" not in theirs:
            continue  # clustering output, written by Hudi's Spark row writer
        rewritten = write_base_file(
            Storage(str(tmp_path)),
            f"copy/{src.name}",
            pq.read_table(src),
            avro_schema_json=theirs["parquet.avro.schema"],
            bloom=BloomFilter.create(),
        )
        mine = {
            k.decode(): v.decode()
            for k, v in pq.ParquetFile(tmp_path / rewritten.path).metadata.metadata.items()
        }
        assert mine == theirs, src


def test_footer_without_bloom_or_with_simple_bloom(tmp_path: Path) -> None:
    path, result, _ = _write(tmp_path / "none", _sample_data(), None)
    footer = pq.ParquetFile(path).metadata.metadata
    # HoodieAvroWriteSupport writes keys and min/max only through its bloom filter support.
    assert set(footer) == {b"parquet.avro.schema", b"writer.model.name"}
    assert result.min_record_key == "TXN-000"
    path, _, _ = _write(tmp_path / "simple", _sample_data(), BloomFilter.create(type_code=SIMPLE))
    footer = pq.ParquetFile(path).metadata.metadata
    assert b"hoodie_bloom_filter_type_code" not in footer  # only DYNAMIC filters name their type
    assert BloomFilter.deserialize(footer[b"org.apache.hudi.bloomfilter"].decode()).might_contain("TXN-003")


def test_write_rejects_what_the_schema_cannot_hold(tmp_path: Path) -> None:
    data = _sample_data()
    schema = _schema_json(data)
    storage = Storage(str(tmp_path))
    with pytest.raises(InvalidOptionError, match="not in the Avro schema"):
        write_base_file(
            storage,
            "x.parquet",
            data.append_column("extra", pa.array([1] * 6)),
            avro_schema_json=schema,
            bloom=None,
        )
    required = json.loads(schema)
    required["fields"][5]["type"] = "string"  # id, made non-nullable
    nulls = data.set_column(0, "id", pa.array([None] * 6, pa.string()))
    with pytest.raises(InvalidOptionError, match="not nullable"):
        write_base_file(storage, "y.parquet", nulls, avro_schema_json=json.dumps(required), bloom=None)


# --- column statistics ------------------------------------------------------------------------------------


def test_column_ranges_equal_pyarrow_statistics(tmp_path: Path) -> None:
    data = _sample_data()
    path, result, table = _write(tmp_path, data, BloomFilter.create())
    md = pq.ParquetFile(path).metadata
    assert result.column_stats == column_ranges_from_parquet(md)
    rg = md.row_group(0)
    assert set(result.column_stats) == {rg.column(i).path_in_schema for i in range(rg.num_columns)}
    for i in range(rg.num_columns):
        chunk = rg.column(i)
        r = result.column_stats[chunk.path_in_schema]
        stats = chunk.statistics
        assert (r.min_value, r.max_value) == (stats.min, stats.max)
        assert (r.null_count, r.value_count) == (stats.null_count, chunk.num_values)
        assert (r.total_size, r.total_uncompressed_size) == (
            chunk.total_compressed_size,
            chunk.total_uncompressed_size,
        )
    for name in ("i8", "i32", "f32", "amount", "fee", "d", "ts", "ts_ntz", "id", "flag"):
        mm = pc.min_max(table.column(name))
        r = result.column_stats[name]
        assert (r.min_value, r.max_value) == (mm["min"].as_py(), mm["max"].as_py()), name
        assert (r.null_count, r.value_count) == (table.column(name).null_count, table.num_rows)
    assert result.column_stats["s.b.c"].null_count == 2  # leaf path of a nested column


def test_column_ranges_merge_row_groups_like_hudi(tmp_path: Path) -> None:
    n = 3000
    data = pa.table(
        {
            "id": [f"k{i:05d}" for i in range(n)],
            "v": [None if i % 7 == 0 else (i * 37) % 1001 - 500 for i in range(n)],
            "s": [("\uff61" if i == 5 else "\U0001f600" if i == n - 5 else f"s{i}") for i in range(n)],
        }
    )
    path, result, _ = _write(tmp_path, data, None, block_size=20_000)
    md = pq.ParquetFile(path).metadata
    assert md.num_row_groups > 3
    r = result.column_stats["v"]
    mm = pc.min_max(data.column("v"))
    assert (r.min_value, r.max_value) == (mm["min"].as_py(), mm["max"].as_py()) == (-499, 500)
    assert (r.null_count, r.value_count) == (data.column("v").null_count, n)
    chunks = [md.row_group(g).column(md.schema.names.index("v")) for g in range(md.num_row_groups)]
    assert r.total_size == sum(c.total_compressed_size for c in chunks)
    assert r.total_uncompressed_size == sum(c.total_uncompressed_size for c in chunks)
    # Hudi merges row-group ranges with Java's String.compareTo (UTF-16 code units), where an
    # astral character (a surrogate pair, D83D..) sorts below U+FF61; UTF-8 bytes and Python's
    # code points say the opposite.
    s = result.column_stats["s"]
    assert s.max_value == "\uff61" and s.min_value == "s0"
    assert column_ranges_from_parquet(md, ["v"]) == {"v": r}


@pytest.mark.parametrize("archive", STATS_TABLES)
def test_column_ranges_match_the_fixture_mdt(archive: str, table_path: Callable[[str], Path]) -> None:
    table = table_path(archive)
    stats = hudi_md.open_table(str(table)).metadata_table.stats.column_stats()
    checked = 0
    for s in stats:
        if not s.file_name.endswith(".parquet"):
            continue  # MOR log files get stats computed from records, not from a footer
        path = table / s.partition_path / s.file_name
        got = column_ranges_from_parquet(pq.ParquetFile(path).metadata, [s.column_name])[s.column_name]
        assert (got.min_value, got.max_value, got.null_count, got.value_count) == (
            s.min_value,
            s.max_value,
            s.null_count,
            s.value_count,
        ), (path, s)
        assert (got.total_size, got.total_uncompressed_size) == (s.total_size, s.total_uncompressed_size)
        checked += 1
    assert checked >= 50


# --- columns to index ----------------------------------------------------------------------------------


@pytest.mark.parametrize("archive", [a for a in STATS_TABLES if "/v9_" in a])
def test_columns_to_index_match_index_json(archive: str, table_path: Callable[[str], Path]) -> None:
    table = table_path(archive)
    index = json.loads((table / ".hoodie" / ".index_defs" / "index.json").read_text())
    expected = index["indexDefinitions"]["column_stats"]["sourceFields"]
    schema = pq.read_schema(_base_files(table)[0])
    assert columns_to_index(schema) == expected


def test_columns_to_index_rules() -> None:
    data = _sample_data()
    schema = add_meta_columns(
        data,
        instant=INSTANT,
        partition_path="",
        file_name="f",
        record_keys=data.column("id"),
        task_partition_id=0,
    ).schema
    meta = ["_hoodie_commit_time", "_hoodie_partition_path", "_hoodie_record_key"]
    # Structs, lists, maps and decimal(38,10) (wider than decimal(30,15) holds) are skipped.
    supported = [
        "id",
        "i8",
        "i16",
        "i32",
        "i64",
        "f32",
        "f64",
        "flag",
        "amount",
        "fee",
        "d",
        "ts",
        "ts_ntz",
        "bin",
        "region",
    ]
    assert columns_to_index(schema) == meta + supported
    assert columns_to_index(schema, max_columns=3) == [*meta, "id", "i8", "i16"]
    assert columns_to_index(schema, meta_fields=False, max_columns=2) == ["id", "i8"]
    # Spark records: no binary and no decimals (Avro fixed).
    assert "bin" not in columns_to_index(schema, record_type="SPARK")
    assert "amount" not in columns_to_index(schema, record_type="SPARK")
    listed = columns_to_index(schema, column_list=["ts", "s.b.c", "_hoodie_record_key", "arr", "s", "ts"])
    assert listed == [*meta, "ts", "s.b.c"]
    with pytest.raises(InvalidOptionError):
        columns_to_index(schema, column_list=["nope"])


def test_dictionary_columns_are_parquet_mrs_choice_on_every_fixture_file(
    all_archives: list[str], table_path: Callable[[str], Path]
) -> None:
    """parquet-mr keeps a column's dictionary only when it beats plain encoding on the first page:
    on every base file Apache Hudi wrote in the fixtures, ``dictionary_columns`` keeps exactly the
    top-level columns parquet-mr kept (nested ones always keep theirs here)."""
    checked = kept = dropped = 0
    for archive in all_archives:
        for path in _base_files(table_path(archive)):
            pf = pq.ParquetFile(path)
            if "parquet-mr" not in (pf.metadata.created_by or "") or pf.metadata.num_row_groups != 1:
                continue
            data = pf.read()
            ours = set(dictionary_columns(data, DEFAULT_PAGE_SIZE))
            rg = pf.metadata.row_group(0)
            for i in range(rg.num_columns):
                chunk = rg.column(i)
                name = chunk.path_in_schema
                if "." in name or pa.types.is_boolean(data.schema.field(name).type):
                    continue
                theirs = chunk.dictionary_page_offset is not None
                assert (name in ours) == theirs, (path.name, name, theirs)
                checked += 1
                kept += theirs
                dropped += not theirs
    assert checked > 200 and kept > 20 and dropped > 20, (checked, kept, dropped)
