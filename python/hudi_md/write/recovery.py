"""What a writer does first, under the table lock: finish or undo what dead writers left.

In this order: a torn newest completed instant is treated as not completed; failed writes are
rolled back (Hudi's EAGER policy for a single writer, LAZY under optimistic concurrency control);
then pending table services are resolved (rollbacks first, then compactions and cleans and the
MDT's own services, then restores). Pending clusterings (hudi-md's or Apache Hudi's plans) run
to completion like pending compactions (:mod:`hudi_md.write.clustering` undoes an unfinished
attempt first), unless ``hoodie.clustering.async.enabled`` leaves them to another job; pending log
compactions are left to Apache Hudi.
"""

from __future__ import annotations

import logging

from hudi_md.errors import ClusteringError, CorruptFileError
from hudi_md.formats.commit_metadata import parse_instant_metadata
from hudi_md.metadata import table_services as mdt_services
from hudi_md.table.config import TableConfig
from hudi_md.table.timeline import (
    CLEAN,
    CLUSTERING,
    COMPACTION,
    REPLACE_COMMIT,
    RESTORE,
    ROLLBACK,
    Instant,
    parse_instant_file,
)
from hudi_md.write.clean import execute_clean
from hudi_md.write.clustering import ClusteringOptions, is_clustering_plan
from hudi_md.write.clustering import drop as drop_clustering
from hudi_md.write.clustering import run as run_clustering
from hudi_md.write.compaction import execute_compaction, plan_slices
from hudi_md.write.heartbeat import delete_heartbeat, is_expired, last_heartbeat
from hudi_md.write.plans import compaction_inputs, read_plan
from hudi_md.write.rollback import (
    WRITE_ACTIONS,
    rollback,
    rollback_plan_files,
    run_restore,
    undo_mdt_deltacommit,
    undo_service_attempt,
)
from hudi_md.write.transaction import TIMELINE, Transaction, WritableTable

log = logging.getLogger(__name__)


def rollback_failed_writes(
    table: WritableTable, config: TableConfig, *, lazy: bool | None = None
) -> list[str]:
    """Roll back failed write instants, and finish the services a failed writer left pending
    (:func:`resolve_pending_services`). The caller holds the table lock. Returns the instants.

    Single writer (Hudi's EAGER policy): every pending write instant has failed, since no other
    writer can be live, except one with a live heartbeat: only writers under optimistic
    concurrency control write heartbeats, and such a writer may be between its start and its
    commit (the CLI's services, which name no concurrency mode, run this too). Optimistic
    concurrency control (Hudi's LAZY policy, ``lazy``): only pending write instants whose
    heartbeat (``.hoodie/.heartbeat/<instant>``) expired or is missing. Table services only ever
    run under the lock, so a pending one seen here belongs to a writer that died."""
    if lazy is None:
        lazy = table.optimistic
    done = repair_torn_completion(table)  # first: a dead writer's last act may be torn
    for instant in table.timeline().pending():
        if instant.action in WRITE_ACTIONS and not _is_clustering(table, instant):
            t = instant.requested_time
            if t in table.heartbeats:
                continue  # this writer's own live instant
            if (lazy or last_heartbeat(table.storage, t) is not None) and not is_expired(
                table.storage, t, table.options
            ):
                continue  # a live writer's
            rollback(table, instant, config)
            delete_heartbeat(table.storage, t)
            done.append(t)
    done += resolve_pending_services(table)
    return done


def _is_clustering(table: WritableTable, instant: Instant) -> bool:
    """A pending replacecommit that is a clustering (table version 6 names its pending clustering
    so): not a failed write, as Apache Hudi's rollback of failed writes leaves clustering alone."""
    if instant.action != REPLACE_COMMIT:
        return False
    try:
        return is_clustering_plan(read_plan(table.storage, instant.requested_time, instant.action))
    except CorruptFileError:
        return False


