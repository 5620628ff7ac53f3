"""The timeline service: instant times, instants and their states, metadata, heartbeats, and the
write-conflict check at completion.

* **Instant times** come from ``tbl_timestamp`` by compare-and-set: read the table's last time,
  compute the next (the clock in the table's timeline zone, or 1 ms after the last time and
  ``after``), ``UPDATE ... WHERE ts = <read>``; a lost race (another process moved it) reads again.
  Times a client brings (its own requested or completion times) push the last time forward, so
  the server never hands out a time at or before one in use.
* **States** move ``requested → inflight → completed``; the transition names the state it expects
  and loses (409 ``conflict``) when the instant is elsewhere. Repeating a transition that happened
  with the same metadata answers as it did (a client whose answer was lost retries safely).
* **Heartbeats**: an instant created with ``heartbeat_s`` has ``duration`` (ms) and ``start_ts``
  (the last beat, epoch ms). Past ``start_ts + duration`` the instant is *released*: still listed
  as pending (with ``heartbeat_expires`` in the past: clients treat it as failed), no longer
  protected from deletion (a live one is: 409), no longer beatable; a released write (commit,
  deltacommit, replacecommit) can never complete (another writer may be rolling its files back),
  while a released table service (compaction, clustering, clean, ...) is taken over by whoever
  moves it on (its heartbeat restarts), as Hudi re-runs a dead runner's plan. Without a heartbeat
  an instant never expires and anyone may delete it (Hudi's writers without OCC roll back any
  pending write).
* **Completion** (under the table's row lock, so completions of one table are serialized): the
  metadata must parse; a write (commit, deltacommit, replacecommit) is checked against every write
  that completed since it started (completion time after its requested time, or a table version
  after the one it was created at) and every pending compaction / clustering plan, as
  :mod:`hudi_md.write.conflicts` does on storage (Hudi's
  ``SimpleConcurrentFileWritesConflictResolutionStrategy``): overlapping ``(partition, file id)``
  pairs are a 409 ``conflict``. Then the instant is completed, the table version advanced and a
  ``tbl_version`` row queued for the snapshot sync.
"""

from __future__ import annotations

import base64
import binascii
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from hudi_md.errors import CommitMetadataError
from hudi_md.formats.commit_metadata import parse_instant_metadata
from hudi_md.metastore import protocol as P
from hudi_md.metastore_server import schema as S
from hudi_md.metastore_server.catalog import TableRow, find_table, lock_table, now, table_params
from hudi_md.metastore_server.db import write_tx
from hudi_md.metastore_server.errors import ApiError, conflict, exists, invalid, not_found
from hudi_md.metastore_server.partitions import remove_empty_partitions
from hudi_md.metastore_server.validation import check_instant_time
from hudi_md.table.config import TableConfig
from hudi_md.table.timeline import (
    ACTIONS,
    CLUSTERING,
    COMPACTION,
    COMPLETES_AS,
    WRITE_ACTIONS,
    instant_to_datetime,
)
from hudi_md.write.conflicts import written_file_groups
from hudi_md.write.plans import clustering_inputs, compaction_inputs

REQUESTED = S.STATE_CODES["requested"]
INFLIGHT = S.STATE_CODES["inflight"]
COMPLETED = S.STATE_CODES["completed"]
_CAS_ATTEMPTS = 1000


def now_ms() -> int:
    return int(time.time() * 1000)


def completed_action(action: str) -> str:
    return COMPLETES_AS.get(action, action)


def _format(dt: datetime) -> str:
    return dt.strftime("%Y%m%d%H%M%S") + f"{dt.microsecond // 1000:03d}"


def next_instant_time(last: str, after: str | None, utc: bool) -> str:
    """The clock as a 17-digit instant time, or 1 ms after ``last`` / ``after`` if the clock is
    not past them."""
    clock = _format(datetime.now(timezone.utc) if utc else datetime.now())
    floor = max(last, after or "")
    if clock > floor:
        return clock
    return _format(instant_to_datetime(floor) + timedelta(milliseconds=1))


def decode_b64(value: str | None, what: str) -> bytes | None:
    if value is None:
        return None
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as e:
        raise invalid(f"{what} is not base64: {e}") from e


