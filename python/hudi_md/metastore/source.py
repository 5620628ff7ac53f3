"""A table as the metastore knows it: its timeline from the timeline service, its partitions (pruned
in SQL) from the partition service and its files from the snapshot service, for a
:class:`~hudi_md.table.state.TableState` to plan from instead of reading the MDT's ``files``
partition.

**Never staler than storage.** The state lists the table's own timeline first (one listing request)
and hands it to :meth:`MetastoreTable.state`, which asks the server for its timeline: when an
instant completed on storage is not completed on the server (a completion the server missed: its
writer warned), the server is asked again for up to :data:`CATCH_UP_WAIT_S` (a writer tells the
server right after storage), then the table is planned from its own MDT with a warning naming the
instant (``hudi-md metastore sync`` brings the server up to date).

**Never torn.** The timeline comes with the table version it is as of (one request), and every
later request of the plan (partitions, slices) carries that version: the server answers as of it
(:mod:`hudi_md.metastore_server.as_of`), so a plan sees one state while other writers commit.

The snapshot service follows completed instants asynchronously: a snapshot that has not yet applied
every version up to the plan's is waited for a moment, then the table is read through its MDT (or
storage) as without the metastore, with a warning; it is never planned from a stale snapshot.
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from hudi_md.errors import InvalidOptionError, MetastoreError
from hudi_md.metastore import protocol as P
from hudi_md.metastore.client import MetastoreClient
from hudi_md.planning.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    Expression,
    LiteralPredicate,
    Not,
    Op,
    Or,
    SetPredicate,
    UnaryPredicate,
)
from hudi_md.table.listing import FileEntry
from hudi_md.table.timeline import COMPLETES_AS, Instant, State, Timeline

log = logging.getLogger(__name__)

SYNC_WAIT_S = 5.0
# how long the server may take to record the completions the table's own timeline shows (a writer
# tells it right after storage)
CATCH_UP_WAIT_S = 1.0
_POLL_S = 0.05
_STATES = {"requested": State.REQUESTED, "inflight": State.INFLIGHT, "completed": State.COMPLETED}
_STATE_NAMES = {v: k for k, v in _STATES.items()}


@dataclass(frozen=True)
class TableRef:
    db: str
    table: str
    location: str


def resolve_table(client: MetastoreClient, name_or_location: str) -> TableRef | None:
    """The registered table named ``db.table``, or registered at a location; None when the
    location has no registered table."""
    db, dot, table = name_or_location.partition(".")
    if dot and "/" not in name_or_location and ":" not in name_or_location:
        t = client.table(db, table)
        return TableRef(t.db, t.name, t.location)
    found = client.tables_at(name_or_location.rstrip("/"))
    if not found:
        # Spark's data source qualifies a name it was given as a path (file:/<cwd>/db.table)
        base = name_or_location.rstrip("/").rsplit("/", 1)[-1]
        db, dot, table = base.partition(".")
        if dot and P.NAME_RE.match(db) and P.NAME_RE.match(table):
            try:
                t = client.table(db, table)
            except MetastoreError as e:
                if e.code != P.ErrorCode.not_found.value:
                    raise
                return None
            return TableRef(t.db, t.name, t.location)
        return None
    if len(found) > 1:
        names = ", ".join(f"{t.db}.{t.name}" for t in found)
        raise InvalidOptionError(f"{name_or_location} is registered as several tables ({names}): name one")
    return TableRef(found[0].db, found[0].name, found[0].location)


class MetastoreTable:
    """A :class:`~hudi_md.table.state.TableSource`: one registered table on the server."""

    name = "metastore"

    def __init__(self, client: MetastoreClient, ref: TableRef) -> None:
        self.client = client
        self.ref = ref

    def state(self, on_storage: Timeline) -> MetastoreState | None:
        """The table as the server has it now: its timeline and the table version that is as of
        (one request), when it holds every instant completed in ``on_storage`` (the table's own
        timeline, listed before) and the snapshot applied every version up to it (waiting up to
        :data:`CATCH_UP_WAIT_S` and :data:`SYNC_WAIT_S` for those); otherwise None, with a
        warning: the caller plans from the table's own metadata."""
        name = f"{self.ref.db}.{self.ref.table}"
        done = {i.requested_time for i in on_storage.completed()}
        deadline = time.monotonic() + CATCH_UP_WAIT_S
        while True:
            got = self.client.timeline(self.ref.db, self.ref.table)
            missing = sorted(done - {i.requested_time for i in got.instants if i.state == "completed"})
            if not missing:
                break
            if time.monotonic() >= deadline:
                warnings.warn(
                    f"hudi-md: the metastore has not recorded {len(missing)} instant(s) of {name} that "
                    f"completed on the table's storage (the newest: {missing[-1]}); planning from the "
                    f"table's own metadata instead. Run 'hudi-md metastore sync {self.ref.location}' to "
                    "bring the metastore up to date",
                    RuntimeWarning,
                    stacklevel=4,
                )
                return None
            time.sleep(_POLL_S)
        status = got.snapshot
        deadline = time.monotonic() + SYNC_WAIT_S
        while status.synced_version < got.version:
            if status.status == "failed" or time.monotonic() >= deadline:
                warnings.warn(
                    f"hudi-md: the metastore's snapshot of {name} has not applied every completed "
                    f"instant ({status.status}, {len(status.pending)} pending); planning from the "
                    "table's own metadata instead",
                    RuntimeWarning,
                    stacklevel=4,
                )
                return None
            time.sleep(_POLL_S)
            status = self.client.snapshot_status(self.ref.db, self.ref.table)
        instants = [_instant(i) for i in got.instants]

        def read(instant: Instant) -> bytes:
            return self.client.instant_metadata(
                self.ref.db, self.ref.table, instant.requested_time, _STATE_NAMES[instant.state]
            )

        timeline = Timeline(instants, reader=read, name=f"metastore {name}")
        return MetastoreState(self.client, self.ref, got.version, timeline)


