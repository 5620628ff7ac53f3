"""Odd partition values, in both directions with Apache Hudi in the loop (issue 9).

A seeded generator (``tests/partition_values.py``) covers space, ``+``, ``%``, ``=``, ``/`` (with URL
encoding), ``#``, ``?``, ``:``, Hive's other special characters, non-ASCII (Latin, CJK, emoji), empty,
null, the literals ``default`` and ``__HIVE_DEFAULT_PARTITION__`` and an integer level, over URL
encoding on/off × hive-style on/off × one, two and three levels × COW/MOR. For each layout:

* ``key generator``: Hudi's own ``SimpleKeyGenerator`` / ``ComplexKeyGenerator`` (py4j, on Avro
  records, as Hudi's upsert path calls them) give every row the partition path and record key
  hudi-md gives it;
* ``hudi-md writes``: Hudi's snapshot read (MDT on and off) equals the model; Hudi's validator checks
  and ``hudi-md metadata validate`` pass; Hudi's own upsert of the same keys lands in the same file
  groups (no duplicates) and hudi-md then reads what Hudi reads;
* ``Hudi writes``: the same partitions, and hudi-md's read with filters on every partition column
  (``=``, ``!=``, ``in``, ranges) equals Hudi's read with the same predicate; ``metadata validate``
  passes on Hudi's table (record index included).

The CI slice runs two layouts with few rows; ``scripts/integration`` runs all with more
(``HUDI_MD_PARTITION_ROWS`` overrides the row count).
"""

from __future__ import annotations

import datetime
import decimal
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from hudi_oracle import summarize

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from partition_values import (
    COLUMNS,
    PartitionLayout,
    as_hudi_reads,
    as_read,
    filter_cases,
    generate_rows,
    matches,
    spark_predicate,
    to_arrow,
    to_spark,
    updated,
)

# CI: the first report (MOR, two levels, hive style, URL-encoded); the full run has every
# layout (COW, one level, plain, raw among them).
CI_LAYOUTS = {PartitionLayout("MERGE_ON_READ", 2, True, True)}
# Key generators: every layout. Round trips: each (levels, hive style, URL encoding) once, COW and
# MOR alternating (a write and read through Spark costs about a minute each).
LAYOUTS = [
    PartitionLayout(t, levels, hive, url)
    for t in ("COPY_ON_WRITE", "MERGE_ON_READ")
    for levels in (1, 2, 3)
    for hive in (False, True)
    for url in (False, True)
]
ROUND_TRIP_LAYOUTS = [
    lay
    for lay in LAYOUTS
    if (lay.table_type == "MERGE_ON_READ") == ((lay.levels + lay.hive_style + lay.url_encode) % 2 == 0)
]
READ_COLUMNS = ["_hoodie_record_key", "_hoodie_partition_path", *COLUMNS]


def _params(layouts: list[PartitionLayout] = LAYOUTS) -> list[Any]:
    out = []
    for lay in layouts:
        marks = [pytest.mark.ci] if lay in CI_LAYOUTS else []
        out.append(pytest.param(lay, id=lay.id, marks=marks))
    return out


def _row_count(layout: PartitionLayout) -> int:
    env = os.environ.get("HUDI_MD_PARTITION_ROWS")
    if env:
        return int(env)
    return 40 if layout in CI_LAYOUTS else 60


def _seed(layout: PartitionLayout) -> int:
    return sum(map(ord, layout.id))


# --- Hudi's key generators through py4j ------------------------------------------------------------------


def hudi_keys(
    spark: Any, layout: PartitionLayout, rows: list[dict[str, Any]], options: dict[str, str] | None = None
) -> dict[str, tuple[str, str]]:
    """uid → (record key, partition path) as Hudi's key generator makes them from Avro records."""
    import json

    jvm = spark._jvm
    schema = jvm.org.apache.avro.Schema.Parser().parse(
        json.dumps(
            {
                "type": "record",
                "name": "r",
                "fields": [
                    {"name": "uid", "type": "string"},
                    {"name": "country", "type": ["null", "string"]},
                    {"name": "zone", "type": ["null", "string"]},
                    {"name": "n", "type": ["null", "int"]},
                ],
            }
        )
    )
    props = jvm.org.apache.hudi.common.config.TypedProperties()
    opts = options or layout.options("t")
    for k, v in opts.items():
        props.setProperty(k, v)
    cls = opts["hoodie.datasource.write.keygenerator.class"].rsplit(".", 1)[-1]
    keygen = getattr(jvm.org.apache.hudi.keygen, cls)(props)
    out = {}
    for r in rows:
        rec = jvm.org.apache.avro.generic.GenericData.Record(schema)
        rec.put("uid", r["uid"])
        rec.put("country", r["country"])
        rec.put("zone", r["zone"])
        rec.put("n", None if r["n"] is None else jvm.java.lang.Integer(r["n"]))
        key = keygen.getKey(rec)
        out[r["uid"]] = (str(key.getRecordKey()), str(key.getPartitionPath()))
    return out


