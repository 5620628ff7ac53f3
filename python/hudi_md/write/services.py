"""Table services, each under the table lock and each reflected in the MDT like any commit:
data clean (KEEP_LATEST_COMMITS / KEEP_LATEST_FILE_VERSIONS), MOR compaction, MDT compaction."""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from hudi_md.errors import CommitMetadataError, CorruptFileError
from hudi_md.metadata import keys as K
from hudi_md.metadata.records_builder import column_stats_record, files_record
from hudi_md.table.config import TableConfig
from hudi_md.table.filenames import BaseFileName
from hudi_md.table.timeline import (
    CLEAN,
    CLUSTERING,
    COMMIT,
    COMPACTION,
    DELTA_COMMIT,
    LOG_COMPACTION,
    REPLACE_COMMIT,
    ROLLBACK,
    SAVEPOINT,
)
from hudi_md.table.timeline_writer import TimelineWriter, new_instant_time
from hudi_md.write.lock import TableLock
from hudi_md.write.plans import clustering_inputs, compaction_inputs, read_plan

if TYPE_CHECKING:
    from hudi_md.write.config import WriteConfig
    from hudi_md.write.writer import HudiWriter

log = logging.getLogger(__name__)
TIMELINE = ".hoodie/timeline"


def run_inline(writer: HudiWriter, cfg: WriteConfig) -> None:
    if cfg.is_mor and cfg.compact_inline:
        timeline = writer._timeline().completed()
        last = timeline.of_actions(COMMIT).last()
        since = [
            i
            for i in timeline.of_actions(DELTA_COMMIT)
            if last is None or i.requested_time > last.requested_time
        ]
        if len(since) >= cfg.compact_inline_max_delta_commits:
            compact(writer)
    if cfg.clean_automatic:
        clean(writer, cfg)
    compact_metadata_table(writer)
    # Last: archival is gated by the MDT's latest compaction, which may just have happened.
    if cfg.archive_automatic:
        archive_timeline(writer, cfg)


def archive_timeline(writer: HudiWriter, cfg: WriteConfig) -> list:
    """Archive the MDT's timeline, then the data timeline; returns the data instants archived."""
    from hudi_md.metadata.writer import COMPACT_MAX_DELTA_COMMITS, COMPACT_MAX_DELTA_COMMITS_DEFAULT
    from hudi_md.write.archival import archive, archive_metadata_table

    with TableLock(writer.storage, options=writer.options):
        config = TableConfig.load(writer.storage)
        if config.table_version < 8:
            return []
        if config.metadata_partitions:
            archive_metadata_table(
                writer.storage,
                keep_min_commits=cfg.keep_min_commits,
                keep_max_commits=cfg.keep_max_commits,
                compact_max_delta_commits=int(
                    writer.options.get(COMPACT_MAX_DELTA_COMMITS, COMPACT_MAX_DELTA_COMMITS_DEFAULT)
                ),
            )
        return archive(
            writer.storage,
            keep_min_commits=cfg.keep_min_commits,
            keep_max_commits=cfg.keep_max_commits,
            cleaner_policy=cfg.cleaner_policy,
            cleaner_commits_retained=cfg.commits_retained,
            compact_max_delta_commits=cfg.compact_inline_max_delta_commits,
            metadata_enabled=cfg.metadata_enabled,
        )


# --- MDT compaction ------------------------------------------------------------------------------


def compact_metadata_table(writer: HudiWriter, *, force: bool = False) -> str | None:
    from hudi_md.metadata.reader import load_table_state
    from hudi_md.metadata.writer import MetadataTableWriter

    with TableLock(writer.storage, options=writer.options):
        config = TableConfig.load(writer.storage)
        if not config.metadata_partitions:
            return None
        mw = MetadataTableWriter(writer.storage, config, writer.options)
        table = load_table_state(writer.storage, {"hoodie.metadata.enable": "true"})
        reader = table.metadata_table
        return mw.compact(reader) if force else mw.compact_if_due(reader)


