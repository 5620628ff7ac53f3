"""Clustering (issue 40): Apache Hudi 1.2's size-based plan over a partition's small file groups,
run as a replacecommit, by hand (``services.cluster`` / ``schedule_clustering``) and inline
(``hoodie.clustering.inline``).

After each clustering every reader (hudi-md through the MDT and by listing, hudi-rs) returns the
model's rows, ``metadata validate`` is clean, the record index places every key at the file group
whose latest slice holds it, and the plan and commit are the records Hudi writes.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import hudi_md
from hudi_md.errors import PendingClusteringError
from hudi_md.formats.commit_metadata import parse_instant_metadata
from hudi_md.metadata.validate import validate_metadata_table
from hudi_md.table.fs_view import FileSlice
from hudi_md.write import clustering, services
from hudi_md.write.writer import HudiWriter
from table_model import Model, assert_readers, assert_record_index_matches, hudi_rs_table

TABLE_TYPES = ["COPY_ON_WRITE", "MERGE_ON_READ"]
PARTITIONS = ["p0", "p1", "p2"]


def _opts(table_type: str, **extra: str) -> dict[str, str]:
    return {
        "hoodie.table.name": "clustered",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "p",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.metadata.record.index.enable": "true",
        "hoodie.parquet.small.file.limit": "0",  # every batch starts new file groups
        "hoodie.clean.automatic": "false",
        "hoodie.compact.inline": "false",
        **extra,
    }


def _rows(ids: list[int], ts: int) -> pa.Table:
    return pa.table(
        {
            "id": pa.array([f"id-{i:05d}" for i in ids], pa.string()),
            "p": pa.array([PARTITIONS[i % 3] for i in ids], pa.string()),
            "ts": pa.array([ts] * len(ids), pa.int64()),
            "fare": pa.array([float((i * 7919) % 1000) + ts for i in ids], pa.float64()),
        }
    )


def _slices(path: Path, partition: str | None = None) -> list[FileSlice]:
    view = hudi_md.open_table(str(path)).state.file_system_view()
    return view.latest_file_slices([partition] if partition else None)


def _check(path: Path, model: Model) -> None:
    table, _ = assert_readers(str(path), model.expected())
    assert validate_metadata_table(table) == []
    assert_record_index_matches(table, hudi_rs_table(str(path)))


def _fill(path: Path, table_type: str, batches: int = 5, **extra: str) -> Model:
    """``batches`` upserts, each 60 new keys (20 a partition) and, after the first, 15 updates."""
    model = Model(["p"])
    for b in range(batches):
        ids = list(range(b * 60, b * 60 + 60)) + ([i * 4 for i in range(15)] if b else [])
        batch = _rows(ids, ts=b)
        hudi_md.write(batch, str(path), operation="upsert", options=_opts(table_type, **extra))
        model.upsert(batch)
    return model


def _timeline_file(path: Path, suffix: str) -> Path:
    (found,) = [f for f in (path / ".hoodie" / "timeline").iterdir() if f.name.endswith(suffix)]
    return found


@pytest.mark.parametrize("table_type", TABLE_TYPES)
def test_clustering_packs_small_groups_into_one_per_partition(tmp_path: Path, table_type: str) -> None:
    path = tmp_path / "t"
    model = _fill(path, table_type)
    before = {p: _slices(path, p) for p in PARTITIONS}
    assert all(len(s) == 5 for s in before.values())
    if table_type == "MERGE_ON_READ":
        assert any(s.log_files for ss in before.values() for s in ss), "updates went to log files"

    writer = HudiWriter(str(path), _opts(table_type))
    (done,) = services.cluster(writer)
    instant = done.instant

    # the plan: Hudi's HoodieRequestedReplaceMetadata, one group a partition of its five slices
    requested = _timeline_file(path, f"{instant}.clustering.requested")
    plan = parse_instant_metadata(requested.read_bytes(), str(requested))
    assert plan["operationType"] == "CLUSTER"
    groups = plan["clusteringPlan"]["inputGroups"]
    assert sorted(g["slices"][0]["partitionPath"] for g in groups) == PARTITIONS
    assert all(len(g["slices"]) == 5 and g["numOutputFileGroups"] == 1 for g in groups)
    assert plan["clusteringPlan"]["strategy"]["strategyClassName"] == clustering.EXECUTION_STRATEGY
    assert plan["clusteringPlan"]["preserveHoodieMetadata"] is True

    # the commit: a replacecommit replacing exactly the input groups
    completed = _timeline_file(path, ".replacecommit")
    assert completed.name.startswith(f"{instant}_")
    meta = parse_instant_metadata(completed.read_bytes(), str(completed))
    assert meta["operationType"] == "CLUSTER"
    assert {p: sorted(f) for p, f in meta["partitionToReplaceFileIds"].items()} == {
        p: sorted(s.file_id for s in before[p]) for p in PARTITIONS
    }
    for p in PARTITIONS:
        (after,) = _slices(path, p)
        assert after.log_files == () and after.base_file is not None
        assert after.base_instant == instant
        assert after.file_id not in {s.file_id for s in before[p]}
        # Hudi's metadata is kept: commit times of the writes, the new file's name
        stored = pq.read_table(path / after.base_file.path)
        assert set(stored.column("_hoodie_file_name").to_pylist()) == {after.base_file.name}
        assert instant not in set(stored.column("_hoodie_commit_time").to_pylist())
    _check(path, model)


def test_commit_times_and_sequence_numbers_survive_clustering(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _fill(path, "COPY_ON_WRITE", batches=3)
    columns = ["_hoodie_record_key", "_hoodie_commit_time", "_hoodie_commit_seqno", "fare"]
    before = hudi_rs_table(str(path)).select(columns).sort_by("_hoodie_record_key")
    services.cluster(HudiWriter(str(path), _opts("COPY_ON_WRITE")))
    after = hudi_rs_table(str(path)).select(columns).sort_by("_hoodie_record_key")
    assert after.equals(before)


def test_sort_columns_order_each_new_file(tmp_path: Path) -> None:
    path = tmp_path / "t"
    model = _fill(path, "COPY_ON_WRITE")
    opts = _opts("COPY_ON_WRITE", **{"hoodie.clustering.plan.strategy.sort.columns": "fare,id"})
    (done,) = services.cluster(HudiWriter(str(path), opts))
    requested = _timeline_file(path, f"{done.instant}.clustering.requested")
    plan = parse_instant_metadata(requested.read_bytes(), str(requested))
    assert plan["clusteringPlan"]["strategy"]["strategyParams"] == {
        "hoodie.clustering.plan.strategy.sort.columns": "fare,id"
    }
    for p in PARTITIONS:
        (s,) = _slices(path, p)
        assert s.base_file is not None
        got = pq.read_table(path / s.base_file.path, columns=["fare", "id"]).to_pylist()
        assert got == sorted(got, key=lambda r: (r["fare"], r["id"]))
    _check(path, model)


def test_plan_strategy_limits(tmp_path: Path) -> None:
    """Slices at or above the small file limit stay; a group holds at most max.bytes.per.group of
    input and is written as ceil(bytes / target.file.max.bytes) file groups; max.num.groups caps
    the plan."""
    path = tmp_path / "t"
    model = _fill(path, "COPY_ON_WRITE", batches=6)
    sizes = sorted(s.base_file.size for s in _slices(path, "p0") if s.base_file)
    limit = sizes[-1]  # the largest base file is not small
    per_group = sizes[0] * 2 + 1
    opts = _opts(
        "COPY_ON_WRITE",
        **{
            "hoodie.clustering.plan.strategy.small.file.limit": str(limit),
            "hoodie.clustering.plan.strategy.max.bytes.per.group": str(per_group),
            "hoodie.clustering.plan.strategy.target.file.max.bytes": str(sizes[0]),
            "hoodie.clustering.plan.strategy.max.num.groups": "4",
            "hoodie.clustering.plan.strategy.partition.selected": "p0",
        },
    )
    writer = HudiWriter(str(path), opts)
    instant = services.schedule_clustering(writer)
    assert instant is not None
    requested = _timeline_file(path, f"{instant}.clustering.requested")
    groups = parse_instant_metadata(requested.read_bytes(), str(requested))["clusteringPlan"]["inputGroups"]
    planned = [s for g in groups for s in g["slices"]]
    assert {s["partitionPath"] for s in planned} == {"p0"}
    assert len(groups) <= 4
    by_size = {s.file_id: s.base_file.size for s in _slices(path, "p0") if s.base_file}
    assert all(by_size[s["fileId"]] < limit for s in planned)
    for g in groups:
        total = sum(by_size[s["fileId"]] for s in g["slices"])
        assert len(g["slices"]) == 1 or total <= per_group
        assert g["numOutputFileGroups"] == -(-total // sizes[0])
    # With an async clustering job (hoodie.clustering.async.enabled), an upsert into a planned
    # group is refused while the plan is pending (Hudi's SparkRejectUpdateStrategy) and leaves
    # nothing behind; a writer without one runs the plan first, then writes.
    first = next(s for s in _slices(path, "p0") if s.file_id == planned[0]["fileId"])
    assert first.base_file is not None
    key = pq.read_table(path / first.base_file.path, columns=["id"]).column(0)[0].as_py()
    update = _rows([int(key[3:])], ts=99)
    async_opts = {**opts, "hoodie.clustering.async.enabled": "true"}
    with pytest.raises(PendingClusteringError) as info:
        hudi_md.write(update, str(path), operation="upsert", options=async_opts)
    assert info.value.clustering_instant == instant
    assert [i.requested_time for i in hudi_md.open_table(str(path)).state.timeline.pending()] == [instant]
    done = hudi_md.write(update, str(path), operation="upsert", options=opts)
    model.upsert(update)
    timeline = hudi_md.open_table(str(path)).state.timeline
    clustered = timeline.get(instant)
    assert clustered is not None and clustered.is_completed and clustered.action == "replacecommit"
    assert clustered.completion_time is not None and clustered.completion_time < done
    _check(path, model)


@pytest.mark.parametrize("table_type", TABLE_TYPES)
def test_inline_clustering_every_n_commits(tmp_path: Path, table_type: str) -> None:
    path = tmp_path / "t"
    extra = {"hoodie.clustering.inline": "true", "hoodie.clustering.inline.max.commits": "3"}
    model = _fill(path, table_type, batches=7, **extra)
    timeline = hudi_md.open_table(str(path)).state.timeline
    clusterings = [
        i
        for i in timeline.completed().of_actions("replacecommit")
        if timeline.metadata(i)["operationType"] == "CLUSTER"
    ]
    assert len(clusterings) == 2  # after commits 3 and 6
    for p in PARTITIONS:
        assert len(_slices(path, p)) == 2  # the clustered group and the seventh batch's
    _check(path, model)


def test_nothing_to_cluster(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _fill(path, "COPY_ON_WRITE", batches=1)
    opts = _opts(
        "COPY_ON_WRITE", **{"hoodie.clustering.plan.strategy.single.group.clustering.enabled": "false"}
    )
    assert services.cluster(HudiWriter(str(path), opts)) == []
    assert not list((path / ".hoodie" / "timeline").glob("*.clustering.*"))


def test_cap_on_groups_records_the_partitions_left_out(tmp_path: Path) -> None:
    path = tmp_path / "t"
    model = _fill(path, "COPY_ON_WRITE", batches=4)
    one = {"hoodie.clustering.plan.strategy.max.num.groups": "1"}
    instant = services.schedule_clustering(HudiWriter(str(path), _opts("COPY_ON_WRITE", **one)))
    assert instant is not None
    requested = _timeline_file(path, f"{instant}.clustering.requested")
    plan = parse_instant_metadata(requested.read_bytes(), str(requested))["clusteringPlan"]
    assert [g["slices"][0]["partitionPath"] for g in plan["inputGroups"]] == ["p0"]
    assert plan["missingSchedulePartitions"] == ["p1", "p2"]
    # a writer finishes the pending plan first (no async clustering job), then writes
    hudi_md.write(_rows([999], ts=9), str(path), operation="upsert", options=_opts("COPY_ON_WRITE"))
    model.upsert(_rows([999], ts=9))
    assert len(_slices(path, "p0")) == 2 and len(_slices(path, "p1")) == 4
    _check(path, model)


def test_single_slice_groups_are_clustered_only_when_asked_or_sorted(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _fill(path, "COPY_ON_WRITE", batches=1)
    off = {"hoodie.clustering.plan.strategy.single.group.clustering.enabled": "false"}
    assert services.schedule_clustering(HudiWriter(str(path), _opts("COPY_ON_WRITE", **off))) is None
    sorted_too = {**off, "hoodie.clustering.plan.strategy.sort.columns": "fare"}
    assert services.schedule_clustering(HudiWriter(str(path), _opts("COPY_ON_WRITE", **sorted_too)))


@pytest.mark.parametrize("strategy", ["z-order", "hilbert"])
def test_space_curve_order(tmp_path: Path, strategy: str) -> None:
    """The layout strategy is the runner's (Hudi records only the sort columns in the plan):
    each new file holds its rows in the curve's order of (ts, fare)."""
    from hudi_md.write.layout_order import sort_order

    path = tmp_path / "t"
    model = _fill(path, "MERGE_ON_READ")
    opts = _opts(
        "MERGE_ON_READ",
        **{
            "hoodie.clustering.plan.strategy.sort.columns": "ts,fare",
            "hoodie.layout.optimize.strategy": strategy,
        },
    )
    services.cluster(HudiWriter(str(path), opts))
    for p in PARTITIONS:
        (s,) = _slices(path, p)
        assert s.base_file is not None
        stored = pq.read_table(path / s.base_file.path)
        assert sort_order(stored, ["ts", "fare"], strategy).to_pylist() == list(range(stored.num_rows))
    _check(path, model)