def md_keys(
    layout: PartitionLayout, rows: list[dict[str, Any]], options: dict[str, str] | None = None
) -> dict[str, tuple[str, str]]:
    from hudi_md.write import keygen
    from hudi_md.write.config import WriteConfig

    cfg = WriteConfig.from_options(options or layout.options("t"))
    table = to_arrow(rows)
    keys = keygen.record_keys(table, cfg.record_key_fields, cfg.keygen).to_pylist()
    paths = keygen.partition_paths(
        table, cfg.partition_fields, hive_style=cfg.hive_style, url_encode=cfg.url_encode
    ).to_pylist()
    return {r["uid"]: (k, p) for r, k, p in zip(rows, keys, paths, strict=True)}


# --- comparing ---------------------------------------------------------------------------------------


def _norm(v: Any) -> Any:
    if isinstance(v, decimal.Decimal):
        return v.normalize()
    if isinstance(v, datetime.datetime):
        return v.replace(tzinfo=None)
    return v


def _by_uid(rows: list[dict[str, Any]], columns: list[str]) -> dict[str, tuple]:
    out: dict[str, tuple] = {}
    dup = []
    for r in rows:
        if r["uid"] in out:
            dup.append(r["uid"])
        out[r["uid"]] = tuple(_norm(r.get(c)) for c in columns)
    assert not dup, f"duplicate keys: {sorted(dup)[:10]}"
    return out


def assert_same_rows(
    got: list[dict[str, Any]], expected: list[dict[str, Any]], columns: list[str], what: str
):
    a, b = _by_uid(got, columns), _by_uid(expected, columns)
    problems = []
    if set(a) != set(b):
        problems.append(
            f"only in got: {sorted(set(a) - set(b))[:10]}, only expected: {sorted(set(b) - set(a))[:10]}"
        )
    diff = [
        f"{k}: "
        + "; ".join(f"{c}: {x!r} != {y!r}" for c, x, y in zip(columns, a[k], b[k], strict=True) if x != y)
        for k in sorted(set(a) & set(b))
        if a[k] != b[k]
    ]
    if diff:
        problems.append(f"{len(diff)} rows differ, e.g. {diff[:5]}")
    assert not problems, f"{what}: " + " | ".join(problems)


def _expected(
    layout: PartitionLayout, model: dict[str, dict[str, Any]], keys: dict[str, tuple[str, str]], reads: Any
) -> list[dict[str, Any]]:
    return [
        {**reads(layout, r), "_hoodie_record_key": keys[u][0], "_hoodie_partition_path": keys[u][1]}
        for u, r in model.items()
    ]


def _md_validate(path: str) -> list[str]:
    import hudi_md
    from hudi_md.metadata.validate import validate_metadata_table

    return [d.describe() for d in validate_metadata_table(hudi_md.open_table(path))]


# --- the tests -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", _params())
def test_key_generator_paths_and_keys(spark: Any, layout: PartitionLayout) -> None:
    rows = generate_rows(layout, 3 * _row_count(layout), _seed(layout))
    expected = hudi_keys(spark, layout, rows)
    got = md_keys(layout, rows)
    wrong = {u: (got[u], expected[u]) for u in expected if got[u] != expected[u]}
    assert not wrong, f"hudi-md (key, path) != Hudi's for {len(wrong)} rows, e.g. {list(wrong.items())[:6]}"


@pytest.mark.ci
@pytest.mark.parametrize(
    "fields",
    ["country:simple,zone:SIMPLE,n:simple", " country , zone ", "zone:simple"],
    ids=["custom-3", "spaces", "custom-1"],
)
@pytest.mark.parametrize("hive", [False, True], ids=["plain", "hive"])
def test_partition_field_forms(spark: Any, fields: str, hive: bool) -> None:
    """Other forms of hoodie.datasource.write.partitionpath.field Hudi accepts: CustomKeyGenerator's
    ``field:SIMPLE`` (any case) and names with spaces around them (ComplexKeyGenerator)."""
    layout = PartitionLayout("COPY_ON_WRITE", 3, hive, True)
    custom = ":" in fields
    options = {
        **layout.options("t"),
        "hoodie.datasource.write.partitionpath.field": fields,
        "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen."
        + ("CustomKeyGenerator" if custom else "ComplexKeyGenerator"),
    }
    rows = generate_rows(layout, 60, 7)
    expected = hudi_keys(spark, layout, rows, options)
    got = md_keys(layout, rows, options)
    wrong = {u: (got[u], expected[u]) for u in expected if got[u] != expected[u]}
    assert not wrong, f"hudi-md (key, path) != Hudi's for {len(wrong)} rows, e.g. {list(wrong.items())[:6]}"


