"""One instant of a data table, from its start to its completion: the commit protocol's core.

Every writer goes through a :class:`Transaction`: inserts, upserts, deletes and overwrites (local
and Spark), clean, compaction, rollback, restore, and the MDT's creation and deletion. It owns:

- the table lock the instant commits under (:mod:`hudi_md.write.lock`), checked before the commit
  point;
- the instant's state on the data timeline: ``begin`` (``requested`` → ``inflight``) and
  ``complete``, through :class:`~hudi_md.table.timeline_writer.PendingInstant`, the only code that
  writes an instant's state;
- the markers of the files it writes (Hudi's DIRECT markers under ``.hoodie/.temp/<instant>``), so
  that a crash at any point can be undone by deleting the marked files;
- failure hooks for the crash tests (:meth:`WritableTable.check_step`);
- the MDT deltacommit of the instant (:meth:`Transaction.write_metadata`), written before the
  instant completes, as readers only trust MDT blocks whose instant completed on the data timeline.

:class:`WritableTable` is what a transaction runs against: the table's storage, the writer's
options, this writer's heartbeats and the hooks. ARCHITECTURE.md walks through a write.
"""

from __future__ import annotations

import contextlib
import logging
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING

from hudi_md.config import check_options
from hudi_md.config import table as T
from hudi_md.config import write as W
from hudi_md.config.storage import RETRY_KEYS
from hudi_md.errors import InvalidOptionError, LockLostError, MetastoreError, TableNotFoundError
from hudi_md.metadata.lifecycle import initialize_partitions
from hudi_md.metadata.reader import load_table_state
from hudi_md.metadata.records_builder import MdtKeyBatch, MdtRecord
from hudi_md.metadata.writer import MetadataTableWriter
from hudi_md.metastore.options import metaserver_uri
from hudi_md.storage import Storage
from hudi_md.table import config as C
from hudi_md.table.config import TableConfig
from hudi_md.table.layout import table_storage
from hudi_md.table.state import TableState
from hudi_md.table.timeline import Instant, Timeline
from hudi_md.table.timeline_writer import InstantObserver, PendingInstant, TimelineWriter, new_instant_time
from hudi_md.write.config import (
    WriteConfig,
    commit_extra_metadata,
    concurrency_settings,
    with_indexed_columns,
)
from hudi_md.write.heartbeat import Heartbeat, delete_heartbeat
from hudi_md.write.lock import TableLock

if TYPE_CHECKING:
    from hudi_md.write.file_groups import FileGroupTask

log = logging.getLogger(__name__)

TIMELINE = ".hoodie/timeline"
TEMP = ".hoodie/.temp"
MDT_FOLDER = ".hoodie/metadata"


class Crash(Exception):
    """Raised by a failure hook to simulate a writer dying at a named step."""