# --- pending table services left by a dead writer -----------------------------------------------


def pending_compaction_file_groups(storage: Any, timeline: Any) -> dict[tuple[str, str], str]:
    """``(partition, file id) -> base instant`` of every file slice a pending (requested or
    inflight) compaction or log compaction reads, from their plans."""
    out: dict[tuple[str, str], str] = {}
    for instant in timeline.pending().of_actions(COMPACTION, LOG_COMPACTION):
        try:
            plan = read_plan(storage, instant.requested_time, instant.action) or {}
        except CorruptFileError:
            plan = {}
        out.update(compaction_inputs(plan))
    return out


def pending_clustering_file_groups(storage: Any, timeline: Any) -> dict[tuple[str, str], str]:
    """``(partition, file id) -> clustering instant`` of every file group a pending clustering
    plan reads (Apache Hudi's: hudi-md does not cluster). A plan that cannot be read claims
    nothing here; its instant is still named by :func:`check_no_clustered_updates` callers
    through the timeline."""
    out: dict[tuple[str, str], str] = {}
    for instant in timeline.pending().of_actions(CLUSTERING, REPLACE_COMMIT):
        try:
            plan = read_plan(storage, instant.requested_time, instant.action) or {}
        except CorruptFileError:
            plan = {}
        out.update(dict.fromkeys(clustering_inputs(plan), instant.requested_time))
    return out


def check_no_clustered_updates(writer: HudiWriter, file_groups: Any) -> None:
    """Refuse a write into file groups a pending clustering plan reads, as Apache Hudi's
    ``SparkRejectUpdateStrategy`` does (HoodieClusteringUpdateException): the clustering would
    replace them without the write's records. Inserts go to new file groups and are never
    refused."""
    from hudi_md.errors import PendingClusteringError
    from hudi_md.table.timeline import Timeline

    wanted = set(file_groups)
    if not wanted:
        return
    timeline = Timeline.load(writer.storage, TIMELINE, 2)
    clustered = pending_clustering_file_groups(writer.storage, timeline)
    hit = sorted(fg for fg in wanted if fg in clustered)
    if hit:
        raise PendingClusteringError(clustered[hit[0]], hit)


def resolve_pending_services(writer: HudiWriter) -> list[str]:
    """Finish what a dead writer left of table services (the caller holds the table lock, so no
    live writer is running them): a pending compaction is rolled back to its requested plan (its
    partial files and MDT deltacommit removed, its inflight file deleted) and run again from the
    plan, as Hudi's inline compaction does; when a file the plan reads is gone the compaction is
    rolled back altogether. A pending clean is run again from its plan (cleans are idempotent). A
    pending rollback is dropped (with its MDT deltacommit) and its target, if still on the
    timeline, rolled back anew from the same plan. A pending restore is run to its end from its
    plan (as Hudi does), after the rollbacks it left unfinished.
    Pending clustering and log compaction (Apache Hudi's, which hudi-md cannot run) are left
    alone. Returns the instants resolved."""
    from hudi_md.table.timeline import RESTORE, Timeline

    done: list[str] = _resolve_mdt_services(writer)
    order = {ROLLBACK: 0, COMPACTION: 1, CLEAN: 1, RESTORE: 2}
    while True:
        pending = [
            i
            for i in Timeline.load(writer.storage, TIMELINE, 2).pending()
            if i.action in order and i.requested_time not in done
        ]
        if not pending:
            return done
        instant = min(pending, key=lambda i: (order[i.action], i.requested_time))
        if instant.action == COMPACTION:
            _recover_compaction(writer, instant.requested_time)
        elif instant.action == CLEAN:
            _recover_clean(writer, instant.requested_time)
        elif instant.action == ROLLBACK:
            _recover_rollback(writer, instant.requested_time)
        else:
            _recover_restore(writer, instant.requested_time)
        done.append(instant.requested_time)