@pytest.mark.hudi_md_writes
@pytest.mark.parametrize("layout", _params(ROUND_TRIP_LAYOUTS))
def test_hudi_reads_what_hudi_md_writes(
    spark: Any, hudi: Any, layout: PartitionLayout, tables_root: Path
) -> None:
    import hudi_md

    path = str(tables_root / f"pv-md-{layout.id}")
    opts = layout.options(f"pv_md_{layout.id.replace('-', '_')}")
    rows = generate_rows(layout, _row_count(layout), _seed(layout))
    model = {r["uid"]: r for r in rows}
    hudi_md.write(to_arrow(rows), path, operation="insert", options=opts)
    changed = updated(rows[::3], 1)
    hudi_md.write(to_arrow(changed), path, operation="upsert", options=opts)
    model.update({r["uid"]: r for r in changed})
    gone = rows[1::7]
    hudi_md.write(to_arrow(gone), path, operation="delete", options=opts)
    for r in gone:
        model.pop(r["uid"])

    keys = hudi_keys(spark, layout, list(model.values()))
    expected = _expected(layout, model, keys, as_hudi_reads)
    for metadata in (True, False):
        assert_same_rows(
            hudi.rows(path, metadata=metadata), expected, READ_COLUMNS, f"Hudi (MDT {metadata}) vs model"
        )
    got = hudi_md.open_table(path).read().to_pylist()
    assert_same_rows(got, _expected(layout, model, keys, as_read), READ_COLUMNS, "hudi-md vs model")
    errors = hudi.validate(path)
    assert not errors, summarize(errors)
    assert _md_validate(path) == []

    # Hudi upserts the same keys: they must land in the file groups they are in (no duplicates).
    again = updated(list(model.values())[::2], 2)
    hudi_opts = {**opts, "hoodie.datasource.write.operation": "upsert"}
    to_spark(spark, again).write.format("hudi").options(**hudi_opts).mode("append").save(path)
    for r in again:
        model[r["uid"]] = r
    keys = hudi_keys(spark, layout, list(model.values()))
    assert_same_rows(
        hudi.rows(path),
        _expected(layout, model, keys, as_hudi_reads),
        READ_COLUMNS,
        "Hudi after its upsert vs model",
    )
    got = hudi_md.open_table(path).read().to_pylist()
    assert_same_rows(
        got, _expected(layout, model, keys, as_read), READ_COLUMNS, "hudi-md after Hudi's upsert vs model"
    )
    assert _md_validate(path) == []


@pytest.mark.hudi_writes
@pytest.mark.parametrize("layout", _params(ROUND_TRIP_LAYOUTS))
def test_hudi_md_reads_what_hudi_writes(
    spark: Any, hudi: Any, layout: PartitionLayout, tables_root: Path
) -> None:
    import hudi_md

    path = str(tables_root / f"pv-hudi-{layout.id}")
    opts = layout.options(f"pv_hudi_{layout.id.replace('-', '_')}")
    rows = generate_rows(layout, _row_count(layout), _seed(layout) + 1)
    w = {**opts, "hoodie.datasource.write.operation": "insert"}
    to_spark(spark, rows).write.format("hudi").options(**w).mode("overwrite").save(path)
    w = {**opts, "hoodie.datasource.write.operation": "upsert"}
    to_spark(spark, updated(rows[::4], 1)).write.format("hudi").options(**w).mode("append").save(path)

    table = hudi_md.open_table(path)
    assert sorted(table.partitions()) == hudi.partitions(path)
    model = {r["uid"]: r for r in rows}
    model.update({r["uid"]: r for r in updated(rows[::4], 1)})
    keys = hudi_keys(spark, layout, list(model.values()))
    truth = _expected(layout, model, keys, as_read)
    assert_same_rows(table.read().to_pylist(), truth, READ_COLUMNS, "hudi-md vs model, no filter")
    hudi_df = hudi.read_df(path)
    assert_same_rows(
        [r.asDict() for r in hudi_df.collect()],
        _expected(layout, model, keys, as_hudi_reads),
        READ_COLUMNS,
        "Hudi vs model, no filter",
    )
    # Hudi's predicate results are comparable where it reads the values right.
    hudi_exact = all(as_hudi_reads(layout, r) == as_read(layout, r) for r in model.values())
    problems = []
    for filters in filter_cases(layout, rows, _seed(layout)):
        got = table.read(filters=filters).to_pylist()
        try:
            assert_same_rows(
                got, [r for r in truth if matches(r, filters)], READ_COLUMNS, f"{filters}: hudi-md vs model"
            )
            if hudi_exact:
                expected = [r.asDict() for r in hudi_df.where(spark_predicate(filters)).collect()]
                assert_same_rows(got, expected, READ_COLUMNS, f"{filters}: hudi-md vs Hudi")
        except AssertionError as e:
            problems.append(str(e)[:600])
    assert not problems, "\n".join(problems)
    assert _md_validate(path) == []