def resolve_pending_services(table: WritableTable, *, clusterings: bool = True) -> list[str]:
    """Finish what a dead writer left of table services (the caller holds the table lock, so no
    live writer is running them): a pending compaction is rolled back to its requested plan (its
    partial files and MDT deltacommit removed, its inflight file deleted) and run again from the
    plan, as Hudi's inline compaction does; when a file the plan reads is gone the compaction is
    rolled back altogether. A pending clean is run again from its plan (cleans are idempotent). A
    pending rollback is dropped (with its MDT deltacommit) and its target, if still on the
    timeline, rolled back anew from the same plan. A pending restore is run to its end from its
    plan (as Hudi does), after the rollbacks it left unfinished. A pending clustering is run from
    its plan (an unfinished attempt undone first), unless ``hoodie.clustering.async.enabled``.
    (``clusterings=False``: the caller runs them itself.) Returns the instants resolved."""
    done: list[str] = _resolve_mdt_services(table)
    opts = ClusteringOptions.from_options(table.options)
    run_clusterings = clusterings and opts.run_pending
    order = {ROLLBACK: 0, COMPACTION: 1, CLEAN: 1, RESTORE: 2}
    if run_clusterings:
        order[CLUSTERING] = 1
    while True:
        pending = [
            i
            for i in table.timeline().pending()
            if i.requested_time not in done
            and (
                i.action in order
                # table version 6 names a pending clustering replacecommit
                or (run_clusterings and i.action == REPLACE_COMMIT and _is_clustering(table, i))
            )
        ]
        if not pending:
            return done
        instant = min(pending, key=lambda i: (order.get(i.action, 1), i.requested_time))
        if instant.action in (CLUSTERING, REPLACE_COMMIT):
            _recover_clustering(table, instant, opts)
        elif instant.action == COMPACTION:
            _recover_compaction(table, instant.requested_time)
        elif instant.action == CLEAN:
            _recover_clean(table, instant.requested_time)
        elif instant.action == ROLLBACK:
            _recover_rollback(table, instant.requested_time)
        else:
            _recover_restore(table, instant.requested_time)
        done.append(instant.requested_time)


def _resolve_mdt_services(table: WritableTable) -> list[str]:
    """The MDT's own compaction or clean left pending by a dead writer."""
    if not table.storage.exists(".hoodie/metadata/.hoodie/hoodie.properties"):
        return []
    mw = table.metadata_writer(TableConfig.load(table.storage))
    return [f"mdt:{t}" for t in mdt_services.resolve_pending_services(mw)]


def repair_torn_completion(table: WritableTable) -> list[str]:
    """A completed instant file that does not parse (torn: written in place by a writer that died,
    where the file system has no atomic rename) is not a completion: the commit point is that file
    landing whole. Only the newest completed instant can be one (the dead writer's last act), so
    only it is read. Its completed file is deleted, which leaves the instant pending (its
    requested and inflight files stay), for the usual recovery; a write is rolled back here.
    Returns the write instants rolled back."""
    completed = list(table.timeline().completed())
    if not completed:
        return []
    newest = max(completed, key=lambda i: (i.completion_time or i.requested_time, i.requested_time))
    path = f"{TIMELINE}/{newest.file_name}"
    try:
        parse_instant_metadata(table.storage.read_bytes(path), table.storage.uri(path))
        return []
    except CorruptFileError as e:
        t = newest.requested_time
        has_pending = any(i.requested_time == t and not i.is_completed for i in _all_instant_files(table))
        if not has_pending:
            raise  # nothing to fall back to: a typed error naming the file
        log.warning("instant %s is torn (%s): treating it as not completed", newest.file_name, e)
    table.storage.delete(path)
    instant = table.timeline().get(newest.requested_time)
    if instant is not None and instant.action in WRITE_ACTIONS:
        rollback(table, instant, TableConfig.load(table.storage), reason="torn completed instant")
        return [instant.requested_time]
    return []


def _all_instant_files(table: WritableTable) -> list[Instant]:
    """Every instant file of the data timeline (all states, not only each instant's furthest)."""
    out = []
    for status in table.storage.list(TIMELINE):
        instant = None if status.is_dir else parse_instant_file(status.name, 2)
        if instant is not None:
            out.append(instant)
    return out