# --- instant times -----------------------------------------------------------------------------------


def _utc_timeline(params: Mapping[str, str]) -> bool:
    """Whether the table's instant times are UTC (``hoodie.table.timeline.timezone``, as
    ``hoodie.properties`` is read)."""
    return TableConfig(props=params).timeline_timezone.upper() == "UTC"


def new_instant_time(engine: Engine, db: str, table: str, after: str | None) -> str:
    if after is not None:
        check_instant_time("after", after)
    ts = S.tbl_timestamp
    for _ in range(_CAS_ATTEMPTS):
        with write_tx(engine) as conn:
            row = find_table(conn, db, table)
            utc = _utc_timeline(table_params(conn, row.tbl_id))
            last = conn.execute(sa.select(ts.c.ts).where(ts.c.tbl_id == row.tbl_id)).scalar_one()
            candidate = next_instant_time(last, after, utc)
            done = conn.execute(
                ts.update().where(ts.c.tbl_id == row.tbl_id, ts.c.ts == last).values(ts=candidate)
            )
            if done.rowcount == 1:
                return candidate
    raise ApiError(503, P.ErrorCode.internal, "could not allocate an instant time (too much contention)")


def _advance_timestamp(conn: Connection, tbl_id: int, at_least: str) -> None:
    """Push the table's last instant time to ``at_least`` unless it is later already."""
    ts = S.tbl_timestamp
    conn.execute(ts.update().where(ts.c.tbl_id == tbl_id, ts.c.ts < at_least).values(ts=at_least))


# --- instants ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class InstantRow:
    instant_id: int
    ts: str
    action: str  # as requested (compaction stays compaction once completed)
    state: int
    duration: int | None
    start_ts: int | None
    completion_ts: str | None
    base_version: int

    @property
    def expires_ms(self) -> int | None:
        if self.duration is None or self.start_ts is None or self.state == COMPLETED:
            return None
        return self.start_ts + self.duration

    def expired(self, at_ms: int) -> bool:
        expires = self.expires_ms
        return expires is not None and at_ms > expires

    def model(self) -> P.Instant:
        expires = self.expires_ms
        return P.Instant(
            requested_time=self.ts,
            action=completed_action(self.action) if self.state == COMPLETED else self.action,
            state=S.STATE_NAMES[self.state],  # type: ignore[arg-type]  # a str: pydantic checks the Literal
            completion_time=self.completion_ts,
            heartbeat_expires=None if expires is None else expires / 1000.0,
        )


_INSTANT_COLUMNS = (
    S.instant.c.instant_id,
    S.instant.c.ts,
    S.instant.c.action,
    S.instant.c.state,
    S.instant.c.duration,
    S.instant.c.start_ts,
    S.instant.c.completion_ts,
    S.instant.c.base_version,
)


def _instant_row(r: Any) -> InstantRow:
    return InstantRow(
        r.instant_id,
        r.ts,
        S.ACTION_NAMES[r.action],
        r.state,
        r.duration,
        r.start_ts,
        r.completion_ts,
        r.base_version,
    )


def instant_rows(conn: Connection, tbl_id: int) -> list[InstantRow]:
    rows = conn.execute(
        sa.select(*_INSTANT_COLUMNS).where(S.instant.c.tbl_id == tbl_id).order_by(S.instant.c.ts)
    )
    return [_instant_row(r) for r in rows]


def find_instant(conn: Connection, tbl_id: int, ts: str) -> InstantRow:
    r = conn.execute(
        sa.select(*_INSTANT_COLUMNS).where(S.instant.c.tbl_id == tbl_id, S.instant.c.ts == ts)
    ).first()
    if r is None:
        raise not_found(f"no instant {ts}")
    return _instant_row(r)


def _store_meta(conn: Connection, tbl_id: int, ts: str, action: str, state: int, data: bytes) -> None:
    conn.execute(
        S.instant_meta.insert().values(
            tbl_id=tbl_id,
            ts=ts,
            action=S.ACTION_CODES[action],
            state=state,
            data=data,
            create_time=now(),
        )
    )