def _resolve_mdt_services(writer: HudiWriter) -> list[str]:
    """The MDT's own compaction or clean left pending by a dead writer."""
    if not writer.storage.exists(".hoodie/metadata/.hoodie/hoodie.properties"):
        return []
    from hudi_md.metadata.writer import MetadataTableWriter

    mw = MetadataTableWriter(writer.storage, TableConfig.load(writer.storage), writer.options)
    return [f"mdt:{t}" for t in mw.resolve_pending_services()]


def repair_torn_completion(writer: HudiWriter) -> list[str]:
    """A completed instant file that does not parse (torn: written in place by a writer that died,
    where the file system has no atomic rename) is not a completion: the commit point is that file
    landing whole. Only the newest completed instant can be one (the dead writer's last act), so
    only it is read. Its completed file is deleted, which leaves the instant pending (its
    requested and inflight files stay), for the usual recovery; a write is rolled back here.
    Returns the write instants rolled back."""
    from hudi_md.formats.commit_metadata import parse_instant_metadata
    from hudi_md.table.timeline import Timeline

    timeline = Timeline.load(writer.storage, TIMELINE, 2)
    completed = list(timeline.completed())
    if not completed:
        return []
    newest = max(completed, key=lambda i: (i.completion_time or i.requested_time, i.requested_time))
    path = f"{TIMELINE}/{newest.file_name}"
    try:
        parse_instant_metadata(writer.storage.read_bytes(path), writer.storage.uri(path))
        return []
    except CorruptFileError as e:
        t = newest.requested_time
        has_pending = any(
            i.requested_time == t and not i.is_completed for i in _all_instant_files(writer.storage)
        )
        if not has_pending:
            raise  # nothing to fall back to: a typed error naming the file
        log.warning("instant %s is torn (%s): treating it as not completed", newest.file_name, e)
    writer.storage.delete(path)
    instant = Timeline.load(writer.storage, TIMELINE, 2).get(newest.requested_time)
    if instant is not None and instant.action in (COMMIT, DELTA_COMMIT, REPLACE_COMMIT):
        writer.rollback(instant, TableConfig.load(writer.storage), reason="torn completed instant")
        return [instant.requested_time]
    return []


def _all_instant_files(storage: Any) -> list[Any]:
    """Every instant file of the data timeline (all states, not only each instant's furthest)."""
    from hudi_md.table.timeline import parse_instant_file

    out = []
    for status in storage.list(TIMELINE):
        instant = None if status.is_dir else parse_instant_file(status.name, 2)
        if instant is not None:
            out.append(instant)
    return out


def _recover_restore(writer: HudiWriter, instant_time: str) -> None:
    try:
        plan = read_plan(writer.storage, instant_time, "restore")
    except CorruptFileError:
        plan = None
    if plan is None:
        # Nothing was rolled back without a plan (it is written first): drop the instant.
        log.warning("dropping restore %s left pending without a readable plan", instant_time)
        for name in (f"{instant_time}.restore.inflight", f"{instant_time}.restore.requested"):
            if writer.storage.exists(f"{TIMELINE}/{name}"):
                writer.storage.delete(f"{TIMELINE}/{name}")
        return
    log.warning("finishing restore %s left pending by a failed writer", instant_time)
    writer.run_restore(instant_time, plan)


def _undo_mdt_deltacommit(writer: HudiWriter, instant_time: str) -> None:
    """Remove a pending instant's MDT deltacommit (or, if it was folded into an MDT base file
    already, drop the MDT for a rebuild from storage, as a rollback does)."""
    if writer._rollback_mdt_instant(instant_time, False):
        from hudi_md.metadata.lifecycle import delete_metadata_table

        config = TableConfig.load(writer.storage)
        if config.metadata_partitions:
            wanted = config.metadata_partitions
            delete_metadata_table(writer.storage)
            writer._pending_mdt_rebuild = wanted


