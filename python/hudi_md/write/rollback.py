"""Rollback and restore (table version 9), each a transaction of its own on the data timeline.

Rollback: a completed instant is first reverted to inflight (readers then see the table without
it, never a completed instant with files missing), then the files it wrote (from its commit
metadata, its markers, or the plan of an earlier rollback of it that did not finish) and its MDT
deltacommit are removed, and the rollback is recorded as ``R.rollback``.

Restore: ``R.restore.requested`` holds the plan (the instants to roll back), then each is rolled
back newest first, then ``R_C.restore``. A restore a dead writer left unfinished is run to its end
by the next writer (:mod:`hudi_md.write.recovery`).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from hudi_md.errors import CorruptFileError, InvalidOptionError
from hudi_md.formats.commit_metadata import parse_instant_metadata
from hudi_md.formats.commit_metadata_writer import serialize_instant_metadata
from hudi_md.metadata import keys as K
from hudi_md.metadata.lifecycle import delete_metadata_table
from hudi_md.metadata.records_builder import files_record
from hudi_md.table import config as C
from hudi_md.table.config import TableConfig, parse_properties
from hudi_md.table.filenames import BaseFileName
from hudi_md.table.timeline import (
    CLEAN,
    COMMIT,
    COMPACTION,
    DELTA_COMMIT,
    REPLACE_COMMIT,
    RESTORE,
    ROLLBACK,
    Instant,
    Timeline,
)
from hudi_md.table.timeline_writer import PendingInstant, TimelineWriter
from hudi_md.write.transaction import (
    MDT_FOLDER,
    TIMELINE,
    Transaction,
    WritableTable,
    delete_markers,
    marked_files,
)

log = logging.getLogger(__name__)

WRITE_ACTIONS = (COMMIT, DELTA_COMMIT, REPLACE_COMMIT)


def rollback(
    table: WritableTable,
    instant: Instant,
    config: TableConfig,
    *,
    reason: str = "failed write",
    files: Mapping[str, list[str]] | None = None,
    was_completed: bool = False,
) -> tuple[str, dict[str, Any]]:
    """Roll back ``instant`` (the caller holds the table lock); returns the rollback instant and
    its metadata.

    ``files``: the plan of an earlier rollback of it that did not finish. ``was_completed``: the
    instant was completed when that rollback reverted it (its MDT entries may be in MDT base
    files already)."""
    if files is None and not instant.is_completed:
        # An earlier rollback of it that did not finish (its target reverted to inflight): that
        # plan names the files (a completed commit's markers are gone).
        files = unfinished_rollback_files(table, instant.requested_time)
        was_completed = was_completed or files is not None
    if files is not None:
        written: dict[str, list[str]] = defaultdict(list, {p: list(n) for p, n in files.items()})
    elif instant.is_completed:
        written = committed_files(table.timeline(), instant)
    else:
        written = marked_files(table.storage, instant.requested_time)
    plan = {
        "instantToRollback": {"commitTime": instant.requested_time, "action": instant.action},
        "RollbackRequests": [
            {
                "partitionPath": p,
                "fileId": "",
                "latestBaseInstant": instant.requested_time,
                "filesToBeDeleted": [table.storage.uri(f"{p}/{n}" if p else n) for n in names],
                "logBlocksToBeDeleted": {},
            }
            for p, names in written.items()
        ],
        "version": 1,
    }
    txn = Transaction.begin(table, ROLLBACK, serialize_instant_metadata("rollback_plan", plan))
    timeline = table.timeline_writer()
    if instant.is_completed:
        PendingInstant.revert(timeline, instant)
    deleted: dict[str, list[str]] = defaultdict(list)
    for p, names in written.items():
        for n in names:
            path = f"{p}/{n}" if p else n
            if table.storage.exists(path):
                table.storage.delete(path)
                deleted[p].append(table.storage.uri(path))
    drop_partitions_created_by(table, instant.requested_time, written)
    mdt_rebuild = remove_mdt_deltacommit(table, instant.requested_time, instant.is_completed or was_completed)
    if mdt_rebuild and config.metadata_partitions:
        # The instant is already folded into an MDT base file: rebuild the MDT from storage.
        wanted = config.metadata_partitions
        config = delete_metadata_table(table.storage, definitions=False)
        table.pending_mdt_rebuild = wanted
    elif config.metadata_partitions:
        records = [files_record(p, {}, [u.rsplit("/", 1)[-1] for u in urls]) for p, urls in deleted.items()]
        txn.write_metadata(config, records, partitions=[K.FILES])
    meta = {
        "startRollbackTime": txn.instant,
        "timeTakenInMillis": 0,
        "totalFilesDeleted": sum(len(v) for v in deleted.values()),
        "commitsRollback": [instant.requested_time],
        "partitionMetadata": {
            p: {
                "partitionPath": p,
                "successDeleteFiles": urls,
                "failedDeleteFiles": [],
                "rollbackLogFiles": {},
                "logFilesFromFailedCommit": {},
            }
            for p, urls in deleted.items()
        },
        "version": 1,
        "instantsRollback": [{"commitTime": instant.requested_time, "action": instant.action}],
    }
    txn.complete(serialize_instant_metadata("rollback", meta))
    timeline.delete_pending(instant)
    delete_markers(table.storage, instant.requested_time)
    log.info("rolled back %s (%s) as %s", instant, reason, txn.instant)
    return txn.instant, meta


def unfinished_rollback_files(table: WritableTable, instant_time: str) -> dict[str, list[str]] | None:
    """Partition -> file names in the plan of a pending rollback of ``instant_time``."""
    for rb in table.timeline().pending().of_actions(ROLLBACK):
        path = f"{TIMELINE}/{rb.requested_time}.{ROLLBACK}.requested"
        try:
            plan = parse_instant_metadata(table.storage.read_bytes(path), table.storage.uri(path)) or {}
        except (FileNotFoundError, CorruptFileError):
            continue
        if (plan.get("instantToRollback") or {}).get("commitTime") == instant_time:
            return rollback_plan_files(plan)
    return None


def rollback_plan_files(plan: Mapping[str, Any]) -> dict[str, list[str]]:
    """Partition -> file names a rollback plan deletes."""
    out: dict[str, list[str]] = defaultdict(list)
    for req in plan.get("RollbackRequests") or ():
        for uri in req.get("filesToBeDeleted") or ():
            out[req.get("partitionPath") or ""].append(uri.rsplit("/", 1)[-1])
    return dict(out)


def drop_partitions_created_by(table: WritableTable, instant_time: str, partitions: Iterable[str]) -> None:
    """A partition directory the rolled-back instant created, now empty, goes too: its
    ``.hoodie_partition_metadata`` names an instant that no longer exists."""
    for p in partitions:
        if not p:
            continue
        meta = f"{p}/.hoodie_partition_metadata"
        try:
            props = parse_properties(table.storage.read_bytes(meta).decode("utf-8", "replace"))
        except FileNotFoundError:
            continue
        others = [e for e in table.storage.list(p) if not e.name.startswith(".hoodie_partition_metadata")]
        if props.get("commitTime") == instant_time and not others:
            table.storage.delete(p, recursive=True)


def committed_files(timeline: Timeline, instant: Instant) -> dict[str, list[str]]:
    """Partition -> names of the files a completed instant wrote (its write statistics)."""
    meta = timeline.metadata(instant)
    out: dict[str, list[str]] = defaultdict(list)
    for partition, stats in (meta.get("partitionToWriteStats") or {}).items():
        for stat in stats or ():
            if stat.get("path"):
                out[partition or ""].append(stat["path"].rsplit("/", 1)[-1])
    return out


def remove_mdt_deltacommit(table: WritableTable, instant_time: str, completed: bool) -> bool:
    """Remove MDT deltacommit ``T`` (its log files and timeline files), so it can never become
    valid once the data instant's pending files are gone. True when ``T`` was already compacted
    into MDT base files, so that only a rebuild can undo it: also when a completed ``T`` has no
    deltacommit on the MDT's active timeline (the MDT was built or archived after it)."""
    mdt = table.storage.child(MDT_FOLDER)
    if not mdt.exists(C.PROPERTIES_FILE):
        return False
    mdt_timeline = Timeline.load(mdt, TIMELINE, 2)
    if completed and mdt_timeline.get(instant_time) is None:
        return True
    if mdt_timeline.get(instant_time) is not None and any(
        i.action == COMMIT and i.requested_time > instant_time for i in mdt_timeline.completed()
    ):
        return True
    for part in mdt.list(""):
        if not part.is_dir or part.name.startswith("."):
            continue
        for e in mdt.list(part.name):
            if f"_{instant_time}.log." in e.name or e.name.endswith(f"_{instant_time}.hfile"):
                mdt.delete(e.path)
    TimelineWriter(mdt, TIMELINE).delete_all(instant_time)
    return False