def meta_bytes(conn: Connection, tbl_id: int, ts: str, state: int) -> bytes | None:
    m = S.instant_meta.c
    data = conn.execute(
        sa.select(m.data).where(m.tbl_id == tbl_id, m.ts == ts, m.state == state)
    ).scalar_one_or_none()
    return None if data is None else bytes(data)


def _check_action(action: str) -> str:
    if action not in ACTIONS:
        raise invalid(f"unknown action {action!r} (one of {', '.join(sorted(ACTIONS))})")
    return action


def create_instant(conn: Connection, table: TableRow, body: P.InstantIn) -> P.Instant:
    action = _check_action(body.action)
    if body.heartbeat_s is not None and not 0 < body.heartbeat_s <= 86400:
        raise invalid("heartbeat_s is in (0, 86400]")
    plan = decode_b64(body.metadata_b64, "metadata_b64") or b""
    i = S.instant.c
    if conn.execute(
        sa.select(i.instant_id).where(i.tbl_id == table.tbl_id, i.ts == body.requested_time)
    ).first():
        raise exists(f"instant {body.requested_time} exists")
    state = S.STATE_CODES[body.state]
    beat = body.heartbeat_s is not None
    try:
        conn.execute(
            S.instant.insert().values(
                tbl_id=table.tbl_id,
                ts=body.requested_time,
                action=S.ACTION_CODES[action],
                state=state,
                duration=int(body.heartbeat_s * 1000) if body.heartbeat_s is not None else None,
                start_ts=now_ms() if beat else None,
                completion_ts=None,
                base_version=table.version,
            )
        )
    except sa.exc.IntegrityError as e:  # created meanwhile by another process
        raise exists(f"instant {body.requested_time} exists") from e
    _store_meta(conn, table.tbl_id, body.requested_time, action, REQUESTED, plan)
    _advance_timestamp(conn, table.tbl_id, body.requested_time)
    return find_instant(conn, table.tbl_id, body.requested_time).model()


def heartbeat(conn: Connection, table: TableRow, ts: str) -> P.Instant:
    row = find_instant(conn, table.tbl_id, ts)
    at = now_ms()
    if row.state == COMPLETED:
        raise conflict(f"instant {ts} is completed")
    if row.expired(at):
        raise conflict(f"instant {ts}'s heartbeat expired: it is released (treated as a failed write)")
    if row.duration is not None:
        conn.execute(S.instant.update().where(S.instant.c.instant_id == row.instant_id).values(start_ts=at))
    return find_instant(conn, table.tbl_id, ts).model()


def delete_instant(conn: Connection, table: TableRow, ts: str) -> None:
    """A pending instant rolled back (refused while its heartbeat is live), or a completed one a
    rollback undid: its files are deleted with it (a rollback deletes them on storage)."""
    lock_table(conn, table.tbl_id)
    row = find_instant(conn, table.tbl_id, ts)
    at = now_ms()
    if row.state != COMPLETED and row.expires_ms is not None and not row.expired(at):
        raise conflict(
            f"instant {ts} is pending with a live heartbeat (until {row.expires_ms / 1000:.3f}): "
            "only a released instant is rolled back by others"
        )
    if row.state == COMPLETED:
        f = S.files.c
        conn.execute(
            S.files.update()
            .where(f.tbl_id == table.tbl_id, f.instant == ts, f.is_deleted == sa.false())
            .values(is_deleted=True, deleted_instant=ts, update_time=now())
        )
        remove_empty_partitions(conn, table.tbl_id, [ts])
    v = S.tbl_version.c
    conn.execute(S.tbl_version.update().where(v.instant_id == row.instant_id).values(instant_id=None))
    m = S.instant_meta.c
    conn.execute(S.instant_meta.delete().where(m.tbl_id == table.tbl_id, m.ts == ts))
    conn.execute(S.instant.delete().where(S.instant.c.instant_id == row.instant_id))


def instant_metadata(conn: Connection, table: TableRow, ts: str, state: str | None) -> bytes:
    row = find_instant(conn, table.tbl_id, ts)
    code = row.state if state is None else S.STATE_CODES.get(state)
    if code is None:
        raise invalid(f"state is requested, inflight or completed, not {state!r}")
    if code > row.state:
        raise not_found(f"instant {ts} is {S.STATE_NAMES[row.state]}, not {state}")
    data = meta_bytes(conn, table.tbl_id, ts, code)
    return b"" if data is None else data