class MetastoreState:
    """A :class:`~hudi_md.table.state.SourceState`: a registered table's timeline as the server
    recorded it at table version ``version``, and listings as of that version."""

    def __init__(self, client: MetastoreClient, ref: TableRef, version: int, timeline: Timeline) -> None:
        self.client = client
        self.ref = ref
        self.version = version
        self.timeline = timeline

    def listing(self, as_of: str | None = None) -> MetastoreListing:
        return MetastoreListing(self.client, self.ref, as_of, self.version)


class MetastoreListing:
    """A :class:`~hudi_md.table.listing.ListingSource` over the partition and snapshot services:
    the files of the latest slices (as of an instant), one request for any number of partitions;
    and partitions pruned in SQL (:meth:`matching_partitions`). ``version``: the table version
    every request is answered as of (None: the latest)."""

    name = "metastore"

    def __init__(
        self, client: MetastoreClient, ref: TableRef, as_of: str | None, version: int | None = None
    ) -> None:
        self.client = client
        self.ref = ref
        self.as_of = as_of
        self.version = version
        self._partitions: list[str] | None = None

    def all_partitions(self) -> list[str]:
        if self._partitions is None:
            found = self.client.partitions(self.ref.db, self.ref.table, version=self.version)
            self._partitions = sorted(p.path for p in found)
        return list(self._partitions)

    def matching_partitions(self, expr: Expression, partition_fields: Sequence[str]) -> list[str]:
        """The partitions whose values may satisfy ``expr``: its part on partition columns, as one
        SQL query on the server (the rest of ``expr`` cannot prune partitions)."""
        where, _ = to_filter(expr, set(partition_fields))
        if where is None:
            return self.all_partitions()
        found = self.client.partitions(self.ref.db, self.ref.table, where, version=self.version)
        return sorted(p.path for p in found)

    def files_in_partitions(self, partitions: Sequence[str]) -> dict[str, list[FileEntry]]:
        out: dict[str, list[FileEntry]] = {p: [] for p in partitions}
        if not partitions:
            return out
        for s in self.client.slices(
            self.ref.db, self.ref.table, partitions, self.as_of, version=self.version
        ):
            files = ([s.base_file] if s.base_file is not None else []) + list(s.log_files)
            out.setdefault(s.partition, []).extend(FileEntry(f.name, f.size) for f in files)
        return out