class WritableTable:
    """A table opened for writing: its storage, the writer's options, this writer's live
    heartbeats and the failure hooks. Not thread-safe; writers coordinate through the table lock.

    ``options``: Hudi's ``hoodie.*`` write options; ``commit_metadata``: the options a commit
    records in its ``extraMetadata`` (keys with Hudi's commit metadata prefix, ``_``); everything
    else is an fsspec storage option.
    """

    def __init__(self, uri: str, options: Mapping[str, object] | None = None) -> None:
        opts = {str(k): v for k, v in (options or {}).items()}
        check_options(opts)
        self.commit_metadata = commit_extra_metadata(opts)
        # fsspec's options, and Hudi's file-system retry keys (the storage layer applies those).
        self.storage_options = {
            k: v
            for k, v in opts.items()
            if k not in self.commit_metadata and (not k.startswith("hoodie.") or k in RETRY_KEYS)
        }
        self.options = {k: str(v) for k, v in opts.items() if k.startswith("hoodie.")}
        self.storage = Storage(uri, self.storage_options)
        self.uri = uri
        # a table whose layout spreads data files over a storage path: route them there
        with contextlib.suppress(TableNotFoundError):
            self.adopt_layout(TableConfig.load(self.storage))
        if W.FS_LOCK_PATH.is_set(self.options):
            # an absolute hoodie.write.lock.filesystem.path is resolved against the table
            self.options.setdefault(W.BASE_PATH.key, uri)
        # Failure hook: raise Crash at "after_data_files", "after_mdt_commit" or "before_complete".
        self.crash_at: str | None = None
        # Heartbeats of this writer's pending instants (optimistic concurrency control).
        self.heartbeats: dict[str, Heartbeat] = {}
        # MDT partitions to rebuild from storage once the lock's work is done: a rollback of an
        # instant already compacted into MDT base files can only be undone by a rebuild.
        self.pending_mdt_rebuild: list[str] | None = None
        # The metastore's record of the timeline (hoodie.metaserver.enabled), made on first use.
        self._mirror: InstantObserver | None = None
        self._metastore_checked = False
        self._version_checked = False

    # --- what the table is now ---------------------------------------------------------------------

    def timeline_writer(self) -> TimelineWriter:
        """The data timeline's writer: every state it writes is also recorded in the metastore
        when ``hoodie.metaserver.enabled`` is on."""
        return TimelineWriter(self.storage, TIMELINE, observer=self.metastore_mirror())

    def metastore_mirror(self) -> InstantObserver | None:
        """The metastore's record of this table's timeline (None without the metastore). A table
        the metastore does not know yet is registered as ``hoodie.database.name`` (default
        ``default``) . ``hoodie.table.name``, with the history it has."""
        if self._mirror is not None or metaserver_uri(self.options) is None:
            return self._mirror
        from hudi_md.metastore.client import MetastoreClient  # the metastore extra's dependencies
        from hudi_md.metastore.mirror import MetastoreMirror, register_table, sync_table
        from hudi_md.metastore.resolve import resolve_table
        from hudi_md.table.schema import recorded_schema

        client = MetastoreClient.from_options(self.options)
        assert client is not None
        ref = resolve_table(client, self.storage.uri())
        if ref is None:
            config = TableConfig.load(self.storage)
            timeline = self.timeline()
            # the schema types the partition columns (pruned on the server as their type)
            schema = recorded_schema(self.storage, config, timeline)
            ref = register_table(
                client, self.storage, config, config.database_name or "default", config.table_name, schema
            )
            sync_table(client, ref, timeline, self.instant_file_reader(), self.requested_actions())
        self._mirror = MetastoreMirror(client, ref)
        return self._mirror

    def check_metastore(self) -> None:
        """With the metastore on, ask it before this writer's first byte (the table lock is the
        first thing any writer writes, so :meth:`lock` asks): the names a table it does not know
        would be registered under are the protocol's, no other location has them, and the token
        may write (a write request: the database is created if new). A refusal raises
        :class:`~hudi_md.errors.InvalidOptionError` or :class:`~hudi_md.errors.MetastoreError`
        with storage untouched. Asked once per writer."""
        if self._metastore_checked or metaserver_uri(self.options) is None:
            return
        from hudi_md.metastore.client import MetastoreClient  # the metastore extra's dependencies
        from hudi_md.metastore.protocol import NAME_PATTERN, NAME_RE
        from hudi_md.metastore.resolve import resolve_table

        client = MetastoreClient.from_options(self.options)
        assert client is not None
        ref = resolve_table(client, self.storage.uri())
        if ref is not None:
            client.ensure_database(ref.db)  # exists: answered 409 to a valid token, 401 otherwise
        else:
            config = self.config()
            db = (
                config.database_name if config is not None else T.DATABASE_NAME.get(self.options)
            ) or "default"
            name = config.table_name if config is not None else T.TABLE_NAME.get(self.options) or ""
            for key, value in ((C.DATABASE_NAME, db), (C.TABLE_NAME, name)):
                if not NAME_RE.fullmatch(value):
                    raise InvalidOptionError(
                        f"{key} {value!r}: the metastore's names are {NAME_PATTERN} "
                        "(the table is registered under it: hoodie.metaserver.enabled is on)"
                    )
            client.ensure_database(db)
            try:
                taken = client.table(db, name)
            except MetastoreError as e:
                if e.code != "not_found":
                    raise
            else:
                if taken.location.rstrip("/") != self.storage.uri().rstrip("/"):
                    raise MetastoreError(f"{db}.{name} is registered at {taken.location}, not here", "exists")
        self._metastore_checked = True

    def requested_actions(self) -> dict[str, str]:
        """The action each instant on the data timeline was requested as (``T.<action>.requested``)."""
        out = {}
        for e in self.storage.list(TIMELINE):
            parts = e.name.split(".")
            if len(parts) == 3 and parts[2] == "requested":
                out[parts[0]] = parts[1]
        return out

    def instant_file_reader(self) -> Callable[[Instant, str], bytes]:
        """``(instant, state) -> bytes`` of its file on the data timeline (b"" when absent)."""
        storage = self.storage

        def read(instant: Instant, state: str) -> bytes:
            t = instant.requested_time
            if state == "completed":
                name = instant.file_name or f"{t}_{instant.completion_time}.{instant.action}"
                return storage.read_bytes(f"{TIMELINE}/{name}")
            names = [e.name for e in storage.list(TIMELINE) if e.name.startswith(f"{t}.")]
            wanted = [n for n in names if n.endswith(f".{state}")]
            return storage.read_bytes(f"{TIMELINE}/{wanted[0]}") if wanted else b""

        return read

    def adopt_layout(self, config: TableConfig) -> None:
        """Route data files as the table's storage layout says (a no-op for the default layout)."""
        self.storage = table_storage(self.storage, config.to_dict())

    def config(self) -> TableConfig | None:
        """``hoodie.properties``, or None before the table exists."""
        if not self.storage.exists(C.PROPERTIES_FILE):
            return None
        return TableConfig.load(self.storage)

    def timeline(self) -> Timeline:
        return Timeline.load(self.storage, TIMELINE, 2)

    def state(self, options: Mapping[str, str] | None = None) -> TableState:
        """The table as readers see it now (through its MDT when it has one)."""
        return load_table_state(self.storage, options or {})

    def lock(self, *, reentrant: bool = False) -> TableLock:
        self.check_metastore()  # before the first byte any writer writes
        self.check_version()
        return TableLock(self.storage, options=self.options, reentrant=reentrant)

    def check_version(self) -> None:
        """Refuse to change a table of another version than 9 (Apache Hudi's table versions 6 and 8
        keep other timeline layouts and formats; hudi-md reads them, it writes version 9): every
        writer and table service takes the lock first, so nothing is written to one."""
        if self._version_checked:
            return
        config = self.config()
        if config is not None and config.table_version != 9:
            raise InvalidOptionError(
                f"{self.storage.uri()} is table version {config.table_version}; hudi-md writes version "
                "9 (read it with hudi-md; upgrade it with Apache Hudi to change it with hudi-md)"
            )
        self._version_checked = config is not None

    @property
    def optimistic(self) -> bool:
        """Whether the options ask for optimistic concurrency control (False when they are invalid:
        the write refuses those)."""
        try:
            return concurrency_settings(self.options).optimistic
        except InvalidOptionError:
            return False

    def metadata_writer(self, config: TableConfig) -> MetadataTableWriter:
        return MetadataTableWriter(self.storage, config, self.options)

    def check_step(self, step: str) -> None:
        """Failure hook: the crash tests make the writer die here."""
        if self.crash_at == step:
            raise Crash(step)

    def latest_time(self, timeline: Timeline | None = None, *, with_metadata_table: bool = False) -> str:
        """The latest requested or completion time on the data timeline (``timeline``: as the
        caller loaded it already), and with ``with_metadata_table`` on the MDT's too."""
        after = latest_time(timeline if timeline is not None else self.timeline())
        if with_metadata_table:
            mdt = self.storage.child(MDT_FOLDER)
            if mdt.exists(TIMELINE):
                after = max(after, latest_time(Timeline.load(mdt, TIMELINE, 2)))
        return after

    def finish_mdt_rebuild(self) -> None:
        """Rebuild the MDT partitions a rollback had to drop (the caller holds the lock)."""
        wanted = self.pending_mdt_rebuild
        if wanted:
            config = TableConfig.load(self.storage)
            cfg = with_indexed_columns(WriteConfig.from_options(self.options, config), self.storage)
            initialize_partitions(self.storage, config, wanted, cfg, self.options)
            self.pending_mdt_rebuild = None


