"""Timeline archival into the LSM timeline, as Hudi 1.x does it for table version 8+.

Which instants go (``TimelineArchiverV2.getCommitInstantsToArchive``, ``ArchivalUtils``):

* nothing unless the completed commits (commit, deltacommit, replacecommit) number more than
  ``keep_max_commits``; then the oldest of them go until ``keep_min_commits`` remain, stopping
  before the first of these "instants to retain":

  1. the earliest pending write (commit, deltacommit, compaction, log compaction, replacecommit,
     clustering): the last completed commit before it is kept, and with it everything after;
  2. MOR: enough deltacommits for the next compaction to be scheduled
     (``CompactionUtils.getEarliestInstantToRetainForCompaction``, ``max.delta.commits``);
  3. replacecommit/clustering: the first one at or after the earliest commit to retain of the
     last completed clean's plan (the first one at all when there has been no clean), so a replaced
     file group stays known to the file-system view until the cleaner has deleted it
     (``ClusteringUtils.getEarliestInstantToRetainForClustering``);
  4. with a metadata table: the first commit completed after the MDT's latest compaction; with an
     MDT and no compaction yet, nothing is archived;
  5. the first savepoint (archival never passes it).

  ``keep_min``/``keep_max`` are raised when the cleaner retains more: with the cleaner's earliest
  commit to retain E, at least (commits after E) + 2 stay (``getMinAndMaxInstantsToKeep``).
* Completed clean and rollback instants older than the newest archived commit go with them.
* Each action goes whole: its requested, inflight and completed files.

How (``TimelineArchiverV2.archiveIfRequired``, ``LSMTimelineWriter``): the actions are written as one
level-0 Parquet file ``<first>_<last>_0.parquet`` in ``.hoodie/timeline/history``, a new manifest
``manifest_<N+1>`` lists it and ``_version_`` is rewritten; only then are the active timeline files
deleted (pending files first, then completed files oldest first, so the timeline never has a hole);
then LSM compaction (10 files of a level become one of the next) and cleaning (files referenced by
the newest 3 (+ levels compacted now) manifests stay, older manifests and unreferenced files go).

A crash after the archive file was committed and before the active files were deleted leaves both
copies, which readers tolerate (the active one is used); the next run finds the same file name
already in the manifest, skips the write and completes the deletion. A file written but not yet in
a manifest is rewritten.

The caller holds the table lock.
"""

from __future__ import annotations

import contextlib
import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import pyarrow as pa

from hudi_md.formats.commit_metadata_writer import schema_json
from hudi_md.storage import Storage
from hudi_md.table.archived import (
    MANIFEST_PREFIX,
    VERSION_FILE,
    ManifestEntry,
    file_level,
    file_range,
    history_path_of,
    is_data_file,
    latest_manifest,
    latest_snapshot_version,
    manifest_json,
    manifest_versions,
    read_data_file,
    read_manifest,
)
from hudi_md.table.timeline import (
    CLEAN,
    CLUSTERING,
    COMMIT,
    COMPACTION,
    COMPLETES_AS,
    DELTA_COMMIT,
    LOG_COMPACTION,
    REPLACE_COMMIT,
    ROLLBACK,
    SAVEPOINT,
    Instant,
    State,
    Timeline,
    parse_instant_file,
)

__all__ = [
    "ActiveAction",
    "LSMTimelineWriter",
    "archive",
    "instants_to_archive",
]

log = logging.getLogger(__name__)

TIMELINE = ".hoodie/timeline"
MDT_TIMELINE = ".hoodie/metadata/.hoodie/timeline"
MARKERS = ".hoodie/.temp"
LSM_INSTANT_VERSION = 1  # LSMTimeline.LSM_TIMELINE_INSTANT_VERSION_1
COMPACTION_BATCH_SIZE = 10  # hoodie.timeline.compaction.batch.size
COMPACTION_TARGET_MAX_BYTES = 1024 * 1024 * 1024  # hoodie.timeline.compaction.target.file.max.bytes
MANIFEST_VERSIONS_RETAINED = 3  # manifest versions LSMTimelineWriter.clean keeps (Hudi default)

