"""A table as the metastore knows it, for a :class:`~hudi_md.table.state.TableState` to plan from
instead of reading the MDT's ``files`` partition: opened with one request (its timeline and the table
version that is as of) and planned with one more (its partitions pruned in SQL and their latest
slices, as of that version: :class:`MetastorePlanSource`).

**Never staler than storage.** The state lists the table's own timeline, then compares it with the
server's (:meth:`MetastoreTable.state`): when an instant completed on storage is not completed on the
server (a completion the server missed: its writer warned), the server is asked again for up to
:data:`CATCH_UP_WAIT_S` (a writer tells the server right after storage), then the table is planned
from its own MDT with a warning naming the instant (``hudi-md metastore sync`` brings the server up
to date). The server applies every completed instant to its snapshot before it answers the open; a
snapshot it failed to apply is planned around the same way.

**Never torn.** Every request of a plan carries the table version the timeline is as of: the server
answers as of it (:mod:`hudi_md.metastore_server.as_of`), so a plan sees one state while other
writers commit.

This module and :mod:`hudi_md.metastore.plan_client` are the whole read path: no pydantic, no httpx
(their import alone costs more than a plan through the MDT).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

from hudi_md.errors import MetastoreError
from hudi_md.metastore.plan_client import PlanClient
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
from hudi_md.table.filenames import LogFileName
from hudi_md.table.fs_view import BaseFile, FileSlice, LogFile
from hudi_md.table.listing import FileEntry
from hudi_md.table.plan_source import Partitions, PlanHint, RecordLocator, StatsSource, partition_names
from hudi_md.table.timeline import COMPLETES_AS, Instant, State, Timeline

# how long the server may take to record the completions the table's own timeline shows (a writer
# tells it right after storage)
CATCH_UP_WAIT_S = 1.0
_POLL_S = 0.05
_STATES = {"requested": State.REQUESTED, "inflight": State.INFLIGHT, "completed": State.COMPLETED}
_STATE_NAMES = {v: k for k, v in _STATES.items()}
Filter = dict[str, Any]


def open_metastore_table(client: PlanClient, name_or_location: str) -> MetastoreTable:
    """The registered table named ``db.table`` or registered at a location (one request);
    :class:`MetastoreError` ``not_found`` when it is not registered."""
    try:
        answer = client.open(name_or_location)
    except MetastoreError as e:
        if e.code == "not_found":
            raise MetastoreError(
                f"{name_or_location} is not registered in the metastore {client.uri} (hudi-md metastore "
                f"register {name_or_location} --db D --table T)",
                "not_found",
                e.status,
            ) from e
        raise
    return MetastoreTable(client, name_or_location, answer)


class MetastoreTable:
    """A :class:`~hudi_md.table.state.TableSource`: one registered table on the server, as the
    open request found it."""

    name = "metastore"

    def __init__(self, client: PlanClient, ref: str, answer: dict[str, Any]) -> None:
        self.client = client
        self.ref = ref
        self.db: str = answer["db"]
        self.table: str = answer["table"]
        self.location: str = answer["location"]
        self._answer: dict[str, Any] | None = answer

    def state(self, on_storage: Timeline) -> MetastoreState | None:
        """The table as the server has it: its timeline and the table version that is as of, when
        it holds every instant completed in ``on_storage`` (the table's own timeline, listed
        after the open request or before this one; asked again for up to
        :data:`CATCH_UP_WAIT_S`) and its snapshot applied every version up to it; otherwise None,
        with a warning: the caller plans from the table's own metadata."""
        name = f"{self.db}.{self.table}"
        done = {i.requested_time for i in on_storage.completed()}
        deadline = time.monotonic() + CATCH_UP_WAIT_S
        while True:
            answer, self._answer = self._answer, None
            if answer is None:
                answer = self.client.open(f"{self.db}.{self.table}")
            got = answer["timeline"]
            recorded = {i["requested_time"] for i in got["instants"] if i["state"] == "completed"}
            missing = sorted(done - recorded)
            if not missing:
                break
            if time.monotonic() >= deadline:
                warnings.warn(
                    f"hudi-md: the metastore has not recorded {len(missing)} instant(s) of {name} that "
                    f"completed on the table's storage (the newest: {missing[-1]}); planning from the "
                    f"table's own metadata instead. Run 'hudi-md metastore sync {self.location}' to "
                    "bring the metastore up to date",
                    RuntimeWarning,
                    stacklevel=4,
                )
                return None
            time.sleep(_POLL_S)
        status = got["snapshot"]
        if status["synced_version"] < got["version"]:
            warnings.warn(
                f"hudi-md: the metastore's snapshot of {name} has not applied every completed instant "
                f"({status['status']}, {len(status['pending'])} pending: {status.get('message') or ''}); "
                "planning from the table's own metadata instead",
                RuntimeWarning,
                stacklevel=4,
            )
            return None
        instants = [_instant(i) for i in got["instants"]]
        db, table, client = self.db, self.table, self.client

        def read(instant: Instant) -> bytes:
            return client.instant_metadata(db, table, instant.requested_time, _STATE_NAMES[instant.state])

        timeline = Timeline(instants, reader=read, name=f"metastore {name}")
        return MetastoreState(client, db, table, int(got["version"]), timeline)


