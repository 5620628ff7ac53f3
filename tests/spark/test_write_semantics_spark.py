"""Issue 36's write rules through Spark: ``hudi_md.write`` of a PySpark DataFrame and
``df.write.format("hudi-md")`` must leave Apache Hudi 1.2's rows for each case of
``tests/write/merge_cases.py`` (Hudi's outcomes, re-checked against its bundle by
``integration/test_merge_findings.py``): which record wins within the batch (event and commit time,
one and two ordering fields, ties), against the stored row, ``_hoodie_is_deleted``, re-inserts
after deletes, keys-only deletes, and refusals (missing columns, null ordering values) with a typed
error and the table unchanged byte for byte. The MOR cases go through ``hudi_md.write``, the COW
cases through the DataFrame writer. One case of each finding (``CI_CASES``; every write through
Spark costs seconds): ``integration/test_merge_findings.py`` runs every case through both writers
beside Apache Hudi."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

import hudi_md
from hudi_md.errors import (
    HudiMdError,
    IncompatibleSchemaChangeError,
    MissingSchemaFieldError,
    RecordMergeError,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "write"))

from merge_cases import CASES, CI_CASES, Batch, Case, assert_rows, listing

REFUSALS = {
    "reproduction": MissingSchemaFieldError,
    "4": RecordMergeError,
    "types": IncompatibleSchemaChangeError,
}


def _write(spark: Any, case: Case, batch: Batch, path: Path, record_index: bool) -> None:
    df = spark.createDataFrame(batch.rows, batch.ddl()).coalesce(1)  # one partition: rows in order
    options = case.write_options(record_index)
    if case.table_type == "MERGE_ON_READ":
        hudi_md.write(df, str(path), operation=batch.op, options=options)
    else:
        df.write.format("hudi-md").options(**options).option(
            "hoodie.datasource.write.operation", batch.op
        ).mode("append").save(str(path))


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES if c.id in CI_CASES])
def test_spark_writers_leave_apache_hudis_rows(hudi_spark: Any, tmp_path: Path, case: Case) -> None:
    path = tmp_path / "t"
    record_index = case.with_record_index is not None
    for n, batch in enumerate(case.batches):
        before = listing(path)
        if not batch.refused:
            _write(hudi_spark, case, batch, path, record_index)
            continue
        with pytest.raises(Exception) as refused:
            _write(hudi_spark, case, batch, path, record_index)
        if case.table_type == "MERGE_ON_READ":  # hudi_md.write: the typed error itself
            assert isinstance(refused.value, REFUSALS[case.finding]), repr(refused.value)
        else:  # through the JVM: the typed error's name and message
            assert REFUSALS[case.finding].__name__ in str(refused.value) or isinstance(
                refused.value, HudiMdError
            )
        assert listing(path) == before, f"batch {n} was refused but the table changed"
    assert_rows(path, case, record_index)