def _recover_compaction(writer: HudiWriter, instant_time: str) -> None:
    from hudi_md.metadata.reader import load_table_state

    try:
        plan = read_plan(writer.storage, instant_time, COMPACTION)
    except CorruptFileError:
        plan = None
    # 1. roll back the inflight attempt: its new base files, its MDT deltacommit, its inflight file
    written = writer._marked_files(instant_time)
    for op in (plan or {}).get("operations") or ():
        p = op.get("partitionPath") or ""
        for e in writer.storage.list(p):
            parsed = BaseFileName.parse(e.name)
            if parsed is not None and parsed.instant == instant_time and parsed.file_id == op["fileId"]:
                written.setdefault(p, []).append(e.name)
    for p, names in written.items():
        for n in sorted(set(names)):
            path = f"{p}/{n}" if p else n
            if writer.storage.exists(path):
                writer.storage.delete(path)
    _undo_mdt_deltacommit(writer, instant_time)
    inflight = f"{TIMELINE}/{instant_time}.{COMPACTION}.inflight"
    if writer.storage.exists(inflight):
        writer.storage.delete(inflight)
    writer._delete_markers(instant_time)
    # 2. run it again from its plan, or drop it when the plan cannot be run
    if plan:
        table = load_table_state(writer.storage, {})
        slices = _plan_slices(writer, plan)
        if slices is not None:
            log.warning("re-running compaction %s left pending by a failed writer", instant_time)
            _execute_compaction(writer, table, instant_time, slices)
            return
    log.warning(
        "rolling back compaction %s left pending by a failed writer (plan not runnable)", instant_time
    )
    requested = f"{TIMELINE}/{instant_time}.{COMPACTION}.requested"
    if writer.storage.exists(requested):
        writer.storage.delete(requested)


def _plan_slices(writer: HudiWriter, plan: dict[str, Any]) -> list[Any] | None:
    """The file slices a compaction plan reads; None when one of their files is missing."""
    from hudi_md.table.filenames import LogFileName
    from hudi_md.table.fs_view import BaseFile, FileSlice, LogFile

    out = []
    for op in plan.get("operations") or ():
        p = op.get("partitionPath") or ""
        fid = op["fileId"]
        base_instant = op.get("baseInstantTime") or ""
        try:
            base = None
            if op.get("dataFilePath"):
                name = op["dataFilePath"].rsplit("/", 1)[-1]
                size = writer.storage.info(f"{p}/{name}" if p else name).size
                base = BaseFile(p, name, size, fid, base_instant)
            logs = []
            for path in op.get("deltaFilePaths") or ():
                name = path.rsplit("/", 1)[-1]
                parsed = LogFileName.parse(name)
                if parsed is None:
                    return None
                size = writer.storage.info(f"{p}/{name}" if p else name).size
                logs.append(LogFile(p, name, size, fid, parsed.instant, parsed.version, parsed.write_token))
        except FileNotFoundError:
            return None
        out.append(FileSlice(p, fid, base_instant, base, tuple(sorted(logs, key=LogFile.sort_key))))
    return out


def _recover_rollback(writer: HudiWriter, instant_time: str) -> None:
    from hudi_md.table.timeline import Timeline

    try:
        plan = read_plan(writer.storage, instant_time, ROLLBACK) or {}
    except CorruptFileError:
        plan = {}
    _undo_mdt_deltacommit(writer, instant_time)
    for name in (f"{instant_time}.{ROLLBACK}.inflight", f"{instant_time}.{ROLLBACK}.requested"):
        if writer.storage.exists(f"{TIMELINE}/{name}"):
            writer.storage.delete(f"{TIMELINE}/{name}")
    target = (plan.get("instantToRollback") or {}).get("commitTime")
    if not target:
        return
    instant = Timeline.load(writer.storage, TIMELINE, 2).get(target)
    if instant is not None:
        from hudi_md.write.writer import rollback_plan_files

        log.warning("re-running the rollback of %s left unfinished by a failed writer", target)
        # A target no longer completed was reverted to inflight by that rollback: its files are
        # the plan's (the markers of a completed commit are gone).
        writer.rollback(
            instant,
            TableConfig.load(writer.storage),
            reason="unfinished rollback",
            files=None if instant.is_completed else rollback_plan_files(plan),
            was_completed=not instant.is_completed,
        )


