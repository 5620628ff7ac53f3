"""The outcomes of ``tests/write/merge_cases.py`` are Apache Hudi 1.2's: its bundle writes each
case's batches through ``format("hudi")`` and must refuse the batches marked refused and leave
exactly the case's rows (read by Apache Hudi and by hudi-rs); hudi-md's writers (pyarrow,
``hudi_md.write`` of the Spark DataFrame, ``format("hudi-md")``) write the same batches into their
own tables and must leave the same rows, read by hudi-md, by Apache Hudi and by hudi-rs (issue 36:
the six merge findings and the reproduction, each against Hudi's outcome)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "write"))

import hudi_md
from hudi_md.errors import HudiMdError

from merge_cases import CASES, CI_CASES, Batch, Case, listing, normalised

WRITERS = ("arrow", "spark_df", "spark_api")


def _df(spark: Any, batch: Batch) -> Any:
    return spark.createDataFrame(batch.rows, batch.ddl()).coalesce(1)


def _write(
    spark: Any, case: Case, batch: Batch, path: str, via: str, record_index: bool
) -> BaseException | None:
    options = case.write_options(record_index)
    try:
        if via == "hudi":
            _df(spark, batch).write.format("hudi").options(**options).option(
                "hoodie.datasource.write.operation", batch.op
            ).mode("append").save(path)
        elif via == "arrow":
            hudi_md.write(batch.arrow(), path, operation=batch.op, options=options)
        elif via == "spark_df":
            hudi_md.write(_df(spark, batch), path, operation=batch.op, options=options)
        else:
            _df(spark, batch).write.format("hudi-md").options(**options).option(
                "hoodie.datasource.write.operation", batch.op
            ).mode("append").save(path)
    except Exception as e:
        return e
    return None


def hudi_writes_unreadable(case: Case, batch: Batch) -> bool:
    """Apache Hudi 1.2 writes a null ordering value that meets a stored row into a MOR log, and
    then cannot read its table (a ClassCastException); hudi-md refuses the batch instead
    (docs/guide/writes.md, "Which record wins")."""
    return case.finding == "4" and case.table_type == "MERGE_ON_READ" and batch.refused


def _columns(case: Case) -> list[str]:
    return list(dict.fromkeys(c for r in case.expected for c in r))


def _read_spark(spark: Any, path: str, columns: list[str]) -> list[tuple]:
    return normalised([r.asDict() for r in spark.read.format("hudi").load(path).collect()], columns)


def _read_rs(path: str, columns: list[str]) -> list[tuple]:
    import hudi

    batches = hudi.HudiTableBuilder.from_base_uri(path).build().read()
    return normalised(pa.Table.from_batches(batches).to_pylist() if batches else [], columns)


PARAMS = [
    *(pytest.param(c, False, id=c.id, marks=[pytest.mark.ci] if c.id in CI_CASES else []) for c in CASES),
    *(
        pytest.param(c, True, id=f"{c.id}-rli", marks=[pytest.mark.ci] if c.id in CI_CASES else [])
        for c in CASES
        if c.with_record_index is not None
    ),
]


@pytest.mark.parametrize(("case", "record_index"), PARAMS)
def test_hudi_md_writers_leave_apache_hudis_rows(
    spark: Any, tables_root: Path, case: Case, record_index: bool
) -> None:
    columns = _columns(case)
    expected = normalised(case.expected_rows(record_index), columns)
    root = tables_root / "merge-findings" / f"{case.id}{'-rli' if record_index else ''}"
    shutil.rmtree(root, ignore_errors=True)
    for via in ("hudi", *WRITERS):
        path = str(root / via)
        for n, batch in enumerate(case.batches):
            before = listing(path)
            error = _write(spark, case, batch, path, via, record_index)
            if via == "hudi" and hudi_writes_unreadable(case, batch):
                assert error is None, f"Apache Hudi 1.2 refused batch {n} now: {error}"
                with pytest.raises(Exception, match="ClassCastException"):
                    spark.read.format("hudi").load(path).collect()
                break
            if batch.refused:
                assert error is not None, f"{via} wrote batch {n}, which Apache Hudi 1.2 refuses"
                if via != "hudi":
                    assert listing(path) == before, f"{via} refused batch {n} ({error}) but changed the table"
                if via in ("arrow", "spark_df"):
                    assert isinstance(error, HudiMdError), f"{via}: untyped error {error!r}"
            else:
                assert error is None, f"{via} refused batch {n}: {error}"
        if via == "hudi" and any(hudi_writes_unreadable(case, b) for b in case.batches):
            continue
        got = {"Apache Hudi": _read_spark(spark, path, columns)}
        if "," not in case.ordering:  # hudi-rs 0.5 reads one ordering field only
            got["hudi-rs"] = _read_rs(path, columns)
        if via != "hudi":
            got["hudi-md"] = normalised(hudi_md.open_table(path).read().to_pylist(), columns)
        for reader, rows in got.items():
            assert rows == expected, f"{via}'s table read by {reader}: {rows} != {expected}"
