"""Rollback and restore across writers, against Apache Hudi 1.2's Spark bundle.

* hudi-md rolls back its latest commit and restores an earlier one (rollback and restore instants
  with their plans, as hudi-md writes them); Apache Hudi then reads the table (MDT on and off),
  its metadata-table checks pass, and Hudi's own upsert works on it; hudi-md reads what Hudi wrote.
* Apache Hudi rolls back and restores (``CALL rollback_to_instant``, ``create_savepoint`` +
  ``rollback_to_savepoint``);
  hudi-md reads the table exactly as Hudi does, validates its MDT, and writes on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hudi_oracle import summarize
from workloads import (
    ALL_COLUMNS,
    DATA_COLUMNS,
    INSERT,
    LAYOUTS,
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

V2 = Step("upsert_v2", "upsert", lambda lay: rows(range(0, 20), 2) + rows(range(60, 70), 1))
V3 = Step("upsert_v3", "upsert", lambda lay: rows(range(10, 30), 3) + rows(range(70, 80), 1))
AFTER = Step("upsert_after", "upsert", lambda lay: rows(range(5, 15), 4) + rows(range(80, 85), 1))
_BY_ID = {lay.id: lay for lay in LAYOUTS}
CASES = ["cow-one", "mor-two"]


def _hudi_write(spark: Any, layout: Layout, name: str, step: Step, path: Path) -> None:
    opts = {
        **layout.options(name),
        **step.options,
        "hoodie.datasource.write.operation": step.operation,
        "hoodie.upsert.shuffle.parallelism": "2",
        "hoodie.insert.shuffle.parallelism": "2",
    }
    to_spark(spark, step.data(layout)).write.format("hudi").options(**opts).mode("append").save(str(path))


def _md_write(layout: Layout, name: str, step: Step, path: Path) -> None:
    import hudi_md

    opts = {**layout.options(name), **step.options}
    hudi_md.write(to_arrow(step.data(layout)), str(path), operation=step.operation, options=opts)


def _completed_writes(path: Path) -> list[str]:
    return [i.requested_time for i in md_table(str(path)).timeline.write_timeline()]


def _models(layout: Layout, *steps: Step) -> Model:
    model = Model(layout)
    for s in steps:
        model.apply(s)
    return model


def _check_hudi_reads(hudi: Any, path: Path, model: Model) -> None:
    expected = list(model.rows.values())
    for metadata in (True, False):
        got = hudi.rows(str(path), metadata=metadata)
        errors = diff_rows(got, expected, DATA_COLUMNS)
        assert not errors, f"Hudi (MDT {metadata}) vs the model: {errors}"
    md = md_rows(md_table(str(path)), columns=ALL_COLUMNS)
    errors = diff_rows(md, hudi.rows(str(path)), ALL_COLUMNS)
    assert not errors, f"hudi-md vs Hudi: {errors}"


def _check_md(path: Path, model: Model) -> None:
    from hudi_md.metadata.validate import validate_metadata_table

    for metadata in (True, False):
        got = md_rows(md_table(str(path), metadata=metadata), columns=DATA_COLUMNS)
        errors = diff_rows(got, list(model.rows.values()), DATA_COLUMNS)
        assert not errors, f"hudi-md (MDT {metadata}) vs the model: {errors}"
    diffs = validate_metadata_table(md_table(str(path)))
    # Apache Hudi 1.2's procedures (rollback_to_instant, restore, savepoints) run with a write
    # config that does not enable the record index, so its auto-deletion drops the MDT's
    # record_index and leaves index.json's definition behind: validate reports that, as
    # issue 13 asks (docs/guide/indexing.md); it is the only difference.
    dropped = [d for d in diffs if d.kind == "index_dropped"]
    assert all("record_index" in d.detail for d in dropped), [d.describe() for d in dropped]
    others = [d for d in diffs if d.kind != "index_dropped"]
    assert not others, [d.describe() for d in others]


# CI runs the MOR case (rollback of log blocks and of a compaction's base files); COW in full runs.
@pytest.mark.parametrize(
    "layout_id", [pytest.param(c, marks=pytest.mark.ci) if c == "mor-two" else c for c in CASES]
)
def test_hudi_reads_and_writes_after_hudi_md_rollback_and_restore(
    spark: Any, hudi: Any, tables_root: Path, layout_id: str
) -> None:
    from hudi_md.write.writer import HudiWriter

    layout = _BY_ID[layout_id]
    name = f"md_rr_{layout_id.replace('-', '_')}"
    path = tables_root / f"md-rollback-restore-{layout_id}"
    for step in (INSERT, V2, V3):
        _md_write(layout, name, step, path)
    first, _, third = _completed_writes(path)

    writer = HudiWriter(str(path), layout.options(name))
    writer.rollback_commit(third)
    model = _models(layout, INSERT, V2)
    _check_hudi_reads(hudi, path, model)
    errors = hudi.validate(str(path))
    assert not errors, summarize(errors)

    writer.restore(first)
    model = _models(layout, INSERT)
    _check_hudi_reads(hudi, path, model)
    errors = hudi.validate(str(path))
    assert not errors, summarize(errors)

    _hudi_write(spark, layout, name, AFTER, path)
    model.apply(AFTER)
    _check_hudi_reads(hudi, path, model)
    _check_md(path, model)


@pytest.mark.parametrize("layout_id", CASES)
def test_hudi_md_reads_and_writes_after_hudi_rollback_and_restore(
    spark: Any, hudi: Any, tables_root: Path, layout_id: str
) -> None:
    layout = _BY_ID[layout_id]
    name = f"hudi_rr_{layout_id.replace('-', '_')}"
    path = tables_root / f"hudi-rollback-restore-{layout_id}"
    for step in (INSERT, V2, V3):
        _hudi_write(spark, layout, name, step, path)
    first, _, third = _completed_writes(path)
    spark.sql(f"CREATE TABLE IF NOT EXISTS {name} USING hudi LOCATION '{path}'")
    try:
        spark.sql(f"CALL rollback_to_instant(table => '{name}', instant_time => '{third}')").collect()
        model = _models(layout, INSERT, V2)
        _check_hudi_reads(hudi, path, model)
        _check_md(path, model)

        # Hudi restores to savepoints only
        spark.sql(f"CALL create_savepoint(table => '{name}', commit_time => '{first}')").collect()
        spark.sql(f"CALL rollback_to_savepoint(table => '{name}', instant_time => '{first}')").collect()
        model = _models(layout, INSERT)
        _check_hudi_reads(hudi, path, model)
        _check_md(path, model)
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")

    _md_write(layout, name, AFTER, path)
    model.apply(AFTER)
    _check_md(path, model)
    _check_hudi_reads(hudi, path, model)


@pytest.mark.ci
def test_hudi_md_cleaner_keeps_what_a_hudi_savepoint_holds(spark: Any, hudi: Any, tables_root: Path) -> None:
    """Apache Hudi savepoints the first commit; hudi-md then updates every key twice and cleans
    keeping one commit; Hudi's restore to the savepoint still finds the savepointed files (before,
    hudi-md's cleaner deleted them and the restore lost the table's rows)."""
    layout = _BY_ID["cow-one"]
    name = "sp_cow_one"
    path = tables_root / "savepoint-clean-cow-one"
    _hudi_write(spark, layout, name, INSERT, path)
    (first,) = _completed_writes(path)
    spark.sql(f"CREATE TABLE IF NOT EXISTS {name} USING hudi LOCATION '{path}'")
    try:
        spark.sql(f"CALL create_savepoint(table => '{name}', commit_time => '{first}')").collect()
        everything = Step("upsert_all", "upsert", lambda lay: rows(range(0, 60), 5))
        again = Step("upsert_all_again", "upsert", lambda lay: rows(range(0, 60), 6))
        clean = {"hoodie.cleaner.commits.retained": "1", "hoodie.clean.automatic": "true"}
        for step in (everything, again):
            _md_write(layout, name, Step(step.name, step.operation, step.data, clean), path)
        model = _models(layout, INSERT, everything, again)
        _check_md(path, model)
        spark.sql(f"CALL rollback_to_savepoint(table => '{name}', instant_time => '{first}')").collect()
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")
    model = _models(layout, INSERT)
    _check_hudi_reads(hudi, path, model)
    _check_md(path, model)


# An Apache Hudi 1.2 bug, not hudi-md's: in a fresh JVM whose first metadata-table action is an
# MDT compaction, Hudi's next append to the MDT fails with ArrayIndexOutOfBoundsException in
# HoodieMetadataPayload.getInsertValue. That method takes its static-record path only when it is
# handed the very schema instance it interned at class load; the compaction interns an equal one
# first, and the payload then writes at meta-field offsets into a 7-field record. Reproduced with
# Apache Hudi alone: four commits from one Spark application, then an upsert from a new one with
# hoodie.metadata.compact.max.delta.commits=1. hudi-md's tables meet it sooner: an MDT built on a
# table with history already holds 4 init deltacommits plus the commit, which reaches Hudi's MDT
# compaction trigger on Hudi's first write. Run alone (a fresh JVM) these tests fail; in the full
# suite the JVM has done MDT writes before, and they pass. Hence not strict.
MDT_BUILT_LATE = (
    "Apache Hudi 1.2 bug: in a fresh JVM whose first MDT action is a compaction, its MDT append "
    "fails (ArrayIndexOutOfBoundsException in HoodieMetadataPayload.getInsertValue); "
    "reproduced with Hudi alone"
)


@pytest.mark.xfail(strict=False, reason=MDT_BUILT_LATE)
def test_hudi_writes_after_hudi_md_rebuilt_its_metadata_table(
    spark: Any, hudi: Any, tables_root: Path
) -> None:
    """hudi-md writes with inline compaction and tight archival (keep 2-3 commits), so rolling back
    its latest commit finds that commit's MDT deltacommit archived and rebuilds the MDT; Apache
    Hudi then upserts (its MDT compaction and archival included). Before, Hudi's MDT append failed
    (ArrayIndexOutOfBoundsException): hudi-md's MDT instants recorded the schema with meta fields."""
    from hudi_md.write.writer import HudiWriter

    layout = _BY_ID["mor-one"]
    name = "rebuilt_mor_one"
    path = tables_root / "rebuilt-mdt-mor-one"
    opts = {
        **layout.options(name),
        "hoodie.compact.inline": "true",
        "hoodie.compact.inline.max.delta.commits": "2",
        "hoodie.cleaner.commits.retained": "1",
        "hoodie.keep.min.commits": "2",
        "hoodie.keep.max.commits": "3",
    }
    steps = [INSERT] + [
        Step(f"u{i}", "upsert", lambda lay, i=i: rows(range(i * 5, i * 5 + 10), 2 + i)) for i in range(8)
    ]
    for step in steps:
        _md_write(layout, name, Step(step.name, step.operation, step.data, opts), path)
    HudiWriter(str(path), opts).rollback_commit(_completed_writes(path)[-1])
    model = _models(layout, *steps[:-1])
    for i in range(3):
        step = Step(f"h{i}", "upsert", lambda lay, i=i: rows(range(50 + i, 60 + i), 20 + i), opts)
        _hudi_write(spark, layout, name, step, path)
        model.apply(step)
    _check_hudi_reads(hudi, path, model)
    _check_md(path, model)
    errors = hudi.validate(str(path))
    assert not errors, summarize(errors)
    last = Step("md_after", "upsert", lambda lay: rows(range(0, 5), 40), opts)
    _md_write(layout, name, last, path)
    model.apply(last)
    _check_hudi_reads(hudi, path, model)
    _check_md(path, model)


