"""A table as the metastore knows it: its timeline from the timeline service, its partitions (pruned
in SQL) from the partition service and its files from the snapshot service, for a
:class:`~hudi_md.table.state.TableState` to plan from instead of listing ``.hoodie/timeline`` and
reading the MDT's ``files`` partition.

The snapshot service follows completed instants asynchronously: a table whose snapshot has not yet
applied every completed instant of its timeline is waited for a moment, then read through its MDT
(or storage) as without the metastore, with a warning; it is never planned from a stale snapshot.
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
    """A :class:`~hudi_md.table.state.TableSource`: the timeline and listings of one registered
    table, from the server."""

    name = "metastore"

    def __init__(self, client: MetastoreClient, ref: TableRef) -> None:
        self.client = client
        self.ref = ref

    def timeline(self) -> Timeline:
        instants = [_instant(i) for i in self.client.instants(self.ref.db, self.ref.table)]

        def read(instant: Instant) -> bytes:
            return self.client.instant_metadata(
                self.ref.db, self.ref.table, instant.requested_time, _STATE_NAMES[instant.state]
            )

        return Timeline(instants, reader=read, name=f"metastore {self.ref.db}.{self.ref.table}")

    def in_step(self, timeline: Timeline) -> bool:
        """Whether the snapshot service applied every completed instant of ``timeline`` (waiting
        up to :data:`SYNC_WAIT_S` for it)."""
        latest = max((i.completion_time or i.requested_time for i in timeline.completed()), default=None)
        deadline = time.monotonic() + SYNC_WAIT_S
        while True:
            status = self.client.snapshot_status(self.ref.db, self.ref.table)
            if latest is None or (
                status.status != "failed"
                and not status.pending
                and (status.synced_completion_time or "") >= latest
            ):
                return True
            if time.monotonic() >= deadline:
                warnings.warn(
                    f"hudi-md: the metastore's snapshot of {self.ref.db}.{self.ref.table} has not applied "
                    f"every completed instant ({status.status}, {len(status.pending)} pending); planning "
                    "from the table's own metadata instead",
                    RuntimeWarning,
                    stacklevel=3,
                )
                return False
            time.sleep(0.1)

    def listing(self, as_of: str | None = None) -> MetastoreListing:
        return MetastoreListing(self.client, self.ref, as_of)


class MetastoreListing:
    """A :class:`~hudi_md.table.listing.ListingSource` over the partition and snapshot services:
    the files of the latest slices (as of an instant), one request for any number of partitions;
    and partitions pruned in SQL (:meth:`matching_partitions`)."""

    name = "metastore"

    def __init__(self, client: MetastoreClient, ref: TableRef, as_of: str | None) -> None:
        self.client = client
        self.ref = ref
        self.as_of = as_of
        self._partitions: list[str] | None = None

    def all_partitions(self) -> list[str]:
        if self._partitions is None:
            self._partitions = sorted(p.path for p in self.client.partitions(self.ref.db, self.ref.table))
        return list(self._partitions)

    def matching_partitions(self, expr: Expression, partition_fields: Sequence[str]) -> list[str]:
        """The partitions whose values may satisfy ``expr``: its part on partition columns, as one
        SQL query on the server (the rest of ``expr`` cannot prune partitions)."""
        where, _ = to_filter(expr, set(partition_fields))
        if where is None:
            return self.all_partitions()
        return sorted(p.path for p in self.client.partitions(self.ref.db, self.ref.table, where))

    def files_in_partitions(self, partitions: Sequence[str]) -> dict[str, list[FileEntry]]:
        out: dict[str, list[FileEntry]] = {p: [] for p in partitions}
        if not partitions:
            return out
        for s in self.client.slices(self.ref.db, self.ref.table, partitions, self.as_of):
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
