"""Timeline archival into the LSM timeline (table version 9) and reading it back.

Tables are written by hudi-md with many small commits; after archival the active timeline must be
the kept window, every archived action must be in the LSM timeline byte for byte, and hudi-md,
hudi-rs and `metadata validate` must still see the same table.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

import hudi_md
from hudi_md.cli import main as cli_main
from hudi_md.formats.commit_metadata import parse_instant_metadata
from hudi_md.storage import Storage
from hudi_md.table.archived import (
    HISTORY_PATH,
    ManifestEntry,
    archived_instant_bytes,
    archived_instant_metadata,
    archived_timeline,
    file_level,
    latest_manifest,
    latest_snapshot_version,
    load_archived_timeline,
    manifest_json,
    manifest_versions,
    parse_manifest,
    read_archived_rows,
)
from hudi_md.table.config import TableConfig
from hudi_md.table.timeline import CLEAN, COMPLETES_AS, ROLLBACK, State, Timeline, parse_instant_file
from hudi_md.table.timeline_writer import TimelineWriter
from hudi_md.write import archival
from hudi_md.write.archival import LSMTimelineWriter, archive, instants_to_archive
from table_model import read_hudi_md, read_hudi_rs

TIMELINE = ".hoodie/timeline"
MDT_TIMELINE = ".hoodie/metadata/.hoodie/timeline"
KEEP = {"keep_min_commits": 3, "keep_max_commits": 5, "cleaner_commits_retained": 2}
COMMITS = ("commit", "deltacommit", "replacecommit")


def _options(table_type: str = "COPY_ON_WRITE", **extra: str) -> dict[str, str]:
    opts = {
        "hoodie.table.name": "arch",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.metadata.compact.max.delta.commits": "2",
        "hoodie.cleaner.commits.retained": "2",
        "hoodie.archive.automatic": "false",  # these tests archive explicitly
    }
    if table_type == "MERGE_ON_READ":
        opts["hoodie.compact.inline"] = "true"
        opts["hoodie.compact.inline.max.delta.commits"] = "3"
    opts.update(extra)
    return opts


def _batch(k: int) -> pa.Table:
    return pa.table(
        {
            "id": [f"id-{k % 3}", f"id-{100 + k}"],
            "city": ["sf", ["nyc", "la"][k % 2]],
            "ts": pa.array([k, k], pa.int64()),
            "fare": [float(k), 1.0],
        }
    )


def _write(path: Path, k: int, opts: dict[str, str], operation: str | None = None) -> str:
    op = operation or ("insert" if k == 0 else "upsert")
    return hudi_md.write(_batch(k), str(path), operation=op, options=opts)


def _build(path: Path, n: int, opts: dict[str, str], start: int = 0) -> None:
    for k in range(start, start + n):
        _write(path, k, opts)


@pytest.fixture(scope="module")
def cow35(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A COW table of 35 commits (with cleans and MDT compactions), built once; tests copy it."""
    path = tmp_path_factory.mktemp("cow35") / "t"
    _build(path, 35, _options())
    return path