def undo_mdt_deltacommit(table: WritableTable, instant_time: str) -> None:
    """Remove a pending instant's MDT deltacommit (or, if it was folded into an MDT base file
    already, drop the MDT for a rebuild from storage, as a rollback does)."""
    if remove_mdt_deltacommit(table, instant_time, False):
        config = TableConfig.load(table.storage)
        if config.metadata_partitions:
            wanted = config.metadata_partitions
            delete_metadata_table(table.storage, definitions=False)
            table.pending_mdt_rebuild = wanted


def undo_service_attempt(
    table: WritableTable, instant_time: str, action: str, file_groups: Mapping[str, Collection[str] | None]
) -> None:
    """Undo the unfinished attempt of a table service that writes new base files (compaction,
    clustering), back to its requested plan: the files its markers name and the base files of
    its instant in the plan's partitions (``file_groups``: partition -> the file ids it writes, or
    None for any: a clustering's new file ids are random), its MDT deltacommit, its inflight file
    and its markers."""
    written = marked_files(table.storage, instant_time)
    for p, ids in file_groups.items():
        for e in table.storage.list(p):
            parsed = BaseFileName.parse(e.name)
            if (
                parsed is not None
                and parsed.instant == instant_time
                and (ids is None or parsed.file_id in ids)
            ):
                written.setdefault(p, []).append(e.name)
    for p, names in written.items():
        for n in sorted(set(names)):
            path = f"{p}/{n}" if p else n
            if table.storage.exists(path):
                table.storage.delete(path)
    undo_mdt_deltacommit(table, instant_time)
    inflight = f"{TIMELINE}/{instant_time}.{action}.inflight"
    if table.storage.exists(inflight):
        table.storage.delete(inflight)
    delete_markers(table.storage, instant_time)


