"""The snapshot service: the files of every partition, kept by the snapshot sync, and the latest
file slices computed from them by hudi-md's own file-system view.

**Sync.** Each completed instant has a ``tbl_version`` row (its version: the order the server
completed it in). :func:`sync_table` applies pending versions in that order, one transaction per
version, under the table's row lock (so one process at a time, in order), and marks the row synced
in the same transaction: a crash at any point leaves either all of a version's changes or none,
and applying a version again changes nothing (files are upserted by ``(partition, name)``, deletes
only touch live rows). What each completed instant does:

* commit / deltacommit / replacecommit (and compaction, clustering, log compaction, which complete
  as those): the files its write stats name are added (or their size updated), their partitions
  created (with their ``partition_key_val`` rows) or updated; a replacecommit's
  ``partitionToReplaceFileIds`` mark those file groups replaced; a new writer schema becomes the
  table's schema (a new ``schema`` version);
* clean: the deleted files are marked deleted (``isPartitionDeleted``: the partition too);
* rollback: deleted files marked deleted, rollback log files added; restore: each of its
  rollbacks;
* anything else (savepoint, indexing, ...): nothing, but the version is recorded as synced.

Syncs run in the background after each completion, at server start and every few seconds (a
server that died before syncing leaves work another one picks up), and before any read of the
partition or snapshot services when something is pending (RFC-36: reads wait for the sync).

**Slices.** :func:`latest_slices` builds a :class:`~hudi_md.table.timeline.Timeline` from the
``instant`` and ``instant_meta`` rows and a :class:`DbListing` over the ``files`` rows, and asks
:class:`~hudi_md.table.fs_view.FileSystemView` for the latest slices, so they are hudi-md's by
construction: replaced file groups, pending compactions, time travel. As of an instant, a file a
later clean removed is still listed (``deleted_instant`` after it). As of a table version (a plan's
pin, :mod:`hudi_md.metastore_server.as_of`), the instants completed after it are pending and the
files and partitions are those of then.
"""

from __future__ import annotations

import logging
import os
import posixpath
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from hudi_md.formats.commit_metadata import CommitMetadata, parse_instant_metadata, rolled_back_instants
from hudi_md.metastore import protocol as P
from hudi_md.metastore_server import partitions as partition_service
from hudi_md.metastore_server import schema as S
from hudi_md.metastore_server.as_of import check_version, file_live, later_instants, later_set, partition_live
from hudi_md.metastore_server.catalog import (
    TableRow,
    lock_table,
    now,
    schema_rows,
    table_by_id,
    table_config,
    table_params,
)
from hudi_md.metastore_server.db import is_postgres, read_tx, refresh_statistics, write_tx
from hudi_md.metastore_server.errors import invalid
from hudi_md.metastore_server.partitions import CLEAN_PENDING, key_values, remove_empty_partitions, set_param
from hudi_md.metastore_server.timeline import COMPLETED, completed_action, instant_rows
from hudi_md.table.filenames import parse_data_file
from hudi_md.table.fs_view import FileSlice, FileSystemView
from hudi_md.table.listing import FileEntry
from hudi_md.table.partitions import PartitionScheme
from hudi_md.table.timeline import CLEAN, RESTORE, ROLLBACK, WRITE_ACTIONS, Instant, State, Timeline

if TYPE_CHECKING:
    from sqlalchemy.dialects import postgresql, sqlite

log = logging.getLogger(__name__)

# Test hook: seconds to sleep inside each version's sync transaction, after its rows are written
# and before it commits (the fault tests SIGKILL a server there).
SYNC_DELAY_ENV = "HUDI_MD_METASTORE_SYNC_DELAY_S"
_CHUNK = 500
_STATES = {1: State.REQUESTED, 2: State.INFLIGHT, 3: State.COMPLETED}


def _chunks(items: Sequence[Any], n: int = _CHUNK) -> Iterator[Sequence[Any]]:
    for i in range(0, len(items), n):
        yield items[i : i + n]


def _upsert(
    conn: Connection, table: sa.Table, rows: list[dict[str, Any]], keys: list[str], update: list[str]
) -> None:
    """INSERT ... ON CONFLICT (keys) DO UPDATE SET update (both databases speak it)."""
    if not rows:
        return
    for chunk in _chunks(rows):
        stmt = _insert(conn, table)
        stmt = stmt.on_conflict_do_update(index_elements=keys, set_={c: stmt.excluded[c] for c in update})
        conn.execute(stmt, list(chunk))