def _recover_clean(writer: HudiWriter, instant_time: str) -> None:
    from hudi_md.metadata.reader import load_table_state

    try:
        plan = read_plan(writer.storage, instant_time, CLEAN)
    except CorruptFileError:
        plan = None
    _undo_mdt_deltacommit(writer, instant_time)
    if plan is None:
        # Nothing was deleted without a plan (it is written first): drop the instant.
        log.warning("dropping clean %s left pending without a readable plan", instant_time)
        for name in (f"{instant_time}.{CLEAN}.inflight", f"{instant_time}.{CLEAN}.requested"):
            if writer.storage.exists(f"{TIMELINE}/{name}"):
                writer.storage.delete(f"{TIMELINE}/{name}")
        return
    log.warning("re-running clean %s left pending by a failed writer", instant_time)
    _execute_clean(writer, load_table_state(writer.storage, {}), instant_time, plan)


# --- clean -------------------------------------------------------------------------------------------


def clean(writer: HudiWriter, cfg: WriteConfig) -> str | None:
    """Delete file slices no query of the retained commits can need; returns the clean instant.

    File groups a pending compaction reads are left alone (Hudi's cleaner excludes them), and the
    empty slice a pending compaction opens is never counted as a retained version."""
    from hudi_md.formats.commit_metadata_writer import cleaner_plan_record, serialize_instant_metadata
    from hudi_md.metadata.reader import load_table_state

    with TableLock(writer.storage, options=writer.options):
        resolve_pending_services(writer)
        writer._finish_mdt_rebuild()
        table = load_table_state(writer.storage, {})
        commits = [i for i in table.timeline.write_timeline()]
        if cfg.cleaner_policy == "KEEP_LATEST_COMMITS" and len(commits) <= cfg.commits_retained:
            return None
        earliest = (
            commits[-cfg.commits_retained].requested_time
            if cfg.cleaner_policy == "KEEP_LATEST_COMMITS"
            else None
        )
        pending_compactions = {i.requested_time for i in table.timeline.pending().of_actions(COMPACTION)}
        under_compaction = pending_compaction_file_groups(writer.storage, table.timeline)
        # Hudi's cleaner also keeps every file group a pending clustering reads.
        under_compaction.update(pending_clustering_file_groups(writer.storage, table.timeline))
        view = table.file_system_view()
        to_delete: dict[str, list[tuple[str, int]]] = defaultdict(list)
        replaced = table.timeline.write_timeline().replaced_file_ids()
        savepointed = savepointed_slices(writer.storage, table)
        for partition, groups in view.file_groups(table.partitions()).items():
            for g in groups:
                if (partition, g.file_id) in under_compaction:
                    continue
                # A pending compaction's slice without a base file continues the slice before it.
                instants = sorted(
                    (t for t in g.slices if not (t in pending_compactions and g.slices[t].base_file is None)),
                    reverse=True,
                )
                if cfg.cleaner_policy == "KEEP_LATEST_FILE_VERSIONS":
                    doomed = instants[cfg.file_versions_retained :]
                else:
                    # keep slices at/after `earliest`, and the newest slice before it
                    older = [t for t in instants if t < earliest]
                    doomed = older[1:]
                for t in doomed:
                    s = g.slices[t]
                    if (partition, g.file_id, t) in savepointed:
                        continue
                    if s.base_file is not None:
                        to_delete[partition].append((s.base_file.name, s.base_file.size))
                    for lf in s.log_files:
                        to_delete[partition].append((lf.name, lf.size))
        # file groups replaced before the retained window: all their files go
        for (partition, file_id), at in replaced.items():
            if earliest is not None and at < earliest and (partition, file_id) not in under_compaction:
                if any(k[:2] == (partition, file_id) for k in savepointed):
                    continue
                for e in table.listing.files_in_partitions([partition]).get(partition, []):
                    if e.name.lstrip(".").startswith(file_id):
                        to_delete[partition].append((e.name, e.size))
        if not any(to_delete.values()):
            return None
        last = table.timeline.last()
        instant = new_instant_time(after=last.requested_time if last else None)
        tw = TimelineWriter(writer.storage, TIMELINE)
        plan = cleaner_plan_record(
            earliest_to_retain=earliest,
            last_completed=commits[-1].requested_time,
            policy=cfg.cleaner_policy,
            file_uris={
                p: [writer.storage.uri(f"{p}/{n}" if p else n) for n, _ in sorted(set(files))]
                for p, files in to_delete.items()
            },
        )
        tw.requested(instant, CLEAN, serialize_instant_metadata("cleaner_plan", plan))
        _execute_clean(writer, table, instant, plan)
        return instant


