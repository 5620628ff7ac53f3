"""Filters and projection: hudi-md's pruned reads equal hudi-rs's full snapshot filtered by pyarrow.

The expected rows are computed with pyarrow compute expressions written here by hand, over rows
read by hudi-rs, so neither hudi-md's planner nor its expression code takes part in the oracle.
"""

from __future__ import annotations

import datetime
import decimal
from typing import Any

import hudi
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import hudi_md
from hudi_md.errors import InvalidOptionError

f = pc.field

CASES: list[tuple[str, list[tuple[str, str, Any]], pc.Expression, int | None]] = [
    # (archive, filters, the same filter as a pyarrow expression, partitions left after pruning)
    ("sample_table/cow/v9_txns_simple_meta.zip", [("region", "=", "us")], f("region") == "us", 1),
    (
        "sample_table/mor/avro/v9_txns_simple_meta.zip",
        [("region", "in", ["us", "eu"]), ("amount", ">", 100)],
        f("region").isin(["us", "eu"])
        & (f("amount") > pa.scalar(decimal.Decimal("100"), pa.decimal128(15, 2))),
        2,
    ),
    (
        "sample_table/mor/avro/v9_txns_simple_nometa.zip",
        [("region", "!=", "us"), ("txn_date", ">=", "2024-01-17")],
        (f("region") != "us") & (f("txn_date") >= pa.scalar(datetime.date(2024, 1, 17))),
        2,
    ),
    (
        "sample_table/cow/v9_txns_complex_meta.zip",
        [("txn_id", "=", "TXN-003")],
        f("txn_id") == "TXN-003",
        None,
    ),
    (
        "sample_table/cow/v6_complexkeygen_hivestyle.zip",
        [("byteField", ">=", 20), ("shortField", "=", 100)],
        (f("byteField") >= 20) & (f("shortField") == 100),
        2,
    ),
    (
        "sample_table/cow/v8_simplekeygen_nonhivestyle.zip",
        [("byteField", "not in", [10, 30])],
        ~f("byteField").isin([10, 30]) & f("byteField").is_valid(),
        1,
    ),
    (
        "sample_table/mor/parquet/v6_nonpartitioned.zip",
        [("longField", "<", 200000)],
        f("longField") < 200000,
        None,
    ),
    (
        "sample_table/cow/v9_timebasedkeygen_nonhivestyle.zip",
        [("txn_id", "in", ["TXN-001", "TXN-004", "nope"])],
        f("txn_id").isin(["TXN-001", "TXN-004", "nope"]),
        None,
    ),
]


def hudi_rs_snapshot(path: str) -> pa.Table:
    return pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(path).build().read())


def _sorted(t: pa.Table) -> list[dict[str, Any]]:
    return sorted(t.select(["_hoodie_record_key", "_hoodie_partition_path"]).to_pylist(), key=str)


@pytest.mark.parametrize(("archive", "filters", "expected_expr", "partitions_left"), CASES)
def test_filtered_read_equals_filtered_snapshot(
    archive: str, filters: list, expected_expr: pc.Expression, partitions_left: int | None, table_path
) -> None:
    path = str(table_path(archive))
    table = hudi_md.open_table(path)
    expected = hudi_rs_snapshot(path).filter(expected_expr)
    got = table.read(filters=filters)
    assert _sorted(got) == _sorted(expected)
    plan = table.plan(filters)
    if partitions_left is not None:
        assert plan.counters["partitions_after_partition_pruning"] == partitions_left
        # partition pruning is exact: every kept partition has a matching row, or holds none at all
        kept = {s.partition_path for s in plan.slices}
        assert {r["_hoodie_partition_path"] for r in expected.to_pylist()} <= kept


def test_record_index_is_not_trusted_where_inserts_may_have_duplicated_keys(table_path) -> None:
    """v9_timebasedkeygen has TXN-001 twice (two INSERTs); the RLI knows one location only."""
    table = hudi_md.open_table(str(table_path("sample_table/cow/v9_timebasedkeygen_nonhivestyle.zip")))
    plan = table.plan([("txn_id", "=", "TXN-001")])
    assert "file_slices_after_record_index" not in plan.counters
    assert table.read(filters=[("txn_id", "=", "TXN-001")]).num_rows == 2


def test_record_index_prunes_to_the_file_group_of_the_key(table_path) -> None:
    table = hudi_md.open_table(
        str(table_path("sample_table/cow/v9_txns_simple_meta.zip")),
        {"hoodie.metadata.record.index.enable": "true"},
    )
    plan = table.plan([("txn_id", "=", "TXN-001")])
    assert plan.counters["file_slices_after_record_index"] == 1
    (only,) = plan.slices
    rows = table.read(filters=[("txn_id", "=", "TXN-001")])
    assert rows.column("_hoodie_file_name").to_pylist()[0].startswith(only.file_id)
    assert table.plan([("txn_id", "=", "no-such-key")]).slices == []