class MetastoreState:
    """A :class:`~hudi_md.table.state.SourceState`: a registered table's timeline as the server
    recorded it at table version ``version``, and what a plan reads as of that version."""

    def __init__(self, client: PlanClient, db: str, table: str, version: int, timeline: Timeline) -> None:
        self.client = client
        self.db = db
        self.table = table
        self.version = version
        self.timeline = timeline

    def plan_source(
        self, as_of: str | None, indexes: Callable[[], tuple[StatsSource | None, RecordLocator | None]]
    ) -> MetastorePlanSource:
        return MetastorePlanSource(self, as_of, indexes)

    def listing(self, as_of: str | None = None) -> MetastoreListing:
        return MetastoreListing(self.plan_source(as_of, lambda: (None, None)))


class MetastorePlanSource:
    """A :class:`~hudi_md.table.plan_source.PlanSource`: the server prunes partitions by the
    filter's part on partition columns (in SQL) and answers their latest slices in the same
    request, as of the plan's table version; the table's MDT, when it has indexes, prunes further
    (``indexes``: its stats and record index, opened only when a plan asks)."""

    name = "metastore"

    def __init__(
        self,
        state: MetastoreState,
        as_of: str | None,
        indexes: Callable[[], tuple[StatsSource | None, RecordLocator | None]],
    ) -> None:
        self.state = state
        self.as_of = as_of
        self._indexes = indexes
        self._opened: tuple[StatsSource | None, RecordLocator | None] | None = None
        # the slices of the last answer, by partition (a plan asks for those it was told of)
        self._answers: dict[tuple[Any, ...], tuple[list[str], dict[str, list[FileSlice]]]] = {}

    @property
    def stats(self) -> StatsSource | None:
        return self._open_indexes()[0]

    @property
    def record_locations(self) -> RecordLocator | None:
        return self._open_indexes()[1]

    def _open_indexes(self) -> tuple[StatsSource | None, RecordLocator | None]:
        if self._opened is None:
            self._opened = self._indexes()
        return self._opened

    def partitions(self, hint: PlanHint) -> Partitions:
        where, exact = (None, True) if hint.expr is None else to_filter(hint.expr, set(hint.partition_fields))
        names, _ = self._plan(where, None, hint.read_optimized)
        return Partitions(names, "partitions_from_catalog" if where is not None else "partitions", exact)

    def latest_slices(
        self,
        partitions: Sequence[str] | pa.StringArray,
        *,
        read_optimized: bool = False,
        columnar: bool = False,
    ) -> list[FileSlice]:
        wanted = partition_names(partitions)
        known = self._covering(wanted, read_optimized)
        by_partition = known if known is not None else self._plan(None, wanted, read_optimized)[1]
        return [s for p in sorted(set(wanted)) for s in by_partition.get(p, ())]

    def _covering(self, wanted: list[str], read_optimized: bool) -> dict[str, list[FileSlice]] | None:
        """An answer already holding the slices of every ``wanted`` partition."""
        for (_, _, ro), (names, slices) in self._answers.items():
            if ro == read_optimized and set(wanted) <= set(names):
                return slices
        return None

    def _plan(
        self, where: Filter | None, partitions: list[str] | None, read_optimized: bool
    ) -> tuple[list[str], dict[str, list[FileSlice]]]:
        key = (repr(where), None if partitions is None else tuple(partitions), read_optimized)
        known = self._answers.get(key)
        if known is not None:
            return known
        query: dict[str, Any] = {"version": self.state.version, "read_optimized": read_optimized}
        if where is not None:
            query["filter"] = where
        if partitions is not None:
            query["partitions"] = partitions
        if self.as_of is not None:
            query["as_of"] = self.as_of
        answer = self.state.client.plan(self.state.db, self.state.table, query)
        by_partition: dict[str, list[FileSlice]] = {}
        for s in answer["slices"]:
            by_partition.setdefault(s["partition"], []).append(_slice(s))
        self._answers[key] = found = (list(answer["partitions"]), by_partition)
        return found