# Completed actions counted as "commits" (HoodieTable.getCompletedCommitsTimeline on layout 2).
_COMMIT_ACTIONS = frozenset({COMMIT, DELTA_COMMIT, REPLACE_COMMIT, CLUSTERING})
# BaseTimelineV2.getWriteTimeline.
_WRITE_ACTIONS = frozenset({COMMIT, DELTA_COMMIT, COMPACTION, LOG_COMPACTION, REPLACE_COMMIT, CLUSTERING})


@dataclass
class ActiveAction:
    """All files of one action on the active timeline (``ActiveAction``): the completed one and its
    requested and inflight files where present."""

    requested_time: str
    action: str  # the completed action (compaction -> commit)
    completion_time: str | None
    completed: str  # file names, relative to the timeline folder
    requested: str | None = None
    inflight: str | None = None
    pending_action: str | None = None  # action of the pending files (compaction, clustering, ...)
    # Hadoop checksum siblings (`.<name>.crc`, left by Hudi on a local file system) of these files
    crc_files: list[str] = field(default_factory=list)

    @property
    def pending_files(self) -> list[str]:
        return [f for f in (self.requested, self.inflight) if f]

    @property
    def files(self) -> list[str]:
        return [*self.pending_files, self.completed]

    def instant(self) -> Instant:
        return Instant(
            self.requested_time, self.action, State.COMPLETED, self.completion_time, self.completed
        )


@dataclass
class _Raw:
    files: dict[State, Instant] = field(default_factory=dict)


# --- selection ---------------------------------------------------------------------------------------


def instants_to_archive(
    storage: Storage,
    *,
    keep_min_commits: int = 20,
    keep_max_commits: int = 30,
    cleaner_policy: str = "KEEP_LATEST_COMMITS",
    cleaner_commits_retained: int = 10,
    compact_max_delta_commits: int = 5,
    metadata_enabled: bool = True,
    archive_beyond_savepoint: bool = False,
    timeline_path: str = TIMELINE,
    retain_from: str | None = None,
) -> list[ActiveAction]:
    """The actions :func:`archive` would archive now, oldest first (a dry run).

    ``retain_from``: nothing at or after this instant goes (the MDT passes the data table's
    :func:`earliest_instant_for_metadata_archival`).
    """
    from hudi_md.table.config import TableConfig

    if keep_min_commits <= 0 or keep_max_commits <= keep_min_commits:
        raise ValueError(
            f"need 0 < hoodie.keep.min.commits ({keep_min_commits})"
            f" < hoodie.keep.max.commits ({keep_max_commits})"
        )
    config = TableConfig.load(storage)
    timeline = Timeline.load(storage, timeline_path, config.timeline_layout_version)
    commits = _completed_commits(timeline)
    keep_min, keep_max = _min_max_to_keep(
        timeline, commits, keep_min_commits, keep_max_commits, cleaner_policy, cleaner_commits_retained
    )
    if len(commits) <= keep_max:
        return []

    to_retain: list[str] = []
    # 1. the earliest pending write
    pending = [i for i in timeline.pending() if i.action in _WRITE_ACTIONS]
    if pending:
        first_pending = pending[0].requested_time
        before = [c for c in commits if c.requested_time < first_pending]
        to_retain.append(before[-1].requested_time if before else first_pending)
    # 2. MOR: delta commits needed to schedule the next compaction
    if config.is_mor:
        t = _earliest_to_retain_for_compaction(timeline, compact_max_delta_commits)
        if t is not None:
            to_retain.append(t)
    # 3. replace commits whose replaced files the cleaner has not deleted yet
    t = _earliest_to_retain_for_clustering(timeline, cleaner_policy)
    if t is not None:
        to_retain.append(t)
    # 4. the MDT's latest compaction
    if metadata_enabled and "files" in config.metadata_partitions:
        latest_compaction = _mdt_latest_compaction(storage)
        if latest_compaction is None:
            log.info("not archiving: the metadata table has no compaction yet")
            return []
        after = [
            c
            for c in commits
            if (c.completion_time or c.requested_time) > latest_compaction
            and c.requested_time != latest_compaction
        ]
        if after:
            to_retain.append(after[0].requested_time)
    # 5. the metadata table keeps what the data table's active timeline may still refer to
    if retain_from is not None:
        to_retain.append(retain_from)
    earliest_to_retain = min(to_retain) if to_retain else None

    # 6. savepoints
    savepoints = [i.requested_time for i in timeline.completed().of_actions(SAVEPOINT)]
    chosen: list[Instant] = []
    for c in commits:
        if archive_beyond_savepoint:
            if c.requested_time in savepoints:
                continue
        elif savepoints and c.requested_time >= savepoints[0]:
            continue
        if earliest_to_retain is not None and c.requested_time >= earliest_to_retain:
            continue
        chosen.append(c)
    chosen = chosen[: max(0, len(commits) - keep_min)]
    if not chosen:
        return []

    # clean and rollback instants before the newest commit archived
    latest = chosen[-1].requested_time
    chosen.extend(
        i for i in timeline.completed() if i.action in (CLEAN, ROLLBACK) and i.requested_time < latest
    )
    chosen.sort(key=lambda i: i.requested_time)

    raw, names = _raw_actions(storage, timeline_path, config.timeline_layout_version)
    out = []
    for i in chosen:
        group = raw.get((i.requested_time, _comparable(i.action)))
        if group is None or State.COMPLETED not in group.files:
            continue  # archived meanwhile by someone else
        action = _to_action(group)
        action.crc_files = [_crc(n) for n in action.files if _crc(n) in names]
        out.append(action)
    out.sort(key=lambda a: a.requested_time)
    return out