@pytest.mark.xfail(strict=False, reason=MDT_BUILT_LATE)
def test_hudi_writes_after_hudi_md_built_the_metadata_table_of_a_table_with_history(
    spark: Any, hudi: Any, tables_root: Path
) -> None:
    """hudi-md writes without an MDT, then a write with it builds the MDT; Hudi then upserts."""
    layout = _BY_ID["mor-one"]
    name = "late_mdt_mor_one"
    path = tables_root / "late-mdt-mor-one"
    off = {"hoodie.metadata.enable": "false"}
    steps = [INSERT] + [
        Step(f"u{i}", "upsert", lambda lay, i=i: rows(range(i * 5, i * 5 + 10), 2 + i)) for i in range(3)
    ]
    for step in steps:
        _md_write(layout, name, Step(step.name, step.operation, step.data, off), path)
    with_mdt = Step("u_mdt", "upsert", lambda lay: rows(range(30, 40), 9))
    _md_write(layout, name, with_mdt, path)
    model = _models(layout, *steps, with_mdt)
    _check_md(path, model)
    for i in range(2):
        step = Step(f"h{i}", "upsert", lambda lay, i=i: rows(range(50 + i, 60 + i), 20 + i))
        _hudi_write(spark, layout, name, step, path)
        model.apply(step)
    _check_hudi_reads(hudi, path, model)
    _check_md(path, model)