def savepointed_slices(storage: Any, table: Any) -> set[tuple[str, str, str]]:
    """(partition, file id, base instant) of every file slice a completed savepoint holds: a
    restore to the savepoint needs them, so the cleaner keeps them (Hudi's CleanPlanner). A
    savepoint lists the base files of its slices (``HoodieSavepointMetadata.partitionMetadata``)."""
    from hudi_md.formats.commit_metadata import parse_instant_metadata

    out: set[tuple[str, str, str]] = set()
    for sp in table.timeline.completed().of_actions(SAVEPOINT):
        path = f"{table.config.timeline_path}/{sp.file_name}"
        meta = parse_instant_metadata(storage.read_bytes(path), storage.uri(path))
        for partition, pm in (meta.get("partitionMetadata") or {}).items():
            for name in (pm or {}).get("savepointDataFile") or []:
                parsed = BaseFileName.parse(name.rsplit("/", 1)[-1])
                if parsed is None:
                    raise CommitMetadataError(
                        storage.uri(path), f"savepointed file {name!r} is not a base file"
                    )
                out.add((partition, parsed.file_id, parsed.instant))
    return out


def _execute_clean(writer: HudiWriter, table: Any, instant: str, plan: dict[str, Any]) -> None:
    """Delete the files of a clean plan (those still there), record it in the MDT, complete it."""
    from hudi_md.formats.commit_metadata_writer import clean_metadata_record, serialize_instant_metadata

    tw = TimelineWriter(writer.storage, TIMELINE)
    tw.inflight(instant, CLEAN, serialize_instant_metadata("cleaner_plan", plan))
    earliest = (plan.get("earliestInstantToRetain") or {}).get("timestamp")
    files: dict[str, list[str]] = defaultdict(list)
    for p, entries in (plan.get("filePathsToBeDeletedPerPartition") or {}).items():
        files[p] += [e["filePath"].rsplit("/", 1)[-1] for e in entries or ()]
    for p, names in (plan.get("filesToBeDeletedPerPartition") or {}).items():
        files[p] += [n.rsplit("/", 1)[-1] for n in names or ()]
    deleted: dict[str, list[str]] = defaultdict(list)
    for p, names in files.items():
        for name in sorted(set(names)):
            path = f"{p}/{name}" if p else name
            if writer.storage.exists(path):
                writer.storage.delete(path)
            deleted[p].append(name)
    config = TableConfig.load(writer.storage)
    if config.metadata_partitions:
        _clean_in_mdt(writer, config, instant, deleted, table)
    meta = clean_metadata_record(
        instant=instant,
        earliest_to_retain=earliest,
        last_completed=plan.get("lastCompletedCommitTimestamp") or "",
        policy=plan.get("policy") or "KEEP_LATEST_COMMITS",
        deleted=deleted,
    )
    tw.complete(instant, CLEAN, serialize_instant_metadata("clean", meta))