def _completed_commits(timeline: Timeline) -> list[Instant]:
    return [i for i in timeline.completed() if i.action in _COMMIT_ACTIONS]


def _comparable(action: str) -> str:
    # InstantComparatorV2.getComparableAction
    return COMPLETES_AS.get(action, action)


def _min_max_to_keep(
    timeline: Timeline,
    commits: Sequence[Instant],
    keep_min: int,
    keep_max: int,
    cleaner_policy: str,
    commits_retained: int,
) -> tuple[int, int]:
    """``ArchivalUtils.getMinAndMaxInstantsToKeep`` (KEEP_LATEST_BY_HOURS is not modelled)."""
    earliest = _cleaner_earliest_commit_to_retain(timeline, cleaner_policy, commits_retained)
    if earliest is None:
        return keep_min, keep_max
    by_cleaning = sum(1 for c in commits if c.requested_time > earliest) + 2
    if keep_min < by_cleaning:
        log.warning(
            "hoodie.keep.min.commits=%d is more aggressive than the cleaner (earliest commit to retain %s);"
            " keeping %d..%d commits",
            keep_min,
            earliest,
            by_cleaning,
            by_cleaning + keep_max - keep_min,
        )
        return by_cleaning, by_cleaning + keep_max - keep_min
    return keep_min, keep_max


def _cleaner_earliest_commit_to_retain(timeline: Timeline, policy: str, commits_retained: int) -> str | None:
    """``CleanerUtils.getEarliestCommitToRetain`` for KEEP_LATEST_COMMITS over the commits timeline."""
    if policy != "KEEP_LATEST_COMMITS":
        return None
    commits_timeline = [i for i in timeline if i.action in _COMMIT_ACTIONS]
    completed = [i for i in commits_timeline if i.is_completed]
    if len(completed) <= commits_retained:
        return None
    nth = completed[len(completed) - commits_retained]
    pending = [i for i in commits_timeline if not i.is_completed]
    if pending and nth.requested_time > pending[0].requested_time:
        before = [c for c in completed if c.requested_time < pending[0].requested_time]
        return before[-1].requested_time if before else None
    return nth.requested_time


def _earliest_to_retain_for_compaction(timeline: Timeline, max_delta_commits: int) -> str | None:
    """``CompactionUtils.getEarliestInstantToRetainForCompaction`` (NUM_COMMITS trigger)."""
    last_compaction = timeline.completed().of_actions(COMMIT).last()
    deltas = [i for i in timeline if i.action == DELTA_COMMIT]
    if last_compaction is not None:
        since = [d for d in deltas if d.requested_time > last_compaction.requested_time]
        anchor = last_compaction.requested_time
    elif deltas:
        since = deltas
        anchor = deltas[0].requested_time
    else:
        return None
    if len(since) < max_delta_commits:
        return anchor
    return since[len(since) - max_delta_commits].requested_time