# --- transitions -------------------------------------------------------------------------------------

_NEXT = {("requested", "inflight"), ("inflight", "completed")}


# (completed action, its metadata) -> raises when the snapshot sync could not apply it
MetadataCheck = Callable[[str, Mapping[str, Any]], object]


def transition(
    conn: Connection, table: TableRow, ts: str, body: P.Transition, check: MetadataCheck | None = None
) -> tuple[P.Instant, bool]:
    """Apply a transition; returns the instant and whether a completion was recorded (the
    snapshot sync has work). ``check`` is given a completion's metadata first: metadata it (or
    the write-conflict check) cannot read is refused (400), so no completed instant is one the
    sync fails on."""
    if (body.from_state, body.to_state) not in _NEXT:
        raise invalid(
            f"a transition goes requested → inflight or inflight → completed, not {body.from_state} → "
            f"{body.to_state}"
        )
    data = decode_b64(body.metadata_b64, "metadata_b64") or b""
    if body.to_state == "completed":
        lock_table(conn, table.tbl_id)
    row = find_instant(conn, table.tbl_id, ts)
    if body.action not in (row.action, completed_action(row.action)):
        raise conflict(f"instant {ts} is a {row.action}, not a {body.action}")
    to_code = S.STATE_CODES[body.to_state]
    if row.state == to_code:
        # A retry of what happened (its answer lost on the way) is answered again.
        if meta_bytes(conn, table.tbl_id, ts, to_code) == data:
            return row.model(), False
        raise conflict(f"instant {ts} is {body.to_state} already, with other metadata")
    if row.state != S.STATE_CODES[body.from_state]:
        raise conflict(f"instant {ts} is {S.STATE_NAMES[row.state]}, not {body.from_state}")
    at = now_ms()
    if row.expired(at):
        if row.action in WRITE_ACTIONS:
            # Another writer may be rolling its files back: it can never complete.
            raise conflict(f"instant {ts}'s heartbeat expired: it is released (treated as a failed write)")
        # A table service whose runner died: whoever runs the plan now takes it over.
        conn.execute(S.instant.update().where(S.instant.c.instant_id == row.instant_id).values(start_ts=at))
    if body.to_state == "inflight":
        # Conditional on the state read above: of two racing transitions one updates the row.
        moved = conn.execute(
            S.instant.update()
            .where(S.instant.c.instant_id == row.instant_id, S.instant.c.state == REQUESTED)
            .values(state=INFLIGHT)
        )
        if moved.rowcount != 1:
            raise conflict(f"instant {ts} changed meanwhile")
        _store_meta(conn, table.tbl_id, ts, row.action, INFLIGHT, data)
        return find_instant(conn, table.tbl_id, ts).model(), False
    return _complete(conn, table, row, data, body.completion_time, check), True


def _complete(
    conn: Connection,
    table: TableRow,
    row: InstantRow,
    data: bytes,
    completion: str | None,
    check: MetadataCheck | None = None,
) -> P.Instant:
    action = completed_action(row.action)
    try:
        meta = parse_instant_metadata(data, f"{row.ts}.{action}")
    except CommitMetadataError as e:
        raise invalid(f"the completed metadata of {row.ts} does not parse: {e}") from e
    try:
        if not isinstance(meta, Mapping):
            raise TypeError(f"a JSON object, not {type(meta).__name__}")
        if check is not None:
            check(action, meta)
        if row.action in WRITE_ACTIONS:
            check_conflicts(conn, table, row, meta)
    except (CommitMetadataError, AttributeError, TypeError, ValueError, KeyError) as e:
        raise invalid(f"the completed metadata of {row.ts} is not {action} metadata: {e}") from e
    if completion is None:
        completion = _completion_time(conn, table, row.ts)
    else:
        check_instant_time("completion_time", completion)
        if completion < row.ts:
            raise invalid(f"completion time {completion} is before the requested time {row.ts}")
    _advance_timestamp(conn, table.tbl_id, completion)
    # The table row is locked: the version read here is the one to advance.
    version = conn.execute(sa.select(S.tbl.c.version).where(S.tbl.c.tbl_id == table.tbl_id)).scalar_one() + 1
    conn.execute(S.tbl.update().where(S.tbl.c.tbl_id == table.tbl_id).values(version=version))
    conn.execute(
        S.instant.update()
        .where(S.instant.c.instant_id == row.instant_id)
        .values(state=COMPLETED, completion_ts=completion)
    )
    _store_meta(conn, table.tbl_id, row.ts, completed_action(row.action), COMPLETED, data)
    t = now()
    conn.execute(
        S.tbl_version.insert().values(
            tbl_id=table.tbl_id,
            version=version,
            instant_id=row.instant_id,
            ts=row.ts,
            completion_ts=completion,
            snapshot_status=S.SYNC_PENDING,
            create_time=t,
            update_time=t,
        )
    )
    return find_instant(conn, table.tbl_id, row.ts).model()