def _insert(conn: Connection, table: sa.Table) -> postgresql.Insert | sqlite.Insert:
    """The INSERT of the connection's dialect (both have ON CONFLICT)."""
    if is_postgres(conn):
        from sqlalchemy.dialects.postgresql import insert as postgresql_insert

        return postgresql_insert(table)
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert

    return sqlite_insert(table)


# --- what an instant changes --------------------------------------------------------------------------


@dataclass
class Changes:
    """What one completed instant does to the snapshot."""

    added: dict[str, dict[str, int]]  # partition -> file name -> size
    deleted: dict[str, set[str]]  # partition -> file names
    replaced: dict[str, list[str]]  # partition -> file ids
    written: set[str]  # partitions the instant wrote into (created or revived)
    partitions_deleted: set[str]
    rolled_back: set[str]  # instants a rollback or restore undid
    schema: str | None = None


def changes_of(action: str, meta: Mapping[str, Any], name: str) -> Changes:
    """``action`` is the completed action (a compaction completes as a commit)."""
    ch = Changes({}, {}, {}, set(), set(), set())
    if action in WRITE_ACTIONS:
        commit = CommitMetadata(meta, name)
        ch.added = {p: files for p, files in commit.files_added().items() if files}
        ch.written = set(ch.added)
        ch.replaced = {p: ids for p, ids in commit.replaced_file_ids().items() if ids}
        ch.schema = commit.schema
    elif action == CLEAN:
        for p, pm in (meta.get("partitionMetadata") or {}).items():
            names = {posixpath.basename(f) for f in (pm or {}).get("successDeleteFiles") or ()}
            if names:
                ch.deleted.setdefault(str(p), set()).update(names)
            if (pm or {}).get("isPartitionDeleted"):
                ch.partitions_deleted.add(str(p))
    elif action == ROLLBACK:
        _rollback_changes(meta, ch)
    elif action == RESTORE:
        for rollbacks in (meta.get("hoodieRestoreMetadata") or {}).values():
            for rb in rollbacks or ():
                _rollback_changes(rb or {}, ch)
    return ch


def _rollback_changes(meta: Mapping[str, Any], ch: Changes) -> None:
    ch.rolled_back.update(rolled_back_instants(meta))
    for p, pm in (meta.get("partitionMetadata") or {}).items():
        pm = pm or {}
        names = {posixpath.basename(f) for f in pm.get("successDeleteFiles") or ()}
        if names:
            ch.deleted.setdefault(str(p), set()).update(names)
        # Log files a rollback appended its command block to (Hudi before 1.0 on MOR tables).
        for path, size in (pm.get("rollbackLogFiles") or {}).items():
            ch.added.setdefault(str(p), {})[posixpath.basename(path)] = int(size or 0)


# --- sync ---------------------------------------------------------------------------------------------


def sync_table(engine: Engine, tbl_id: int) -> int:
    """Apply every pending version of the table, in order; returns how many were applied. A
    version that fails is marked failed (with the error) and stops the sync there; the next sync
    tries it again."""
    applied = 0
    delay = float(os.environ.get(SYNC_DELAY_ENV) or 0)
    while True:
        version: int | None = None
        try:
            with write_tx(engine) as conn:
                lock_table(conn, tbl_id)
                v = S.tbl_version.c
                row = conn.execute(
                    sa.select(v.version, v.instant_id, v.ts)
                    .where(v.tbl_id == tbl_id, v.snapshot_status != S.SYNC_DONE)
                    .order_by(v.version)
                    .limit(1)
                ).first()
                if row is None:
                    break
                version = int(row.version)
                _apply(conn, tbl_id, version, row.instant_id)
                if delay:
                    log.warning(
                        "snapshot sync: table %s version %s applied, pausing %.1fs before commit",
                        tbl_id,
                        version,
                        delay,
                    )
                    time.sleep(delay)
                conn.execute(
                    S.tbl_version.update()
                    .where(v.tbl_id == tbl_id, v.version == version)
                    .values(snapshot_status=S.SYNC_DONE, message=None, update_time=now())
                )
            applied += 1
            log.info("snapshot sync: table %s version %s (instant %s) synced", tbl_id, version, row.ts)
        except Exception as e:
            if version is None:
                raise
            log.exception("snapshot sync: table %s version %s failed", tbl_id, version)
            with write_tx(engine) as conn:
                v = S.tbl_version.c
                conn.execute(
                    S.tbl_version.update()
                    .where(v.tbl_id == tbl_id, v.version == version)
                    .values(snapshot_status=S.SYNC_FAILED, message=f"{type(e).__name__}: {e}"[:2000])
                )
            break
    if applied:
        refresh_statistics(engine)
    return applied


