"""The commit protocol (ARCHITECTURE.md, RFC-15 V2) for table version 9.

1. lock; 2. roll back failed instants; 3. ``T.a.requested`` → ``T.a.inflight``, write data files
(markers first); 4. MDT records from the write statistics; 5. MDT deltacommit ``T`` into every
available or inflight MDT partition; 6. complete ``T`` (``T_C.a``); unlock; 7. inline services.

File writing is delegated to an *executor* (a callable running :func:`file_groups.execute` over
tasks): the local one loops in-process, the Spark one runs them in Python workers.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from hudi_md.errors import HudiMdError, InvalidOptionError
from hudi_md.metadata import keys as K
from hudi_md.metadata.records_builder import files_record
from hudi_md.storage import Storage
from hudi_md.table import config as C
from hudi_md.table.config import TableConfig, write_table_config
from hudi_md.table.timeline import (
    COMMIT,
    DELTA_COMMIT,
    REPLACE_COMMIT,
    RESTORE,
    ROLLBACK,
    Instant,
    Timeline,
)
from hudi_md.table.timeline_writer import TimelineWriter, new_instant_time
from hudi_md.write import keygen
from hudi_md.write.config import FS_LOCK_PATH, OPERATIONS, WriteConfig, concurrency_settings
from hudi_md.write.file_groups import OP_COLUMN, FileGroupTask, TaskResult, WriteContext, new_file_id
from hudi_md.write.lock import LockLostError, TableLock
from hudi_md.write.mdt_sync import mdt_records_for_commit

log = logging.getLogger(__name__)

Executor = Callable[[WriteContext, list[tuple[FileGroupTask, pa.Table]]], list[TaskResult]]

OPERATION_TYPES = {
    "insert": "INSERT",
    "bulk_insert": "BULK_INSERT",
    "upsert": "UPSERT",
    "delete": "DELETE",
    "insert_overwrite": "INSERT_OVERWRITE",
    "insert_overwrite_table": "INSERT_OVERWRITE_TABLE",
}
TIMELINE = ".hoodie/timeline"
TEMP = ".hoodie/.temp"
INDEX_DEFS = ".hoodie/.index_defs/index.json"


def local_executor(ctx: WriteContext, tasks: list[tuple[FileGroupTask, pa.Table]]) -> list[TaskResult]:
    from hudi_md.write.file_groups import execute

    return [execute(ctx, task, rows, i) for i, (task, rows) in enumerate(tasks)]


@dataclass
class CommitResult:
    instant: str
    action: str
    results: list[TaskResult] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class PendingCommit:
    instant: str
    action: str
    timeline: Timeline


@dataclass
class WriteSession:
    """A started write (:meth:`HudiWriter.start_write`). ``lock``: the table lock a single writer
    holds until :meth:`HudiWriter.end_write`; None under optimistic concurrency control."""

    cfg: WriteConfig
    config: TableConfig
    pending: PendingCommit
    avro_schema: str
    operation: str
    lock: TableLock | None = None


class CommitCompletedError(HudiMdError):
    """The write's commit completed (its rows are in the table), but something after it failed;
    ``instant`` is the completed commit."""

    def __init__(self, instant: str, message: str) -> None:
        super().__init__(message)
        self.instant = instant


class Crash(Exception):
    """Raised by a test hook to simulate a writer dying at a named step."""


class HudiWriter:
    """Writes one table. Not thread-safe; several writers coordinate through the table lock."""

    def __init__(
        self, uri: str, options: Mapping[str, Any] | None = None, *, executor: Executor | None = None
    ):
        opts = {str(k): v for k, v in (options or {}).items()}
        # fsspec's options, and Hudi's file-system retry keys (the storage layer applies those).
        self.storage_options = {
            k: v
            for k, v in opts.items()
            if not k.startswith("hoodie.") or k.startswith("hoodie.filesystem.operation.retry.")
        }
        self.options = {k: str(v) for k, v in opts.items() if k.startswith("hoodie.")}
        self.storage = Storage(uri, self.storage_options)
        self.uri = uri
        self.executor = executor or local_executor
        # test hook: raise Crash at "after_data_files", "after_mdt_commit" or "before_complete"
        self.crash_at: str | None = None
        self._pending_mdt_rebuild: list[str] | None = None
        if FS_LOCK_PATH in self.options:
            # an absolute hoodie.write.lock.filesystem.path is resolved against the table
            self.options.setdefault("hoodie.base.path", uri)
        # Heartbeats of this writer's pending instants (optimistic concurrency control).
        self._heartbeats: dict[str, Any] = {}
        # The table lock a single writer holds for its whole write.
        self._lock: TableLock | None = None

    # --- table state ----------------------------------------------------------------------------

    def _config(self) -> TableConfig | None:
        if not self.storage.exists(C.PROPERTIES_FILE):
            return None
        return TableConfig.load(self.storage)

    def _timeline(self) -> Timeline:
        return Timeline.load(self.storage, TIMELINE, 2)

    def _check(self, step: str) -> None:
        if self.crash_at == step:
            raise Crash(step)

    # --- table creation ---------------------------------------------------------------------------

    def _create_table(self, cfg: WriteConfig, avro_schema_json: str) -> TableConfig:
        props = {
            C.TABLE_NAME: cfg.table_name,
            C.DATABASE_NAME: cfg.database_name,
            C.TABLE_TYPE: cfg.table_type,
            C.TABLE_VERSION: "9",
            C.INITIAL_VERSION: "9",
            C.RECORD_KEY_FIELDS: ",".join(cfg.record_key_fields),
            C.PARTITION_FIELDS: ",".join(cfg.partition_fields),
            C.KEYGEN_TYPE: cfg.keygen,
            C.HIVE_STYLE_PARTITIONING: str(cfg.hive_style).lower(),
            C.URL_ENCODE_PARTITIONING: str(cfg.url_encode).lower(),
            C.DROP_PARTITION_COLUMNS: "false",
            C.TIMELINE_LAYOUT_VERSION: "2",
            C.TIMELINE_PATH: "timeline",
            C.TIMELINE_HISTORY_PATH: "history",
            C.ARCHIVELOG_FOLDER: "archived",
            C.RECORD_MERGE_MODE: cfg.merge_mode,
            "hoodie.table.format": "native",
            "hoodie.table.index.defs.path": INDEX_DEFS,
            C.METADATA_PARTITIONS_INFLIGHT: "",
            C.CREATE_SCHEMA: _without_meta(avro_schema_json),
        }
        if cfg.ordering_fields:
            props[C.ORDERING_FIELDS] = ",".join(cfg.ordering_fields)
        if not cfg.partition_fields:
            props.pop(C.PARTITION_FIELDS)
        self.storage.makedirs(f"{TIMELINE}/history")
        self.storage.makedirs(TEMP)
        return write_table_config(self.storage, props)

    # --- public entry ------------------------------------------------------------------------------

    def write(self, data: pa.Table, operation: str) -> CommitResult:
        """One write, by the commit protocol. Single writer: all of it under the table lock.
        Optimistic concurrency control: the lock is held only to start the instant
        (:meth:`start_write`) and to commit it (:meth:`finish_commit`: conflict check, MDT
        deltacommit, completion); data files are written outside it."""
        session = self.start_write(operation, data.schema)
        try:
            results, replaced = self.write_files(session, data)
            result = self.finish_commit(
                session.cfg,
                session.config,
                session.pending,
                operation,
                results,
                session.avro_schema,
                replaced,
            )
        except BaseException:
            self.abandon_write(session)
            raise
        return self.end_write(session, result)

    @property
    def optimistic(self) -> bool:
        """Whether the options ask for optimistic concurrency control (False when they are invalid:
        :meth:`start_write` refuses those)."""
        try:
            return concurrency_settings(self.options).optimistic
        except InvalidOptionError:
            return False

    def start_write(self, operation: str, schema: pa.Schema) -> WriteSession:
        """Under the table lock: create the table if needed, roll back failed writes, bring the
        MDT's partitions in line with the options, and start a new instant (``requested`` →
        ``inflight``, with its heartbeat under optimistic concurrency control). A single writer
        keeps the lock until :meth:`end_write` (or :meth:`abandon_write`); under optimistic
        concurrency control it is released here."""
        if operation not in OPERATIONS:
            raise InvalidOptionError(f"operation must be one of {', '.join(OPERATIONS)}, got {operation!r}")
        existing = self._config()
        cfg = WriteConfig.from_options(self.options, existing)  # refuses bad options before locking
        self._check_version(existing)
        lock = TableLock(self.storage, options=self.options)
        lock.acquire()
        try:
            with lock.nesting():  # table services of the recovery may take the lock again
                existing = self._config()  # another writer may have created the table meanwhile
                cfg = WriteConfig.from_options(self.options, existing)
                self._check_version(existing)
                avro_schema = self._avro_schema(cfg, schema.empty_table(), existing)
                config = existing or self._create_table(cfg, avro_schema)
                self.rollback_failed_writes(config)
                self._pending_mdt_rebuild = None  # the sync below re-creates whatever is missing
                config = TableConfig.load(self.storage)
                if not (cfg.concurrency.optimistic and self._other_pending_writes(None)):
                    # Hudi does not initialise MDT partitions while other writes are in flight.
                    config = self._sync_metadata_table_state(cfg, config)
                pending = self.begin_commit(cfg, operation)
        except BaseException:
            lock.release()
            raise
        if cfg.concurrency.optimistic:
            lock.release()
            lock = None
        self._lock = lock
        return WriteSession(cfg, config, pending, avro_schema, operation, lock)

    def write_files(
        self, session: WriteSession, data: pa.Table
    ) -> tuple[list[TaskResult], dict[str, list[str]]]:
        """Tag, plan and write the data files of a started write (markers first); returns the
        task results and the file groups an overwrite replaces."""
        cfg, config, pending = session.cfg, session.config, session.pending
        rows = self._prepare_rows(cfg, data, session.operation)
        tasks, replaced = self._plan_tasks(
            cfg, config, pending.timeline, rows, session.operation, pending.instant
        )
        ctx = self.write_context(cfg, config, pending.instant, session.avro_schema)
        self.prepare_files(pending.instant, [t for t, _ in tasks], cfg)
        results = self.executor(ctx, tasks) if tasks else []
        return results, replaced

    def end_write(self, session: WriteSession, result: CommitResult) -> CommitResult:
        """After the commit: inline table services, under the table lock (a single writer's, still
        held; a new one under optimistic concurrency control, where they are skipped while other
        writes are in flight: a compaction, clean or archival must not run under a live writer)."""
        try:
            with (
                session.lock.nesting() if session.lock is not None else contextlib.nullcontext(),
                TableLock(self.storage, options=self.options, reentrant=True),
            ):
                if session.cfg.concurrency.optimistic and self._other_pending_writes(None):
                    log.info("inline table services skipped: other writes are in flight")
                else:
                    self._inline_services(session.cfg)
        except Exception as e:
            raise CommitCompletedError(
                result.instant,
                f"commit {result.instant} on {self.storage.uri()} completed; an inline table service "
                f"(compaction, clean, MDT compaction or archival) failed after it: {e}",
            ) from e
        finally:
            self._release_write_lock(session)
        return result

    def abandon_write(self, session: WriteSession) -> None:
        """A started write failed before its commit: its instant stays pending (its heartbeat is
        deleted, so that the next writer rolls it back at once) and a single writer's lock is
        released."""
        try:
            hb = self._heartbeats.pop(session.pending.instant, None)
            if hb is not None:
                hb.stop(delete=True)
        finally:
            self._release_write_lock(session)

    def _release_write_lock(self, session: WriteSession) -> None:
        if session.lock is not None:
            session.lock.release()
        if self._lock is session.lock:
            self._lock = None

    def _check_version(self, existing: TableConfig | None) -> None:
        if existing is not None and existing.table_version != 9:
            raise InvalidOptionError(
                f"{self.storage.uri()} is table version {existing.table_version}; hudi-md writes version 9"
            )

    def _other_pending_writes(self, mine: str | None) -> list[Instant]:
        return [
            i
            for i in self._timeline().pending()
            if i.action in (COMMIT, DELTA_COMMIT, REPLACE_COMMIT) and i.requested_time != mine
        ]

    def _avro_schema(self, cfg: WriteConfig, data: pa.Table, existing: TableConfig | None) -> str:
        from hudi_md.write.schema import arrow_to_avro_schema, with_meta_fields

        cols = [f for f in data.schema if f.name not in _META and f.name != OP_COLUMN]
        schema = arrow_to_avro_schema(pa.schema(cols), f"{cfg.table_name}_record", f"hoodie.{cfg.table_name}")
        return json.dumps(with_meta_fields(schema), separators=(",", ":"))

    # --- rollback of failed writes ---------------------------------------------------------------------

    def rollback_failed_writes(self, config: TableConfig, *, lazy: bool | None = None) -> list[str]:
        """Roll back failed write instants, and finish the compactions and cleans a failed writer
        left pending (:func:`services.resolve_pending_services`). The caller holds the table lock.

        Single writer (Hudi's EAGER policy): every pending write instant has failed, since no
        other writer can be live, except one with a live heartbeat: only writers under optimistic
        concurrency control write heartbeats, and such a writer may be between its start and its
        commit (the CLI's services, which name no concurrency mode, run this too). Optimistic
        concurrency control (Hudi's LAZY policy, ``lazy``): only pending write instants whose
        heartbeat (``.hoodie/.heartbeat/<instant>``) expired or is missing. Table services only
        ever run under the lock, so a pending one seen here belongs to a writer that died."""
        from hudi_md.write.heartbeat import delete_heartbeat, is_expired, last_heartbeat
        from hudi_md.write.services import repair_torn_completion, resolve_pending_services

        if lazy is None:
            lazy = self.optimistic
        done = repair_torn_completion(self)  # first: a dead writer's last act may be torn
        for instant in self._timeline().pending():
            if instant.action in (COMMIT, DELTA_COMMIT, REPLACE_COMMIT):
                if instant.requested_time in self._heartbeats:
                    continue  # this writer's own live instant
                t = instant.requested_time
                if (lazy or last_heartbeat(self.storage, t) is not None) and not is_expired(
                    self.storage, t, self.options
                ):
                    continue  # a live writer's
                self.rollback(instant, config)
                delete_heartbeat(self.storage, instant.requested_time)
                done.append(instant.requested_time)
        done += resolve_pending_services(self)
        return done

    def rollback(
        self,
        instant: Instant,
        config: TableConfig,
        *,
        reason: str = "failed write",
        files: Mapping[str, list[str]] | None = None,
        was_completed: bool = False,
    ) -> str:
        """v9 rollback: delete the files the instant wrote (found through its markers, or the
        commit metadata of a completed instant, or ``files``: the plan of an earlier rollback of
        it that did not finish), undo its MDT deltacommit, record a rollback instant, and drop
        the instant's pending files.

        A completed instant is first reverted to inflight (its completed file deleted, as Hudi's
        rollback does) before any of its files goes: readers then see the table without it, never
        a completed instant with files missing. ``was_completed``: the instant was completed when
        an unfinished rollback reverted it (its MDT entries may be in MDT base files already)."""
        from hudi_md.formats.commit_metadata_writer import serialize_instant_metadata

        rb_time = new_instant_time(
            after=self._timeline().last().requested_time if self._timeline().last() else None
        )
        tw = TimelineWriter(self.storage, TIMELINE)
        if files is None and not instant.is_completed:
            # An earlier rollback of it that did not finish (its target reverted to inflight):
            # that plan names the files (a completed commit's markers are gone).
            files = self._unfinished_rollback_files(instant.requested_time)
            was_completed = was_completed or files is not None
        if files is not None:
            written: dict[str, list[str]] = defaultdict(list, {p: list(n) for p, n in files.items()})
        elif instant.is_completed:
            written = self._committed_files(instant)
        else:
            written = self._marked_files(instant.requested_time)
        plan = {
            "instantToRollback": {"commitTime": instant.requested_time, "action": instant.action},
            "RollbackRequests": [
                {
                    "partitionPath": p,
                    "fileId": "",
                    "latestBaseInstant": instant.requested_time,
                    "filesToBeDeleted": [self.storage.uri(f"{p}/{n}" if p else n) for n in names],
                    "logBlocksToBeDeleted": {},
                }
                for p, names in written.items()
            ],
            "version": 1,
        }
        tw.requested(rb_time, ROLLBACK, serialize_instant_metadata("rollback_plan", plan))
        tw.inflight(rb_time, ROLLBACK, b"")
        if instant.is_completed:
            self._revert_to_inflight(instant)
        deleted: dict[str, list[str]] = defaultdict(list)
        for p, names in written.items():
            for n in names:
                path = f"{p}/{n}" if p else n
                if self.storage.exists(path):
                    self.storage.delete(path)
                    deleted[p].append(self.storage.uri(path))
        self._drop_partitions_created_by(instant.requested_time, written)
        mdt_rebuild = self._rollback_mdt_instant(
            instant.requested_time, instant.is_completed or was_completed
        )
        if mdt_rebuild and config.metadata_partitions:
            # The instant is already folded into an MDT base file: rebuild the MDT from storage.
            from hudi_md.metadata.lifecycle import delete_metadata_table

            wanted = config.metadata_partitions
            config = delete_metadata_table(self.storage)
            self._pending_mdt_rebuild = wanted
        elif config.metadata_partitions:
            from hudi_md.metadata.writer import MetadataTableWriter

            mw = MetadataTableWriter(self.storage, config, self.options)
            records = [
                files_record(p, {}, [u.rsplit("/", 1)[-1] for u in urls]) for p, urls in deleted.items()
            ]
            mw.write_records(rb_time, records, partitions=[K.FILES], operation="UPSERT_PREPPED")
        meta = {
            "startRollbackTime": rb_time,
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
        tw.complete(rb_time, ROLLBACK, serialize_instant_metadata("rollback", meta))
        self._last_rollback_metadata = meta
        tw.delete_pending(instant)
        self._delete_markers(instant.requested_time)
        log.info("rolled back %s (%s) as %s", instant, reason, rb_time)
        return rb_time

    def _unfinished_rollback_files(self, instant_time: str) -> dict[str, list[str]] | None:
        """Partition -> file names in the plan of a pending rollback of ``instant_time``."""
        from hudi_md.errors import CorruptFileError
        from hudi_md.formats.commit_metadata import parse_instant_metadata

        for rb in self._timeline().pending().of_actions(ROLLBACK):
            path = f"{TIMELINE}/{rb.requested_time}.{ROLLBACK}.requested"
            try:
                plan = parse_instant_metadata(self.storage.read_bytes(path), self.storage.uri(path)) or {}
            except (FileNotFoundError, CorruptFileError):
                continue
            if (plan.get("instantToRollback") or {}).get("commitTime") == instant_time:
                return rollback_plan_files(plan)
        return None

    def _revert_to_inflight(self, instant: Instant) -> None:
        """Hudi's ``revertCompleteToInflight``: the instant's pending file is there (written if
        gone), then its completed file is deleted; from then on it is a failed write to readers."""
        from hudi_md.table.timeline import COMPLETES_AS

        t = instant.requested_time
        actions = [instant.action] + [a for a, done in COMPLETES_AS.items() if done == instant.action]
        names = [f"{t}.inflight"] if instant.action == COMMIT else []
        names += [f"{t}.{a}.inflight" for a in actions]
        if not any(self.storage.exists(f"{TIMELINE}/{n}") for n in names):
            TimelineWriter(self.storage, TIMELINE).inflight(t, instant.action, b"")
        self.storage.delete(f"{TIMELINE}/{instant.file_name}")

    def _drop_partitions_created_by(self, instant_time: str, partitions: Iterable[str]) -> None:
        """A partition directory the rolled-back instant created, now empty, goes too: its
        ``.hoodie_partition_metadata`` names an instant that no longer exists."""
        from hudi_md.table.config import parse_properties

        for p in partitions:
            if not p:
                continue
            meta = f"{p}/.hoodie_partition_metadata"
            try:
                props = parse_properties(self.storage.read_bytes(meta).decode("utf-8", "replace"))
            except FileNotFoundError:
                continue
            others = [e for e in self.storage.list(p) if not e.name.startswith(".hoodie_partition_metadata")]
            if props.get("commitTime") == instant_time and not others:
                self.storage.delete(p, recursive=True)

    def _committed_files(self, instant: Instant) -> dict[str, list[str]]:
        meta = self._timeline().metadata(instant)
        out: dict[str, list[str]] = defaultdict(list)
        for partition, stats in (meta.get("partitionToWriteStats") or {}).items():
            for stat in stats or ():
                if stat.get("path"):
                    out[partition or ""].append(stat["path"].rsplit("/", 1)[-1])
        return out

    def rollback_commit(self, instant_time: str) -> str:
        """Roll back a completed write instant; only the latest write may be rolled back."""
        with TableLock(self.storage, options=self.options):
            config = TableConfig.load(self.storage)
            writes = self._timeline().write_timeline()
            target = writes.get(instant_time)
            if target is None:
                raise InvalidOptionError(f"no completed write instant {instant_time} in {self.storage.uri()}")
            later = [i for i in writes if i.requested_time > instant_time]
            if later:
                raise InvalidOptionError(
                    f"{instant_time} is not the latest write ({later[-1].requested_time} is); use restore"
                )
            rb = self.rollback(target, config, reason="requested")
            self._finish_mdt_rebuild()
            return rb

    def restore(self, instant_time: str) -> list[str]:
        """Bring the table back to its state right after ``instant_time`` (rolls back later writes,
        newest first). Refused when a clean already removed files that state needs.

        As in Hudi, a restore instant records the plan first (``R.restore.requested``: the
        instants to roll back); a restore left unfinished by a dead writer is run to its end by
        the next writer (:func:`services.resolve_pending_services`)."""
        from hudi_md.formats.commit_metadata_writer import serialize_instant_metadata

        with TableLock(self.storage, options=self.options):
            timeline = self._timeline()
            if timeline.write_timeline().get(instant_time) is None:
                raise InvalidOptionError(f"no completed write instant {instant_time} in {self.storage.uri()}")
            for c in timeline.completed().of_actions("clean"):
                retained = self._timeline().metadata(c).get("earliestCommitToRetain") or ""
                if c.requested_time > instant_time and retained and retained > instant_time:
                    raise InvalidOptionError(
                        f"cannot restore to {instant_time}: clean {c.requested_time} kept only commits "
                        f"from {retained}"
                    )
            targets = [
                p
                for p in timeline.pending()
                if p.action in (COMMIT, DELTA_COMMIT, REPLACE_COMMIT, "compaction", "clustering")
            ]
            later = [w for w in timeline.write_timeline() if w.requested_time > instant_time]
            targets += list(reversed(later))
            last = timeline.last()
            rs_time = new_instant_time(after=last.requested_time if last else None)
            plan = {
                "instantsToRollback": [{"commitTime": i.requested_time, "action": i.action} for i in targets],
                "version": 1,
            }
            TimelineWriter(self.storage, TIMELINE).requested(
                rs_time, RESTORE, serialize_instant_metadata("restore_plan", plan)
            )
            done = self.run_restore(rs_time, plan)
            self._finish_mdt_rebuild()
            return done

    def run_restore(self, rs_time: str, plan: Mapping[str, Any]) -> list[str]:
        """Execute the requested restore ``rs_time`` (again, after a crash): roll back each instant
        of its plan still on the timeline, newest first, then complete the restore. The caller
        holds the table lock."""
        from hudi_md.formats.commit_metadata_writer import serialize_instant_metadata

        tw = TimelineWriter(self.storage, TIMELINE)
        inflight = f"{TIMELINE}/{rs_time}.{RESTORE}.inflight"
        if not self.storage.exists(inflight):
            tw.inflight(rs_time, RESTORE, b"")
        done: list[str] = []
        rollbacks: dict[str, list[dict[str, Any]]] = {}
        targets = [i.get("commitTime") or "" for i in plan.get("instantsToRollback") or ()]
        for t in targets:
            instant = self._timeline().get(t)
            if instant is None or instant.action in (ROLLBACK, RESTORE):
                continue  # rolled back already (before a crash)
            done.append(self.rollback(instant, TableConfig.load(self.storage), reason="restore"))
            rollbacks[t] = [self._last_rollback_metadata]
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
        tw.complete(rs_time, RESTORE, serialize_instant_metadata("restore", meta))
        return done

    def _finish_mdt_rebuild(self) -> None:
        wanted = getattr(self, "_pending_mdt_rebuild", None)
        if wanted:
            from hudi_md.metadata.lifecycle import initialize_partitions

            cfg = WriteConfig.from_options(self.options, TableConfig.load(self.storage))
            initialize_partitions(self.storage, TableConfig.load(self.storage), wanted, cfg, self.options)
            self._pending_mdt_rebuild = None

    def _marked_files(self, instant_time: str) -> dict[str, list[str]]:
        out: dict[str, list[str]] = defaultdict(list)
        root = f"{TEMP}/{instant_time}"

        def walk(path: str, rel: str) -> None:
            for e in self.storage.list(path):
                if e.is_dir:
                    walk(e.path, f"{rel}/{e.name}" if rel else e.name)
                elif ".marker." in e.name:
                    out[rel].append(e.name.split(".marker.")[0])

        walk(root, "")
        return out

    def _delete_markers(self, instant_time: str) -> None:
        path = f"{TEMP}/{instant_time}"
        if self.storage.exists(path):
            self.storage.delete(path, recursive=True)

    def _rollback_mdt_instant(self, instant_time: str, completed: bool) -> bool:
        """Remove MDT deltacommit ``T`` (its log files and timeline files), so it can never become
        valid once the data instant's pending files are gone. True when ``T`` was already compacted
        into MDT base files, so that only a rebuild can undo it: also when a completed ``T`` has no
        deltacommit on the MDT's active timeline (the MDT was built or archived after it)."""
        mdt = self.storage.child(".hoodie/metadata")
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
        for e in mdt.list(TIMELINE):
            if e.name.startswith(f"{instant_time}.") or e.name.startswith(f"{instant_time}_"):
                mdt.delete(e.path)
        return False

    # --- the MDT's configuration -------------------------------------------------------------------------

    def wanted_mdt_partitions(self, cfg: WriteConfig) -> list[str]:
        if not cfg.metadata_enabled:
            return []
        wanted = [K.FILES]
        if cfg.column_stats_enabled:
            wanted.append(K.COLUMN_STATS)
        if cfg.partition_stats_enabled:
            wanted.append(K.PARTITION_STATS)
        if cfg.record_index_enabled:
            wanted.append(K.RECORD_INDEX)
        if cfg.bloom_index_enabled:
            wanted.append(K.BLOOM_FILTERS)
        return wanted

    def _sync_metadata_table_state(self, cfg: WriteConfig, config: TableConfig) -> TableConfig:
        """Create missing MDT partitions (from the table's current state), or drop the MDT when
        ``hoodie.metadata.enable=false`` so no reader ever sees a stale one."""
        wanted = self.wanted_mdt_partitions(cfg)
        if not wanted:
            if config.metadata_partitions or self.storage.exists(".hoodie/metadata"):
                from hudi_md.metadata.lifecycle import delete_metadata_table

                return delete_metadata_table(self.storage)
            return config
        missing = [p for p in wanted if p not in config.metadata_partitions]
        if missing:
            from hudi_md.metadata.lifecycle import initialize_partitions

            config = initialize_partitions(self.storage, config, missing, cfg, self.options)
        return config

    # --- one commit -------------------------------------------------------------------------------------

    def begin_commit(self, cfg: WriteConfig, operation: str) -> PendingCommit:
        """Step 3a, under the table lock: a fresh instant, ``requested`` then ``inflight`` on the
        data timeline. Its time is after every requested and completion time on the timeline
        (and, under optimistic concurrency control, the MDT's), so instants of writers on one
        host are monotonic and a commit that completes later always has a later completion time
        than this instant's start. Under optimistic concurrency control the instant's heartbeat is
        started first, so no other writer ever sees it pending without one."""
        timeline = self._timeline()
        after = _latest_time(timeline)
        if cfg.concurrency.optimistic:
            mdt = self.storage.child(".hoodie/metadata")
            if mdt.exists(TIMELINE):
                after = max(after, _latest_time(Timeline.load(mdt, TIMELINE, 2)))
        instant = new_instant_time(after=after or None)
        overwrite = operation in ("insert_overwrite", "insert_overwrite_table")
        action = REPLACE_COMMIT if overwrite else (DELTA_COMMIT if cfg.is_mor else COMMIT)
        if cfg.concurrency.optimistic:
            from hudi_md.write.heartbeat import Heartbeat

            hb = Heartbeat(self.storage, instant, self.options)
            hb.start()
            self._heartbeats[instant] = hb
        tw = TimelineWriter(self.storage, TIMELINE)
        tw.requested(instant, action, self._requested_content(action, operation))
        tw.inflight(instant, action, b"")
        return PendingCommit(instant, action, timeline)

    def write_context(
        self, cfg: WriteConfig, config: TableConfig, instant: str, avro_schema: str
    ) -> WriteContext:
        return WriteContext(
            base_uri=self.uri,
            storage_options=self.storage_options,
            instant=instant,
            table_schema_json=avro_schema,
            record_key_fields=cfg.record_key_fields,
            ordering_fields=cfg.ordering_fields,
            merge_mode=cfg.merge_mode,
            is_mor=cfg.is_mor,
            log_block_format=cfg.log_block_format,
            index_columns=self._index_columns(cfg, config, avro_schema),
            with_bloom=cfg.parquet_bloom_filter,
        )

    def prepare_files(self, instant: str, tasks: Sequence[FileGroupTask], cfg: WriteConfig) -> None:
        """Markers and partition metadata, before any data file is written. Updates of file groups
        a pending clustering reads are refused first (PendingClusteringError); the instant, which
        wrote nothing, is dropped."""
        from hudi_md.write.services import check_no_clustered_updates

        try:
            check_no_clustered_updates(
                self, {(t.partition_path, t.file_id) for t in tasks if t.kind == "update"}
            )
        except HudiMdError:
            started = self._timeline().get(instant)
            if started is not None and not started.is_completed:
                TimelineWriter(self.storage, TIMELINE).delete_pending(started)
            raise
        self._write_markers(instant, tasks, cfg)
        self._write_partition_metadata(instant, {t.partition_path for t in tasks}, cfg)

    def finish_commit(
        self,
        cfg: WriteConfig,
        config: TableConfig,
        pending: PendingCommit,
        operation: str,
        results: Sequence[TaskResult],
        avro_schema: str,
        replaced: Mapping[str, list[str]],
        replaced_keys: Iterable[str] | None = None,
    ) -> CommitResult:
        """Steps 4-6: MDT deltacommit from the write statistics, then complete the instant.

        ``replaced_keys``: the record keys of the ``replaced`` file groups when the caller has read
        them already (the Spark writer does, on the executors); otherwise they are read here.

        Single writer: the caller holds the table lock. Optimistic concurrency control: the lock
        is taken here, and under it the timeline and table configuration are re-loaded, the
        instant is checked to be still pending with a live heartbeat, and the write is checked
        for conflicts (:mod:`hudi_md.write.conflicts`); a conflicting write is rolled back,
        leaving nothing behind, and raises :class:`~hudi_md.errors.WriteConflictError`. The MDT
        records (partition stats included) are computed from the table as it is then.
        """
        self._check("after_data_files")
        if not cfg.concurrency.optimistic:
            return self._complete(
                cfg, config, pending, operation, results, avro_schema, replaced, replaced_keys, self._lock
            )
        from hudi_md.errors import HeartbeatExpiredError
        from hudi_md.write.conflicts import find_conflict
        from hudi_md.write.heartbeat import is_expired

        with TableLock(self.storage, options=self.options, reentrant=True) as lock:
            timeline = self._timeline()
            mine = timeline.get(pending.instant)
            if mine is None or mine.is_completed:
                self._discard_instant(pending, results)
                raise HeartbeatExpiredError(
                    pending.instant,
                    "another writer rolled it back (its heartbeat had expired, or a writer without "
                    "optimistic concurrency control rolled back every pending instant)",
                )
            if is_expired(self.storage, pending.instant, self.options):
                self._discard_instant(pending, results)
                raise HeartbeatExpiredError(
                    pending.instant,
                    "its heartbeat expired (hoodie.client.heartbeat.interval_in_ms times tolerable.misses), "
                    "so another writer may be rolling it back",
                )
            ours = {(r.write_stat["partitionPath"], r.write_stat["fileId"]) for r in results}
            ours |= {(p, fid) for p, fids in replaced.items() for fid in fids}
            conflict = find_conflict(self.storage, timeline, pending.instant, ours)
            if conflict is not None:
                self._discard_instant(pending, results)
                raise conflict
            config = TableConfig.load(self.storage)
            return self._complete(
                cfg,
                config,
                pending,
                operation,
                results,
                avro_schema,
                replaced,
                replaced_keys,
                lock,
                completion_after=_latest_time(timeline),
            )

    def _complete(
        self,
        cfg: WriteConfig,
        config: TableConfig,
        pending: PendingCommit,
        operation: str,
        results: Sequence[TaskResult],
        avro_schema: str,
        replaced: Mapping[str, list[str]],
        replaced_keys: Iterable[str] | None,
        lock: TableLock | None,
        *,
        completion_after: str | None = None,
    ) -> CommitResult:
        from hudi_md.formats.commit_metadata_writer import commit_metadata_record, serialize_instant_metadata

        overwrite = pending.action == REPLACE_COMMIT
        stats: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in results:
            stats[r.write_stat["partitionPath"]].append(r.write_stat)
        meta = commit_metadata_record(
            dict(stats),
            operation_type=OPERATION_TYPES[operation],
            extra_metadata={"schema": _without_meta(avro_schema)},
            partition_to_replace_file_ids=dict(replaced) if overwrite else None,
        )
        if config.metadata_partitions:
            self._write_mdt(config, pending.instant, results, avro_schema, replaced, replaced_keys)
            if K.COLUMN_STATS in config.metadata_partitions:
                from hudi_md.metadata.lifecycle import fill_index_source_fields

                # An MDT created before the first commit knew no columns; name them now.
                fill_index_source_fields(self.storage, self._index_columns(cfg, config, avro_schema))
        self._check("after_mdt_commit")
        self._check("before_complete")
        if lock is not None:
            try:
                lock.check_held()  # the commit point needs the lock: never complete without it
            except LockLostError as e:
                raise LockLostError(
                    f"{e}; commit {pending.instant} did not happen: the instant stays pending, and the "
                    "next writer rolls it back"
                ) from e
        completion = None
        if completion_after is not None:
            completion = new_instant_time(after=max(completion_after, pending.instant))
        tw = TimelineWriter(self.storage, TIMELINE)
        tw.complete(
            pending.instant,
            pending.action,
            serialize_instant_metadata("replacecommit" if overwrite else "commit", meta),
            completion_time=completion,
        )
        hb = self._heartbeats.pop(pending.instant, None)
        if hb is not None:
            hb.stop(delete=True)
        try:
            self._delete_markers(pending.instant)
        except OSError as e:  # the commit is complete; leftover markers of it are harmless
            log.warning("commit %s completed; could not delete its markers: %s", pending.instant, e)
        return CommitResult(pending.instant, pending.action, list(results))

    def _discard_instant(self, pending: PendingCommit, results: Sequence[TaskResult]) -> None:
        """Undo a write that will not commit (a conflict), under the commit lock, before it wrote
        anything to the MDT: its data files (through its markers, and its write statistics), its
        markers, a partition folder it created that holds nothing else, its pending instant files
        (last: a crash before leaves a pending instant for the LAZY rollback) and its heartbeat.
        No rollback instant is needed, since no reader ever saw the instant completed."""
        from hudi_md.table.timeline import State
        from hudi_md.write.heartbeat import delete_heartbeat

        files: dict[str, set[str]] = defaultdict(set)
        for p, names in self._marked_files(pending.instant).items():
            files[p].update(names)
        for r in results:
            path = r.write_stat.get("path") or ""
            if path:
                files[r.write_stat["partitionPath"]].add(path.rsplit("/", 1)[-1])
        for p, names in files.items():
            for n in names:
                path = f"{p}/{n}" if p else n
                if self.storage.exists(path):
                    self.storage.delete(path)
        if not self._other_pending_writes(pending.instant):
            # Nobody else is between start and commit, so nobody else can be writing there.
            self._drop_partitions_created_by(pending.instant, files)
        self._delete_markers(pending.instant)
        TimelineWriter(self.storage, TIMELINE).delete_pending(
            Instant(pending.instant, pending.action, State.INFLIGHT)
        )
        hb = self._heartbeats.pop(pending.instant, None)
        if hb is not None:
            hb.stop(delete=True)
        else:
            delete_heartbeat(self.storage, pending.instant)
        log.info("discarded instant %s (not committed)", pending.instant)

    def _write_partition_metadata(self, instant: str, partitions: Iterable[str], cfg: WriteConfig) -> None:
        """``.hoodie_partition_metadata`` in each partition this commit creates (Hudi's marker of a
        partition directory; listings find partitions by it)."""
        from hudi_md.metadata.writer import partition_metadata_bytes

        for p in sorted(partitions):
            path = f"{p}/.hoodie_partition_metadata" if p else ".hoodie_partition_metadata"
            if not self.storage.exists(path):
                depth = len(p.split("/")) if p else 0
                self.storage.write_bytes(path, partition_metadata_bytes(instant, depth))

    def _requested_content(self, action: str, operation: str) -> bytes:
        if action != REPLACE_COMMIT:
            return b""
        from hudi_md.formats.commit_metadata_writer import serialize_instant_metadata

        return serialize_instant_metadata(
            "requested_replace",
            {
                "operationType": OPERATION_TYPES[operation],
                "clusteringPlan": None,
                "extraMetadata": {},
                "version": 1,
            },
        )

    def _write_markers(
        self, instant: str, tasks: list[tuple[FileGroupTask, pa.Table]], cfg: WriteConfig
    ) -> None:
        """A direct marker per file to be written (Hudi's DIRECT marker layout), before any data
        file exists, so a crash at any later point can be undone by deleting the marked files."""
        for task in tasks:
            base = f"{TEMP}/{instant}/{task.partition_path}".rstrip("/")
            kind = "APPEND" if (cfg.is_mor and task.kind == "update") else "CREATE"
            self.storage.write_bytes(f"{base}/{task.file_name(instant, cfg.is_mor)}.marker.{kind}", b"")

    # --- rows and tasks ------------------------------------------------------------------------------------

    def _prepare_rows(self, cfg: WriteConfig, data: pa.Table, operation: str) -> pa.Table:
        data = data.drop_columns([c for c in data.column_names if c in _META or c == OP_COLUMN])
        keys = keygen.record_keys(data, cfg.record_key_fields, cfg.keygen)
        parts = keygen.partition_paths(
            data, cfg.partition_fields, hive_style=cfg.hive_style, url_encode=cfg.url_encode
        )
        op = "D" if operation == "delete" else "U"
        rows = data.append_column("_hoodie_record_key", keys).append_column("_hoodie_partition_path", parts)
        rows = rows.append_column(OP_COLUMN, pa.array([op] * data.num_rows, pa.string()))
        if operation in ("upsert", "delete") or cfg.combine_before_insert:
            rows = _dedupe(rows, cfg)
        return rows

    def _existing_locations(
        self,
        cfg: WriteConfig,
        config: TableConfig,
        partitions: Sequence[str],
        keys: pa.Array,
        key_partitions: pa.Array | None = None,
    ) -> dict[tuple[str, str], tuple[str, str]]:
        """(partition, key) → (file id, base instant) for keys already in the table."""
        from hudi_md.metadata.reader import load_table_state

        table = load_table_state(self.storage, {})
        out: dict[tuple[str, str], tuple[str, str]] = {}
        view = table.file_system_view()
        mdt = table.metadata_table
        latest = {(s.partition_path, s.file_id): s for s in view.latest_file_slices(list(partitions))}
        if mdt is not None and K.RECORD_INDEX in mdt.available_partitions:
            for key, loc in mdt.record_index(keys.to_pylist()).items():
                if (loc.partition_path, loc.file_id) in latest:
                    out[(loc.partition_path, key)] = (
                        loc.file_id,
                        latest[(loc.partition_path, loc.file_id)].base_instant,
                    )
            return out
        # Without a record index, read the keys of the affected partitions' latest slices.
        from hudi_md.read.slice_reader import SliceRowReader

        reader = SliceRowReader(table)
        wanted: dict[str, set[str]] = defaultdict(set)
        key_list = keys.to_pylist()
        part_list = key_partitions.to_pylist() if key_partitions is not None else [None] * len(key_list)
        for k, p in zip(key_list, part_list, strict=True):
            if p is None:
                for q in partitions:
                    wanted[q].add(k)
            else:
                wanted[p].add(k)
        self.tagging_stats = {"slices": len(latest), "slices_read": 0}
        for (p, fid), s in latest.items():
            if not wanted[p] or not self._may_hold_any(s, wanted[p]):
                continue
            self.tagging_stats["slices_read"] += 1
            for k in reader.keys(s).to_pylist():
                if k in wanted[p]:
                    out[(p, k)] = (fid, s.base_instant)
        return out

    def _may_hold_any(self, file_slice: Any, keys: set[str]) -> bool:
        """Bloom-index style check from the base file's footer (min/max record key and bloom
        filter): False only when no key can be in the slice. Logs only ever update keys their
        base file holds, so the base file's footer speaks for the whole slice."""
        import pyarrow.parquet as pq

        from hudi_md.index.bloom import BloomFilter
        from hudi_md.metadata.column_ranges import java_string_key, parquet_footer

        base = file_slice.base_file
        if base is None:
            return True
        try:
            meta = pq.read_metadata(pa.BufferReader(parquet_footer(self.storage, base.path, base.size)))
        except (OSError, ValueError, pa.ArrowException):
            return True
        kv = meta.metadata or {}
        lo, hi = kv.get(b"hoodie_min_record_key"), kv.get(b"hoodie_max_record_key")
        candidates = keys
        if lo is not None and hi is not None:
            lo_k, hi_k = java_string_key(lo.decode()), java_string_key(hi.decode())
            candidates = {k for k in keys if lo_k <= java_string_key(k) <= hi_k}
        text = kv.get(b"org.apache.hudi.bloomfilter")
        if candidates and text:
            code = kv.get(b"hoodie_bloom_filter_type_code", b"SIMPLE").decode()
            bloom = BloomFilter.deserialize(text.decode(), code)
            candidates = {k for k in candidates if bloom.might_contain(k)}
        return bool(candidates)

    def _plan_tasks(
        self,
        cfg: WriteConfig,
        config: TableConfig,
        timeline: Timeline,
        rows: pa.Table,
        operation: str,
        instant: str,
    ) -> tuple[list[tuple[FileGroupTask, pa.Table]], dict[str, list[str]]]:
        from hudi_md.metadata.reader import load_table_state

        partitions = sorted(set(rows.column("_hoodie_partition_path").to_pylist()))
        tasks: list[tuple[FileGroupTask, pa.Table]] = []
        has_commits = bool(timeline.write_timeline())
        replaced = self.replaced_file_groups(operation, partitions) if has_commits else {}
        tag = operation in ("upsert", "delete") and has_commits
        locations = (
            self._existing_locations(
                cfg,
                config,
                partitions,
                rows.column("_hoodie_record_key").combine_chunks(),
                rows.column("_hoodie_partition_path").combine_chunks(),
            )
            if tag
            else {}
        )
        part_col = rows.column("_hoodie_partition_path").to_pylist()
        key_col = rows.column("_hoodie_record_key").to_pylist()
        op_col = rows.column(OP_COLUMN).to_pylist()
        updates: dict[tuple[str, str], list[int]] = defaultdict(list)
        inserts: dict[str, list[int]] = defaultdict(list)
        for i, (p, k, op) in enumerate(zip(part_col, key_col, op_col, strict=True)):
            loc = locations.get((p, k))
            if loc is not None:
                updates[(p, loc[0])].append(i)
            elif op == "U":
                inserts[p].append(i)
            # a delete of an absent key is a no-op
        slices = {}
        if updates:
            table = load_table_state(self.storage, {})
            slices = {
                (s.partition_path, s.file_id): s
                for s in table.file_system_view().latest_file_slices(partitions)
            }
        for (p, fid), idx in sorted(updates.items()):
            s = slices[(p, fid)]
            task = FileGroupTask(
                p,
                fid,
                "update",
                base_file=s.base_file.path if s.base_file else None,
                base_instant=s.base_instant,
                prev_commit=s.base_instant,
                token=f"{len(tasks)}-0-0",
            )
            tasks.append((task, rows.take(pa.array(idx, pa.int64()))))
        avg = max(1, rows.nbytes // max(1, rows.num_rows))
        per_file = max(1, int(cfg.max_file_size * 0.7 // avg))  # Parquet compresses; stay under the max
        for p, idx in sorted(inserts.items()):
            for start in range(0, len(idx), per_file):
                chunk = idx[start : start + per_file]
                task = FileGroupTask(p, new_file_id(), "insert", token=f"{len(tasks)}-0-0")
                tasks.append((task, rows.take(pa.array(chunk, pa.int64()))))
        return tasks, replaced

    def replaced_file_groups(self, operation: str, partitions: Sequence[str]) -> dict[str, list[str]]:
        """Partition → file ids an overwrite replaces: the live groups of the partitions written
        (insert_overwrite) or of the whole table (insert_overwrite_table); nothing otherwise."""
        from hudi_md.metadata.reader import load_table_state

        if operation not in ("insert_overwrite", "insert_overwrite_table"):
            return {}
        table = load_table_state(self.storage, {})
        scope = table.partitions() if operation == "insert_overwrite_table" else list(partitions)
        replaced: dict[str, list[str]] = {}
        for s in table.file_system_view().latest_file_slices(scope):
            replaced.setdefault(s.partition_path, []).append(s.file_id)
        return replaced

    def _index_columns(self, cfg: WriteConfig, config: TableConfig, avro_schema: str) -> list[str]:
        if (
            K.COLUMN_STATS not in config.metadata_partitions
            and K.PARTITION_STATS not in config.metadata_partitions
        ):
            return []
        from hudi_md.formats.avro_arrow import avro_schema_to_arrow
        from hudi_md.write.base_file import columns_to_index

        schema = avro_schema_to_arrow(avro_schema)
        return columns_to_index(
            schema, column_list=cfg.column_stats_columns, max_columns=cfg.column_stats_max_columns
        )

    # --- MDT records of one commit -------------------------------------------------------------------------

    def _write_mdt(
        self,
        config: TableConfig,
        instant: str,
        results: Sequence[TaskResult],
        avro_schema: str,
        replaced: Mapping[str, list[str]],
        replaced_keys: Iterable[str] | None = None,
    ) -> None:
        from hudi_md.formats.avro_arrow import avro_schema_to_arrow
        from hudi_md.metadata.reader import load_table_state
        from hudi_md.metadata.writer import MetadataTableWriter

        available = set(config.metadata_partitions) | set(config.metadata_partitions_inflight)
        types = {f.name: f.type for f in avro_schema_to_arrow(avro_schema)}
        records = mdt_records_for_commit(
            instant,
            results,
            available,
            types,
            before=load_table_state(self.storage, {}),
            replaced=replaced,
            replaced_keys=replaced_keys,
        )
        MetadataTableWriter(self.storage, config, self.options).write_records(
            instant, records, partitions=sorted(available)
        )

    # --- services ---------------------------------------------------------------------------------

    def _inline_services(self, cfg: WriteConfig) -> None:
        from hudi_md.write import services

        services.run_inline(self, cfg)


_META = {
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
}


def _latest_time(timeline: Timeline) -> str:
    """The latest requested or completion time on a timeline ("" when empty)."""
    latest = ""
    for i in timeline:
        latest = max(latest, i.requested_time, i.completion_time or "")
    return latest


def rollback_plan_files(plan: Mapping[str, Any]) -> dict[str, list[str]]:
    """Partition -> file names a rollback plan deletes."""
    out: dict[str, list[str]] = defaultdict(list)
    for req in plan.get("RollbackRequests") or ():
        for uri in req.get("filesToBeDeleted") or ():
            out[req.get("partitionPath") or ""].append(uri.rsplit("/", 1)[-1])
    return dict(out)


def _without_meta(avro_schema_json: str) -> str:
    schema = json.loads(avro_schema_json)
    schema["fields"] = [f for f in schema["fields"] if f["name"] not in _META]
    return json.dumps(schema, separators=(",", ":"))


def _dedupe(rows: pa.Table, cfg: WriteConfig) -> pa.Table:
    """One row per (partition, key): the one with the largest ordering value (ties: the last)."""
    if rows.num_rows <= 1:
        return rows
    n = rows.num_rows
    idx = pa.array(range(n), pa.int64())
    t = pa.table(
        {"p": rows.column("_hoodie_partition_path"), "k": rows.column("_hoodie_record_key"), "i": idx}
    )
    sort_keys = [("p", "ascending"), ("k", "ascending")]
    if (
        cfg.merge_mode == "EVENT_TIME_ORDERING"
        and cfg.ordering_fields
        and rows.schema.get_field_index(cfg.ordering_fields[0]) >= 0
    ):
        t = t.append_column("o", rows.column(cfg.ordering_fields[0]))
        sort_keys.append(("o", "ascending"))
    sort_keys.append(("i", "ascending"))
    t = t.sort_by(sort_keys)
    p, k = t.column("p").to_pylist(), t.column("k").to_pylist()
    order = t.column("i").to_pylist()
    keep = [order[j] for j in range(n) if j == n - 1 or (p[j], k[j]) != (p[j + 1], k[j + 1])]
    if len(keep) == n:
        return rows
    return rows.take(pa.array(sorted(keep), pa.int64()))
