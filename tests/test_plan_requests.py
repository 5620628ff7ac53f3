"""Planning reads a number of storage objects that does not depend on the partition count."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import hudi_md

SIZES = (100, 10_000)


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    out = {}
    for n in SIZES:
        path = tmp_path_factory.mktemp(f"parts{n}") / "t"
        data = pa.table(
            {"id": [f"k{i}" for i in range(n)], "dt": [f"p{i:05d}" for i in range(n)], "v": list(range(n))}
        )
        options = {
            "hoodie.table.name": "parts",
            "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "dt",
            "hoodie.parquet.bloom.filter.enabled": "false",
        }
        hudi_md.write(data, str(path), operation="insert", options=options)
        # a second commit, so the MDT has more than one deltacommit to merge
        hudi_md.write(data.slice(0, 10), str(path), operation="upsert", options=options)
        out[n] = path
    return out


def _plan_requests(path: Path, filters: list | None, options: dict | None = None) -> tuple[int, dict]:
    table = hudi_md.open_table(str(path), options)
    before = table.storage_stats()["requests"]
    plan = table.plan(filters)
    return table.storage_stats()["requests"] - before, plan.counters


@pytest.mark.parametrize(
    "filters",
    [None, [("dt", "=", "p00042")], [("v", ">", 5)], [("dt", "in", ["p00001", "p00099"]), ("v", "<", 50)]],
)
def test_requests_per_plan_do_not_grow_with_partitions(tables: dict[int, Path], filters: list | None) -> None:
    small, small_counters = _plan_requests(tables[100], filters)
    large, large_counters = _plan_requests(tables[10_000], filters)
    assert small_counters["partitions"] == 100 and large_counters["partitions"] == 10_000
    assert small == large, (small, large)
    assert small < 40


def test_listing_does_grow(tables: dict[int, Path]) -> None:
    """The control: without the MDT, planning lists every partition."""
    small, _ = _plan_requests(tables[100], [("v", ">", 5)], {"hoodie.metadata.enable": "false"})
    large, _ = _plan_requests(tables[10_000], [("v", ">", 5)], {"hoodie.metadata.enable": "false"})
    assert large > 100 * small / 10
    assert large >= 10_000
