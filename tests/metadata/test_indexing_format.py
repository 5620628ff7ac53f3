"""RFC-45's ``indexing`` action as Apache Hudi 1.2 writes it: plans and commit metadata read and
re-encoded byte for byte, the base instant ("no holes") and the catch-up set, and the table's
indexing state (``hudi-md index show``)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from hudi_md.metadata.indexing import (
    IndexPartitionInfo,
    IndexPlan,
    base_instant,
    catchup_instants,
    indexing_state,
    planned_partitions,
)
from hudi_md.storage import Storage
from hudi_md.table.config import TableConfig
from hudi_md.table.timeline import Instant, State, Timeline, parse_instant_file

FIXTURE = "sample_table/cow/v9_txns_simple_meta.zip"  # Hudi 1.2: two CREATE INDEX statements


def _open(path: Path) -> tuple[Storage, TableConfig, Timeline]:
    storage = Storage(str(path))
    config = TableConfig.load(storage)
    return storage, config, Timeline.load(storage, config.timeline_path, config.timeline_layout_version)


def test_hudi_indexing_instants_are_read_and_rewritten_byte_for_byte(
    table_path: Callable[[str], Path],
) -> None:
    storage, config, timeline = _open(table_path(FIXTURE))
    state = indexing_state(storage, config, timeline)
    assert state.pending == [] and state.inflight == []
    done = {plan.partition_names[0]: (i, plan) for i, plan in state.completed if plan is not None}
    assert set(done) == {"secondary_index_merchant_idx", "secondary_index_txn_date_idx"}
    assert set(done) <= set(state.available)
    for instant, plan in done.values():
        (info,) = plan.partitions
        # Hudi's base instant is ours for the timeline as it stood when it scheduled the index.
        before = instant.requested_time
        assert info.up_to_instant == base_instant(timeline.filter(lambda i, t=before: i.requested_time < t))
        assert info.extra_metadata == {}
        completed = storage.read_bytes(f"{config.timeline_path}/{instant.file_name}")
        requested = storage.read_bytes(f"{config.timeline_path}/{instant.requested_time}.indexing.requested")
        # Same record, same container bytes (the sync marker is random per file, so take Hudi's).
        assert plan.commit_bytes(None, sync_marker=completed[-16:]) == completed
        assert plan.plan_bytes(sync_marker=requested[-16:]) == requested
        assert IndexPlan.from_bytes(plan.plan_bytes(), "round trip") == plan


def _timeline(*specs: str) -> Timeline:
    """``"t action state"`` specs, state one of requested / inflight / completed."""
    out = []
    for spec in specs:
        t, action, state = spec.split()
        st = {"requested": State.REQUESTED, "inflight": State.INFLIGHT, "completed": State.COMPLETED}[state]
        out.append(Instant(t, action, st, f"{t}9" if st is State.COMPLETED else None))
    return Timeline(out)


def test_base_instant_stops_before_the_first_hole() -> None:
    # A write still inflight at 003 is a hole: nothing after it is the base, though 004 completed.
    timeline = _timeline(
        "001 commit completed",
        "002 deltacommit completed",
        "003 deltacommit inflight",
        "004 deltacommit completed",
        "005 clean completed",
    )
    assert base_instant(timeline) == "002"
    assert [i.requested_time for i in catchup_instants(timeline, "002")] == ["002", "003", "004", "005"]


def test_base_instant_counts_table_services_and_ignores_other_indexing() -> None:
    # A pending compaction is a hole too; a pending clean before the base moves the catch-up start
    # back to it; an indexing instant is never caught up.
    timeline = _timeline(
        "001 commit completed",
        "002 clean requested",
        "003 commit completed",
        "004 indexing inflight",
        "005 compaction requested",
        "006 commit completed",
    )
    assert base_instant(timeline) == "003"
    assert [i.requested_time for i in catchup_instants(timeline, "003")] == ["002", "003", "005", "006"]
    assert base_instant(_timeline("001 clean completed")) is None
    assert base_instant(_timeline("001 commit completed", "002 commit completed")) == "002"


def test_timeline_ignores_hudi_temporary_instant_files() -> None:
    # Hudi 1.2 writes `<final name>.<uuid>` on a local file system and renames it.
    assert parse_instant_file("20260307162458438.indexing.requested", 2) is not None
    for name in (
        "20260307162458438.indexing.requested.5b0c6c2e-6a5f-4b1c-9d5e-1a2b3c4d5e6f",
        "20260307162457540_20260307162458389.indexing.7f3a1c2e-1111-2222-3333-444455556666",
    ):
        assert parse_instant_file(name, 2) is None


def test_index_show_lists_a_pending_plan(table_path: Callable[[str], Path], tmp_path: Path) -> None:
    dest = tmp_path / "t"
    shutil.copytree(table_path(FIXTURE), dest)
    storage, config, timeline = _open(dest)
    base = base_instant(timeline)
    assert base is not None
    plan = IndexPlan((IndexPartitionInfo("bloom_filters", base),))
    storage.write_bytes(f"{config.timeline_path}/20990101000000000.indexing.requested", plan.plan_bytes())
    out = subprocess.run(
        [sys.executable, "-m", "hudi_md.cli", "index", "show", "--json", str(dest)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    shown = json.loads(out)
    assert shown["pending_indexing"] == [
        {
            "instant": "20990101000000000",
            "state": "requested",
            "partitions": [{"partition": "bloom_filters", "up_to_instant": base}],
            "error": None,  # the plan was read
        }
    ]
    assert len(shown["completed_indexing"]) == 2 and "bloom_filters" not in shown["available"]
    state = indexing_state(*_open(dest))
    assert planned_partitions(state.pending) == {"bloom_filters"}


def test_a_plan_without_partition_is_refused() -> None:
    bad = IndexPlan((IndexPartitionInfo("", "001"),)).plan_bytes()
    with pytest.raises(Exception, match="index partition info"):
        IndexPlan.from_bytes(bad, "bad.indexing.requested")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hudi_md.cli", *args], capture_output=True, text=True)


def test_index_drop_of_a_hudi_built_index(table_path: Callable[[str], Path], tmp_path: Path) -> None:
    dest = tmp_path / "t"
    shutil.copytree(table_path(FIXTURE), dest)
    proc = _cli("index", "drop", str(dest), "--partitions", "secondary_index_merchant_idx")
    assert proc.returncode == 0, proc.stderr
    _, config, _ = _open(dest)
    assert "secondary_index_merchant_idx" not in config.metadata_partitions
    assert "secondary_index_txn_date_idx" in config.metadata_partitions
    assert not (dest / ".hoodie/metadata/secondary_index_merchant_idx").exists()
    defs = json.loads((dest / ".hoodie/.index_defs/index.json").read_text())["indexDefinitions"]
    assert "secondary_index_merchant_idx" not in defs
    assert "OK" in _cli("metadata", "validate", str(dest)).stdout


def test_index_drop_rolls_back_a_pending_indexing(table_path: Callable[[str], Path], tmp_path: Path) -> None:
    """A pending indexing instant of the dropped partition goes whole: its plan, the MDT
    deltacommit and the file groups it had started (Hudi 1.2 leaves the instant pending)."""
    dest = tmp_path / "t"
    shutil.copytree(table_path(FIXTURE), dest)
    storage, config, timeline = _open(dest)
    t = "20990101000000000"
    plan = IndexPlan((IndexPartitionInfo("bloom_filters", base_instant(timeline) or ""),))
    storage.write_bytes(f"{config.timeline_path}/{t}.indexing.requested", plan.plan_bytes())
    storage.write_bytes(f"{config.timeline_path}/{t}.indexing.inflight", b"")
    started = dest / ".hoodie/metadata/bloom_filters"
    started.mkdir()
    (started / f".bloom-filters-0000-0_{t}.log.1_0-0-0").write_bytes(b"")
    (dest / f".hoodie/metadata/.hoodie/timeline/{t}.deltacommit.requested").write_bytes(b"")
    proc = _cli("index", "drop", str(dest), "--partitions", "bloom_filters")
    assert proc.returncode == 0, proc.stderr
    state = indexing_state(*_open(dest))
    assert state.pending == [] and "bloom_filters" not in state.available + state.inflight
    assert not started.exists()
    assert not list((dest / ".hoodie/metadata/.hoodie/timeline").glob(f"{t}*"))
    assert not list((dest / ".hoodie/timeline").glob(f"{t}*"))
    assert _cli("index", "drop", str(dest), "--partitions", "bloom_filters").returncode != 0