def unsynced_tables(engine: Engine) -> list[int]:
    with read_tx(engine) as conn:
        v = S.tbl_version.c
        return [
            int(t)
            for t in conn.execute(
                sa.select(v.tbl_id).where(v.snapshot_status != S.SYNC_DONE).distinct()
            ).scalars()
        ]


def sync_all(engine: Engine) -> int:
    return sum(sync_table(engine, t) for t in unsynced_tables(engine))


def _apply(conn: Connection, tbl_id: int, version: int, instant_id: int | None) -> None:
    if instant_id is None:
        return  # the instant was rolled back and removed before its turn: nothing to apply
    i, m = S.instant.c, S.instant_meta.c
    inst = conn.execute(sa.select(i.ts, i.action, i.state).where(i.instant_id == instant_id)).first()
    if inst is None or inst.state != COMPLETED:
        return
    action = completed_action(S.ACTION_NAMES[inst.action])
    data = conn.execute(
        sa.select(m.data).where(m.tbl_id == tbl_id, m.ts == inst.ts, m.state == COMPLETED)
    ).scalar_one_or_none()
    meta = parse_instant_metadata(bytes(data or b""), f"{inst.ts}.{action}")
    ch = changes_of(action, meta, f"{inst.ts}.{action}")
    table = table_by_id(conn, tbl_id)
    _apply_changes(conn, table, version, inst.ts, ch)


def _partition_ids(conn: Connection, tbl_id: int, names: Iterable[str]) -> dict[str, Any]:
    p = S.partitions.c
    out: dict[str, Any] = {}
    for chunk in _chunks(sorted(set(names))):
        for r in conn.execute(
            sa.select(p.part_id, p.part_name, p.is_deleted).where(p.tbl_id == tbl_id, p.part_name.in_(chunk))
        ):
            out[r.part_name] = r
    return out


def _apply_changes(conn: Connection, table: TableRow, version: int, ts: str, ch: Changes) -> None:
    t = now()
    tid = table.tbl_id
    touched = set(ch.added) | set(ch.deleted) | set(ch.replaced) | ch.written | ch.partitions_deleted
    if not touched and not ch.schema:
        return
    known = _partition_ids(conn, tid, touched)
    # New partitions: only those the instant wrote files into.
    new = sorted(ch.written - set(known))
    if new:
        p = S.partitions.c
        # the ids come back with the insert: selecting 10^5 rows just inserted again costs a
        # sequential scan per chunk on PostgreSQL, whose statistics still say the table is empty
        insert = S.partitions.insert().returning(p.part_id, p.part_name, p.is_deleted)
        created = {}
        for chunk in _chunks(new):
            rows = [
                {
                    "tbl_id": tid,
                    "part_name": name,
                    "create_time": t,
                    "update_time": t,
                    "created_instant": ts,
                    "updated_instant": ts,
                    "is_deleted": False,
                }
                for name in chunk
            ]
            created.update({r.part_name: r for r in conn.execute(insert, rows)})
        scheme = PartitionScheme(table_config(table, table_params(conn, tid)))
        numeric, typed = table.numeric_columns(), table.typed_columns()
        kv = [
            row
            for name in new
            for row in key_values(scheme, numeric, created[name].part_id, tid, name, typed)
        ]
        for chunk in _chunks(kv):
            conn.execute(S.partition_key_val.insert(), list(chunk))
        known.update(created)
    # Existing partitions the instant changed: updated; written into: alive again.
    p = S.partitions.c
    revived = [known[n].part_id for n in ch.written if n in known and n not in new and known[n].is_deleted]
    changed = [known[n].part_id for n in touched if n in known and n not in new]
    for chunk in _chunks(changed):
        conn.execute(
            S.partitions.update().where(p.part_id.in_(chunk)).values(updated_instant=ts, update_time=t)
        )
    for chunk in _chunks(revived):
        conn.execute(S.partitions.update().where(p.part_id.in_(chunk)).values(is_deleted=False))
        pp = S.partition_params.c
        conn.execute(S.partition_params.delete().where(pp.part_id.in_(chunk), pp.param_key == CLEAN_PENDING))
    # Files added (or grown).
    rows = []
    for partition, files in ch.added.items():
        part = known.get(partition)
        if part is None:
            continue
        for name, size in files.items():
            parsed = parse_data_file(name)
            rows.append(
                {
                    "tbl_id": tid,
                    "part_id": part.part_id,
                    "version": version,
                    "name": name,
                    "size": int(size),
                    "file_id": parsed.file_id if parsed is not None else "",
                    "instant": ts,
                    "is_deleted": False,
                    "deleted_instant": None,
                    "replaced_instant": None,
                    "create_time": t,
                    "update_time": t,
                }
            )
    _upsert(
        conn,
        S.files,
        rows,
        ["part_id", "name"],
        ["version", "size", "file_id", "instant", "is_deleted", "deleted_instant", "update_time"],
    )
    f = S.files.c
    # Files deleted.
    deletes = [
        {"b_part": known[p].part_id, "b_name": n}
        for p, names in ch.deleted.items()
        if p in known
        for n in names
    ]
    if deletes:
        conn.execute(
            S.files.update()
            .where(
                f.part_id == sa.bindparam("b_part"),
                f.name == sa.bindparam("b_name"),
                f.is_deleted == sa.false(),
            )
            .values(is_deleted=True, deleted_instant=ts, version=version, update_time=t),
            deletes,
        )
    # File groups replaced.
    for partition, ids in ch.replaced.items():
        if partition not in known:
            continue
        for chunk in _chunks(ids):
            conn.execute(
                S.files.update()
                .where(
                    f.part_id == known[partition].part_id, f.file_id.in_(chunk), f.replaced_instant.is_(None)
                )
                .values(replaced_instant=ts, update_time=t)
            )
    # Partitions a clean deleted from storage.
    for name in ch.partitions_deleted:
        if name in known:
            conn.execute(
                S.partitions.update().where(p.part_id == known[name].part_id).values(is_deleted=True)
            )
            set_param(conn, known[name].part_id, tid, CLEAN_PENDING, None)
    _settle_dropped(conn, tid, [known[n].part_id for n in touched if n in known])
    if ch.rolled_back:
        remove_empty_partitions(conn, tid, ch.rolled_back)
    if ch.schema and ch.schema != table.schema_json:
        _new_schema(conn, table, version, ch.schema)


