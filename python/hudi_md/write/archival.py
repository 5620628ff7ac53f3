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
from typing import Any

from hudi_md.config import metadata as M
from hudi_md.config import services as S
from hudi_md.storage import Storage
from hudi_md.table.archived import (
    history_path_of,
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
from hudi_md.write.lsm_timeline import ActiveAction, LSMTimelineWriter, crc_name

__all__ = [
    "archive",
    "instants_to_archive",
]

log = logging.getLogger(__name__)

TIMELINE = ".hoodie/timeline"
MDT_TIMELINE = ".hoodie/metadata/.hoodie/timeline"

# Completed actions counted as "commits" (HoodieTable.getCompletedCommitsTimeline on layout 2).
_COMMIT_ACTIONS = frozenset({COMMIT, DELTA_COMMIT, REPLACE_COMMIT, CLUSTERING})
# BaseTimelineV2.getWriteTimeline.
_WRITE_ACTIONS = frozenset({COMMIT, DELTA_COMMIT, COMPACTION, LOG_COMPACTION, REPLACE_COMMIT, CLUSTERING})


@dataclass
class _Raw:
    files: dict[State, Instant] = field(default_factory=dict)


# --- selection ---------------------------------------------------------------------------------------


def instants_to_archive(
    storage: Storage,
    *,
    keep_min_commits: int = S.KEEP_MIN_COMMITS.default,
    keep_max_commits: int = S.KEEP_MAX_COMMITS.default,
    cleaner_policy: str = S.CLEANER_POLICY.default,
    cleaner_commits_retained: int = S.CLEANER_COMMITS_RETAINED.default,
    compact_max_delta_commits: int = S.COMPACT_INLINE_MAX_DELTA_COMMITS.default,
    metadata_enabled: bool = M.METADATA_ENABLE.default,
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
        action.crc_files = [crc_name(n) for n in action.files if crc_name(n) in names]
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


def _clean_plan(timeline: Timeline, clean: Instant) -> dict[str, Any] | None:
    requested = Instant(
        clean.requested_time, CLEAN, State.REQUESTED, None, f"{clean.requested_time}.clean.requested"
    )
    try:
        return timeline.metadata(requested)
    except Exception:
        # a missing or unreadable plan gives no bound, as an absent field does
        return None


def _earliest_replaced_savepoint_in_clean(
    timeline: Timeline, cleaner_policy: str, plan: dict[str, Any] | None, ectr: str | None
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


# --- archival ----------------------------------------------------------------------------------------


def archive(
    storage: Storage,
    *,
    keep_min_commits: int = S.KEEP_MIN_COMMITS.default,
    keep_max_commits: int = S.KEEP_MAX_COMMITS.default,
    cleaner_policy: str = S.CLEANER_POLICY.default,
    cleaner_commits_retained: int = S.CLEANER_COMMITS_RETAINED.default,
    compact_max_delta_commits: int = S.COMPACT_INLINE_MAX_DELTA_COMMITS.default,
    metadata_enabled: bool = M.METADATA_ENABLE.default,
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
    keep_min_commits: int = S.KEEP_MIN_COMMITS.default,
    keep_max_commits: int = S.KEEP_MAX_COMMITS.default,
    compact_max_delta_commits: int = M.COMPACT_MAX_DELTA_COMMITS.default,
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