def _earliest_to_retain_for_clustering(timeline: Timeline, cleaner_policy: str) -> str | None:
    """``ClusteringUtils.getEarliestInstantToRetainForClustering``."""
    replaces = [i for i in timeline if i.action in (REPLACE_COMMIT, CLUSTERING)]
    if not replaces:
        return None
    last_clean = timeline.completed().of_actions(CLEAN).last()
    if last_clean is None:
        return replaces[0].requested_time
    plan = _clean_plan(timeline, last_clean)
    ectr = ((plan.get("earliestInstantToRetain") or {}).get("timestamp")) if plan else None
    savepoint = _earliest_replaced_savepoint_in_clean(timeline, cleaner_policy, plan, ectr)
    if savepoint is not None:
        lower = savepoint
    elif ectr:
        lower = ectr
    else:
        lower = last_clean.requested_time
    at_or_after = [r for r in replaces if r.requested_time >= lower]
    return at_or_after[0].requested_time if at_or_after else None


def _clean_plan(timeline: Timeline, clean: Instant) -> dict | None:
    requested = Instant(
        clean.requested_time, CLEAN, State.REQUESTED, None, f"{clean.requested_time}.clean.requested"
    )
    try:
        return timeline.metadata(requested)
    except Exception:
        # a missing or unreadable plan gives no bound, as an absent field does
        return None


def _earliest_replaced_savepoint_in_clean(
    timeline: Timeline, cleaner_policy: str, plan: dict | None, ectr: str | None
) -> str | None:
    """``ClusteringUtils.getEarliestReplacedSavepointInClean``."""
    if plan is None or cleaner_policy == "KEEP_LATEST_FILE_VERSIONS" or not ectr:
        return None
    text = (plan.get("extraMetadata") or {}).get("savepointed_timestamps") or ""
    savepoints = sorted(s for s in text.split(",") if s) if text else []
    if not savepoints:
        # Java's "".split(",") is [""]: the earliest savepoint is then "", which counts as empty
        return None
    earliest = savepoints[0]
    if ectr > earliest:
        replaced = [
            i for i in timeline.completed().of_actions(REPLACE_COMMIT) if earliest <= i.requested_time <= ectr
        ]
        if replaced:
            return earliest
    return None


def _mdt_latest_compaction(storage: Storage) -> str | None:
    """``HoodieBackedTableMetadata.getLatestCompactionTime``: the last completed commit or
    replacecommit of the MDT timeline."""
    mdt = Timeline.load(storage, MDT_TIMELINE, 2)
    done = [i for i in mdt.completed() if i.action in (COMMIT, REPLACE_COMMIT, CLUSTERING)]
    return done[-1].requested_time if done else None


def _raw_actions(
    storage: Storage, timeline_path: str, layout_version: int
) -> tuple[dict[tuple[str, str], _Raw], set[str]]:
    """Every instant file of the active timeline, grouped per action (all states), and the names
    of all files listed."""
    groups: dict[tuple[str, str], _Raw] = defaultdict(_Raw)
    names: set[str] = set()
    for status in storage.list(timeline_path):
        if status.is_dir:
            continue
        names.add(status.name)
        instant = parse_instant_file(status.name, layout_version, status.modification_time)
        if instant is None:
            continue
        groups[(instant.requested_time, _comparable(instant.action))].files[instant.state] = instant
    return groups, names


def _crc(name: str) -> str:
    """Hadoop's checksum file of ``name`` (ChecksumFileSystem, e.g. the local file system)."""
    return f".{name}.crc"


def _to_action(group: _Raw) -> ActiveAction:
    done = group.files[State.COMPLETED]
    req = group.files.get(State.REQUESTED)
    inf = group.files.get(State.INFLIGHT)
    pending = req or inf
    return ActiveAction(
        requested_time=done.requested_time,
        action=done.action,
        completion_time=done.completion_time,
        completed=done.file_name,
        requested=req.file_name if req else None,
        inflight=inf.file_name if inf else None,
        pending_action=pending.action if pending else None,
    )


# --- the LSM timeline writer -------------------------------------------------------------------------


