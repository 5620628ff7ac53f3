"""A write (insert, upsert, delete, overwrite) by the commit protocol (ARCHITECTURE.md):

1. lock; 2. recover (roll back failed writes, finish pending services); bring the MDT's partitions
in line with the options; 3. a :class:`~hudi_md.write.transaction.Transaction` begins
(``requested`` → ``inflight``); tag and plan the file groups (:mod:`~hudi_md.write.tagging`), write
markers, then the data files; 4. under optimistic concurrency control, the conflict check; 5. the
MDT deltacommit from the write statistics; 6. the transaction completes; unlock; 7. inline table
services (:mod:`~hudi_md.write.services`).

File writing is delegated to an *executor* (a callable running :func:`file_groups.execute` over
tasks): the local one loops in-process; the Spark writer (:mod:`hudi_md.spark.writer`) runs the
same public steps with the tasks on its executors.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from hudi_md.errors import (
    CommitCompletedError,
    CorruptFileError,
    HeartbeatExpiredError,
    HudiMdError,
    InvalidOptionError,
    RecordMergeError,
    SchemaEvolutionError,
)
from hudi_md.formats.avro_arrow import avro_schema_to_arrow
from hudi_md.formats.commit_metadata_writer import (
    commit_metadata_record,
    serialize_instant_metadata,
    stats_by_partition,
)
from hudi_md.metadata import keys as K
from hudi_md.metadata import metrics
from hudi_md.metadata.lifecycle import fill_index_source_fields
from hudi_md.table.config import TableConfig
from hudi_md.table.schema import recorded_schema
from hudi_md.table.timeline import COMMIT, DELTA_COMMIT, REPLACE_COMMIT, Instant, Timeline, instant_validator
from hudi_md.table.timeline_writer import new_instant_time
from hudi_md.write import rollback as rollbacks
from hudi_md.write import services
from hudi_md.write.config import (
    OPERATIONS,
    PARTITION_PATH,
    PARTITIONS_TO_DELETE,
    RECORD_KEY,
    WriteConfig,
    with_indexed_columns,
)
from hudi_md.write.conflicts import find_conflict
from hudi_md.write.evolution import WriterSchema, evolve
from hudi_md.write.file_groups import FileGroupTask, TaskResult, WriteContext, execute
from hudi_md.write.heartbeat import is_expired
from hudi_md.write.lock import TableLock
from hudi_md.write.mdt_sync import mdt_records_for_commit
from hudi_md.write.plans import check_no_clustered_updates
from hudi_md.write.recovery import rollback_failed_writes
from hudi_md.write.result import WriteResult, log_commit
from hudi_md.write.rollback import drop_partitions_created_by
from hudi_md.write.table_setup import (
    check_layout,
    check_version,
    create_table,
    sync_metadata_table_state,
    wanted_mdt_partitions,
    without_meta,
    writer_avro_schema,
)
from hudi_md.write.tagging import index_columns, plan_tasks, prepare_rows, write_context
from hudi_md.write.transaction import (
    Crash,
    Transaction,
    WritableTable,
    delete_markers,
    held,
    latest_time,
    marked_files,
)

__all__ = ["CommitCompletedError", "CommitResult", "Crash", "HudiWriter", "PreparedRecords", "WriteSession"]

log = logging.getLogger(__name__)

Executor = Callable[[WriteContext, list[tuple[FileGroupTask, pa.Table]]], list[TaskResult]]

OPERATION_TYPES = {
    "insert": "INSERT",
    "bulk_insert": "BULK_INSERT",
    "upsert": "UPSERT",
    "delete": "DELETE",
    "insert_overwrite": "INSERT_OVERWRITE",
    "insert_overwrite_table": "INSERT_OVERWRITE_TABLE",
    "delete_partition": "DELETE_PARTITION",
}
OVERWRITES = ("insert_overwrite", "insert_overwrite_table", "delete_partition")


def local_executor(ctx: WriteContext, tasks: list[tuple[FileGroupTask, pa.Table]]) -> list[TaskResult]:
    return [execute(ctx, task, rows, i) for i, (task, rows) in enumerate(tasks)]


@dataclass
class CommitResult:
    """A completed commit: its instant and action, what it recorded (``write_result``, which
    :func:`hudi_md.write` returns) and the task results its files came from."""

    instant: str
    action: str
    write_result: WriteResult
    results: list[TaskResult] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)


@dataclass
class WriteSession:
    """A started write (:meth:`HudiWriter.start_write`): its options, the table configuration and
    timeline it started from, and its transaction. ``lock``: the table lock a single writer holds
    until :meth:`HudiWriter.end_write`; None under optimistic concurrency control."""

    cfg: WriteConfig
    config: TableConfig
    txn: Transaction
    timeline: Timeline
    avro_schema: str
    operation: str
    lock: TableLock | None = None
    writer_schema: WriterSchema = field(default_factory=lambda: WriterSchema(pa.schema([])))

    @property
    def instant(self) -> str:
        return self.txn.instant


@dataclass(frozen=True)
class PreparedRecords:
    """A write's records as the table takes them (:meth:`HudiWriter.prepare_records`)."""

    writer_schema: WriterSchema
    rows: pa.Table