def test_the_cleaner_deletes_replaced_groups_after_the_retained_commits(tmp_path: Path) -> None:
    """KEEP_LATEST_COMMITS: the replaced file groups' files go with the clean of the
    hoodie.clean.commits.retained-th commit after the clustering (Apache Hudi 1.2 with 3: the third)."""
    path = tmp_path / "t"
    retained = {"hoodie.clean.automatic": "true", "hoodie.clean.commits.retained": "3"}
    model = _fill(path, "COPY_ON_WRITE", **retained)
    replaced = {s.file_id for p in PARTITIONS for s in _slices(path, p)}
    services.cluster(HudiWriter(str(path), _opts("COPY_ON_WRITE", **retained)))

    def stored_ids() -> set[str]:
        return {f.name.split("_")[0] for p in PARTITIONS for f in (path / p).glob("*.parquet")}

    for n in range(1, 4):
        assert replaced <= stored_ids(), f"replaced groups kept after {n - 1} later commits"
        batch = _rows([2000 + n], ts=10 + n)
        hudi_md.write(batch, str(path), operation="upsert", options=_opts("COPY_ON_WRITE", **retained))
        model.upsert(batch)
    assert not replaced & stored_ids(), "the third commit's clean deleted the replaced groups"
    _check(path, model)


@pytest.mark.parametrize("table_type", TABLE_TYPES)
def test_rollback_and_restore_undo_a_clustering(tmp_path: Path, table_type: str) -> None:
    """Rolling back a clustering's replacecommit brings its input file groups back (the record
    index points at them again); a restore to a write before it does the same."""
    path = tmp_path / "t"
    model = _fill(path, table_type, batches=3)
    before = {p: sorted(s.file_id for s in _slices(path, p)) for p in PARTITIONS}
    first = hudi_md.open_table(str(path)).state.timeline.write_timeline().last()
    assert first is not None
    (done,) = services.cluster(HudiWriter(str(path), _opts(table_type)))
    HudiWriter(str(path), _opts(table_type)).rollback_commit(done.instant)
    assert {p: sorted(s.file_id for s in _slices(path, p)) for p in PARTITIONS} == before
    _check(path, model)
    services.cluster(HudiWriter(str(path), _opts(table_type)))
    HudiWriter(str(path), _opts(table_type)).restore(first.requested_time)
    assert {p: sorted(s.file_id for s in _slices(path, p)) for p in PARTITIONS} == before
    _check(path, model)