def _instant(i: P.Instant) -> Instant:
    state = _STATES[i.state]
    action = COMPLETES_AS.get(i.action, i.action) if state is State.COMPLETED else i.action
    return Instant(i.requested_time, action, state, i.completion_time)


# --- expressions -> the partition service's filters ----------------------------------------------------

_COMPARISONS = {Op.EQ: "eq", Op.NE: "ne", Op.LT: "lt", Op.LE: "le", Op.GT: "gt", Op.GE: "ge"}


def to_filter(expr: Expression, columns: set[str]) -> tuple[P.Filter | None, bool]:
    """``expr``'s part on ``columns`` as a filter (None: nothing to prune by), and whether it is
    exactly ``expr`` (not only implied by it). Pruning keeps every partition the whole expression
    may hold: an ``and`` drops its other parts, an ``or`` or ``not`` over an inexact part prunes
    nothing."""
    if isinstance(expr, AlwaysTrue):
        return None, True
    if isinstance(expr, AlwaysFalse):
        return P.Filter(op="in", column=next(iter(columns), ""), values=[]), bool(columns)
    if isinstance(expr, And):
        parts = [to_filter(e, columns) for e in (expr.left, expr.right)]
        kept = [f for f, _ in parts if f is not None]
        exact = all(x for _, x in parts) and len(kept) == 2
        if not kept:
            return None, False
        return (kept[0] if len(kept) == 1 else P.Filter(op="and", args=kept)), exact
    if isinstance(expr, Or):
        parts = [to_filter(e, columns) for e in (expr.left, expr.right)]
        if any(f is None or not x for f, x in parts):
            return None, False
        return P.Filter(op="or", args=[f for f, _ in parts if f is not None]), True
    if isinstance(expr, Not):
        inner, exact = to_filter(expr.child, columns)
        if inner is None or not exact:
            return None, False
        return P.Filter(op="not", args=[inner]), True
    if isinstance(expr, (UnaryPredicate, LiteralPredicate, SetPredicate)) and expr.column in columns:
        if isinstance(expr, UnaryPredicate):
            return P.Filter(op="is_null" if expr.op is Op.IS_NULL else "not_null", column=expr.column), True
        if isinstance(expr, LiteralPredicate) and expr.op in _COMPARISONS:
            return P.Filter(op=_COMPARISONS[expr.op], column=expr.column, value=_plain(expr.value)), True  # type: ignore[arg-type]
        if isinstance(expr, SetPredicate):
            values = sorted((_plain(v) for v in expr.values), key=repr)
            inside = P.Filter(op="in", column=expr.column, values=values)
            return (inside if expr.op is Op.IN else P.Filter(op="not", args=[inside])), True
    return None, False


def _plain(value: Any) -> Any:
    """A filter value as JSON can carry it (dates and times as ISO text, as partition paths write them)."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, pa.Scalar):
        return _plain(value.as_py())
    return str(value) if not hasattr(value, "isoformat") else value.isoformat()


def open_source(client: MetastoreClient, ref: TableRef) -> MetastoreTable:
    try:
        client.snapshot_status(ref.db, ref.table)
    except MetastoreError as e:
        raise MetastoreError(f"{ref.db}.{ref.table}: {e}", e.code, e.status) from e
    return MetastoreTable(client, ref)
