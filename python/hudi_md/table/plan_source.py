"""What a scan plan reads a table's metadata through: a :class:`PlanSource`.

A plan (:mod:`hudi_md.planning.planner`) asks a source for the partitions its filter may touch
(the source narrows them with what it can do: a catalog prunes by partition values in SQL, the
MDT looks partition paths up by key), then for the latest file slices of those partitions, and
uses the source's optional indexes (``stats``, ``record_locations``) to prune further. Three
sources implement it: the table's storage listing (:class:`ListingPlanSource`, here), its MDT
(``hudi_md.metadata.plan_source``) and the metastore (``hudi_md.metastore.source``), which answers
the partitions and their slices in one request.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import pyarrow as pa

from hudi_md.table.fs_view import FileSlice, FileSystemView
from hudi_md.table.listing import ListingSource

if TYPE_CHECKING:
    from hudi_md.metadata.reader import ColumnStat, RecordLocation
    from hudi_md.metadata.stats_columns import StatsColumns


@dataclass(frozen=True)
class PartitionKeys:
    """Partition paths to look up exactly, and path prefixes to scan: those a filter pins
    (``hudi_md.planning.partition_keys``)."""

    paths: tuple[str, ...]
    prefixes: tuple[str, ...]

    @property
    def is_empty(self) -> bool:
        return not self.paths and not self.prefixes


@dataclass(frozen=True)
class PlanHint:
    """What a plan asks of a source: its filter (a ``hudi_md.planning.expressions.Expression``;
    None: every row), the identity partition columns a catalog may prune by, and whether it reads
    only base files. ``partition_keys`` computes the partition paths the filter pins (it binds the
    filter to the table's schema, so only a source that looks paths up calls it)."""

    expr: Any = None
    partition_fields: tuple[str, ...] = ()
    read_optimized: bool = False
    partition_keys: Callable[[], PartitionKeys | None] = field(default=lambda: None, compare=False)


@dataclass(frozen=True)
class Partitions:
    """A source's answer to :meth:`PlanSource.partitions`: the partitions (sorted; an Arrow array
    when the source read them column-wise), the counter that says how they were found, and
    whether they are exactly those the filter's partition part selects (then the plan prunes
    them no further by path values)."""

    names: Sequence[str] | pa.StringArray
    found_by: str = "partitions"
    exact: bool = False
    # the source read every partition's files ahead (one scan): slices are best built column-wise
    scanned_ahead: bool = False


class StatsSource(Protocol):
    """Column statistics of files (``column_stats``) and partitions (``partition_stats``)."""

    indexes: frozenset[str]  # which of "column_stats" and "partition_stats" it holds

    def column_stats(
        self, columns: Sequence[str] | None = None, partitions: Sequence[str] | None = None
    ) -> list[ColumnStat]: ...

    def partition_stats(
        self, columns: Sequence[str] | None = None, partitions: Sequence[str] | None = None
    ) -> list[ColumnStat]: ...

    def stats_columns(
        self, index: str, columns: Sequence[str], partitions: Sequence[str]
    ) -> tuple[StatsColumns, pa.StringArray] | None:
        """The stats of ``index`` read column-wise, with each record's partition; None when the
        source cannot (the plan then asks the record-wise methods)."""
        ...


class RecordLocator(Protocol):
    """Where records are, by key (the ``record_index``)."""

    def locations(self, record_keys: Iterable[str]) -> Mapping[str, RecordLocation]: ...


class PlanSource(Protocol):
    name: str

    @property
    def stats(self) -> StatsSource | None: ...
    @property
    def record_locations(self) -> RecordLocator | None: ...

    def partitions(self, hint: PlanHint) -> Partitions:
        """The partitions ``hint``'s filter may touch (all of them when the source cannot narrow)."""
        ...

    def latest_slices(
        self,
        partitions: Sequence[str] | pa.StringArray,
        *,
        read_optimized: bool = False,
        columnar: bool = False,
    ) -> list[FileSlice] | pa.Table:
        """The latest file slices of ``partitions`` (``read_optimized``: the latest base file of
        each file group). ``columnar``: the caller takes :mod:`slice_rows` rows, which a source
        may give instead of FileSlices (the plan of every file group of a large table)."""
        ...


class ListingPlanSource:
    """A plan source over a :class:`ListingSource` and the view slicing its files (the storage
    listing; any listing without lookups of its own): every partition, sliced here."""

    stats: StatsSource | None = None
    record_locations: RecordLocator | None = None

    def __init__(self, listing: ListingSource, view: FileSystemView) -> None:
        self.listing = listing
        self.view = view
        self.name = listing.name

    def partitions(self, hint: PlanHint) -> Partitions:
        return Partitions(self.listing.all_partitions())

    def latest_slices(
        self,
        partitions: Sequence[str] | pa.StringArray,
        *,
        read_optimized: bool = False,
        columnar: bool = False,
    ) -> list[FileSlice]:
        return view_slices(self.view, partitions, read_optimized)


def partition_names(partitions: Sequence[str] | pa.StringArray) -> list[str]:
    """Partitions as a source answered them (a list, or an Arrow array), as a list."""
    return partitions.to_pylist() if isinstance(partitions, pa.Array) else list(partitions)


def view_slices(
    view: FileSystemView, partitions: Sequence[str] | pa.StringArray, read_optimized: bool
) -> list[FileSlice]:
    """The view's latest slices of ``partitions`` (``read_optimized``: its latest base files)."""
    names = partition_names(partitions)
    return view.latest_base_files(names) if read_optimized else view.latest_file_slices(names)