def _clean_in_mdt(
    writer: HudiWriter, config: TableConfig, instant: str, deleted: dict[str, list[str]], table: Any
) -> None:
    from hudi_md.metadata.records_builder import ColumnRange
    from hudi_md.metadata.writer import MetadataTableWriter

    records = [files_record(p, {}, names) for p, names in deleted.items()]
    available = set(config.metadata_partitions)
    if K.COLUMN_STATS in available:
        mdt = table.metadata_table
        stats = mdt.column_stats(None, sorted(deleted)) if mdt is not None else []
        doomed = {(p, n) for p, names in deleted.items() for n in names}
        types = {f.name: f.type for f in table.schema}
        for s in stats:
            if (s.partition_path, s.file_name) in doomed and s.column_name in types:
                rng = ColumnRange(
                    s.column_name, s.min_value, s.max_value, s.null_count or 0, s.value_count or 0, 0, 0
                )
                records.append(
                    column_stats_record(
                        s.partition_path, s.file_name, rng, types[s.column_name], is_deleted=True
                    )
                )
    MetadataTableWriter(writer.storage, config, writer.options).write_records(
        instant, records, partitions=sorted(available), operation="UPSERT_PREPPED"
    )


# --- MOR compaction -------------------------------------------------------------------------------------


def compact(writer: HudiWriter) -> str | None:
    """Schedule and run a compaction of every MOR file slice that has log files (after finishing
    any compaction or clean a failed writer left pending)."""
    from hudi_md.formats.commit_metadata_writer import serialize_instant_metadata
    from hudi_md.metadata.reader import load_table_state

    with TableLock(writer.storage, options=writer.options):
        resolve_pending_services(writer)
        writer._finish_mdt_rebuild()
        table = load_table_state(writer.storage, {})
        if not table.config.is_mor:
            return None
        # Not the file groups a pending compaction, log compaction or clustering reads (Hudi's
        # compaction planner excludes them).
        busy = set(pending_compaction_file_groups(writer.storage, table.timeline))
        busy |= set(pending_clustering_file_groups(writer.storage, table.timeline))
        slices = [
            s
            for s in table.file_system_view().latest_file_slices(table.partitions())
            if s.log_files and (s.partition_path, s.file_id) not in busy
        ]
        if not slices:
            return None
        last = table.timeline.last()
        instant = new_instant_time(after=last.requested_time if last else None)
        tw = TimelineWriter(writer.storage, TIMELINE)
        plan = {
            "operations": [
                {
                    "baseInstantTime": s.base_instant,
                    "deltaFilePaths": [lf.name for lf in s.log_files],
                    "dataFilePath": s.base_file.name if s.base_file else None,
                    "fileId": s.file_id,
                    "partitionPath": s.partition_path,
                    "metrics": {},
                    "bootstrapFilePath": None,
                }
                for s in slices
            ],
            "extraMetadata": None,
            "version": 2,
            "strategy": None,
            "preserveHoodieMetadata": True,
        }
        tw.requested(instant, COMPACTION, serialize_instant_metadata("compaction_plan", plan))
        _execute_compaction(writer, table, instant, slices)
        return instant