TYPED_SCHEMA = (
    "uid string, ts long, iv int, lv long, dv date, tv timestamp, decv decimal(10,2), bv boolean, fv double"
)
TYPED_FIELDS = ["iv", "lv", "dv", "tv", "decv", "bv", "fv"]


def _typed_rows() -> list[tuple]:
    utc = datetime.timezone.utc
    out = []
    for i in range(12):
        out.append(
            (
                f"t{i:02d}",
                i,
                i % 3 - 1,
                10_000_000_000 * (i % 2),
                datetime.date(2024, 1, 1 + i % 4),
                datetime.datetime(2024, 1, 1, 12, i % 2, 30, 250_000, tzinfo=utc),
                decimal.Decimal(f"{i % 3}.50"),
                i % 2 == 0,
                [0.5, 1e7, 123.25][i % 3],
            )
        )
    out.append(("t99", 99, None, None, None, None, None, None, None))
    return out


@pytest.mark.ci
def test_typed_partition_columns(spark: Any, hudi: Any, tables_root: Path) -> None:
    """Integer, long, date, timestamp, decimal, boolean and double partition columns: hudi-md writes
    the partition paths Hudi's upsert path writes; each reads the other's table as it reads its own
    (Hudi reads a timestamp partition column back as null from such paths: its bug, the same on
    both tables; hudi-md reads the stored values and does not prune on timestamp paths)."""
    import hudi_md

    opts = {
        "hoodie.datasource.write.recordkey.field": "uid",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.ComplexKeyGenerator",
        "hoodie.datasource.write.partitionpath.field": ",".join(TYPED_FIELDS),
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.metadata.enable": "true",
        "hoodie.metadata.record.index.enable": "true",
        "hoodie.metadata.index.column.stats.enable": "true",
    }
    df = spark.createDataFrame(_typed_rows(), TYPED_SCHEMA)
    by_hudi, by_md = str(tables_root / "typed-hudi"), str(tables_root / "typed-md")
    w = {**opts, "hoodie.table.name": "typed_hudi", "hoodie.datasource.write.operation": "upsert"}
    df.write.format("hudi").options(**w).mode("overwrite").save(by_hudi)
    hudi_md.write(df, by_md, operation="upsert", options={**opts, "hoodie.table.name": "typed_md"})

    def paths(path: str) -> dict[str, str]:
        return {
            r.uid: r._hoodie_partition_path
            for r in hudi.read_df(path).select("uid", "_hoodie_partition_path").collect()
        }

    assert paths(by_md) == paths(by_hudi)
    columns = ["uid", *TYPED_FIELDS]
    hudi_view = {r.uid: tuple(r) for r in hudi.read_df(by_hudi).select(*columns).collect()}
    assert {r.uid: tuple(r) for r in hudi.read_df(by_md).select(*columns).collect()} == hudi_view

    stored = {r[0]: r for r in _typed_rows()}
    for filters in (
        [("iv", "=", 0)],
        [("lv", ">", 0)],
        [("dv", "<=", datetime.date(2024, 1, 2))],
        [("decv", "=", decimal.Decimal("1.50"))],
        [("bv", "=", True)],
        [("fv", ">=", 123.0)],
        [("tv", ">", datetime.datetime(2024, 1, 1, 12, 0, 59, tzinfo=datetime.timezone.utc))],
    ):
        col, op, value = filters[0]
        idx = ["uid", "ts", *TYPED_FIELDS].index(col)
        want = sorted(
            u
            for u, r in stored.items()
            if r[idx] is not None
            and {"=": r[idx] == value, ">": r[idx] > value, "<=": r[idx] <= value, ">=": r[idx] >= value}[op]
        )
        for path in (by_hudi, by_md):
            got = sorted(
                hudi_md.open_table(path).read(filters=filters, columns=["uid"]).column("uid").to_pylist()
            )
            assert got == want, f"{path} {filters}"
    for path in (by_hudi, by_md):
        assert _md_validate(path) == []