@pytest.mark.parametrize("version", ["v6", "v8"])
def test_services_refuse_older_table_versions(table_path, tmp_path: Path, version: str) -> None:
    """hudi-md writes table version 9: its table services refuse a version 6 or 8 table as its
    writers do (version 6 keeps another timeline layout), writing nothing."""
    import shutil

    from hudi_md.errors import InvalidOptionError

    path = tmp_path / "t"
    shutil.copytree(table_path(f"sample_table/cow/{version}_simplekeygen_nonhivestyle.zip"), path)
    before = sorted(str(p.relative_to(path)) for p in path.rglob("*"))
    w = HudiWriter(str(path))
    for service in (services.cluster, services.schedule_clustering, services.compact):
        with pytest.raises(InvalidOptionError, match=f"table version {version[1]}; hudi-md writes version 9"):
            service(w)
    assert sorted(str(p.relative_to(path)) for p in path.rglob("*")) == before


def test_inline_clustering_that_archival_keeps_from_ever_running_is_warned(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Inline clustering counts commits on the active timeline, which archival keeps to
    hoodie.keep.max.commits: with max.commits above it, it never runs (as in Apache Hudi 1.2).
    The writer says so, once."""
    path = tmp_path / "t"
    never = {
        "hoodie.clustering.inline": "true",
        "hoodie.clustering.inline.max.commits": "50",
        "hoodie.keep.min.commits": "20",
        "hoodie.keep.max.commits": "30",
    }
    with caplog.at_level("WARNING", logger="hudi_md.write.clustering"):
        _fill(path, "COPY_ON_WRITE", batches=2, **never)
    warned = [r for r in caplog.records if "never runs" in r.getMessage()]
    assert len(warned) == 1 and "hoodie.keep.max.commits=30" in warned[0].getMessage()