def _settle_dropped(conn: Connection, tbl_id: int, part_ids: list[int]) -> None:
    """A dropped partition whose clean is pending and that has no live file left: clean done."""
    if not part_ids:
        return
    pp, f = S.partition_params.c, S.files.c
    for chunk in _chunks(part_ids):
        pending = (
            conn.execute(
                sa.select(pp.part_id).where(
                    pp.part_id.in_(chunk), pp.param_key == CLEAN_PENDING, pp.param_value == "true"
                )
            )
            .scalars()
            .all()
        )
        for part_id in pending:
            live = conn.execute(
                sa.select(sa.func.count()).where(f.part_id == part_id, f.is_deleted == sa.false())
            ).scalar_one()
            if not live:
                set_param(conn, part_id, tbl_id, CLEAN_PENDING, None)


def _new_schema(conn: Connection, table: TableRow, version: int, schema_json: str) -> None:
    try:
        rows = schema_rows(table.tbl_id, version, schema_json, list(table.partition_fields))
    except Exception:  # a writer schema that is not an Avro record: keep the text, no rows
        rows = []
    conn.execute(S.tbl.update().where(S.tbl.c.tbl_id == table.tbl_id).values(schema_json=schema_json))
    sc = S.schema.c
    conn.execute(S.schema.delete().where(sc.tbl_id == table.tbl_id, sc.version == version))
    if rows:
        conn.execute(S.schema.insert(), rows)


# --- status -------------------------------------------------------------------------------------------


def status(conn: Connection, table: TableRow) -> P.SnapshotStatus:
    v = S.tbl_version.c
    done_v = S.tbl_version.alias("done_v")
    # the newest completion applied: in the same statement (a plan's open reads the status)
    max_synced = (
        sa.select(sa.func.max(done_v.c.completion_ts))
        .where(done_v.c.tbl_id == table.tbl_id, done_v.c.snapshot_status == S.SYNC_DONE)
        .scalar_subquery()
    )
    rows = conn.execute(
        sa.select(
            v.version, v.ts, v.completion_ts, v.snapshot_status, v.message, max_synced.label("max_synced")
        )
        .where(v.tbl_id == table.tbl_id)
        .where(sa.or_(v.snapshot_status != S.SYNC_DONE, v.version == table.synced_version))
        .order_by(v.version)
    ).all()
    pending = [r for r in rows if r.snapshot_status != S.SYNC_DONE]
    done = [r for r in rows if r.snapshot_status == S.SYNC_DONE]
    # no row: nothing pending and no version applied, so no completion either
    synced_completion = rows[0].max_synced if rows else None
    failed = next((r for r in pending if r.snapshot_status == S.SYNC_FAILED), None)
    return P.SnapshotStatus(
        synced_instant=done[-1].ts if done else None,
        synced_completion_time=synced_completion,
        pending=[r.ts for r in pending],
        status="failed" if failed else ("syncing" if pending else "synced"),
        message=failed.message if failed else None,
        synced_version=table.synced_version,
    )