# --- entry points (each takes the table lock) ---------------------------------------------------------


def rollback_commit(table: WritableTable, instant_time: str) -> str:
    """Roll back a completed write instant; only the latest write may be rolled back."""
    with table.lock():
        config = TableConfig.load(table.storage)
        writes = table.timeline().write_timeline()
        target = writes.get(instant_time)
        if target is None:
            raise InvalidOptionError(f"no completed write instant {instant_time} in {table.storage.uri()}")
        later = [i for i in writes if i.requested_time > instant_time]
        if later:
            raise InvalidOptionError(
                f"{instant_time} is not the latest write ({later[-1].requested_time} is); use restore"
            )
        rb, _ = rollback(table, target, config, reason="requested")
        table.finish_mdt_rebuild()
        return rb


def restore(table: WritableTable, instant_time: str) -> list[str]:
    """Bring the table back to its state right after ``instant_time`` (rolls back later writes,
    newest first). Refused when a clean already removed files that state needs."""
    with table.lock():
        timeline = table.timeline()
        if timeline.write_timeline().get(instant_time) is None:
            raise InvalidOptionError(f"no completed write instant {instant_time} in {table.storage.uri()}")
        for c in timeline.completed().of_actions(CLEAN):
            retained = timeline.metadata(c).get("earliestCommitToRetain") or ""
            if c.requested_time > instant_time and retained and retained > instant_time:
                raise InvalidOptionError(
                    f"cannot restore to {instant_time}: clean {c.requested_time} kept only commits "
                    f"from {retained}"
                )
        targets = [p for p in timeline.pending() if p.action in (*WRITE_ACTIONS, COMPACTION, "clustering")]
        later = [w for w in timeline.write_timeline() if w.requested_time > instant_time]
        targets += list(reversed(later))
        plan = {
            "instantsToRollback": [{"commitTime": i.requested_time, "action": i.action} for i in targets],
            "version": 1,
        }
        txn = Transaction.request(table, RESTORE, serialize_instant_metadata("restore_plan", plan))
        done = run_restore(table, txn.instant, plan)
        table.finish_mdt_rebuild()
        return done


def run_restore(table: WritableTable, rs_time: str, plan: Mapping[str, Any]) -> list[str]:
    """Execute the requested restore ``rs_time`` (again, after a crash): roll back each instant
    of its plan still on the timeline, newest first, then complete the restore. The caller holds
    the table lock."""
    txn = Transaction.resume(table, rs_time, RESTORE)
    txn.start(if_missing=True)
    done: list[str] = []
    rollbacks: dict[str, list[dict[str, Any]]] = {}
    targets = [i.get("commitTime") or "" for i in plan.get("instantsToRollback") or ()]
    for t in targets:
        instant = table.timeline().get(t)
        if instant is None or instant.action in (ROLLBACK, RESTORE):
            continue  # rolled back already (before a crash)
        rb, meta = rollback(table, instant, TableConfig.load(table.storage), reason="restore")
        done.append(rb)
        rollbacks[t] = [meta]
    meta = {
        "startRestoreTime": rs_time,
        "timeTakenInMillis": 0,
        "instantsToRollback": targets,
        "hoodieRestoreMetadata": rollbacks,
        "version": 1,
        "restoreInstantInfo": [
            {"commitTime": i.get("commitTime") or "", "action": i.get("action") or ""}
            for i in plan.get("instantsToRollback") or ()
        ],
    }
    txn.complete(serialize_instant_metadata("restore", meta))
    return done