class LSMTimelineWriter:
    """Writes and maintains the LSM timeline in ``history_path`` (``LSMTimelineWriter``)."""

    def __init__(
        self,
        storage: Storage,
        history_path: str,
        timeline_path: str = TIMELINE,
        *,
        batch_size: int = COMPACTION_BATCH_SIZE,
        target_max_bytes: int = COMPACTION_TARGET_MAX_BYTES,
        versions_retained: int = MANIFEST_VERSIONS_RETAINED,
    ) -> None:
        self.storage = storage
        self.path = history_path
        self.timeline_path = timeline_path
        self.batch_size = batch_size
        self.target_max_bytes = target_max_bytes
        self.versions_retained = versions_retained

    def _file(self, name: str) -> str:
        return f"{self.path}/{name}"

    def _remove(self, name: str, listed: set[str] | None = None) -> None:
        """Delete ``name`` and its Hadoop checksum sibling where present: a stale ``.crc`` beside
        a rewritten file would fail Hudi's checksummed reads on a local file system."""
        for n in (name, _crc(name)):
            if (n in listed) if listed is not None else self.storage.exists(self._file(n)):
                _delete_if_exists(self.storage, self._file(n))

    # --- rows ---

    def row(self, action: ActiveAction) -> dict:
        """``MetadataConversionUtils.createLSMTimelineInstant``."""
        metadata = self._read(action.completed) or None  # an empty completed file has no metadata
        plan: bytes | None = None
        pending = action.pending_action
        if pending == CLEAN:
            p = action.requested or action.inflight
            plan = self._read(p) if p else None
        elif pending in (REPLACE_COMMIT, CLUSTERING):
            if action.requested:
                plan = self._read(action.requested) or None
            if action.inflight:
                plan = self._read(action.inflight) or plan
        elif pending in (COMPACTION, LOG_COMPACTION):
            # the plan is always the requested file
            name = f"{action.requested_time}.{pending}.requested"
            plan = self._read(name)
        return {
            "instantTime": action.requested_time,
            "completionTime": action.completion_time,
            "action": action.action,
            "metadata": metadata,
            "plan": plan,
            "version": LSM_INSTANT_VERSION,
        }

    def _read(self, name: str) -> bytes | None:
        try:
            return self.storage.read_bytes(f"{self.timeline_path}/{name}")
        except FileNotFoundError:
            return None

    def _write_rows(self, name: str, rows: list[dict]) -> None:
        from hudi_md.write.base_file import write_base_file

        schema = schema_json("HoodieLSMTimelineInstant")
        table = pa.table(
            {
                "instantTime": pa.array([r["instantTime"] for r in rows], pa.string()),
                "completionTime": pa.array([r["completionTime"] for r in rows], pa.string()),
                "action": pa.array([r["action"] for r in rows], pa.string()),
                "metadata": pa.array([r["metadata"] for r in rows], pa.binary()),
                "plan": pa.array([r["plan"] for r in rows], pa.binary()),
                "version": pa.array([r["version"] for r in rows], pa.int32()),
            }
        )
        write_base_file(self.storage, self._file(name), table, avro_schema_json=schema, bloom=None)

    # --- writing ---

    def write(self, actions: Sequence[ActiveAction]) -> str | None:
        """Write ``actions`` as a new level-0 file and commit it to a new manifest; returns its
        name, or None when the same file was already committed by an earlier (interrupted) run."""
        if not actions:
            raise ValueError("the instant actions to write should not be empty")
        name = f"{actions[0].requested_time}_{actions[-1].requested_time}_0.parquet"
        if self.storage.exists(self._file(name)):
            if name in {e.file_name for e in latest_manifest(self.storage, self.path)}:
                log.info("skip archiving for the redundant file %s", name)
                return None
            self._remove(name)  # written, never committed: rewrite
        for a in actions:
            self._delete_markers(a.requested_time)
        self._write_rows(name, [self.row(a) for a in actions])
        self.update_manifest([], name)
        return name

    def _delete_markers(self, instant: str) -> None:
        path = f"{MARKERS}/{instant}"
        if self.storage.exists(path):
            self.storage.delete(path, recursive=True)

    def _entry(self, name: str) -> ManifestEntry:
        return ManifestEntry(name, self.storage.info(self._file(name)).size)

    def update_manifest(self, remove: Sequence[str], add: str) -> int:
        """Write ``manifest_<N+1>`` = latest manifest - ``remove`` + ``add``, then ``_version_``."""
        version = latest_snapshot_version(self.storage, self.path)
        entries = [
            e for e in read_manifest(self.storage, version, self.path) if e.file_name not in set(remove)
        ]
        entries.append(self._entry(add))
        new_version = 1 if version < 0 else version + 1
        manifest = f"{MANIFEST_PREFIX}{new_version}"
        listed = {s.name for s in self.storage.list(self.path)}
        self._remove(manifest, listed)  # left by a write that failed before `_version_`
        self.storage.write_atomic(self._file(manifest), manifest_json(entries).encode("utf-8"))
        self._remove(VERSION_FILE, listed)
        self.storage.write_atomic(self._file(VERSION_FILE), str(new_version).encode("utf-8"))
        return new_version

    # --- compaction and cleaning ---

    def compact_and_clean(self) -> list[str]:
        """Compact full levels (level 0 first, then each next level that fills up), then clean;
        returns the names of the compacted files written."""
        manifest = latest_manifest(self.storage, self.path)
        level = 0
        written = []
        name = self._compact_level(manifest, level)
        while name is not None:
            written.append(name)
            manifest.append(self._entry(name))
            level += 1
            name = self._compact_level(manifest, level)
        self.clean(level)
        return written

    def _compact_level(self, manifest: list[ManifestEntry], level: int) -> str | None:
        files = sorted((e for e in manifest if file_level(e.file_name) == level), key=lambda e: e.file_name)
        if len(files) < self.batch_size:
            return None
        candidates = self._candidates(files)
        if len(candidates) < 2:
            return None
        lo = min(file_range(c)[0] for c in candidates)
        hi = max(file_range(c)[1] for c in candidates)
        name = f"{lo}_{hi}_{file_level(candidates[0]) + 1}.parquet"
        self._remove(name)
        rows: list[dict] = []
        for c in candidates:
            rows.extend(read_data_file(self.storage, self._file(c)))
        self._write_rows(name, rows)
        self.update_manifest(candidates, name)
        log.info("compacted LSM timeline files %s into %s", candidates, name)
        return name

    def _candidates(self, files: Sequence[ManifestEntry]) -> list[str]:
        """``LSMTimelineWriter.getCandidateFiles``: up to ``batch_size`` consecutive files of at
        most ``target_max_bytes`` together (a single file over the limit is skipped)."""
        out: list[str] = []
        total = 0
        for e in files:
            total += e.file_len
            out.append(e.file_name)
            if len(out) >= self.batch_size:
                break
            if total > self.target_max_bytes:
                if len(out) < 2:
                    total = 0
                    out.clear()
                else:
                    break
        return out

    def clean(self, compacted_levels: int = 0) -> None:
        """Keep the newest ``versions_retained + compacted_levels`` manifests and the data files
        they name; delete older manifests, then unreferenced data files."""
        versions = manifest_versions(self.storage, self.path)
        keep_count = self.versions_retained + compacted_levels
        if len(versions) <= keep_count:
            return
        keep = sorted(versions, reverse=True)[:keep_count]
        files_to_keep = {e.file_name for v in keep for e in read_manifest(self.storage, v, self.path)}
        listed = {s.name for s in self.storage.list(self.path) if not s.is_dir}
        for v in versions:
            if v not in keep:
                self._remove(f"{MANIFEST_PREFIX}{v}", listed)
        for name in sorted(listed):
            if is_data_file(name) and not name.startswith(".") and name not in files_to_keep:
                self._remove(name, listed)


