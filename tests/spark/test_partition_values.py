"""Odd partition values through ``spark.read.format("hudi-md")`` with partition filters (issue 9):
every value class of ``tests/partition_values.py`` (space, ``+``, ``%``, ``=``, ``/``, ``#``, ``?``,
``:``, non-ASCII, empty, null, ``default``, ``__HIVE_DEFAULT_PARTITION__``, an integer level), read
back as the model says (values of the default partition read null, as Apache Hudi reads them) and as
the Python reader returns them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import hudi_md
from hudi_md.spark.reader import read_table

from partition_values import (
    COLUMNS,
    PartitionLayout,
    as_read,
    filter_cases,
    generate_rows,
    matches,
    spark_predicate,
    to_arrow,
    updated,
)

LAYOUTS = [
    PartitionLayout("MERGE_ON_READ", 2, True, True),
    PartitionLayout("COPY_ON_WRITE", 3, False, True),
    PartitionLayout("COPY_ON_WRITE", 1, False, False),
    PartitionLayout("MERGE_ON_READ", 2, True, False),
]


def _rows_by_uid(rows: list[dict[str, Any]]) -> dict[str, tuple]:
    return {r["uid"]: tuple(r[c] for c in COLUMNS) for r in rows}


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda lay: lay.id)
def test_partition_filters_through_the_format(
    hudi_spark: Any, tmp_path: Path, layout: PartitionLayout
) -> None:
    path = str(tmp_path / "t")
    opts = layout.options("pv")
    seed = sum(map(ord, layout.id))
    rows = generate_rows(layout, 40, seed)
    hudi_md.write(to_arrow(rows), path, operation="insert", options=opts)
    changed = updated(rows[::3], 1)  # MOR: log files, merged on the executors
    hudi_md.write(to_arrow(changed), path, operation="upsert", options=opts)
    model = {r["uid"]: as_read(layout, r) for r in rows}
    model.update({r["uid"]: as_read(layout, r) for r in changed})

    df = hudi_spark.read.format("hudi-md").load(path)
    table = hudi_md.open_table(path)
    all_rows = [r.asDict() for r in df.select(*COLUMNS).collect()]
    assert _rows_by_uid(all_rows) == _rows_by_uid(list(model.values()))
    problems = []
    for filters in filter_cases(layout, rows, seed):
        expected = _rows_by_uid([r for r in model.values() if matches(r, filters)])
        got = _rows_by_uid(
            [r.asDict() for r in df.where(spark_predicate(filters)).select(*COLUMNS).collect()]
        )
        readers = {
            "format(hudi-md)": got,
            "Python reader": _rows_by_uid(table.read(filters=filters).to_pylist()),
            "read_table": _rows_by_uid(
                [r.asDict() for r in read_table(hudi_spark, path, filters=filters, columns=COLUMNS).collect()]
            ),
        }
        for name, rows_read in readers.items():
            if rows_read != expected:
                wrong = sorted(
                    k for k in set(rows_read) | set(expected) if rows_read.get(k) != expected.get(k)
                )
                problems.append(f"{filters}: {name} differs from the model on {wrong[:8]}")
    assert not problems, "\n".join(problems)


def test_values_holding_a_slash_without_url_encoding(hudi_spark: Any, tmp_path: Path) -> None:
    """Hudi writes a `/` in a value as more directory levels (its quickstart's
    `americas/brazil/sao_paulo`): the paths no longer carry the values, so the format reads the
    partition column from the files (it failed to plan such a table)."""
    path = str(tmp_path / "t")
    opts = {
        "hoodie.table.name": "slash",
        "hoodie.datasource.write.recordkey.field": "uid",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "zone",
    }
    zones = ["americas/brazil/sao_paulo", "asia/india/chennai", "plain", None]
    rows = [{"uid": f"u{i}", "ts": i, "zone": zones[i % 4]} for i in range(12)]
    hudi_md.write(pa.Table.from_pylist(rows), path, operation="insert", options=opts)
    df = hudi_spark.read.format("hudi-md").load(path)
    got = sorted((r.uid, r.zone) for r in df.select("uid", "zone").collect())
    assert got == sorted((r["uid"], r["zone"]) for r in rows)
    hit = sorted(r.uid for r in df.where("zone = 'asia/india/chennai'").select("uid").collect())
    assert hit == sorted(r["uid"] for r in rows if r["zone"] == "asia/india/chennai")
