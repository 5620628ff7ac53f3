"""hudi-md writes, Apache Hudi reads.

Each layout goes through hudi-md's workload (``hudi_md.write``: insert, upsert, delete,
insert_overwrite, inline compaction (MOR), inline clustering, clean; the MDT with ``files``, ``column_stats``,
``partition_stats`` and ``record_index``). After every step:

* ``rows``: ``spark.read.format("hudi")`` with ``hoodie.metadata.enable`` true and false returns the
  expected rows (the model) and exactly hudi-md's rows (all columns, meta columns too); for MOR also
  the read-optimized query;
* ``validator``: the checks of Hudi's ``HoodieMetadataTableValidator`` pass (latest file slices,
  latest base files, all column stats, partition stats, record index count and content; see
  ``hudi_oracle.Hudi.validate``).

Then mixed writers: Apache Hudi upserts onto the hudi-md-written table (``hudi_upsert``) and hudi-md
must read it exactly as Hudi does (rows and every check of the Hudi-writes suite); then hudi-md
upserts again after Hudi (``hudi_md_upsert``) and Hudi must read that.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from checks import CHECKS
from hudi_oracle import summarize
from known_issues import hudi_md_writes_expected_failure
from workloads import (
    ALL_COLUMNS,
    DATA_COLUMNS,
    HUDI_MD_STEPS,
    INSERT,
    LAYOUTS,
    UPSERT,
    Layout,
    Model,
    Step,
    diff_rows,
    md_rows,
    md_table,
    rows,
    to_arrow,
    to_spark,
)

pytestmark = pytest.mark.hudi_md_writes

HUDI_UPSERT = Step("hudi_upsert", "upsert", lambda lay: rows(range(0, 6), 5) + rows(range(200, 206), 1))
HUDI_MD_UPSERT = Step("hudi_md_upsert", "upsert", lambda lay: rows(range(3, 9), 6) + rows(range(206, 210), 1))
# (step, who writes it), per plan: "full" runs hudi-md's whole workload (table services included)
# before the mixed writers; "mixed" goes to the mixed writers right after insert and upsert, so that
# they are exercised even where a table service of hudi-md leaves something Hudi cannot read.
PLANS: dict[str, list[tuple[Step, str]]] = {
    "full": [(s, "hudi_md") for s in HUDI_MD_STEPS] + [(HUDI_UPSERT, "hudi"), (HUDI_MD_UPSERT, "hudi_md")],
    "mixed": [(INSERT, "hudi_md"), (UPSERT, "hudi_md"), (HUDI_UPSERT, "hudi"), (HUDI_MD_UPSERT, "hudi_md")],
}


@dataclass(frozen=True)
class Workload:
    layout: Layout
    # "arrow": hudi_md.write(pyarrow.Table); "spark": hudi_md.write(pyspark DataFrame); "spark-api":
    # df.write.format("hudi-md").mode("append") (the shim's DefaultSource, issue 16)
    via: str = "arrow"
    plan: str = "full"

    @property
    def id(self) -> str:
        suffix = ("" if self.via == "arrow" else f"-{self.via}") + (
            "" if self.plan == "full" else f"-{self.plan}"
        )
        return self.layout.id + suffix

    @property
    def steps(self) -> list[tuple[Step, str]]:
        return PLANS[self.plan]


_BY_ID = {lay.id: lay for lay in LAYOUTS}
WORKLOADS = (
    [Workload(layout) for layout in LAYOUTS]
    + [Workload(_BY_ID["mor-one"], via="spark")]
    + [Workload(_BY_ID["mor-two"], via="spark-api")]
    + [Workload(_BY_ID["cow-one"], via="spark-api", plan="mixed")]
    + [Workload(layout, plan="mixed") for layout in LAYOUTS]
)
# The CI slice: MOR two levels through the whole plan (Hudi writing between), and COW one level
# written through Spark's DataFrameWriter with mixed writers; the full run adds COW two levels mixed.
CI_WORKLOADS = {"mor-two", "cow-one-spark-api-mixed"}


class MdTables:
    """hudi-md-written tables, advanced step by step, with the model of their rows."""

    def __init__(self, spark: Any, root: Path) -> None:
        self.spark = spark
        self.root = root
        self.applied: dict[str, int] = {}
        self.models: dict[str, Model] = {}
        self.failed: dict[str, str] = {}

    def at(self, w: Workload, index: int) -> tuple[Path, Model]:
        p = self.root / f"hudi-md-{w.id}"
        if w.id in self.failed:
            pytest.fail(f"an earlier step of {w.id} failed: {self.failed[w.id]}")
        done = self.applied.get(w.id, -1)
        if done > index:
            pytest.skip(f"{w.id} is already past step {w.steps[index][0].name} (tests ran out of order)")
        if done < 0:
            if p.exists():
                shutil.rmtree(p)
            self.models[w.id] = Model(w.layout)
        model = self.models[w.id]
        for i in range(done + 1, index + 1):
            step, writer = w.steps[i]
            if step.applies(w.layout):
                try:
                    self.write(w, step, writer, p)
                except Exception as e:
                    self.failed[w.id] = f"{step.name}: {type(e).__name__}: {e}"
                    raise
                model.apply(step)
            self.applied[w.id] = i
        return p, model

    def write(self, w: Workload, step: Step, writer: str, path: Path) -> None:
        opts = {**w.layout.options(f"md_{w.id.replace('-', '_')}"), **step.options}
        data = step.data(w.layout)
        if writer == "hudi":
            opts.update(
                {
                    "hoodie.datasource.write.operation": step.operation,
                    "hoodie.upsert.shuffle.parallelism": "2",
                    "hoodie.insert.shuffle.parallelism": "2",
                }
            )
            to_spark(self.spark, data).write.format("hudi").options(**opts).mode("append").save(str(path))
            return
        if w.via == "spark-api":
            to_spark(self.spark, data).write.format("hudi-md").mode("append").options(
                **{**opts, "hoodie.datasource.write.operation": step.operation}
            ).save(str(path))
            return
        import hudi_md

        frame = to_arrow(data) if w.via == "arrow" else to_spark(self.spark, data)
        hudi_md.write(frame, str(path), operation=step.operation, options=opts)


@pytest.fixture(scope="module")
def tables(spark: Any, tables_root: Path) -> MdTables:
    return MdTables(spark, tables_root)


def _checks(step: Step, writer: str) -> list[str]:
    if step is HUDI_UPSERT:
        return ["rows", "validator", "index_definitions", *CHECKS]
    if step.name == "insert":
        return ["rows", "validator", "index_definitions"]
    return ["rows", "validator"]


def _cases() -> list[Any]:
    out = []
    for w in WORKLOADS:
        last = max(i for i, (step, _) in enumerate(w.steps) if step.applies(w.layout))
        for index, (step, writer) in enumerate(w.steps):
            if not step.applies(w.layout):
                continue
            for check in _checks(step, writer):
                marks = []
                # CI runs Hudi's validator (a Spark job of its own, ~40 s) on the final state only
                if w.id in CI_WORKLOADS and (check != "validator" or index == last):
                    marks.append(pytest.mark.ci)
                reason = hudi_md_writes_expected_failure(w.layout.id, w.via, w.plan, step.name, check)
                if reason:
                    marks.append(pytest.mark.xfail(strict=True, reason=reason))
                out.append(
                    pytest.param(w, index, check, id=f"{w.id}-{index}-{step.name}-{check}", marks=marks)
                )
    return out


@pytest.mark.parametrize(("workload", "index", "check"), _cases())
def test_hudi_md_writes_hudi_reads(
    tables: MdTables, hudi: Any, workload: Workload, index: int, check: str
) -> None:
    path, model = tables.at(workload, index)
    path = str(path)
    if check == "rows":
        check_rows(hudi, path, workload.layout, model)
    elif check == "validator":
        errors = hudi.validate(path)
        assert not errors, "HoodieMetadataTableValidator checks failed: " + summarize(errors)
    elif check == "index_definitions":
        check_index_definitions(hudi, path)
    else:
        CHECKS[check](hudi, path, workload.layout)


def check_rows(hudi: Any, path: str, layout: Layout, model: Model) -> None:
    expected = list(model.rows.values())
    md = md_rows(md_table(path))
    problems = []
    d = diff_rows(md, expected, DATA_COLUMNS)
    if d:
        problems.append(f"hudi-md vs model: {d}")
    for metadata in (True, False):
        got = hudi.rows(path, metadata=metadata)
        d = diff_rows(got, expected, DATA_COLUMNS)
        if d:
            problems.append(f"Hudi (metadata={metadata}) vs model: {d}")
        d = diff_rows(got, md, ALL_COLUMNS, key="_hoodie_record_key")
        if d:
            problems.append(f"Hudi (metadata={metadata}) vs hudi-md: {d}")
    if layout.is_mor:
        ro = hudi.rows(path, query_type="read_optimized")
        d = diff_rows(
            ro, md_rows(md_table(path), query_type="read_optimized"), ALL_COLUMNS, key="_hoodie_record_key"
        )
        if d:
            problems.append(f"read_optimized, Hudi vs hudi-md: {d}")
    assert not problems, "\n".join(problems)


def check_index_definitions(hudi: Any, path: str) -> None:
    """``.hoodie/.index_defs/index.json`` names the columns the ``column_stats`` partition indexes
    (Hudi 1.2 writes them there and reads them back, e.g. to know which columns have stats)."""
    declared = hudi.indexed_columns(path)
    indexed = sorted({s.column_name for s in md_table(path).metadata_table.stats.column_stats()})
    assert declared, f"column_stats index definition has no sourceFields; the MDT has stats for {indexed}"
    assert sorted(declared) == indexed