class Transaction:
    """One instant of the data timeline: ``begin`` → markers and files → MDT records → ``complete``.

    ``lock``: the table lock the caller holds for the commit (checked at the commit point); None
    when the caller commits under a lock taken later (optimistic concurrency control passes it to
    :meth:`complete`).
    """

    def __init__(
        self, table: WritableTable, instant_time: str, action: str, *, lock: TableLock | None = None
    ) -> None:
        self.table = table
        self.instant = instant_time
        self.action = action
        self.lock = lock
        self._pending = PendingInstant(table.timeline_writer(), instant_time, action)

    # --- start ---------------------------------------------------------------------------------------

    @classmethod
    def begin(
        cls,
        table: WritableTable,
        action: str,
        plan: bytes = b"",
        *,
        lock: TableLock | None = None,
        inflight: bytes = b"",
        after: str | None = None,
        timeline: Timeline | None = None,
        heartbeat: bool = False,
    ) -> Transaction:
        """A new instant after every time on the timeline (and ``after``): ``T.a.requested``
        holding ``plan``, then ``T.a.inflight``. ``heartbeat``: start the instant's heartbeat
        first (optimistic concurrency control), so that no other writer ever sees it pending
        without one."""
        txn = cls.request(table, action, plan, lock=lock, after=after, timeline=timeline, heartbeat=heartbeat)
        txn.start(inflight)
        return txn

    @classmethod
    def request(
        cls,
        table: WritableTable,
        action: str,
        plan: bytes = b"",
        *,
        lock: TableLock | None = None,
        after: str | None = None,
        timeline: Timeline | None = None,
        heartbeat: bool = False,
    ) -> Transaction:
        """A new instant, requested only (a plan: run it with :meth:`start`). ``timeline``: the
        data timeline as the caller, holding the lock, loaded it already."""
        floor = max(table.latest_time(timeline), after or "")
        instant = new_instant_time(after=floor or None)
        if heartbeat:
            hb = Heartbeat(table.storage, instant, table.options)
            hb.start()
            table.heartbeats[instant] = hb
        txn = cls(table, instant, action, lock=lock)
        txn._pending = PendingInstant.request(txn._pending.timeline, instant, action, plan)
        return txn

    @classmethod
    def resume(
        cls, table: WritableTable, instant_time: str, action: str, *, lock: TableLock | None = None
    ) -> Transaction:
        """A requested (or inflight) instant to run again from its plan after a failure."""
        return cls(table, instant_time, action, lock=lock)

    def start(self, content: bytes = b"", *, if_missing: bool = False) -> None:
        """``T.a.inflight``: the instant is running."""
        self._pending.start(content, if_missing=if_missing)

    # --- markers -------------------------------------------------------------------------------------

    def mark(self, partition: str, file_name: str, kind: str) -> None:
        """A DIRECT marker for a file about to be written (``kind``: CREATE, MERGE or APPEND)."""
        write_marker(self.table.storage, self.instant, partition, file_name, kind)

    def mark_tasks(self, tasks: Iterable[FileGroupTask], *, is_mor: bool) -> None:
        for task in tasks:
            kind = "APPEND" if task.writes_log(is_mor) else "CREATE"
            self.mark(task.partition_path, task.file_name(self.instant, is_mor), kind)

    def marked_files(self) -> dict[str, list[str]]:
        return marked_files(self.table.storage, self.instant)

    # --- MDT, completion --------------------------------------------------------------------------

    def write_metadata(
        self,
        config: TableConfig,
        records: Iterable[MdtRecord | MdtKeyBatch],
        *,
        partitions: Iterable[str] | None = None,
        operation: str = "UPSERT_PREPPED",
    ) -> None:
        """The MDT deltacommit of this instant (same instant time), into ``partitions`` (default:
        every available or inflight one). It is written before the instant completes; readers trust it only
        once the data instant completed."""
        if partitions is None:  # every partition readers use or an indexer is building
            partitions = set(config.metadata_partitions) | set(config.metadata_partitions_inflight)
        parts = sorted(partitions)
        self.table.metadata_writer(config).write_records(
            self.instant, records, partitions=parts, operation=operation
        )

    def complete(
        self, metadata: bytes, *, lock: TableLock | None = None, completion_time: str | None = None
    ) -> Instant:
        """The commit point: the lock is checked (never complete without it), ``T_C.a`` is
        written whole, then the heartbeat and markers go (leftover markers of a completed
        instant are harmless)."""
        held = lock or self.lock
        if held is not None:
            try:
                held.check_held()
            except LockLostError as e:
                raise LockLostError(
                    f"{e}; commit {self.instant} did not happen: the instant stays pending, and the "
                    "next writer rolls it back"
                ) from e
        done = self._pending.complete(metadata, completion_time=completion_time)
        hb = self.table.heartbeats.pop(self.instant, None)
        if hb is not None:
            hb.stop(delete=True)
        try:
            delete_markers(self.table.storage, self.instant)
        except OSError as e:
            log.warning("instant %s completed; could not delete its markers: %s", self.instant, e)
        return done

    def stop_heartbeat(self) -> None:
        """Stop and delete the instant's heartbeat (its file too when another process wrote it)."""
        hb = self.table.heartbeats.pop(self.instant, None)
        if hb is not None:
            hb.stop(delete=True)
        else:
            delete_heartbeat(self.table.storage, self.instant)

    def abandon(self) -> None:
        """Drop the instant's pending files (it wrote nothing that needs undoing)."""
        self._pending.abandon()


