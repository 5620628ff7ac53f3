"""Crash recovery of a MOR upsert with inline compaction (issue 11).

A fault hook in the storage layer kills the writer before each storage mutation of the
compaction in turn (SimulatedCrash, and once a real SIGKILL of a writer process). The next writer
(an upsert, then a clean and a compaction) must recover: no committed row lost for hudi-md (MDT
and listing) and hudi-rs, no pending compaction or clean left, and validate finds no difference.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import hudi_md
from hudi_md.metadata.validate import validate_metadata_table
from hudi_md.storage import SimulatedCrash, Storage, set_fault_hook
from hudi_md.table.config import TableConfig
from hudi_md.table.timeline import Timeline
from hudi_md.write import recovery, services
from hudi_md.write.config import WriteConfig
from hudi_md.write.writer import HudiWriter
from table_model import (
    Model,
    assert_readers,
    assert_same,
    pending_instants,
    read_hudi_md,
    read_hudi_rs,
    read_listing,
    rows,
)

LOCK = ".hoodie/.locks/hudi-md.lock"


def _options(mdt: bool, **extra: str) -> dict[str, str]:
    opts = {
        "hoodie.table.name": "crash",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": "MERGE_ON_READ",
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.metadata.enable": str(mdt).lower(),
        "hoodie.metadata.record.index.enable": str(mdt).lower(),
        "hoodie.compact.inline": "true",
        "hoodie.compact.inline.max.delta.commits": "3",
        "hoodie.cleaner.commits.retained": "1",
        "hoodie.archive.automatic": "false",
    }
    opts.update(extra)
    return opts


# The table before the crashing write: an insert and an upsert (two deltacommits); the third
# deltacommit (the crashing write's) makes the inline compaction due.
STEPS = [(range(0, 60), 1, 1), (range(0, 60, 2), 2, 2)]
CRASHING = (range(30, 90), 3, 3)
NEXT = (range(0, 90, 7), 4, 4)  # some keys of every partition


@pytest.fixture(scope="module", params=[True, False], ids=["mdt", "no_mdt"])
def base_table(request: Any, tmp_path_factory: Any) -> tuple[Path, bool, int, list[str]]:
    """The table before the crashing upsert; how many storage mutations that upsert makes before
    its compaction starts, and those of the compaction (from one run on a copy, recorded)."""
    mdt = request.param
    path = tmp_path_factory.mktemp("crash") / "base"
    for ids, ts, seed in STEPS:
        HudiWriter(str(path), _options(mdt)).write(rows(ids, ts, seed), "upsert")
    probe = path.parent / "probe"
    shutil.copytree(path, probe)
    seen: list[str] = []
    previous = set_fault_hook(lambda kind, p: seen.append(f"{kind} {p}"))
    try:
        HudiWriter(str(probe), _options(mdt)).write(rows(*CRASHING), "upsert")
    finally:
        set_fault_hook(previous)
    first = next(i for i, p in enumerate(seen) if re.search(r"\d+\.compaction\.requested", p))
    last = max(i for i, p in enumerate(seen) if re.search(r"timeline/\.?\d+_\d+\.commit", p))
    # every mutation of the compaction, and the one after it (markers are deleted last)
    return path, mdt, first, seen[first : last + 2]


def _crash_at(n: int) -> Any:
    """A hook raising SimulatedCrash before the n-th mutation (0-based) and every one after it:
    the dead writer does nothing more, not even release its lock."""
    count = [0]

    def hook(kind: str, path: str) -> None:
        count[0] += 1
        if count[0] > n:
            raise SimulatedCrash(f"before {kind} {path}")

    return hook


def _pending(path: Path) -> list[str]:
    return pending_instants(str(path))


def check_recovered(path: Path, mdt: bool, model: Model) -> None:
    table, _ = assert_readers(str(path), model.expected())
    assert _pending(path) == [], "pending instants after recovery"
    if mdt:
        assert table.state.uses_metadata_table
        diffs = validate_metadata_table(table)
        assert not diffs, [d.describe() for d in diffs]


def _recover(path: Path, mdt: bool, model: Model) -> None:
    """The next writer: an upsert (no inline compaction), then clean and compaction services."""
    opts = _options(mdt, **{"hoodie.compact.inline": "false"})
    w = HudiWriter(str(path), opts)
    w.write(rows(*NEXT), "upsert")
    model.upsert(rows(*NEXT))
    services.clean(w, WriteConfig.from_options(w.options, TableConfig.load(w.storage)))
    check_recovered(path, mdt, model)
    services.compact(w)
    services.clean(w, WriteConfig.from_options(w.options, TableConfig.load(w.storage)))
    check_recovered(path, mdt, model)


def _model(*steps: tuple[range, int, int]) -> Model:
    model = Model()
    for ids, ts, seed in steps:
        model.upsert(rows(ids, ts, seed))
    return model


def test_crash_during_inline_compaction(base_table: Any, tmp_path: Path) -> None:
    path0, mdt, first, mutations = base_table
    assert len(mutations) >= 4
    lost = 0
    failures = []
    for n, mutation in enumerate(mutations):
        path = tmp_path / f"t{n}"
        shutil.copytree(path0, path)
        previous = set_fault_hook(_crash_at(first + n))
        try:
            with pytest.raises(SimulatedCrash):
                HudiWriter(str(path), _options(mdt)).write(rows(*CRASHING), "upsert")
        finally:
            set_fault_hook(previous)
        # The deltacommit completed before the compaction started: its rows are committed.
        model = _model(*STEPS, CRASHING)
        # The dead writer's lock is left behind (its token dead): the next writer breaks it.
        try:
            _recover(path, mdt, model)
        except Exception as e:
            failures.append((n, mutation, f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"))
            try:
                got = hudi_md.open_table(str(path)).read(columns=["id"]).column("id").to_pylist()
                lost += len({r["id"] for r in model.rows.values()} - set(got))
            except Exception:
                lost += len(model.rows)
        shutil.rmtree(path)
    kinds = Counter(f[2] for f in failures)
    print(
        f"crash points tried: {len(mutations)}; failed recoveries: {len(failures)} {dict(kinds)}; "
        f"rows missing from hudi-md's read afterwards (sum over trials): {lost}"
    )
    assert not failures, failures


_CHILD = textwrap.dedent(
    """
    import os, re, signal, sys
    import pyarrow as pa
    sys.path[:0] = [{tests!r}, {tests_root!r}]
    from table_model import rows
    from test_crash_recovery import CRASHING, _options
    from hudi_md.storage import set_fault_hook
    from hudi_md.write.writer import HudiWriter

    seen = [0]
    def hook(kind, path):
        if re.search(r"\\d+\\.compaction\\.requested", path):
            seen[0] = 1
        if seen[0]:
            seen[0] += 1
            if seen[0] > {n}:
                os.kill(os.getpid(), signal.SIGKILL)
    set_fault_hook(hook)
    HudiWriter({path!r}, _options({mdt})).write(rows(*CRASHING), "upsert")
    """
)


@pytest.mark.parametrize("n", [3, 8])
def test_sigkill_during_inline_compaction(n: int, tmp_path: Path) -> None:
    """A writer process SIGKILLed mid-compaction (n mutations into it), lock file and all: the
    next writer breaks the dead writer's lock at once and recovers every row."""
    path = tmp_path / "t"
    model = Model()
    for ids, ts, seed in STEPS:
        HudiWriter(str(path), _options(True)).write(rows(ids, ts, seed), "upsert")
        model.upsert(rows(ids, ts, seed))
    code = _CHILD.format(
        tests=str(Path(__file__).parent),
        tests_root=str(Path(__file__).parents[1]),
        n=n,
        path=str(path),
        mdt=True,
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
    assert proc.returncode == -9, proc.stderr.decode()[-2000:]
    model.upsert(rows(*CRASHING))
    assert any("compaction" in p for p in _pending(path))
    assert (path / LOCK).exists(), "the killed writer's lock is left behind"
    _recover(path, True, model)


def _fail_on(pattern: str, times: int = 1) -> Any:
    left = [times]

    def hook(kind: str, path: str) -> None:
        if left[0] and re.search(pattern, f"{kind} {path}"):
            left[0] -= 1
            raise PermissionError(f"injected: {kind} {path}")

    return hook


def test_lock_release_failure_after_commit_reports_success(tmp_path: Path) -> None:
    """The lock's delete fails (once) after the commit completed: the write reports its commit,
    and the lock it left (a dead token of this process) does not block what follows."""
    path = tmp_path / "t"
    HudiWriter(str(path), _options(True)).write(rows(*STEPS[0]), "upsert")
    previous = set_fault_hook(_fail_on(r"^delete .*hudi-md\.lock$"))
    try:
        result = HudiWriter(str(path), _options(True, **{"hoodie.compact.inline": "false"})).write(
            rows(*STEPS[1]), "upsert"
        )
    finally:
        set_fault_hook(previous)
    # (the inline services that followed broke the lock left behind)
    assert hudi_md.open_table(str(path)).timeline.completed().get(result.instant) is not None
    HudiWriter(str(path), _options(True)).write(rows(*CRASHING), "upsert")
    check_recovered(path, True, _model(*STEPS, CRASHING))


def test_inline_service_failure_says_the_commit_completed(tmp_path: Path) -> None:
    from hudi_md.write.writer import CommitCompletedError

    path = tmp_path / "t"
    for ids, ts, seed in STEPS:
        HudiWriter(str(path), _options(True)).write(rows(ids, ts, seed), "upsert")
    previous = set_fault_hook(_fail_on(r"compaction\.requested"))
    try:
        with pytest.raises(CommitCompletedError) as info:
            HudiWriter(str(path), _options(True)).write(rows(*CRASHING), "upsert")
    finally:
        set_fault_hook(previous)
    assert "completed" in str(info.value)
    assert hudi_md.open_table(str(path)).timeline.completed().get(info.value.instant) is not None
    _recover(path, True, _model(*STEPS, CRASHING))


# Metadata files a reader must never see half-written: instants, hoodie.properties (and its
# backup), index.json, the LSM timeline's manifests and _version_.
_METADATA_FILE = re.compile(
    r"(^\d+(_\d+)?\.[a-z]+(\.(requested|inflight))?$)|^hoodie\.properties(\.backup)?$|^index\.json$"
    r"|^manifest_\d+$|^_version_$"
)


def test_metadata_files_are_written_whole(tmp_path: Path) -> None:
    """On local disk every metadata file is written to a hidden temporary name and renamed into
    place (never written in place, where a crash would leave it torn); a crash between the two
    leaves only the temporary file, which listings ignore."""
    path = tmp_path / "t"
    in_place: list[str] = []
    renamed: set[str] = set()

    def hook(kind: str, p: str) -> None:
        name = p.rsplit("/", 1)[-1]
        if kind in ("write", "create") and _METADATA_FILE.match(name):
            in_place.append(p)
        if kind == "rename" and _METADATA_FILE.match(name):
            renamed.add(name)

    opts = _options(True, **{"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3"})
    opts["hoodie.archive.automatic"] = "true"
    previous = set_fault_hook(hook)
    try:
        for i in range(6):
            HudiWriter(str(path), opts).write(rows(range(i * 5, i * 5 + 40), i + 1, i), "upsert")
    finally:
        set_fault_hook(previous)
    assert in_place == []
    assert {"hoodie.properties", "index.json"} <= renamed
    assert any(n.endswith(".commit") for n in renamed) and any(n.endswith(".clean") for n in renamed)
    # a crash between the temporary write and the rename of a completed instant
    previous = set_fault_hook(_crash_at_rename(r"/t/\.hoodie/timeline/\d+_\d+\.deltacommit$"))
    try:
        with pytest.raises(SimulatedCrash):
            HudiWriter(str(path), opts).write(rows(range(0, 10), 9, 9), "upsert")
    finally:
        set_fault_hook(previous)
    timeline = path / ".hoodie" / "timeline"
    assert [p.name for p in timeline.iterdir() if p.name.endswith(".tmp")]
    model = _model(*[(range(i * 5, i * 5 + 40), i + 1, i) for i in range(6)])
    HudiWriter(str(path), _options(True)).write(rows(*NEXT), "upsert")
    model.upsert(rows(*NEXT))
    check_recovered(path, True, model)


def _crash_at_rename(pattern: str) -> Any:
    crashed = [False]

    def hook(kind: str, p: str) -> None:
        if crashed[0] or (kind == "rename" and re.search(pattern, p)):
            crashed[0] = True
            raise SimulatedCrash(f"before {kind} {p}")

    return hook


@pytest.fixture(scope="module", params=[True, False], ids=["mdt", "no_mdt"])
def cleanable_table(request: Any, tmp_path_factory: Any) -> tuple[Path, bool, list[str]]:
    """A table whose next clean deletes the slices a compaction replaced, and that clean's
    storage mutations (recorded on a copy)."""
    mdt = request.param
    path = tmp_path_factory.mktemp("clean") / "base"
    for ids, ts, seed in [*STEPS, CRASHING]:
        HudiWriter(str(path), _options(mdt)).write(rows(ids, ts, seed), "upsert")
    opts = _options(mdt, **{"hoodie.compact.inline": "false", "hoodie.clean.automatic": "false"})
    HudiWriter(str(path), opts).write(rows(*NEXT), "upsert")
    probe = path.parent / "probe"
    shutil.copytree(path, probe)
    seen: list[str] = []
    previous = set_fault_hook(lambda kind, p: seen.append(f"{kind} {p}"))
    try:
        w = HudiWriter(str(probe), opts)
        assert services.clean(w, WriteConfig.from_options(w.options, TableConfig.load(w.storage)))
    finally:
        set_fault_hook(previous)
    return path, mdt, seen


def test_crash_during_clean(cleanable_table: Any, tmp_path: Path) -> None:
    path0, mdt, mutations = cleanable_table
    assert any(m.startswith("delete") and ".parquet" in m for m in mutations)
    opts = _options(mdt, **{"hoodie.compact.inline": "false"})
    failures = []
    for n, mutation in enumerate(mutations):
        path = tmp_path / f"t{n}"
        shutil.copytree(path0, path)
        previous = set_fault_hook(_crash_at(n))
        try:
            with pytest.raises(SimulatedCrash):
                w = HudiWriter(str(path), opts)
                services.clean(w, WriteConfig.from_options(w.options, TableConfig.load(w.storage)))
        finally:
            set_fault_hook(previous)
        model = _model(*STEPS, CRASHING, NEXT)
        try:
            later = (range(5, 90, 11), 5, 5)
            HudiWriter(str(path), opts).write(rows(*later), "upsert")
            model.upsert(rows(*later))
            check_recovered(path, mdt, model)
        except Exception as e:
            failures.append((n, mutation, f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"))
        shutil.rmtree(path)
    print(f"clean crash points tried: {len(mutations)}; failed recoveries: {len(failures)}")
    assert not failures, failures


def test_crash_during_rollback_of_a_commit(tmp_path: Path) -> None:
    """``rollback_commit`` of the latest deltacommit killed before each of its storage mutations:
    once its plan is on the timeline, the next writer finishes it (the commit's rows go), before
    that the commit stays; never a pending instant afterwards, validate clean."""
    base = tmp_path / "base"
    opts = _options(True, **{"hoodie.compact.inline": "false", "hoodie.clean.automatic": "false"})
    for ids, ts, seed in STEPS:
        HudiWriter(str(base), opts).write(rows(ids, ts, seed), "upsert")
    last = HudiWriter(str(base), opts).write(rows(*NEXT), "upsert").instant
    probe = tmp_path / "probe"
    shutil.copytree(base, probe)
    seen: list[str] = []
    previous = set_fault_hook(lambda kind, p: seen.append(p))
    try:
        HudiWriter(str(probe), opts).rollback_commit(last)
    finally:
        set_fault_hook(previous)
    failures = []
    for n in range(len(seen)):
        path = tmp_path / f"t{n}"
        shutil.copytree(base, path)
        previous = set_fault_hook(_crash_at(n))
        try:
            with pytest.raises(SimulatedCrash):
                HudiWriter(str(path), opts).rollback_commit(last)
        finally:
            set_fault_hook(previous)
        planned = any(f.name.endswith(".rollback.requested") for f in (path / ".hoodie/timeline").iterdir())
        done = hudi_md.open_table(str(path)).timeline.completed().get(last) is None
        model = _model(*STEPS) if (planned or done) else _model(*STEPS, NEXT)
        later = (range(5, 90, 11), 5, 5)
        try:
            HudiWriter(str(path), opts).write(rows(*later), "upsert")
            model.upsert(rows(*later))
            check_recovered(path, True, model)
        except Exception as e:
            failures.append((n, seen[n], f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"))
        shutil.rmtree(path)
    print(f"rollback crash points tried: {len(seen)}; failed recoveries: {len(failures)}")
    assert not failures, failures


def test_cleaner_keeps_slices_of_a_pending_compaction(
    base_table: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With recovery switched off, the compaction stays pending: the cleaner alone must keep the
    base files and logs it reads (and not count its new slice as a retained version)."""
    path0, mdt, first, mutations = base_table
    path = tmp_path / "t"
    shutil.copytree(path0, path)
    inflight = next(i for i, m in enumerate(mutations) if ".parquet" in m and "marker" not in m)
    previous = set_fault_hook(_crash_at(first + inflight + 1))
    try:
        with pytest.raises(SimulatedCrash):
            HudiWriter(str(path), _options(mdt)).write(rows(*CRASHING), "upsert")
    finally:
        set_fault_hook(previous)
    for module in (recovery, services):  # where writers and services call it from
        monkeypatch.setattr(module, "resolve_pending_services", lambda table: [])
    opts = _options(mdt, **{"hoodie.compact.inline": "false"})
    w = HudiWriter(str(path), opts)
    w.write(rows(*NEXT), "upsert")
    services.clean(w, WriteConfig.from_options(w.options, TableConfig.load(w.storage)))
    assert any("compaction" in p for p in _pending(path))
    expected = _model(*STEPS, CRASHING, NEXT).expected()
    assert_same(read_listing(str(path)), expected, "hudi-md (listing)")
    assert_same(read_hudi_rs(str(path)), expected, "hudi-rs")


def _pending_clustering(path: Path, file_slice: Any) -> str:
    """A clustering of one file group as Apache Hudi schedules it (``T.clustering.requested``)."""
    from hudi_md.formats.commit_metadata_writer import serialize_instant_metadata
    from hudi_md.table.timeline_writer import TimelineWriter, new_instant_time

    storage = Storage(str(path))
    last = Timeline.load(storage, ".hoodie/timeline", 2).last()
    t = new_instant_time(after=last.requested_time)
    plan = {
        "operationType": "CLUSTER",
        "clusteringPlan": {
            "inputGroups": [
                {
                    "slices": [
                        {
                            "dataFilePath": file_slice.base_file.path if file_slice.base_file else "",
                            "deltaFilePaths": [lf.path for lf in file_slice.log_files],
                            "fileId": file_slice.file_id,
                            "partitionPath": file_slice.partition_path,
                            "bootstrapFilePath": "",
                            "version": 1,
                        }
                    ],
                    "metrics": {},
                    "numOutputFileGroups": 1,
                    "extraMetadata": None,
                    "version": 1,
                }
            ],
            "strategy": {
                "strategyClassName": "org.apache.hudi.client.clustering.run.strategy."
                "SparkSortAndSizeExecutionStrategy",
                "strategyParams": {},
                "version": 1,
            },
            "extraMetadata": {},
            "version": 1,
            "preserveHoodieMetadata": True,
        },
        "extraMetadata": {},
        "version": 1,
    }
    TimelineWriter(storage, ".hoodie/timeline").requested(
        t, "clustering", serialize_instant_metadata("requested_replace", plan)
    )
    return t


def test_pending_clustering_of_apache_hudi(tmp_path: Path) -> None:
    """A clustering Apache Hudi scheduled for its async clustering job
    (``hoodie.clustering.async.enabled``): the next writer neither rolls it back nor updates the
    file group it reads (PendingClusteringError naming it, as Hudi's SparkRejectUpdateStrategy),
    inserts and other file groups are written; compaction and the cleaner leave that file group
    alone. A writer without an async job runs the plan first, then writes."""
    from hudi_md.errors import PendingClusteringError

    path = tmp_path / "t"
    opts = _options(
        True,
        **{
            "hoodie.compact.inline": "false",
            "hoodie.clean.automatic": "false",
            "hoodie.clustering.async.enabled": "true",
        },
    )
    model = Model()
    for ids, ts, seed in [*STEPS, CRASHING]:
        HudiWriter(str(path), opts).write(rows(ids, ts, seed), "upsert")
        model.upsert(rows(ids, ts, seed))
    table = hudi_md.open_table(str(path))
    target = next(s for s in table.state.file_system_view().latest_file_slices(["city=sf"]) if s.log_files)
    files_before = sorted(p.name for p in (path / "city=sf").iterdir() if target.file_id in p.name)
    clustering = _pending_clustering(path, target)
    sf_ids = [i for i in range(0, 90) if i % 3 == 0]  # CITIES[0] == "sf"
    with pytest.raises(PendingClusteringError) as info:
        HudiWriter(str(path), opts).write(rows(sf_ids, 5, 5), "upsert")
    assert clustering in str(info.value) and info.value.clustering_instant == clustering
    assert _pending(path) == [f"[{clustering}__clustering__REQUESTED]"], "refused write left nothing"
    # other partitions and new keys are written; the clustering stays pending
    others = [i for i in range(0, 120) if i % 3 != 0 or i >= 90]
    HudiWriter(str(path), opts).write(rows(others, 6, 6), "upsert")
    model.upsert(rows(others, 6, 6))
    w = HudiWriter(str(path), opts)
    services.compact(w)
    services.clean(w, WriteConfig.from_options(w.options, TableConfig.load(w.storage)))
    assert _pending(path) == [f"[{clustering}__clustering__REQUESTED]"]
    after = sorted(p.name for p in (path / "city=sf").iterdir() if target.file_id in p.name)
    assert after == files_before, "compaction and clean left the clustered file group alone"
    expected = model.expected()
    assert read_hudi_md(str(path)) == expected
    assert read_hudi_rs(str(path)) == expected
    # no async job: the writer runs Hudi's plan (the slice merged into a new file group), then writes
    sync_opts = {**opts, "hoodie.clustering.async.enabled": "false"}
    HudiWriter(str(path), sync_opts).write(rows(sf_ids, 5, 5), "upsert")
    model.upsert(rows(sf_ids, 5, 5))
    assert _pending(path) == []
    view = hudi_md.open_table(str(path)).state.file_system_view()
    assert target.file_id not in {s.file_id for s in view.latest_file_slices(["city=sf"])}
    expected = model.expected()
    assert read_hudi_md(str(path)) == expected
    assert read_hudi_rs(str(path)) == expected
    assert validate_metadata_table(hudi_md.open_table(str(path))) == []