# --- archival ----------------------------------------------------------------------------------------


def archive(
    storage: Storage,
    *,
    keep_min_commits: int = 20,
    keep_max_commits: int = 30,
    cleaner_policy: str = "KEEP_LATEST_COMMITS",
    cleaner_commits_retained: int = 10,
    compact_max_delta_commits: int = 5,
    metadata_enabled: bool = True,
    archive_beyond_savepoint: bool = False,
    retain_from: str | None = None,
) -> list[Instant]:
    """Archive what Hudi's ``TimelineArchiverV2`` would; returns the archived (completed) instants.

    ``keep_*`` are ``hoodie.keep.min.commits``/``hoodie.keep.max.commits``; ``cleaner_*`` are
    ``hoodie.cleaner.policy``/``hoodie.cleaner.commits.retained`` (they can only raise the number
    kept); ``compact_max_delta_commits`` is ``hoodie.compact.inline.max.delta.commits`` (MOR);
    ``metadata_enabled`` is ``hoodie.metadata.enable``. The caller holds the table lock.
    """
    from hudi_md.table.config import TableConfig

    config = TableConfig.load(storage)
    if config.table_version < 8:
        raise NotImplementedError("archival is implemented for table version 8+ (the LSM timeline) only")
    timeline_path = config.timeline_path
    actions = instants_to_archive(
        storage,
        keep_min_commits=keep_min_commits,
        keep_max_commits=keep_max_commits,
        cleaner_policy=cleaner_policy,
        cleaner_commits_retained=cleaner_commits_retained,
        compact_max_delta_commits=compact_max_delta_commits,
        metadata_enabled=metadata_enabled,
        archive_beyond_savepoint=archive_beyond_savepoint,
        timeline_path=timeline_path,
        retain_from=retain_from,
    )
    if not actions:
        return []
    writer = LSMTimelineWriter(storage, history_path_of(storage), timeline_path)
    writer.write(actions)
    _delete_active_files(storage, timeline_path, actions)
    writer.compact_and_clean()
    return [a.instant() for a in actions]