def table_timeline(conn: Connection, table: TableRow) -> P.TableTimeline:
    """The instants with the table version they are as of (``table`` and they are read in one
    transaction: one snapshot of the database) and the snapshot status."""
    return P.TableTimeline(
        version=table.version,
        instants=[i.model() for i in instant_rows(conn, table.tbl_id)],
        snapshot=status(conn, table),
    )


# --- the file-system view over the database -----------------------------------------------------------


def _instant_file_name(ts: str, action: str, state: State, completion: str | None) -> str:
    if state is State.COMPLETED:
        return f"{ts}_{completion}.{action}" if completion else f"{ts}.{action}"
    return f"{ts}.{action}.{state.name.lower()}"


def db_timeline(conn: Connection, table: TableRow, later: frozenset[str] = frozenset()) -> Timeline:
    """The table's timeline from the database; metadata read from ``instant_meta`` on demand
    (the file-system view reads only completed replacecommits', which are fetched at once).
    ``later``: instants completed after the version asked for, which are inflight as of it."""
    instants = []
    for r in instant_rows(conn, table.tbl_id):
        state = _STATES[r.state]
        if state is State.COMPLETED and r.ts in later:
            state = State.INFLIGHT
        action = completed_action(r.action) if state is State.COMPLETED else r.action
        instants.append(
            Instant(
                r.ts, action, state, r.completion_ts, _instant_file_name(r.ts, action, state, r.completion_ts)
            )
        )
    m = S.instant_meta.c
    cache: dict[tuple[str, int], bytes] = {}
    if any(i.state is State.COMPLETED and i.action == "replacecommit" for i in instants):
        for meta in conn.execute(
            sa.select(m.ts, m.state, m.data).where(
                m.tbl_id == table.tbl_id, m.state == COMPLETED, m.action == S.ACTION_CODES["replacecommit"]
            )
        ):
            cache[(meta.ts, meta.state)] = bytes(meta.data)
    codes = {v: k for k, v in _STATES.items()}

    def read(instant: Instant) -> bytes:
        key = (instant.requested_time, codes[instant.state])
        if key not in cache:
            data = conn.execute(
                sa.select(m.data).where(m.tbl_id == table.tbl_id, m.ts == key[0], m.state == key[1])
            ).scalar_one_or_none()
            cache[key] = bytes(data or b"")
        return cache[key]

    return Timeline(instants, reader=read, name=f"metastore {table.db}.{table.name}")


class DbListing:
    """A :class:`~hudi_md.table.listing.ListingSource` over ``partitions`` and ``files``: the live
    files (as of ``as_of``: also those a later instant deleted; ``later``: as of the table version
    before those instants, :func:`~hudi_md.metastore_server.as_of.later_instants`)."""

    name = "metastore"

    def __init__(
        self, conn: Connection, table: TableRow, as_of: str | None = None, later: sa.Select[Any] | None = None
    ) -> None:
        self.conn = conn
        self.table = table
        self.as_of = as_of
        self.later = later
        self._partitions: list[str] | None = None
        self._files: dict[str, list[FileEntry]] = {}
        self._all_loaded = False

    def all_partitions(self) -> list[str]:
        if self._partitions is None:
            p = S.partitions.c
            query = sa.select(p.part_name).where(p.tbl_id == self.table.tbl_id, partition_live(self.later))
            if self.as_of is not None:
                query = query.where(p.created_instant <= self.as_of)
            self._partitions = sorted(self.conn.execute(query).scalars())
        return list(self._partitions)

    def load_all(self) -> None:
        """Every partition's files in one statement (instead of one per batch of partitions)."""
        if self._all_loaded:
            return
        self._files = {p: [] for p in self.all_partitions()}
        self._read(None)
        self._all_loaded = True

    def _read(self, names: Sequence[str] | None) -> None:
        f, p = S.files.c, S.partitions.c
        query = (
            sa.select(p.part_name, f.name, f.size)
            .select_from(S.files.join(S.partitions, p.part_id == f.part_id))
            .where(
                f.tbl_id == self.table.tbl_id, partition_live(self.later), file_live(self.later, self.as_of)
            )
        )
        if names is not None:
            query = query.where(p.part_name.in_(names))
        for r in self.conn.execute(query):
            self._files.setdefault(r.part_name, []).append(FileEntry(r.name, int(r.size)))

    def files_in_partitions(self, partitions: Sequence[str]) -> dict[str, list[FileEntry]]:
        missing = [p for p in partitions if p not in self._files]
        if missing and not self._all_loaded:
            for chunk in _chunks(missing):
                for name in chunk:
                    self._files.setdefault(name, [])
                self._read(chunk)
        return {p: list(self._files.get(p, [])) for p in partitions}