def _copy(src: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "t"
    shutil.copytree(src, dst)
    return dst


def _rows(path: Path) -> list[tuple]:
    return read_hudi_md(str(path))


def _rs_rows(path: Path) -> list[tuple]:
    return read_hudi_rs(str(path))


def _validate(path: Path) -> None:
    result = CliRunner().invoke(cli_main, ["metadata", "validate", str(path)])
    assert result.exit_code == 0, result.output
    assert "OK" in result.output


def _timeline(path: Path) -> Timeline:
    return Timeline.load(Storage(str(path)), TIMELINE, 2)


def _active_files(path: Path) -> dict[str, bytes]:
    return {f.name: f.read_bytes() for f in (path / TIMELINE).iterdir() if f.is_file()}


def _groups(files: dict[str, bytes]) -> dict[tuple[str, str], dict[State, str]]:
    out: dict[tuple[str, str], dict[State, str]] = {}
    for name in files:
        i = parse_instant_file(name, 2)
        if i is not None:
            out.setdefault((i.requested_time, COMPLETES_AS.get(i.action, i.action)), {})[i.state] = name
    return out


def _commit_count(path: Path) -> int:
    return sum(1 for i in _timeline(path).completed() if i.action in COMMITS)


# --- the main flow -------------------------------------------------------------------------------------


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_archive_keeps_the_window_and_every_reader_agrees(
    table_type: str, tmp_path: Path, cow35: Path
) -> None:
    opts = _options(table_type)
    if table_type == "COPY_ON_WRITE":
        path = _copy(cow35, tmp_path)
        n = 35
    else:
        path = tmp_path / "t"
        n = 20
        _build(path, n, opts)
    before_rows = _rows(path)
    assert _rs_rows(path) == before_rows
    files_before = _active_files(path)
    groups_before = _groups(files_before)
    timeline_before = _timeline(path)

    archived = archive(Storage(str(path)), compact_max_delta_commits=3, **KEEP)

    assert archived
    kept = _commit_count(path)
    if table_type == "COPY_ON_WRITE":
        assert kept == 3  # down to keep_min
    else:
        # MOR keeps the deltacommits the next compaction needs (from the last compaction on)
        assert 3 <= kept <= 5
        last_compaction = timeline_before.completed().of_actions("commit").last()
        assert last_compaction is not None
        assert _timeline(path).contains(last_compaction.requested_time)
    archived_times = {i.requested_time for i in archived}
    archived_commits = [i for i in archived if i.action in COMMITS]
    assert len(archived_commits) == sum(1 for i in timeline_before.completed() if i.action in COMMITS) - kept

    # the active timeline lost exactly the archived actions, all of their files
    after = _active_files(path)
    for i in archived:
        for name in groups_before[(i.requested_time, i.action)].values():
            assert name not in after
    assert set(files_before) - set(after) == {
        n for i in archived for n in groups_before[(i.requested_time, i.action)].values()
    }
    # the oldest remaining commit is newer than every archived one; older cleans went too
    first_kept = min(i.requested_time for i in _timeline(path).completed() if i.action in COMMITS)
    assert all(t < first_kept for t in archived_times)
    for i in timeline_before.completed():
        if i.action in (CLEAN, ROLLBACK) and i.requested_time < max(
            a.requested_time for a in archived_commits
        ):
            assert i.requested_time in archived_times

    # every archived action is in the LSM timeline with the same completion and the same bytes
    storage = Storage(str(path))
    rows = {r.requested_time: r for r in read_archived_rows(storage)}
    assert set(rows) == archived_times
    for i in archived:
        r = rows[i.requested_time]
        group = groups_before[(i.requested_time, i.action)]
        assert (r.action, r.completion_time, r.version) == (i.action, i.completion_time, 1)
        assert r.metadata == (files_before[group[State.COMPLETED]] or None)
        pending = parse_instant_file(group.get(State.REQUESTED) or group.get(State.INFLIGHT) or "", 2)
        if pending is not None and pending.action in (CLEAN, "compaction"):
            assert r.plan == files_before[group[State.REQUESTED]]
            assert r.plan
        elif i.action in ("commit", "deltacommit"):
            assert r.plan is None
        assert archived_instant_bytes(storage, i) == r.metadata
        if r.metadata:
            assert archived_instant_metadata(storage, i) == parse_instant_metadata(r.metadata, "x")
    loaded = load_archived_timeline(storage)
    assert [(i.requested_time, i.action, i.completion_time) for i in loaded] == sorted(
        (i.requested_time, i.action, i.completion_time) for i in archived
    )
    assert all(i.state is State.COMPLETED for i in loaded)
    tl = archived_timeline(storage)
    first_commit = next(i for i in tl if i.action in COMMITS)
    assert tl.metadata(first_commit)["partitionToWriteStats"]

    # one level-0 file, manifest_1, _version_ = 1
    history = path / HISTORY_PATH
    assert (history / "_version_").read_text() == "1"
    (entry,) = latest_manifest(storage)
    assert file_level(entry.file_name) == 0
    assert entry.file_len == (history / entry.file_name).stat().st_size
    first, last = sorted(archived_times)[0], sorted(archived_times)[-1]
    assert entry.file_name == f"{first}_{last}_0.parquet"

    # readers see the same table
    assert _rows(path) == before_rows
    assert hudi_md.open_table(str(path), {"hoodie.metadata.enable": "false"}).read().num_rows == len(
        before_rows
    )
    assert _rs_rows(path) == before_rows
    _validate(path)

    # nothing more to archive; later writes and archivals keep working
    assert archive(Storage(str(path)), compact_max_delta_commits=3, **KEEP) == []
    _build(path, 4, opts, start=n)
    expected = _rows(path)
    more = archive(Storage(str(path)), compact_max_delta_commits=3, **KEEP)
    assert more
    assert _rows(path) == expected == _rs_rows(path)
    _validate(path)
    assert len(read_archived_rows(storage)) == len(archived) + len(more)
    assert (history / "_version_").read_text() == "2"


def test_crash_after_the_archive_is_written_then_rerun(
    tmp_path: Path, cow35: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _copy(cow35, tmp_path)
    expected = _rows(path)
    active_before = _active_files(path)
    storage = Storage(str(path))

    def crash(*_a: object, **_k: object) -> None:
        raise RuntimeError("killed between the archive write and the deletion")

    monkeypatch.setattr(archival, "_delete_active_files", crash)
    with pytest.raises(RuntimeError):
        archive(storage, **KEEP)
    # the archive is committed; the active timeline is untouched and still rules
    rows = read_archived_rows(storage)
    assert rows
    assert _active_files(path) == active_before
    assert _rows(path) == expected == _rs_rows(path)
    _validate(path)
    version = latest_snapshot_version(storage)
    (name,) = [e.file_name for e in latest_manifest(storage)]
    data = (path / HISTORY_PATH / name).read_bytes()

    monkeypatch.undo()
    again = archive(storage, **KEEP)
    assert {i.requested_time for i in again} == {r.requested_time for r in rows}
    # the committed file was not rewritten and no new manifest was needed for it
    assert latest_snapshot_version(storage) == version
    assert (path / HISTORY_PATH / name).read_bytes() == data
    assert _commit_count(path) == 3
    for r in rows:
        assert not [n for n in _active_files(path) if n.startswith(r.requested_time)]
    assert _rows(path) == expected == _rs_rows(path)
    _validate(path)


def test_crash_before_the_manifest_rewrites_the_file(
    tmp_path: Path, cow35: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _copy(cow35, tmp_path)
    expected = _rows(path)
    storage = Storage(str(path))

    def crash(self: LSMTimelineWriter, remove: object, add: str) -> int:
        raise RuntimeError("killed before the manifest")

    monkeypatch.setattr(LSMTimelineWriter, "update_manifest", crash)
    with pytest.raises(RuntimeError):
        archive(storage, **KEEP)
    # a data file nobody references: invisible to readers
    assert [p.name for p in (path / HISTORY_PATH).glob("*.parquet")]
    assert latest_snapshot_version(storage) == -1
    assert read_archived_rows(storage) == []
    assert _rows(path) == expected
    monkeypatch.undo()
    done = archive(storage, **KEEP)
    assert [r.requested_time for r in read_archived_rows(storage)] == [i.requested_time for i in done]
    assert _rows(path) == expected == _rs_rows(path)


def test_partial_deletion_leaves_no_hole(
    tmp_path: Path, cow35: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deletion removes pending files first, then completed files oldest first: a crash in
    between leaves a timeline whose completed instants are still a contiguous suffix."""
    path = _copy(cow35, tmp_path)
    expected = _rows(path)
    storage = Storage(str(path))
    real_delete = archival._delete_if_exists
    calls = {"completed": 0}

    def flaky(st: Storage, p: str) -> None:
        name = p.rsplit("/", 1)[-1]
        i = parse_instant_file(name, 2)
        if i is not None and i.is_completed:
            calls["completed"] += 1
            if calls["completed"] > 2:
                raise RuntimeError("killed while deleting")
        real_delete(st, p)

    monkeypatch.setattr(archival, "_delete_if_exists", flaky)
    with pytest.raises(RuntimeError):
        archive(storage, **KEEP)
    tl = _timeline(path)
    archived = {r.requested_time for r in read_archived_rows(storage)}
    remaining = [i.requested_time for i in tl.completed() if i.requested_time in archived]
    gone = sorted(archived - set(remaining))
    assert len(gone) == 2 and all(g < r for g in gone for r in remaining)
    assert not tl.pending()
    assert _rows(path) == expected == _rs_rows(path)
    monkeypatch.undo()
    archive(storage, **KEEP)
    assert _commit_count(path) == 3
    assert _rows(path) == expected == _rs_rows(path)
    _validate(path)


# --- what must not be archived ---------------------------------------------------------------------------


def test_pending_instant_stops_archival(tmp_path: Path, cow35: Path) -> None:
    path = _copy(cow35, tmp_path)
    storage = Storage(str(path))
    commits = [i for i in _timeline(path).completed() if i.action == "commit"]
    # a writer that started between the 4th and 5th commit and has not finished
    pending_time = str(int(commits[3].requested_time) + 1)
    assert pending_time < commits[4].requested_time and not _timeline(path).contains(pending_time)
    tw = TimelineWriter(storage, TIMELINE)
    tw.requested(pending_time, "commit")
    tw.inflight(pending_time, "commit")
    expected = _rows(path)

    # (KEEP_LATEST_FILE_VERSIONS: no cleaner retention to raise the numbers kept, see
    # test_cleaner_retention_raises_the_numbers_kept; with KEEP_LATEST_COMMITS the cleaner's
    # earliest commit to retain is capped by the pending instant too)
    archived = archive(
        storage, keep_min_commits=3, keep_max_commits=5, cleaner_policy="KEEP_LATEST_FILE_VERSIONS"
    )
    # the last completed commit before the pending one stays, and everything after it
    assert {i.requested_time for i in archived if i.action == "commit"} == {
        c.requested_time for c in commits[:3]
    }
    assert _timeline(path).get(pending_time) is not None
    assert _rows(path) == expected == _rs_rows(path)
    assert (
        archive(storage, keep_min_commits=3, keep_max_commits=5, cleaner_policy="KEEP_LATEST_FILE_VERSIONS")
        == []
    )


def test_replacecommit_waits_for_the_cleaner(tmp_path: Path) -> None:
    """A replacecommit stays until a clean whose earliest commit to retain is past it has run
    (ClusteringUtils.getEarliestInstantToRetainForClustering): without it the replaced file
    group would come back."""
    from hudi_md.write import services
    from hudi_md.write.config import WriteConfig
    from hudi_md.write.writer import HudiWriter

    path = tmp_path / "t"
    opts = _options(**{"hoodie.clean.automatic": "false"})
    _build(path, 6, opts)
    # overwrite partition `la` only: the `sf` file group keeps old slices for the cleaner
    la = pa.table({"id": ["id-900"], "city": ["la"], "ts": pa.array([6], pa.int64()), "fare": [6.0]})
    replace = hudi_md.write(la, str(path), operation="insert_overwrite", options=opts)
    _build(path, 10, opts, start=7)
    expected = _rows(path)
    storage = Storage(str(path))

    def clean(retained: int) -> str | None:
        o = {**opts, "hoodie.cleaner.commits.retained": str(retained)}
        return services.clean(
            HudiWriter(str(path), o), WriteConfig.from_options(o, TableConfig.load(storage))
        )

    # no clean at all: nothing from the first replacecommit on may go (keep_min alone would
    # archive 14 of the 17 commits)
    commits = [i.requested_time for i in _timeline(path).completed() if i.action in COMMITS]
    before_replace = set(commits[: commits.index(replace)])
    planned = instants_to_archive(storage, **KEEP)
    assert {a.requested_time for a in planned} == before_replace

    # the last clean retains commits from before the replacecommit: still blocked at it
    assert clean(len(commits) - commits.index(replace) + 1) is not None
    archived = archive(storage, **KEEP)
    assert {i.requested_time for i in archived} == before_replace
    assert _timeline(path).get(replace) is not None
    assert _rows(path) == expected == _rs_rows(path)

    # a clean past the replacecommit deletes the replaced files: now it may go
    assert clean(2) is not None
    expected = _rows(path)
    archived = archive(storage, **KEEP)
    assert replace in {i.requested_time for i in archived}
    rows = {r.requested_time: r for r in read_archived_rows(storage)}
    assert rows[replace].action == "replacecommit"
    assert parse_instant_metadata(rows[replace].metadata, replace)["partitionToReplaceFileIds"]["la"]
    assert _rows(path) == expected == _rs_rows(path)
    _validate(path)


def test_metadata_table_compaction_gates_archival(tmp_path: Path) -> None:
    path = tmp_path / "t"
    # MDT compaction after every 2 deltacommits for the first 8 commits, then never
    _build(path, 8, _options())
    _build(path, 12, _options(**{"hoodie.metadata.compact.max.delta.commits": "1000"}), start=8)
    storage = Storage(str(path))
    mdt = Timeline.load(storage, MDT_TIMELINE, 2)
    latest_compaction = mdt.completed().of_actions("commit").last()
    assert latest_compaction is not None
    commits_before = [i for i in _timeline(path).completed() if i.action in COMMITS]

    archived = archive(storage, **KEEP)
    archived_commits = [i for i in archived if i.action in COMMITS]
    # only commits completed before the MDT's latest compaction may go
    assert archived_commits
    assert all(i.completion_time <= latest_compaction.requested_time for i in archived_commits)
    first_after = next(c for c in commits_before if c.completion_time > latest_compaction.requested_time)
    assert _timeline(path).get(first_after.requested_time) is not None
    assert _commit_count(path) > 5
    _validate(path)


def test_no_mdt_compaction_yet_means_no_archival_and_no_mdt_means_no_gate(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _build(path, 8, _options(**{"hoodie.metadata.compact.max.delta.commits": "1000"}))
    assert not Timeline.load(Storage(str(path)), MDT_TIMELINE, 2).completed().of_actions("commit")
    assert archive(Storage(str(path)), **KEEP) == []
    # hoodie.metadata.enable=false in the archiver config skips the gate as Hudi does
    assert instants_to_archive(Storage(str(path)), metadata_enabled=False, **KEEP)

    plain = tmp_path / "plain"
    _build(plain, 8, _options(**{"hoodie.metadata.enable": "false"}))
    expected = _rows(plain)
    archived = archive(Storage(str(plain)), **KEEP)
    assert len([i for i in archived if i.action == "commit"]) == 5
    assert _rows(plain) == expected == _rs_rows(plain)


def test_savepoint_stops_archival(tmp_path: Path, cow35: Path) -> None:
    path = _copy(cow35, tmp_path)
    storage = Storage(str(path))
    commits = [i for i in _timeline(path).completed() if i.action == "commit"]
    sp = commits[4].requested_time
    tw = TimelineWriter(storage, TIMELINE)
    tw.inflight(sp, "savepoint", b"")
    tw.complete(sp, "savepoint", b"")
    archived = archive(storage, **KEEP)
    assert {i.requested_time for i in archived if i.action == "commit"} == {
        c.requested_time for c in commits[:4]
    }
    assert _timeline(path).get(sp) is not None


def test_cleaner_retention_raises_the_numbers_kept(tmp_path: Path, cow35: Path) -> None:
    path = _copy(cow35, tmp_path)
    # the cleaner keeps 6 commits: its earliest commit to retain E is the 30th of 35; the 5
    # commits after E + 2 must stay, and the window moves up by as much (3..5 -> 7..9)
    actions = instants_to_archive(
        Storage(str(path)), keep_min_commits=3, keep_max_commits=5, cleaner_commits_retained=6
    )
    assert len([a for a in actions if a.action == "commit"]) == 35 - 7
    # with the cleaner retaining no more than keep_min, keep_min rules
    actions = instants_to_archive(
        Storage(str(path)), keep_min_commits=3, keep_max_commits=5, cleaner_commits_retained=1
    )
    assert len([a for a in actions if a.action == "commit"]) == 35 - 3


# --- the LSM tree ----------------------------------------------------------------------------------------


def test_level_compaction_and_manifest_cleaning(tmp_path: Path, cow35: Path) -> None:
    """Twelve archivals of a few actions each: the first ten level-0 files become one level-1
    file; only the newest 3 (+1 right after a compaction) manifests and their files remain."""
    path = _copy(cow35, tmp_path)
    storage = Storage(str(path))
    actions = instants_to_archive(storage, **KEEP)
    assert len(actions) >= 48
    writer = LSMTimelineWriter(storage, HISTORY_PATH)
    history = path / HISTORY_PATH
    chunks = [actions[k : k + 4] for k in range(0, 48, 4)]
    for n, chunk in enumerate(chunks, start=1):
        writer.write(chunk)
        compacted = writer.compact_and_clean()
        manifest = latest_manifest(storage)
        levels = sorted(file_level(e.file_name) for e in manifest)
        if n < 10:
            assert not compacted and levels == [0] * n
        elif n == 10:
            first, last = chunks[0][0].requested_time, chunks[9][-1].requested_time
            assert compacted == [f"{first}_{last}_1.parquet"]
            assert levels == [1]
            assert len(manifest_versions(storage)) == 4  # 3 + one level compacted now
        else:
            assert not compacted and levels == [0] * (n - 10) + [1]
            assert len(manifest_versions(storage)) == 3
        versions = manifest_versions(storage)
        assert (
            versions[-1] == latest_snapshot_version(storage) == len(list(chunks[:n])) + (1 if n >= 10 else 0)
        )
        named = {
            e.file_name for v in versions for e in parse_manifest((history / f"manifest_{v}").read_bytes())
        }
        assert {p.name for p in history.glob("*.parquet")} == named
        for e in manifest:
            assert (history / e.file_name).stat().st_size == e.file_len
        written = [a.requested_time for c in chunks[:n] for a in c]
        assert [r.requested_time for r in read_archived_rows(storage)] == written
    rows = {r.requested_time: r for r in read_archived_rows(storage)}
    for a in actions[:48]:
        r = rows[a.requested_time]
        assert r.metadata == (path / TIMELINE / a.completed).read_bytes()
        assert (r.action, r.completion_time) == (a.action, a.completion_time)
    level1 = next(e.file_name for e in latest_manifest(storage) if file_level(e.file_name) == 1)
    assert {r.file_name for r in rows.values() if r.requested_time <= chunks[9][-1].requested_time} == {
        level1
    }


def test_manifest_format_and_version_fallback(tmp_path: Path, cow35: Path) -> None:
    # byte-for-byte what Hudi 1.2 wrote (Jackson's default pretty printer)
    hudi_written = (
        "{\n"
        '  "files" : [ {\n'
        '    "fileName" : "20261122025034292_20261122025048960_0.parquet",\n'
        '    "fileLen" : 3129\n'
        "  }, {\n"
        '    "fileName" : "20261122025056346_20261122025102930_0.parquet",\n'
        '    "fileLen" : 11751\n'
        "  } ]\n"
        "}"
    )
    entries = parse_manifest(hudi_written.encode())
    assert entries == [
        ManifestEntry("20261122025034292_20261122025048960_0.parquet", 3129),
        ManifestEntry("20261122025056346_20261122025102930_0.parquet", 11751),
    ]
    assert manifest_json(entries) == hudi_written
    assert manifest_json([]) == '{\n  "files" : [ ]\n}'
    assert parse_manifest(b"") == []
    assert json.loads(manifest_json(entries)) == json.loads(hudi_written)

    path = _copy(cow35, tmp_path)
    storage = Storage(str(path))
    archive(storage, **KEEP)
    history = path / HISTORY_PATH
    n = len(read_archived_rows(storage))
    # without `_version_` readers take the largest manifest listed
    (history / "_version_").unlink()
    assert latest_snapshot_version(storage) == 1
    assert len(read_archived_rows(storage)) == n
    # a data file no manifest names is not read
    (history / "20000101000000000_20000101000000001_0.parquet").write_bytes(b"garbage")
    assert len(read_archived_rows(storage)) == n


def test_reader_range_and_duplicates(tmp_path: Path, cow35: Path) -> None:
    """Rows of an instant written twice (a retried archival with a wider batch) count once."""
    path = _copy(cow35, tmp_path)
    storage = Storage(str(path))
    actions = instants_to_archive(storage, **KEEP)
    writer = LSMTimelineWriter(storage, HISTORY_PATH)
    writer.write(actions[:3])
    writer.write(actions)
    rows = read_archived_rows(storage)
    assert [r.requested_time for r in rows] == [a.requested_time for a in actions]
    t = actions[2].requested_time
    assert [r.requested_time for r in read_archived_rows(storage, start=t, end=t)] == [t]
    assert archived_instant_bytes(storage, "19990101000000000") is None


# --- against Apache Hudi (opt-in: needs Spark with Hudi's bundle, about three minutes) ------------------

_REPO = Path(__file__).resolve().parents[2]
_BUNDLES = sorted(_REPO.glob("build/jars/hudi-spark3.5-bundle_2.12-*.jar"))

_HUDI_SCRIPT = r"""
import json, shutil, sys
from pyspark.sql import SparkSession

jar, base = sys.argv[1], sys.argv[2]
spark = (SparkSession.builder.master("local[2]").appName("hudi-md-archival")
    .config("spark.jars", jar)
    .config("spark.serializer", "org.apache.spark.serializer.KryoSerializer")
    .config("spark.sql.extensions", "org.apache.spark.sql.hudi.HoodieSparkSessionExtension")
    .config("spark.kryo.registrator", "org.apache.spark.HoodieSparkKryoRegistrar")
    .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
jvm = spark._jvm
opts = {
    "hoodie.table.name": "hgen", "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "city", "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.table.type": "MERGE_ON_READ", "hoodie.cleaner.commits.retained": "1",
    "hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3", "hoodie.archive.automatic": "false",
    "hoodie.metadata.compact.max.delta.commits": "2", "hoodie.compact.inline": "true",
    "hoodie.compact.inline.max.delta.commits": "3",
}
src = base + "/src"
for k in range(12):
    rows = [(f"id-{k % 3}", ["sf", "nyc"][k % 2], k, float(k)), (f"id-{100 + k}", "la", k, 1.0)]
    df = spark.createDataFrame(rows, "id string, city string, ts long, fare double")
    op = "insert" if k == 0 else ("insert_overwrite" if k == 5 else "upsert")
    writer = df.write.format("hudi").options(**opts).option("hoodie.datasource.write.operation", op)
    writer.mode("append").save(src)
for d in ("hudi", "ours"):
    shutil.copytree(src, f"{base}/{d}")

props = jvm.java.util.Properties()
for key, value in opts.items():
    props.setProperty(key, value)
hudi = jvm.org.apache.hudi
cfg = hudi.config.HoodieWriteConfig.newBuilder().withPath(base + "/hudi").withProps(props).build()
client = jvm.org.apache.hudi.client.SparkRDDWriteClient(
    jvm.org.apache.hudi.client.common.HoodieSparkEngineContext(spark.sparkContext._jsc), cfg)
client.archive()
client.close()

from hudi_md.storage import Storage
from hudi_md.write.archival import archive
archive(Storage(base + "/ours"), keep_min_commits=2, keep_max_commits=3, cleaner_commits_retained=1,
        compact_max_delta_commits=3)

def archived_by_hudi(path):
    conf = hudi.storage.hadoop.HadoopStorageConfiguration(spark.sparkContext._jsc.hadoopConfiguration())
    mc = hudi.common.table.HoodieTableMetaClient.builder().setConf(conf).setBasePath(path).build()
    at = mc.getArchivedTimeline()
    at.loadCompletedInstantDetailsInMemory()
    out = []
    for i in at.getInstants().toArray():
        d = at.getInstantDetails(i)
        size = len(d.get()) if d.isPresent() else None
        out.append([i.requestedTime(), i.getCompletionTime(), i.getAction(), size])
    return out

result = {d: {"archived": archived_by_hudi(f"{base}/{d}"),
              "rows": spark.read.format("hudi").load(f"{base}/{d}").count()} for d in ("hudi", "ours")}
json.dump(result, open(base + "/result.json", "w"))
"""


@pytest.mark.skipif(
    os.environ.get("HUDI_MD_HUDI_INTEROP") != "1" or not _BUNDLES,
    reason="set HUDI_MD_HUDI_INTEROP=1 and fetch Hudi's Spark bundle (scripts/fetch-hudi-bundle); ~3 min",
)
def test_same_archival_as_apache_hudi(tmp_path: Path) -> None:
    """Hudi 1.x writes a MOR table (compactions, cleans, an insert_overwrite) without archiving;
    Hudi's archiver runs on one copy, ours on another: same instants archived, same LSM rows
    (plans included), same active timeline; Hudi reads our LSM timeline and we read Hudi's."""
    script = tmp_path / "hudi_side.py"
    script.write_text(_HUDI_SCRIPT)
    subprocess.run(
        [sys.executable, str(script), str(_BUNDLES[-1]), str(tmp_path)],
        check=True,
        capture_output=True,
        timeout=900,
    )
    result = json.loads((tmp_path / "result.json").read_text())
    ours, theirs = Storage(str(tmp_path / "ours")), Storage(str(tmp_path / "hudi"))

    def rows(storage: Storage) -> list[list]:
        return [
            [
                r.requested_time,
                r.completion_time,
                r.action,
                len(r.metadata) if r.metadata is not None else None,
            ]
            for r in read_archived_rows(storage)
        ]

    assert rows(ours) == rows(theirs) == result["hudi"]["archived"] == result["ours"]["archived"]
    assert result["ours"]["archived"]
    full = {
        r.requested_time: (r.action, r.completion_time, r.metadata, r.plan) for r in read_archived_rows(ours)
    }
    assert full == {
        r.requested_time: (r.action, r.completion_time, r.metadata, r.plan)
        for r in read_archived_rows(theirs)
    }
    assert [e.file_name for e in latest_manifest(ours)] == [e.file_name for e in latest_manifest(theirs)]

    def active(p: Path) -> list[str]:
        return sorted(f.name for f in (p / TIMELINE).iterdir() if f.is_file() and not f.name.startswith("."))

    assert active(tmp_path / "ours") == active(tmp_path / "hudi")
    assert result["ours"]["rows"] == result["hudi"]["rows"] == len(_rows(tmp_path / "ours"))


def test_writes_archive_automatically(tmp_path: Path) -> None:
    """hoodie.archive.automatic (default on) archives inline once the MDT gate opens."""
    path = tmp_path / "t"
    opts = {
        **_options("COPY_ON_WRITE"),
        "hoodie.archive.automatic": "true",
        "hoodie.keep.min.commits": "3",
        "hoodie.keep.max.commits": "5",
    }
    _build(path, 12, opts)
    assert load_archived_timeline(Storage(str(path)))
    assert len(hudi_md.open_table(str(path)).timeline.write_timeline()) <= 5
    _validate(path)


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_metadata_table_timeline_is_archived(tmp_path: Path, table_type: str) -> None:
    """The MDT's own timeline is archived inline too (keep + 1 commits, as Hudi's metadata writer
    configures it), never past the data table's earliest active commit, and every reader still
    agrees afterwards."""
    path = tmp_path / "t"
    opts = {
        **_options(table_type),
        "hoodie.archive.automatic": "true",
        "hoodie.keep.min.commits": "3",
        "hoodie.keep.max.commits": "5",
    }
    _build(path, 30, opts)
    storage = Storage(str(path))
    mdt_storage = storage.child(".hoodie/metadata")
    archived = load_archived_timeline(mdt_storage)
    assert archived, "the MDT timeline was never archived"
    mdt_active = Timeline.load(storage, MDT_TIMELINE, 2)
    data_first = archival.earliest_instant_for_metadata_archival(_timeline(path))
    assert data_first is not None
    assert all(i.requested_time < data_first for i in archived)
    assert len(mdt_active.completed()) < 30  # 30 data commits, their cleans, MDT compactions: ~70
    # Inline, the MDT is archived before the data timeline moves on, so it lags one round; run
    # alone, it keeps at most keep.min + 1 commits before the data table's window.
    archival.archive_metadata_table(
        storage, keep_min_commits=3, keep_max_commits=5, compact_max_delta_commits=2
    )
    mdt_active = Timeline.load(storage, MDT_TIMELINE, 2)
    older = [i for i in mdt_active.completed() if i.action in COMMITS and i.requested_time < data_first]
    assert len(older) <= 3 + 1
    assert not {i.requested_time for i in archived} & set(mdt_active.times())
    assert _rows(path) == _rs_rows(path)
    _validate(path)
    _write(path, 30, opts)  # and the table stays writable
    assert _rows(path) == _rs_rows(path)
    _validate(path)