class MetastoreListing:
    """A :class:`~hudi_md.table.listing.ListingSource` over the plan route, for the readers that
    slice files themselves (a plan takes the server's slices as they are)."""

    name = "metastore"

    def __init__(self, source: MetastorePlanSource) -> None:
        self.source = source

    def all_partitions(self) -> list[str]:
        return list(self.source.partitions(PlanHint()).names)

    def files_in_partitions(self, partitions: Sequence[str]) -> dict[str, list[FileEntry]]:
        out: dict[str, list[FileEntry]] = {p: [] for p in partitions}
        if not partitions:
            return out
        for s in self.source.latest_slices(list(partitions)):
            files = ([s.base_file] if s.base_file is not None else []) + list(s.log_files)
            out.setdefault(s.partition_path, []).extend(FileEntry(f.name, f.size) for f in files)
        return out


def _slice(s: dict[str, Any]) -> FileSlice:
    base = s.get("base_file")
    logs = []
    for f in s.get("log_files") or ():
        parsed = LogFileName.parse(f["name"])
        if parsed is None:
            raise MetastoreError(
                f"the metastore answered a log file that is not one: {f['name']!r}", "internal"
            )
        logs.append(
            LogFile(
                f["partition"],
                f["name"],
                int(f["size"]),
                f["file_id"],
                f["instant"],
                parsed.version,
                parsed.write_token,
            )
        )
    return FileSlice(
        s["partition"],
        s["file_id"],
        s["base_instant"],
        None
        if base is None
        else BaseFile(base["partition"], base["name"], int(base["size"]), base["file_id"], base["instant"]),
        tuple(logs),
    )


def _instant(i: dict[str, Any]) -> Instant:
    state = _STATES[i["state"]]
    action = COMPLETES_AS.get(i["action"], i["action"]) if state is State.COMPLETED else i["action"]
    return Instant(i["requested_time"], action, state, i.get("completion_time"))


# --- expressions -> the partition service's filters ----------------------------------------------------

_COMPARISONS = {Op.EQ: "eq", Op.NE: "ne", Op.LT: "lt", Op.LE: "le", Op.GT: "gt", Op.GE: "ge"}


def to_filter(expr: Expression, columns: set[str]) -> tuple[Filter | None, bool]:
    """``expr``'s part on ``columns`` as a filter (None: nothing to prune by), and whether it is
    exactly ``expr`` (not only implied by it). Pruning keeps every partition the whole expression
    may hold: an ``and`` drops its other parts, an ``or`` or ``not`` over an inexact part prunes
    nothing."""
    if isinstance(expr, AlwaysTrue):
        return None, True
    if isinstance(expr, AlwaysFalse):
        return {"op": "in", "column": next(iter(columns), ""), "values": []}, bool(columns)
    if isinstance(expr, And):
        parts = [to_filter(e, columns) for e in (expr.left, expr.right)]
        kept = [f for f, _ in parts if f is not None]
        exact = all(x for _, x in parts) and len(kept) == 2
        if not kept:
            return None, False
        return (kept[0] if len(kept) == 1 else {"op": "and", "args": kept}), exact
    if isinstance(expr, Or):
        parts = [to_filter(e, columns) for e in (expr.left, expr.right)]
        if any(f is None or not x for f, x in parts):
            return None, False
        return {"op": "or", "args": [f for f, _ in parts if f is not None]}, True
    if isinstance(expr, Not):
        inner, exact = to_filter(expr.child, columns)
        if inner is None or not exact:
            return None, False
        return {"op": "not", "args": [inner]}, True
    if isinstance(expr, (UnaryPredicate, LiteralPredicate, SetPredicate)) and expr.column in columns:
        if isinstance(expr, UnaryPredicate):
            return {"op": "is_null" if expr.op is Op.IS_NULL else "not_null", "column": expr.column}, True
        if isinstance(expr, LiteralPredicate) and expr.op in _COMPARISONS:
            return {"op": _COMPARISONS[expr.op], "column": expr.column, "value": _plain(expr.value)}, True
        if isinstance(expr, SetPredicate):
            values = sorted((_plain(v) for v in expr.values), key=repr)
            inside = {"op": "in", "column": expr.column, "values": values}
            return (inside if expr.op is Op.IN else {"op": "not", "args": [inside]}), True
    return None, False


def _plain(value: Any) -> Any:
    """A filter value as JSON can carry it (dates and times as ISO text, as partition paths write them)."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, pa.Scalar):
        return _plain(value.as_py())
    return str(value) if not hasattr(value, "isoformat") else value.isoformat()