def test_column_stats_skip_files(table_path) -> None:
    table = hudi_md.open_table(str(table_path("sample_table/cow/v9_txns_simple_meta.zip")))
    # within every partition's txn_ts range, outside some files' ranges
    filters = [("txn_ts", ">", 1700600000014)]
    plan = table.plan(filters)
    assert plan.counters["partitions_after_partition_stats"] == 3
    assert plan.counters["file_slices"] == 5
    assert plan.counters["file_slices_after_column_stats"] == 3
    expected = hudi_rs_snapshot(table.uri).filter(f("txn_ts") > 1700600000014)
    assert _sorted(table.read(filters=filters)) == _sorted(expected)
    # beyond every value: partition stats prune everything first
    assert table.plan([("txn_ts", ">", 10**15)]).counters["partitions_after_partition_stats"] == 0


def test_projection(table_path) -> None:
    path = str(table_path("sample_table/mor/avro/v9_txns_simple_meta.zip"))
    table = hudi_md.open_table(path)
    rows = table.read(columns=["txn_id", "amount"], filters=[("region", "=", "eu")])
    assert rows.column_names == ["txn_id", "amount"]
    expected = hudi_rs_snapshot(path).filter(f("region") == "eu")
    assert sorted(rows.column("txn_id").to_pylist()) == sorted(expected.column("txn_id").to_pylist())


def test_or_of_ands(table_path) -> None:
    path = str(table_path("sample_table/cow/v9_txns_simple_meta.zip"))
    table = hudi_md.open_table(path)
    filters = [[("region", "=", "us"), ("amount", ">", 1000)], [("region", "=", "eu")]]
    got = table.read(filters=filters)
    big = pa.scalar(decimal.Decimal("1000"), pa.decimal128(15, 2))
    expected = hudi_rs_snapshot(path).filter(
        ((f("region") == "us") & (f("amount") > big)) | (f("region") == "eu")
    )
    assert _sorted(got) == _sorted(expected)


@pytest.mark.parametrize(
    ("filters", "message"),
    [
        ([("no_such_column", "=", 1)], "no_such_column"),
        ([("region", "~", "x")], "~"),
        ([("txn_date", "=", "not-a-date")], "txn_date"),
        ([("region",)], "region"),
    ],
)
def test_bad_filters_name_the_fault(filters: list, message: str, table_path) -> None:
    table = hudi_md.open_table(str(table_path("sample_table/cow/v9_txns_simple_meta.zip")))
    with pytest.raises(InvalidOptionError, match=message):
        table.read(filters=filters)


def test_bad_options_name_the_fault(table_path) -> None:
    path = str(table_path("sample_table/cow/v9_txns_simple_meta.zip"))
    with pytest.raises(InvalidOptionError, match=r"hoodie\.metadata\.enable"):
        hudi_md.open_table(path, {"hoodie.metadata.enable": "maybe"})
    table = hudi_md.open_table(path)
    with pytest.raises(InvalidOptionError, match="query_type"):
        table.read(query_type="streaming")
    with pytest.raises(InvalidOptionError, match="nope"):
        table.read(columns=["txn_id", "nope"])
    with pytest.raises(InvalidOptionError, match="as_of"):
        table.read(as_of="yesterday")


def test_record_index_prunes_complex_single_field_keys(tmp_path) -> None:
    """ComplexKeyGenerator with one key field: version 9 stores 'id:<value>', and a filter on the
    column is looked up in that form."""
    path = str(tmp_path / "t")
    opts = {
        "hoodie.table.name": "complex1",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "city,day",
        "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.ComplexKeyGenerator",
        "hoodie.metadata.record.index.enable": "true",
    }
    data = pa.table(
        {
            "id": [f"k{i}" for i in range(40)],
            "city": [["sf", "nyc"][i % 2] for i in range(40)],
            "day": [["d1", "d2", "d3"][i % 3] for i in range(40)],
            "v": list(range(40)),
        }
    )
    for chunk in (data.slice(0, 20), data.slice(20, 20)):
        hudi_md.write(chunk, path, operation="upsert", options=opts)
    table = hudi_md.open_table(path)
    assert table.state.config.keygen == "COMPLEX"
    plan = table.plan([("id", "=", "k7")])
    assert plan.counters["file_slices_after_record_index"] == 1
    got = table.read(filters=[("id", "in", ["k7", "k30"])])
    expected = hudi_rs_snapshot(path).filter(f("id").isin(["k7", "k30"]))
    assert sorted(got.column("_hoodie_record_key").to_pylist()) == ["id:k30", "id:k7"]
    assert _sorted(got) == _sorted(expected)