def earliest_instant_for_metadata_archival(
    data_timeline: Timeline, archive_beyond_savepoint: bool = False
) -> str | None:
    """``TimelineUtils.getEarliestInstantForMetadataArchival``: the earlier of the data table's first
    active commit (the first non-savepoint one when archiving beyond savepoints) and its first
    pending instant of any action. Clean and rollback instants do not count: an old one would pin
    the MDT timeline for ever."""
    commits = [i for i in data_timeline if i.action in _COMMIT_ACTIONS and i.is_completed]
    if archive_beyond_savepoint:
        savepoints = {i.requested_time for i in data_timeline if i.action == SAVEPOINT}
        commits = [c for c in commits if c.requested_time not in savepoints]
    pending = [i for i in data_timeline if not i.is_completed]
    firsts = [xs[0].requested_time for xs in (commits, pending) if xs]
    return min(firsts) if firsts else None


def archive_metadata_table(
    data_storage: Storage,
    *,
    keep_min_commits: int = 20,
    keep_max_commits: int = 30,
    compact_max_delta_commits: int = 10,
    archive_beyond_savepoint: bool = False,
) -> list[Instant]:
    """Archive the MDT's own timeline as Hudi's metadata writer does after its table services:
    the MDT keeps one commit more than the data table (``keep_*`` + 1), enough deltacommits for
    its next compaction, and every instant from the data table's earliest active commit or
    pending instant on, because readers check MDT log blocks against the data timeline. The
    caller holds the table lock."""
    from hudi_md.table.config import TableConfig

    mdt_storage = data_storage.child(".hoodie/metadata")
    if not mdt_storage.exists(".hoodie/hoodie.properties"):
        return []
    data_config = TableConfig.load(data_storage)
    data_timeline = Timeline.load(
        data_storage, data_config.timeline_path, data_config.timeline_layout_version
    )
    return archive(
        mdt_storage,
        keep_min_commits=keep_min_commits + 1,
        keep_max_commits=keep_max_commits + 1,
        # hudi-md's MDT cleaner keeps file versions, not commits: no cleaner bound on archival
        cleaner_policy="KEEP_LATEST_FILE_VERSIONS",
        compact_max_delta_commits=compact_max_delta_commits,
        metadata_enabled=False,
        archive_beyond_savepoint=archive_beyond_savepoint,
        retain_from=earliest_instant_for_metadata_archival(data_timeline, archive_beyond_savepoint),
    )


def _delete_active_files(storage: Storage, timeline_path: str, actions: Sequence[ActiveAction]) -> None:
    """``TimelineArchiverV2.deleteArchivedActions``: every pending file first (a completed file
    removed first would make its action look pending), then completed files oldest first."""
    for a in actions:
        for name in a.pending_files:
            _delete_if_exists(storage, f"{timeline_path}/{name}")
    for a in sorted(actions, key=lambda a: a.requested_time):
        _delete_if_exists(storage, f"{timeline_path}/{a.completed}")
    for a in actions:
        for name in a.crc_files:
            _delete_if_exists(storage, f"{timeline_path}/{name}")


def _delete_if_exists(storage: Storage, path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        storage.delete(path)