@contextlib.contextmanager
def held(lock: TableLock | None) -> Iterator[None]:
    """While inside, a re-entrant lock of the table taken by this thread nests in ``lock``."""
    with lock.nesting() if lock is not None else contextlib.nullcontext():
        yield


# --- markers (Hudi's DIRECT layout: .hoodie/.temp/<instant>/<partition>/<file>.marker.<kind>) ------


def write_marker(storage: Storage, instant: str, partition: str, file_name: str, kind: str) -> None:
    base = f"{TEMP}/{instant}/{partition}".rstrip("/")
    storage.write_bytes(f"{base}/{file_name}.marker.{kind}", b"")


def marked_files(storage: Storage, instant: str) -> dict[str, list[str]]:
    """Partition → names of the files the instant's markers name."""
    out: dict[str, list[str]] = defaultdict(list)

    def walk(path: str, rel: str) -> None:
        for e in storage.list(path):
            if e.is_dir:
                walk(e.path, f"{rel}/{e.name}" if rel else e.name)
            elif ".marker." in e.name:
                out[rel].append(e.name.split(".marker.")[0])

    walk(f"{TEMP}/{instant}", "")
    return out


def delete_markers(storage: Storage, instant: str) -> None:
    path = f"{TEMP}/{instant}"
    if storage.exists(path):
        storage.delete(path, recursive=True)


def latest_time(timeline: Timeline) -> str:
    """The latest requested or completion time on a timeline ("" when empty)."""
    latest = ""
    for i in timeline:
        latest = max(latest, i.requested_time, i.completion_time or "")
    return latest