def _completion_time(conn: Connection, table: TableRow, after: str) -> str:
    # The table row is locked, so the read and the update cannot interleave with another
    # completion; new_instant_time's CAS still protects against plain allocations.
    ts = S.tbl_timestamp
    utc = _utc_timeline(table_params(conn, table.tbl_id))
    for _ in range(_CAS_ATTEMPTS):
        last = conn.execute(sa.select(ts.c.ts).where(ts.c.tbl_id == table.tbl_id)).scalar_one()
        candidate = next_instant_time(last, after, utc)
        if conn.execute(
            ts.update().where(ts.c.tbl_id == table.tbl_id, ts.c.ts == last).values(ts=candidate)
        ).rowcount:
            return candidate
    raise ApiError(503, P.ErrorCode.internal, "could not allocate a completion time (too much contention)")


def check_conflicts(conn: Connection, table: TableRow, row: InstantRow, meta: dict[str, Any]) -> None:
    ours = written_file_groups(meta)
    if not ours:
        return
    i, v = S.instant.c, S.tbl_version.c
    write_codes = [S.ACTION_CODES[a] for a in (*WRITE_ACTIONS, *COMPLETES_AS)]
    completed = conn.execute(
        sa.select(i.ts, i.action)
        .select_from(S.instant.outerjoin(S.tbl_version, v.instant_id == i.instant_id))
        .where(
            i.tbl_id == table.tbl_id,
            i.ts != row.ts,
            i.state == COMPLETED,
            i.action.in_(write_codes),
            sa.or_(i.completion_ts > row.ts, v.version > row.base_version),
        )
        .order_by(i.completion_ts)
    ).all()
    for other in completed:
        data = meta_bytes(conn, table.tbl_id, other.ts, COMPLETED) or b""
        theirs = written_file_groups(parse_instant_metadata(data, f"{other.ts}"))
        _refuse_overlap(row.ts, other.ts, completed_action(S.ACTION_NAMES[other.action]), ours & theirs)
    pending = conn.execute(
        sa.select(i.ts, i.action).where(
            i.tbl_id == table.tbl_id,
            i.ts != row.ts,
            i.state != COMPLETED,
            i.action.in_([S.ACTION_CODES[COMPACTION], S.ACTION_CODES[CLUSTERING]]),
        )
    ).all()
    for other in pending:
        try:
            plan = parse_instant_metadata(
                meta_bytes(conn, table.tbl_id, other.ts, REQUESTED) or b"", other.ts
            )
        except CommitMetadataError:
            plan = {}  # an unreadable plan reads no file group (as hudi-md's recovery treats one)
        action = S.ACTION_NAMES[other.action]
        if action == COMPACTION:
            theirs = {fg for fg, _ in compaction_inputs(plan)}
        else:
            theirs = set(clustering_inputs(plan))
        _refuse_overlap(row.ts, other.ts, action, ours & theirs)


def _refuse_overlap(ours: str, theirs: str, action: str, overlap: set[tuple[str, str]]) -> None:
    if overlap:
        groups = ", ".join(f"{p or '<root>'}/{f}" for p, f in sorted(overlap)[:5])
        more = f" and {len(overlap) - 5} more" if len(overlap) > 5 else ""
        raise conflict(
            f"write conflict: instant {ours} and {action} {theirs} both changed file groups {groups}{more}"
        )