def _drop_pending(table: WritableTable, instant_time: str, action: str) -> None:
    # inflight first: a requested instant alone is still a pending plan
    for name in (f"{instant_time}.{action}.inflight", f"{instant_time}.{action}.requested"):
        if table.storage.exists(f"{TIMELINE}/{name}"):
            table.storage.delete(f"{TIMELINE}/{name}")


def _recover_restore(table: WritableTable, instant_time: str) -> None:
    try:
        plan = read_plan(table.storage, instant_time, RESTORE)
    except CorruptFileError:
        plan = None
    if plan is None:
        # Nothing was rolled back without a plan (it is written first): drop the instant.
        log.warning("dropping restore %s left pending without a readable plan", instant_time)
        _drop_pending(table, instant_time, RESTORE)
        return
    log.warning("finishing restore %s left pending by a failed writer", instant_time)
    run_restore(table, instant_time, plan)


def _recover_compaction(table: WritableTable, instant_time: str) -> None:
    try:
        plan = read_plan(table.storage, instant_time, COMPACTION)
    except CorruptFileError:
        plan = None
    # 1. roll back the inflight attempt: its new base files, its MDT deltacommit, its inflight file
    file_groups: dict[str, set[str]] = {}
    for (p, file_id), _ in compaction_inputs(plan):
        file_groups.setdefault(p, set()).add(file_id)
    undo_service_attempt(table, instant_time, COMPACTION, file_groups)
    # 2. run it again from its plan, or drop it when the plan cannot be run
    if plan:
        slices = plan_slices(table.storage, plan)
        if slices is not None:
            log.warning("re-running compaction %s left pending by a failed writer", instant_time)
            txn = Transaction.resume(table, instant_time, COMPACTION)
            execute_compaction(txn, table.state(), slices)
            return
    log.warning(
        "rolling back compaction %s left pending by a failed writer (plan not runnable)", instant_time
    )
    requested = f"{TIMELINE}/{instant_time}.{COMPACTION}.requested"
    if table.storage.exists(requested):
        table.storage.delete(requested)


def _recover_clustering(table: WritableTable, instant: Instant, opts: ClusteringOptions) -> None:
    t = instant.requested_time
    try:
        log.warning("running clustering %s left pending", t)
        run_clustering(table, instant, opts)
    except (CorruptFileError, ClusteringError) as e:
        log.warning("rolling back clustering %s left pending (plan not runnable: %s)", t, e)
        drop_clustering(table, instant)


def _recover_rollback(table: WritableTable, instant_time: str) -> None:
    try:
        plan = read_plan(table.storage, instant_time, ROLLBACK) or {}
    except CorruptFileError:
        plan = {}
    undo_mdt_deltacommit(table, instant_time)
    _drop_pending(table, instant_time, ROLLBACK)
    target = (plan.get("instantToRollback") or {}).get("commitTime")
    if not target:
        return
    instant = table.timeline().get(target)
    if instant is not None:
        log.warning("re-running the rollback of %s left unfinished by a failed writer", target)
        # A target no longer completed was reverted to inflight by that rollback: its files are
        # the plan's (the markers of a completed commit are gone).
        rollback(
            table,
            instant,
            TableConfig.load(table.storage),
            reason="unfinished rollback",
            files=None if instant.is_completed else rollback_plan_files(plan),
            was_completed=not instant.is_completed,
        )


def _recover_clean(table: WritableTable, instant_time: str) -> None:
    try:
        plan = read_plan(table.storage, instant_time, CLEAN)
    except CorruptFileError:
        plan = None
    undo_mdt_deltacommit(table, instant_time)
    if plan is None:
        # Nothing was deleted without a plan (it is written first): drop the instant.
        log.warning("dropping clean %s left pending without a readable plan", instant_time)
        _drop_pending(table, instant_time, CLEAN)
        return
    log.warning("re-running clean %s left pending by a failed writer", instant_time)
    execute_clean(Transaction.resume(table, instant_time, CLEAN), table.state(), plan)