# Operations a stream of record batches is written with, batch by batch (HudiWriter.write_batches).
STREAMED_OPERATIONS = ("insert", "bulk_insert")


def _file_sized_chunks(reader: pa.RecordBatchReader, max_bytes: int) -> Iterator[pa.Table]:
    """The stream's batches gathered into tables of about ``max_bytes`` of Arrow data each (at
    least one table, empty for an empty stream)."""
    pending: list[pa.RecordBatch] = []
    size = 0
    emitted = False
    for batch in reader:
        if batch.num_rows == 0:
            continue
        pending.append(batch)
        size += batch.nbytes
        if size >= max_bytes:
            yield pa.Table.from_batches(pending, schema=reader.schema)
            emitted = True
            pending, size = [], 0
    if pending or not emitted:
        yield pa.Table.from_batches(pending, schema=reader.schema)


class HudiWriter(WritableTable):
    """Writes one table: a :class:`~hudi_md.write.transaction.WritableTable` plus the write verbs.
    Not thread-safe; several writers coordinate through the table lock."""

    def __init__(
        self, uri: str, options: Mapping[str, object] | None = None, *, executor: Executor | None = None
    ) -> None:
        super().__init__(uri, options)
        self.executor = executor or local_executor
        # What the key scan of the last untagged upsert read (without a record index).
        self.tagging_stats: dict[str, int] = {}

    # --- one write ---------------------------------------------------------------------------------

    def write(self, data: pa.Table, operation: str) -> CommitResult:
        """One write, by the commit protocol. Single writer: all of it under the table lock.
        Optimistic concurrency control: the lock is held only to start the instant
        (:meth:`start_write`) and to commit it (:meth:`finish_commit`: conflict check, MDT
        deltacommit, completion); data files are written outside it.

        Records the table's rules refuse (schema, values, merge) are refused before the instant
        starts where the records alone decide it, and otherwise (a null ordering value meeting a
        stored row) with the instant and its files removed: either way nothing is left behind."""
        prepared = self.records_before_recovery(data, operation)
        session = self.start_write(operation, data.schema)

        def files() -> tuple[list[TaskResult], dict[str, list[str]]]:
            records = prepared
            if records is not None and session.writer_schema != records.writer_schema:
                records = None  # another writer changed the schema meanwhile: again, as it is now
            if records is not None and not session.cfg.record_key_fields:
                records = None  # generated keys carry the instant, which exists now
            return self.write_files(session, data, prepared=records)

        return self._commit_started(session, files)

    def _commit_started(
        self, session: WriteSession, files: Callable[[], tuple[list[TaskResult], dict[str, list[str]]]]
    ) -> CommitResult:
        """The rest of a started write: ``files`` writes its data files (returning their results
        and the file groups replaced), then the commit. Records the table refuses remove
        everything the write left (:meth:`refuse_write`); any other failure leaves the instant
        pending for rollback (:meth:`abandon_write`)."""
        try:
            results, replaced = files()
            result = self.finish_commit(session, results, replaced)
        except (SchemaEvolutionError, RecordMergeError):
            self.refuse_write(session)
            raise
        except BaseException:
            self.abandon_write(session)
            raise
        return self.end_write(session, result)

    def write_batches(self, reader: pa.RecordBatchReader, operation: str) -> CommitResult:
        """One write of a stream of record batches, read as it is written: the records are
        converted, keyed and written a file's worth (``hoodie.parquet.max.file.size`` of Arrow
        data) at a time, all in one instant, so memory holds one such chunk, not the stream.

        Only operations whose records need no merging by key stream: ``insert`` and
        ``bulk_insert`` (without ``hoodie.combine.before.insert``); the others merge every record
        of the write by key (and overwrites replace the partitions the whole write touches), so
        they raise :class:`InvalidOptionError` before anything is read. Records the table
        refuses (a value that does not convert) are refused with every file written so far
        removed, as :meth:`write` does."""
        if operation not in OPERATIONS:
            raise InvalidOptionError(f"operation must be one of {', '.join(OPERATIONS)}, got {operation!r}")
        cfg = WriteConfig.from_options(self.options, self.config())
        if operation not in STREAMED_OPERATIONS or cfg.combine_before_insert:
            raise InvalidOptionError(
                f"operation {operation!r} merges the write's records by key (or replaces what the whole "
                "write touches), so it cannot be written from a stream batch by batch: pass "
                "reader.read_all() to write them at once, or stream them with operation='insert' or "
                "'bulk_insert' (without hoodie.combine.before.insert)"
            )
        expected = self.writer_schema_before_recovery(reader.schema, operation, cfg)
        session = self.start_write(operation, reader.schema)

        def files() -> tuple[list[TaskResult], dict[str, list[str]]]:
            if expected is not None and session.writer_schema != expected:
                raise SchemaEvolutionError(
                    f"{self.storage.uri()}: another writer changed the table's schema while this "
                    "write started; nothing was written, write again"
                )
            results: list[TaskResult] = []
            for task, chunk in enumerate(_file_sized_chunks(reader, session.cfg.max_file_size)):
                rows = prepare_rows(
                    session.cfg,
                    session.writer_schema.conform(chunk, self.storage.uri()),
                    operation,
                    session.instant,
                    task,
                )
                # a small file the first chunk filled is not one to pad again: one file per
                # group and instant
                claimed = {(r.write_stat.partition_path, r.write_stat.file_id or "") for r in results}
                written, _ = self.write_files(
                    session, chunk, prepared=PreparedRecords(session.writer_schema, rows), claimed=claimed
                )
                results.extend(written)
            return results, {}

        return self._commit_started(session, files)

    def writer_schema(
        self, schema: pa.Schema, operation: str, cfg: WriteConfig | None = None
    ) -> WriterSchema:
        """The schema a write of records of ``schema`` gives the table (see
        :mod:`hudi_md.write.evolution`); raises before anything is written when the table's
        rules refuse it."""
        existing = self.config()
        if cfg is None:
            cfg = WriteConfig.from_options(self.options, existing)
        current = None
        if existing is not None:
            current = recorded_schema(self.storage, existing, self.timeline())
        required = [] if operation == "delete_partition" else [*cfg.record_key_fields, *cfg.partition_fields]
        return evolve(
            current,
            schema,
            operation=operation,
            options=cfg.schema_options,
            table=self.storage.uri(),
            required=required,
        )

    def writer_schema_before_recovery(
        self, schema: pa.Schema, operation: str, cfg: WriteConfig
    ) -> WriterSchema | None:
        """:meth:`writer_schema` before the write starts (refusals raise before anything is
        written), or None when the table's recorded schema cannot be read yet (a torn newest
        commit, which the write's recovery repairs; :meth:`start_write` decides it then)."""
        try:
            return self.writer_schema(schema, operation, cfg)
        except CorruptFileError:
            return None

    def records_before_recovery(self, data: pa.Table, operation: str) -> PreparedRecords | None:
        """:meth:`prepare_records` before the write starts, or None when the table's recorded
        schema cannot be read yet (a torn newest commit, which the write's recovery repairs: the
        records are then prepared after it, and a refusal removes the started instant)."""
        try:
            return self.prepare_records(data, operation)
        except CorruptFileError:
            return None

    def prepare_records(self, data: pa.Table, operation: str) -> PreparedRecords:
        """The records of a write as the table takes them, before anything is written: the
        writer schema, the values converted to it, keys, partition paths and in-batch merging
        (:func:`~hudi_md.write.tagging.prepare_rows`). Refusals raise here."""
        if operation not in OPERATIONS:
            raise InvalidOptionError(f"operation must be one of {', '.join(OPERATIONS)}, got {operation!r}")
        cfg = WriteConfig.from_options(self.options, self.config())
        schema = self.writer_schema(data.schema, operation, cfg)
        rows = prepare_rows(cfg, schema.conform(data, self.storage.uri()), operation)
        return PreparedRecords(schema, rows)

    def delete_partitions(self, partitions: Sequence[str]) -> CommitResult:
        """Hudi's ``delete_partition``: a replacecommit replacing every file group of
        ``partitions`` (their rows leave every reader at once; the cleaner deletes the files
        later, and a partition without live files is gone)."""
        if not partitions:
            raise InvalidOptionError("delete_partitions needs at least one partition path")
        schema = self.state({"hoodie.metadata.enable": "false"}).schema
        data = pa.Table.from_batches(
            [], schema=pa.schema([f for f in schema if not f.name.startswith("_hoodie_")])
        )
        self.options[PARTITIONS_TO_DELETE] = ",".join(partitions)
        try:
            return self.write(data, "delete_partition")
        finally:
            self.options.pop(PARTITIONS_TO_DELETE, None)

    def create(self, schema: pa.Schema) -> TableConfig:
        """Apache Hudi's ``CREATE TABLE``: ``hoodie.properties`` (with ``schema`` as the create
        schema) and the timeline folders, no instant; the first write adds the MDT. A table that
        exists is left as it is (options that conflict with it are refused)."""
        existing = self.config()
        cfg = WriteConfig.from_options(self.options, existing)  # refuses bad options before locking
        if existing is not None:
            return existing
        for key, fields in ((RECORD_KEY, cfg.record_key_fields), (PARTITION_PATH, cfg.partition_fields)):
            missing = [f for f in fields if f not in schema.names]
            if missing:
                raise InvalidOptionError(
                    f"{key}: {', '.join(missing)} not among the table's columns ({', '.join(schema.names)})"
                )
        lock = self.lock()
        lock.acquire()
        try:
            existing = self.config()  # another writer may have created it meanwhile
            if existing is not None:
                WriteConfig.from_options(self.options, existing)
                return existing
            layout = check_layout(self.storage, None, self.options, cfg)
            return create_table(self.storage, cfg, writer_avro_schema(cfg, schema), layout)
        finally:
            lock.release()

    def start_write(self, operation: str, schema: pa.Schema) -> WriteSession:
        """Under the table lock: create the table if needed, roll back failed writes, bring the
        MDT's partitions in line with the options, and begin a new instant (``requested`` →
        ``inflight``, with its heartbeat under optimistic concurrency control). A single writer
        keeps the lock until :meth:`end_write` (or :meth:`abandon_write`); under optimistic
        concurrency control it is released here."""
        if operation not in OPERATIONS:
            raise InvalidOptionError(f"operation must be one of {', '.join(OPERATIONS)}, got {operation!r}")
        existing = self.config()
        cfg = WriteConfig.from_options(self.options, existing)  # refuses bad options before locking
        check_version(self.storage, existing)
        lock = self.lock()
        lock.acquire()
        try:
            with lock.nesting():  # table services of the recovery may take the lock again
                existing = self.config()  # another writer may have created the table meanwhile
                cfg = with_indexed_columns(WriteConfig.from_options(self.options, existing), self.storage)
                check_version(self.storage, existing)
                layout = check_layout(self.storage, existing, self.options, cfg)
                if existing is None:
                    evolved = self.writer_schema(schema, operation, cfg)
                    avro_schema = writer_avro_schema(cfg, evolved.schema)
                config = existing or create_table(self.storage, cfg, avro_schema, layout)
                self.adopt_layout(config)
                rollback_failed_writes(self, config)
                if existing is not None:
                    # after the recovery: the newest completed commit (whose schema the table's
                    # is) may have been torn and is repaired now
                    evolved = self.writer_schema(schema, operation, cfg)
                    avro_schema = writer_avro_schema(cfg, evolved.schema)
                self.pending_mdt_rebuild = None  # the sync below re-creates whatever is missing
                config = TableConfig.load(self.storage)
                if not (cfg.concurrency.optimistic and self.other_pending_writes(None)):
                    # Hudi does not initialise MDT partitions while other writes are in flight.
                    config = sync_metadata_table_state(self, cfg, config)
                timeline = self.timeline()
                txn = self._begin(cfg, operation, lock, timeline)
        except BaseException:
            lock.release()
            raise
        kept: TableLock | None = lock  # a single writer keeps it until end_write
        if cfg.concurrency.optimistic:
            lock.release()
            kept = None
        return WriteSession(cfg, config, txn, timeline, avro_schema, operation, kept, evolved)

    def _begin(self, cfg: WriteConfig, operation: str, lock: TableLock, timeline: Timeline) -> Transaction:
        """Step 3a, under the table lock. The instant's time is after every requested and
        completion time on the timeline (and, under optimistic concurrency control, the MDT's),
        so instants of writers on one host are monotonic and a commit that completes later always
        has a later completion time than this instant's start."""
        action = REPLACE_COMMIT if operation in OVERWRITES else (DELTA_COMMIT if cfg.is_mor else COMMIT)
        plan = b""
        if action == REPLACE_COMMIT:
            requested: dict[str, Any] = {
                "operationType": OPERATION_TYPES[operation],
                "clusteringPlan": None,
                "extraMetadata": {},
                "version": 1,
            }
            plan = serialize_instant_metadata("requested_replace", requested)
        optimistic = cfg.concurrency.optimistic
        return Transaction.begin(
            self,
            action,
            plan,
            lock=None if optimistic else lock,
            after=self.latest_time(timeline, with_metadata_table=True) if optimistic else None,
            timeline=timeline,
            heartbeat=optimistic,
        )

    def write_files(
        self,
        session: WriteSession,
        data: pa.Table,
        *,
        prepared: PreparedRecords | None = None,
        claimed: Collection[tuple[str, str]] = (),
    ) -> tuple[list[TaskResult], dict[str, list[str]]]:
        """Tag, plan and write the data files of a started write (markers first); returns the
        task results and the file groups an overwrite replaces. ``prepared``: the records as
        :meth:`prepare_records` made them for this session's writer schema; ``claimed``: file
        groups the write's earlier files went to (they take no more new records)."""
        if prepared is None:
            conformed = session.writer_schema.conform(data, self.storage.uri())
            rows = prepare_rows(session.cfg, conformed, session.operation, session.instant)
        else:
            rows = prepared.rows
        tasks, replaced, tagging = plan_tasks(
            session.cfg, self.state(), rows, session.operation, claimed=claimed
        )
        if tagging.stats:
            self.tagging_stats = tagging.stats
        self.prepare_files(session, [t for t, _ in tasks])
        ctx = self.write_context(session)
        results = self.executor(ctx, tasks) if tasks else []
        return results, replaced

    def write_context(self, session: WriteSession) -> WriteContext:
        return write_context(
            self.uri,
            self.storage_options,
            session.cfg,
            session.config,
            session.instant,
            session.avro_schema,
            validity=instant_validator(session.timeline),
        )

    def prepare_files(self, session: WriteSession, tasks: Sequence[FileGroupTask]) -> None:
        """Markers and partition metadata, before any data file is written. Updates of file groups
        a pending clustering reads are refused first (PendingClusteringError); the instant, which
        wrote nothing, is dropped."""
        txn = session.txn
        try:
            updates = {(t.partition_path, t.file_id) for t in tasks if t.kind == "update"}
            check_no_clustered_updates(self.storage, self.timeline(), updates)
        except HudiMdError:
            started = self.timeline().get(txn.instant)
            if started is not None and not started.is_completed:
                txn.abandon()
            raise
        txn.mark_tasks(tasks, is_mor=session.cfg.is_mor)
        self._write_partition_metadata(txn.instant, {t.partition_path for t in tasks})

    def _write_partition_metadata(self, instant: str, partitions: Iterable[str]) -> None:
        """``.hoodie_partition_metadata`` in each partition this commit creates (Hudi's marker of a
        partition directory; listings find partitions by it)."""
        from hudi_md.metadata.writer import partition_metadata_bytes

        for p in sorted(partitions):
            path = f"{p}/.hoodie_partition_metadata" if p else ".hoodie_partition_metadata"
            if not self.storage.exists(path):
                depth = len(p.split("/")) if p else 0
                self.storage.write_bytes(path, partition_metadata_bytes(instant, depth))

    def finish_commit(
        self,
        session: WriteSession,
        results: Sequence[TaskResult],
        replaced: Mapping[str, list[str]],
        replaced_keys: Iterable[str] | None = None,
    ) -> CommitResult:
        """Steps 4-6: MDT deltacommit from the write statistics, then complete the instant.

        ``replaced_keys``: the record keys of the ``replaced`` file groups when the caller has read
        them already (the Spark writer does, on the executors); otherwise they are read here.

        Single writer: the caller holds the table lock. Optimistic concurrency control: the lock
        is taken here, and under it the timeline and table configuration are re-loaded, the
        instant is checked to be still pending with a live heartbeat, and the write is checked
        for conflicts (:mod:`hudi_md.write.conflicts`); a conflicting write is undone, leaving
        nothing behind, and raises :class:`~hudi_md.errors.WriteConflictError`. The MDT records
        (partition stats included) are computed from the table as it is then.
        """
        self.check_step("after_data_files")
        if not session.cfg.concurrency.optimistic:
            return self._complete(session, session.config, results, replaced, replaced_keys, session.lock)
        txn = session.txn
        with self.lock(reentrant=True) as lock:
            timeline = self.timeline()
            mine = timeline.get(txn.instant)
            if mine is None or mine.is_completed:
                self._discard(session, results)
                raise HeartbeatExpiredError(
                    txn.instant,
                    "another writer rolled it back (its heartbeat had expired, or a writer without "
                    "optimistic concurrency control rolled back every pending instant)",
                )
            if is_expired(self.storage, txn.instant, self.options):
                self._discard(session, results)
                raise HeartbeatExpiredError(
                    txn.instant,
                    "its heartbeat expired (hoodie.client.heartbeat.interval_in_ms times tolerable.misses), "
                    "so another writer may be rolling it back",
                )
            ours = {(r.write_stat.partition_path, r.write_stat.file_id or "") for r in results}
            ours |= {(p, fid) for p, fids in replaced.items() for fid in fids}
            conflict = find_conflict(self.storage, timeline, txn.instant, ours)
            if conflict is not None:
                self._discard(session, results)
                raise conflict
            config = TableConfig.load(self.storage)
            return self._complete(
                session,
                config,
                results,
                replaced,
                replaced_keys,
                lock,
                completion_after=latest_time(timeline),
            )

    def _complete(
        self,
        session: WriteSession,
        config: TableConfig,
        results: Sequence[TaskResult],
        replaced: Mapping[str, list[str]],
        replaced_keys: Iterable[str] | None,
        lock: TableLock | None,
        *,
        completion_after: str | None = None,
    ) -> CommitResult:
        txn = session.txn
        overwrite = txn.action == REPLACE_COMMIT
        meta = commit_metadata_record(
            stats_by_partition(r.write_stat for r in results),
            operation_type=OPERATION_TYPES[session.operation],
            extra_metadata={
                **self.commit_metadata,
                "schema": without_meta(session.avro_schema),
            },
            partition_to_replace_file_ids=dict(replaced) if overwrite else None,
        )
        mdt_started = time.perf_counter()
        if config.metadata_partitions:
            with metrics.timed("commit_upkeep"):  # the commit's MDT records and deltacommit
                available = set(config.metadata_partitions) | set(config.metadata_partitions_inflight)
                types = {f.name: f.type for f in avro_schema_to_arrow(session.avro_schema)}
                dropping = session.operation == "delete_partition"
                indexed = index_columns(session.cfg, config, session.avro_schema) if dropping else []
                records = mdt_records_for_commit(
                    txn.instant,
                    results,
                    available,
                    types,
                    before=self.state(),
                    replaced=replaced,
                    replaced_keys=replaced_keys,
                    deleted_partitions=replaced if dropping else (),
                    indexed_columns=indexed,
                )
                txn.write_metadata(config, records, partitions=available)
                if K.COLUMN_STATS in config.metadata_partitions:
                    # An MDT created before the first commit knew no columns; name them now.
                    fill_index_source_fields(
                        self.storage, index_columns(session.cfg, config, session.avro_schema)
                    )
        mdt_seconds = time.perf_counter() - mdt_started if config.metadata_partitions else 0.0
        self.check_step("after_mdt_commit")
        self.check_step("before_complete")
        completion = None
        if completion_after is not None:
            completion = new_instant_time(after=max(completion_after, txn.instant))
        txn.complete(
            serialize_instant_metadata("replacecommit" if overwrite else "commit", meta),
            lock=lock,
            completion_time=completion,
        )
        # what the instant file just written records (the same record), logged once per commit
        written = WriteResult.of_commit(txn.instant, txn.action, meta, mdt_seconds=mdt_seconds)
        return CommitResult(txn.instant, txn.action, log_commit(written, self.storage.uri()), list(results))

    def _discard(self, session: WriteSession, results: Sequence[TaskResult]) -> None:
        """Undo a write that will not commit (a conflict), under the commit lock, before it wrote
        anything to the MDT: its data files (through its markers, and its write statistics), its
        markers, a partition folder it created that holds nothing else, its pending instant files
        (last: a crash before leaves a pending instant for the LAZY rollback) and its heartbeat.
        No rollback instant is needed, since no reader ever saw the instant completed."""
        txn = session.txn
        files: dict[str, set[str]] = {}
        for p, marked in marked_files(self.storage, txn.instant).items():
            files.setdefault(p, set()).update(marked)
        for r in results:
            if r.write_stat.file_name:
                files.setdefault(r.write_stat.partition_path, set()).add(r.write_stat.file_name)
        for p, names in files.items():
            for n in names:
                path = f"{p}/{n}" if p else n
                if self.storage.exists(path):
                    self.storage.delete(path)
        if not self.other_pending_writes(txn.instant):
            # Nobody else is between start and commit, so nobody else can be writing there.
            drop_partitions_created_by(self, txn.instant, files)
        delete_markers(self.storage, txn.instant)
        txn.abandon()
        txn.stop_heartbeat()
        log.info("discarded instant %s (not committed)", txn.instant)

    def end_write(self, session: WriteSession, result: CommitResult) -> CommitResult:
        """After the commit: inline table services, under the table lock (a single writer's, still
        held; a new one under optimistic concurrency control, where they are skipped while other
        writes are in flight: a compaction, clean or archival must not run under a live writer)."""
        try:
            with held(session.lock), self.lock(reentrant=True):
                if session.cfg.concurrency.optimistic and self.other_pending_writes(None):
                    log.info("inline table services skipped: other writes are in flight")
                else:
                    services.run_inline(self, session.cfg)
        except Exception as e:
            raise CommitCompletedError(
                result.instant,
                f"commit {result.instant} on {self.storage.uri()} completed; an inline table service "
                f"(compaction, clean, MDT compaction or archival) failed after it: {e}",
            ) from e
        finally:
            if session.lock is not None:
                session.lock.release()
        return result

    def refuse_write(self, session: WriteSession) -> None:
        """A started write whose records the table's rules refuse: everything it wrote goes
        (data files by their markers, markers, partition folders it created, its pending instant
        and heartbeat), so storage is as before it started, and a single writer's lock is
        released. No rollback instant: no reader ever saw the instant complete."""
        try:
            with held(session.lock), self.lock(reentrant=True):
                self._discard(session, [])
        finally:
            if session.lock is not None:
                session.lock.release()

    def abandon_write(self, session: WriteSession) -> None:
        """A started write failed before its commit: its instant stays pending (its heartbeat is
        deleted, so that the next writer rolls it back at once) and a single writer's lock is
        released."""
        try:
            hb = self.heartbeats.pop(session.instant, None)
            if hb is not None:
                hb.stop(delete=True)
        finally:
            if session.lock is not None:
                session.lock.release()

    def other_pending_writes(self, mine: str | None) -> list[Instant]:
        return [
            i
            for i in self.timeline().pending()
            if i.action in (COMMIT, DELTA_COMMIT, REPLACE_COMMIT) and i.requested_time != mine
        ]

    # --- rollback, restore, recovery (see hudi_md.write.rollback / recovery) ------------------------

    def rollback_failed_writes(self, config: TableConfig, *, lazy: bool | None = None) -> list[str]:
        return rollback_failed_writes(self, config, lazy=lazy)

    def rollback(self, instant: Instant, config: TableConfig, *, reason: str = "failed write") -> str:
        return rollbacks.rollback(self, instant, config, reason=reason)[0]

    def rollback_commit(self, instant_time: str) -> str:
        return rollbacks.rollback_commit(self, instant_time)

    def restore(self, instant_time: str) -> list[str]:
        return rollbacks.restore(self, instant_time)

    def wanted_mdt_partitions(self, cfg: WriteConfig) -> list[str]:
        return wanted_mdt_partitions(cfg)
