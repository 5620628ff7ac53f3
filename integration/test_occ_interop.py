"""Tables written by concurrent hudi-md writers (optimistic concurrency control), read and
validated by Apache Hudi 1.2 (found: Hudi's view of the partition stats excluded live values).

Two writers start, write their files, and commit in the opposite order (the earlier instant
completes last), on disjoint file groups so both commit. Apache Hudi merges MDT log blocks in
instant order, hudi-md in completion order: the partition stats must be sound either way, so
Hudi's metadata-table checks pass and Hudi returns the rows of both commits.
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
    Model,
    Step,
    diff_rows,
    md_rows,
    md_table,
    rows,
    to_arrow,
)

pytestmark = pytest.mark.hudi_md_writes

_BY_ID = {lay.id: lay for lay in LAYOUTS}
LOCK = "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider"
# disjoint file groups: A updates existing keys, B inserts new keys (new file groups) in the same
# partitions and in others
A = Step("occ_a", "upsert", lambda lay: rows(range(0, 10), 7))
B = Step("occ_b", "upsert", lambda lay: rows(range(300, 320), 1))


@pytest.mark.ci
@pytest.mark.parametrize("layout_id", ["cow-one", "mor-two"])
def test_hudi_reads_tables_of_concurrent_hudi_md_writers(
    hudi: Any, tables_root: Path, layout_id: str
) -> None:
    import hudi_md
    from hudi_md.write.writer import HudiWriter

    layout = _BY_ID[layout_id]
    name = f"md_occ_{layout_id.replace('-', '_')}"
    path = tables_root / f"md-occ-{layout_id}"
    opts = {
        **layout.options(name),
        "hoodie.write.concurrency.mode": "optimistic_concurrency_control",
        "hoodie.write.lock.provider": LOCK,
        "hoodie.compact.inline": "false",
        # B's new keys start file groups of their own (small-file handling would put them into
        # the groups A updates: a conflict, as in Apache Hudi)
        "hoodie.parquet.small.file.limit": "0",
    }
    hudi_md.write(to_arrow(INSERT.data(layout)), str(path), operation="insert", options=opts)
    model = Model(layout)
    model.apply(INSERT)

    writers = {}
    for step in (A, B):
        w = HudiWriter(str(path), opts)
        data = to_arrow(step.data(layout))
        session = w.start_write(step.operation, data.schema)
        writers[step.name] = (w, session, data)
    files = {n: w.write_files(s, d) for n, (w, s, d) in writers.items()}
    for n in ("occ_b", "occ_a"):  # the later instant completes first
        w, s, _ = writers[n]
        results, replaced = files[n]
        done = w.finish_commit(s, results, replaced)
        w.end_write(s, done)
    model.apply(B)
    model.apply(A)

    expected = list(model.rows.values())
    for metadata in (True, False):
        errors = diff_rows(hudi.rows(str(path), metadata=metadata), expected, DATA_COLUMNS)
        assert not errors, f"Hudi (MDT {metadata}) vs the model: {errors}"
    errors = diff_rows(md_rows(md_table(str(path)), columns=ALL_COLUMNS), hudi.rows(str(path)), ALL_COLUMNS)
    assert not errors, f"hudi-md vs Hudi: {errors}"
    problems = hudi.validate(str(path))
    # The partition stats of the later instant, which completed while the earlier was pending,
    # are a merged bound (not tight): Hudi merges them after the earlier instant's, so they stay
    # sound but are wider than Hudi's validator's exact values. Anything else must pass.
    unsound = [p for p in problems if "UNSOUND" in p or "partition stats" not in p or "missing" in p]
    assert not unsound, summarize(unsound)