def _file_out(partition: str, name: str, size: int, file_id: str, instant: str) -> P.FileOut:
    return P.FileOut(partition=partition, name=name, size=size, file_id=file_id, instant=instant)


def slice_out(s: FileSlice) -> P.FileSliceOut:
    base = s.base_file
    return P.FileSliceOut(
        partition=s.partition_path,
        file_id=s.file_id,
        base_instant=s.base_instant,
        base_file=None
        if base is None
        else _file_out(base.partition_path, base.name, base.size, base.file_id, base.instant),
        log_files=[
            _file_out(lf.partition_path, lf.name, lf.size, lf.file_id, lf.instant) for lf in s.log_files
        ],
    )


def file_system_view(
    conn: Connection, table: TableRow, as_of: str | None = None, version: int | None = None
) -> tuple[FileSystemView, DbListing]:
    """The view as of ``as_of`` (an instant time) at table version ``version`` (None: the latest)."""
    config = table_config(table, table_params(conn, table.tbl_id))
    later = later_instants(table, version)
    listing = DbListing(conn, table, as_of, later)
    timeline = db_timeline(conn, table, later_set(conn, later))
    return FileSystemView(config, timeline, listing, as_of=as_of), listing


def latest_slices(conn: Connection, table: TableRow, query: P.SliceQuery) -> list[P.FileSliceOut]:
    if query.as_of is not None and not query.as_of.isdigit():
        raise invalid(f"as_of {query.as_of!r} is not an instant time")
    check_version(table, query.version)
    view, listing = file_system_view(conn, table, query.as_of, query.version)
    if query.partitions is None:
        listing.load_all()
        slices = view.latest_file_slices(None)
    else:
        slices = view.latest_file_slices(list(dict.fromkeys(query.partitions)))
    return [slice_out(s) for s in slices]


def plan(conn: Connection, table: TableRow, query: P.PlanQuery) -> P.PlanAnswer:
    """One plan in one transaction: the partitions (pruned in SQL by ``query.filter``) and their
    latest slices, as of ``query.version`` (and ``query.as_of``)."""
    check_version(table, query.version)
    view, listing = file_system_view(conn, table, query.as_of, query.version)
    names: list[str] | None
    if query.filter is not None:
        pruning = P.PartitionQuery(filter=query.filter, version=query.version)
        found = partition_service.prune(conn, table, pruning)
        names = sorted(p.path for p in found)
        if query.partitions is not None:
            names = sorted(set(names) & set(query.partitions))
    elif query.partitions is not None:
        names = sorted(set(query.partitions))
    else:
        listing.load_all()
        names = None
    slices = view.latest_base_files(names) if query.read_optimized else view.latest_file_slices(names)
    return P.PlanAnswer(
        partitions=names if names is not None else listing.all_partitions(),
        slices=[slice_out(s) for s in sorted(slices, key=lambda s: (s.partition_path, s.file_id))],
    )


def files(conn: Connection, table: TableRow, partition: str | None, after: str | None) -> list[P.FileOut]:
    """Live files (of one partition, or all), written by instants requested after ``after``."""
    f, p = S.files.c, S.partitions.c
    query = (
        sa.select(p.part_name, f.name, f.size, f.file_id, f.instant)
        .select_from(S.files.join(S.partitions, p.part_id == f.part_id))
        .where(f.tbl_id == table.tbl_id, f.is_deleted == sa.false())
        .order_by(p.part_name, f.name)
    )
    if partition is not None:
        query = query.where(p.part_name == partition)
    if after is not None:
        query = query.where(f.instant > after)
    return [_file_out(r.part_name, r.name, int(r.size), r.file_id, r.instant) for r in conn.execute(query)]