def _execute_compaction(writer: HudiWriter, table: Any, instant: str, slices: list[Any]) -> None:
    """Run the requested compaction ``instant`` over ``slices``: inflight, a marker then a new
    base file per slice, the MDT deltacommit, then the completed commit."""
    import json as _json

    from hudi_md.formats.commit_metadata_writer import commit_metadata_record
    from hudi_md.read.merge import MergeSpec
    from hudi_md.read.slice_reader import instant_validator, read_file_slice
    from hudi_md.write.base_file import columns_to_index
    from hudi_md.write.file_groups import FileGroupTask, TaskResult, WriteContext, _write_parquet
    from hudi_md.write.mdt_sync import mdt_records_for_commit
    from hudi_md.write.schema import with_meta_fields
    from hudi_md.write.writer import TEMP

    tw = TimelineWriter(writer.storage, TIMELINE)
    tw.inflight(instant, COMPACTION, b"")
    schema = table.schema
    merge = MergeSpec.from_config(table.config)
    valid = instant_validator(table.timeline)
    last_commit = table.timeline.write_timeline().last()
    avro_schema = (
        table.timeline.metadata(last_commit).get("extraMetadata", {}).get("schema") if last_commit else None
    )
    avro_with_meta = _json.dumps(with_meta_fields(_json.loads(avro_schema)), separators=(",", ":"))
    index_columns = columns_to_index(schema) if table.config.metadata_partitions else []
    ctx = WriteContext(
        base_uri=writer.uri,
        storage_options=writer.storage_options,
        instant=instant,
        table_schema_json=avro_with_meta,
        record_key_fields=table.config.record_key_fields,
        ordering_fields=table.config.ordering_fields,
        merge_mode=table.config.record_merge_mode,
        is_mor=True,
        log_block_format="avro",
        index_columns=index_columns,
        with_bloom=True,
    )
    results = []
    for i, s in enumerate(slices):
        rows = read_file_slice(writer.storage, s, schema=schema, merge=merge, is_valid_instant=valid)
        task = FileGroupTask(
            s.partition_path, s.file_id, "insert", token=f"{i}-0-0", prev_commit=s.base_instant
        )
        name = task.file_name(instant, False)
        # The marker first, so that a rollback of a failed attempt finds the file.
        marker = f"{TEMP}/{instant}/{s.partition_path}".rstrip("/") + f"/{name}.marker.CREATE"
        writer.storage.write_bytes(marker, b"")
        rows = rows.set_column(
            rows.schema.get_field_index("_hoodie_file_name"),
            "_hoodie_file_name",
            pa.array([name] * rows.num_rows, pa.string()),
        )
        path, (res, bloom) = _write_parquet(ctx, writer.storage, task, rows, name)
        stat = {
            "fileId": s.file_id,
            "path": path,
            "prevCommit": s.base_instant,
            "numWrites": rows.num_rows,
            "numDeletes": 0,
            "numUpdateWrites": 0,
            "numInserts": 0,
            "totalWriteBytes": res.file_size,
            "totalWriteErrors": 0,
            "partitionPath": s.partition_path,
            "fileSizeInBytes": res.file_size,
            "totalLogFilesCompacted": len(s.log_files),
            "baseFile": name,
            "logFiles": [],
        }
        results.append(
            TaskResult(
                stat,
                {k: v for k, v in res.column_stats.items() if k in index_columns},
                bloom.serialize() if bloom else None,
                "DYNAMIC_V0" if bloom else None,
            )
        )
    stats: dict[str, list] = defaultdict(list)
    for r in results:
        stats[r.write_stat["partitionPath"]].append(r.write_stat)
    meta = commit_metadata_record(
        dict(stats), operation_type="COMPACT", extra_metadata={"schema": avro_schema}, compacted=True
    )
    config = TableConfig.load(writer.storage)
    if config.metadata_partitions:
        from hudi_md.metadata.writer import MetadataTableWriter

        types = {f.name: f.type for f in schema}
        records = mdt_records_for_commit(
            instant,
            results,
            set(config.metadata_partitions) - {K.RECORD_INDEX},
            types,
            before=table,
        )
        MetadataTableWriter(writer.storage, config, writer.options).write_records(
            instant,
            records,
            partitions=sorted(config.metadata_partitions),
            operation="UPSERT_PREPPED",  # Hudi's operation type for every MDT deltacommit
        )
    from hudi_md.formats.commit_metadata_writer import serialize_instant_metadata

    tw.complete(instant, COMPACTION, serialize_instant_metadata("commit", meta))
    writer._delete_markers(instant)
