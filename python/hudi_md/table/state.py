"""The state of one table as every layer sees it: storage, configuration, timeline, the listing
source (the MDT, or the storage itself), the schema and the file-system view.

Planning, reading, the metadata layer and the writers all take a :class:`TableState`;
:class:`hudi_md.api.Table` is the user's front object: it holds one (``Table.state``) and shows a
chosen few of its members beside the user's verbs (``plan``, ``file_slices``, ``read``,
``read_batches``).

The MDT reader lives a layer above (``hudi_md.metadata``), so a state is given the function that
opens it (:data:`MetadataOpener`); :func:`hudi_md.metadata.load_table_state` wires the real one in.
It is opened on first use, since opening it costs storage reads a caller may not need.
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol

import pyarrow as pa

from hudi_md.config import metadata as M
from hudi_md.errors import UnsupportedFeatureError
from hudi_md.storage import Storage
from hudi_md.storage.federated import FederatedStorage
from hudi_md.table.config import SUPPORTED_VERSIONS, TableConfig
from hudi_md.table.fs_view import FileSystemView
from hudi_md.table.layout import require_metadata_table, storage_listing, table_storage
from hudi_md.table.listing import ListingSource
from hudi_md.table.partitions import PartitionScheme
from hudi_md.table.plan_source import ListingPlanSource, PlanSource, RecordLocator, StatsSource
from hudi_md.table.schema import table_schema
from hudi_md.table.timeline import Timeline

if TYPE_CHECKING:  # the MDT reader is a layer above; states only hold one
    from hudi_md.metadata.reader import MetadataTable

METADATA_ENABLE = M.METADATA_ENABLE.key

MetadataOpener = Callable[["TableState"], "MetadataTable | None"]


class SnapshotCache:
    """Results computed from one state, kept by key (least recently used dropped past ``size``):
    a state is a snapshot, so a result asked for again is the same. Thread-safe."""

    def __init__(self, size: int = 32) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._entries: OrderedDict[Hashable, Any] = OrderedDict()

    def get(self, key: Hashable) -> Any | None:
        with self._lock:
            value = self._entries.get(key)
            if value is not None:
                self._entries.move_to_end(key)
            return value

    def put(self, key: Hashable, value: Any) -> None:
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)


# a table's stats and record index (its MDT's), either absent
TableIndexes = tuple[StatsSource | None, RecordLocator | None]


class SourceState(Protocol):
    """One state of a table at a :class:`TableSource`: its timeline, and listings as of it (every
    listing answers for that one state, while the table moves on)."""

    timeline: Timeline

    def listing(self, as_of: str | None = None) -> ListingSource: ...

    def plan_source(self, as_of: str | None, indexes: Callable[[], TableIndexes]) -> PlanSource:
        """What a plan as of ``as_of`` reads; ``indexes``: the table's own (its MDT's) stats and
        record index, which the source may offer (opened only when a plan asks for them)."""
        ...


class TableSource(Protocol):
    """Where a table's timeline and file listings come from instead of its storage: the
    metastore (``hudi_md.metastore.source.MetastoreTable``)."""

    name: str

    def state(self, on_storage: Timeline) -> SourceState | None:
        """The table's current state at the source, when it holds every instant completed in
        ``on_storage`` (the table's own timeline, listed just before) and its listings follow its
        timeline; None otherwise (the source warned why): the table is planned from storage."""
        ...


# Where tables of version 8 and later (what hudi-md and Hudi 1.x write) keep their timeline.
GUESSED_TIMELINE = (".hoodie/timeline", 2)


def _config_and_timeline(
    storage: Storage, path: str, layout: int, known: TableConfig | None = None
) -> tuple[TableConfig, Timeline | None]:
    """The table config (``known`` itself if unchanged, :meth:`TableConfig.load`), and the
    timeline at ``path`` listed in the same round trip (None if that listing failed). A failed
    config read raises."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:
        asked = pool.submit(Timeline.load, storage, path, layout)
        config = TableConfig.load(storage, known)
        try:
            return config, asked.result()
        except Exception:
            return config, None


class TableState:
    """A Hudi table of version 6, 8 or 9 as of the timeline loaded when the state was made.

    ``options``: Hudi's ``hoodie.*`` read options (``hoodie.metadata.enable``). ``open_metadata``:
    returns the table's MDT reader, or None to list storage instead (None: always list).
    """

    def __init__(
        self,
        storage: Storage,
        options: Mapping[str, str] | None = None,
        *,
        open_metadata: MetadataOpener | None = None,
        physical_listing: bool = False,
        source: TableSource | None = None,
    ) -> None:
        self.storage = storage
        self.options = dict(options or {})
        # Without an MDT, a federated table is listed by walking its storage path (MDT builds and
        # the repair tool ask for that); readers get MetadataRequiredError instead.
        self.physical_listing = physical_listing
        # None: use the MDT when the table has a readable one; True: it must be used; False: list
        self.metadata_enabled: bool | None = M.METADATA_ENABLE.get(self.options, None)
        # On an object store the timeline is listed beside the config, at the place tables of
        # version 8 and later keep it; a guess the config does not confirm is listed again.
        guessed: Timeline | None = None
        if not storage.is_local_disk:
            # a failed guess is listed again where the config says, which reports its error
            self.config, guessed = _config_and_timeline(storage, *GUESSED_TIMELINE)
        else:
            self.config = TableConfig.load(storage)
        self.storage = storage = table_storage(storage, self.config.to_dict())
        if self.config.table_version not in SUPPORTED_VERSIONS:
            raise UnsupportedFeatureError(
                f"{storage.uri()}: table version {self.config.table_version} is not supported "
                f"(hudi-md reads versions {', '.join(map(str, SUPPORTED_VERSIONS))})"
            )
        layout = (self.config.timeline_path, self.config.timeline_layout_version)
        if guessed is not None and layout == GUESSED_TIMELINE and len(guessed):
            on_storage = guessed
        else:
            on_storage = Timeline.load(storage, *layout)
        # The timeline and listings from a source (the metastore) when it holds every instant
        # completed on storage (listed first, so the source is asked after) and its listings follow
        # its timeline; else, as without it, from storage.
        self.source = source
        self.source_state = source.state(on_storage) if source is not None else None
        if self.source_state is None:
            self.source = None
            self.timeline: Timeline = on_storage
        else:
            self.timeline = self.source_state.timeline
        self.partition_scheme = PartitionScheme(self.config)
        self._open_metadata = open_metadata
        self.metadata_error: Exception | None = None
        self._archived: bool | None = None
        self._latest_view: tuple[Timeline, FileSystemView] | None = None
        # scan plans of this state by filter (hudi_md.planning.planner.plan_scan)
        self.plan_results = SnapshotCache()
        # time-travel schemas of this state by instant (schema_as_of)
        self._schemas_as_of = SnapshotCache(8)

    # --- what the table is ---------------------------------------------------------------------

    @property
    def uri(self) -> str:
        return self.storage.uri()

    @property
    def table_version(self) -> int:
        return self.config.table_version

    @property
    def table_type(self) -> str:
        return self.config.table_type

    @property
    def table_name(self) -> str:
        return self.config.table_name

    @property
    def partition_fields(self) -> list[str]:
        return self.config.partition_fields

    def has_archived_instants(self) -> bool:
        """Whether older instants were archived (their metadata is not on the active timeline)."""
        if self._archived is None:
            if self.config.timeline_layout_version >= 2 and self.table_version >= 8:
                folder = f"{self.config.timeline_path}/{self.config.timeline_history_path}"
                self._archived = any(s.name.endswith(".parquet") for s in self.storage.list(folder))
            else:
                folder = f".hoodie/{self.config.archivelog_folder}"
                self._archived = any(
                    s.name.startswith(".commits_.archive") for s in self.storage.list(folder)
                )
        return self._archived

    def same_state(self, other: TableState) -> bool:
        """Whether ``other`` (the same table opened again) holds this state: the same
        ``hoodie.properties`` and the same timeline. Every instant counts, not only the newest: with
        several writers an instant older than the newest pending one may complete."""
        return self.config.props == other.config.props and _instant_files(self.timeline) == _instant_files(
            other.timeline
        )

    def is_current(self) -> bool:
        """Whether storage still holds this state (:meth:`same_state`), asking for
        ``hoodie.properties`` and the timeline listing at once: a table kept open (the Spark
        planner's) checks in one round trip, not two. A timeline from a metastore is not checked
        here (False: open the table again); neither is an unreadable one (opening it again says
        why)."""
        if self.source is not None:
            return False
        config, storage = self.config, self.storage
        layout, path = config.timeline_layout_version, config.timeline_path
        timeline: Timeline | None
        try:
            if storage.is_local_disk:  # no round trip to save, and threads cost more than they do
                props, timeline = TableConfig.load(storage, config), Timeline.load(storage, path, layout)
            else:
                props, timeline = _config_and_timeline(storage, path, layout, config)
        except Exception:  # the table is opened again, which reports it
            return False
        if timeline is None:
            return False
        return props.props == config.props and _instant_files(timeline) == _instant_files(self.timeline)

    def storage_stats(self) -> dict[str, int]:
        """Requests and bytes this table's storage has served so far."""
        return self.storage.stats.snapshot()

    # --- metadata table and listing ---------------------------------------------------------------

    @property
    def metadata_forced(self) -> bool:
        return self.metadata_enabled is True

    @property
    def uses_metadata_table(self) -> bool:
        return self.metadata_table is not None

    @cached_property
    def metadata_table(self) -> MetadataTable | None:
        """The MDT reader, or None when the table is read by listing storage."""
        return self._open_metadata(self) if self._open_metadata is not None else None

    @property
    def is_federated(self) -> bool:
        """Whether a storage strategy spreads the data files over a storage path (RFC-60)."""
        return isinstance(self.storage, FederatedStorage)

    @cached_property
    def listing(self) -> ListingSource:
        if self.source_state is not None:
            return self.source_state.listing()
        mdt = self.metadata_table
        if mdt is not None:
            return mdt.files
        if self.is_federated and not self.physical_listing:
            if self.metadata_error is not None:
                raise require_metadata_table(self.storage, f"it cannot be read ({self.metadata_error})")
            if self.metadata_enabled is False:
                raise require_metadata_table(self.storage, "hoodie.metadata.enable=false turns it off")
            raise require_metadata_table(self.storage, "it has none (hoodie.table.metadata.partitions)")
        return storage_listing(self.storage, self.config.to_dict())

    def file_system_view(self, as_of: str | None = None) -> FileSystemView:
        """The view as of ``as_of`` (None: the latest). The latest view is kept: a state is a
        snapshot, and the view caches the file groups of every partition it was asked for, so a
        plan repeated on this state builds none again."""
        listing = (
            self.source_state.listing(as_of) if self.source_state is not None and as_of else self.listing
        )
        if as_of is None:
            kept = self._latest_view
            if kept is not None and kept[0] is self.timeline and kept[1].listing is listing:
                return kept[1]
        view = FileSystemView(self.config, self.timeline, listing, as_of=as_of)
        if as_of is None:
            self._latest_view = (self.timeline, view)
        return view

    def partitions(self) -> list[str]:
        return self.listing.all_partitions()

    def live_partitions(self) -> list[str]:
        """The partitions holding live file groups, sorted: not one whose groups a delete_partition
        or an overwrite replaced (the MDT lists it until its clean, as Apache Hudi's does)."""
        view = self.file_system_view()
        return sorted({s.partition_path for s in view.latest_file_slices(self.partitions())})

    def plan_source(self, as_of: str | None = None) -> PlanSource:
        """What a plan of this state as of ``as_of`` reads (:mod:`hudi_md.table.plan_source`): the
        metastore when the state came from it, else the MDT, else the storage listing."""
        if self.source_state is not None:
            return self.source_state.plan_source(as_of, self._indexes)
        mdt = self.metadata_table
        view = self.file_system_view(as_of)
        return mdt.plan_source(view) if mdt is not None else ListingPlanSource(self.listing, view)

    def _indexes(self) -> TableIndexes:
        mdt = self.metadata_table
        return mdt.indexes() if mdt is not None else (None, None)

    # --- schema ---------------------------------------------------------------------------------

    @cached_property
    def schema(self) -> pa.Schema:
        """Arrow schema of the table (latest commit's writer schema, meta columns first)."""
        return table_schema(self.storage, self.config, self.timeline)

    def schema_as_of(self, as_of: str | None) -> pa.Schema:
        """The schema of the rows as of the instant ``as_of`` (None: :attr:`schema`): the writer
        schema of the latest completed commit requested at or before it, so a time-travel read
        has the columns the table had then, those a later write dropped included (Apache Hudi's
        time travel reads with the instant's schema too). Before the first completed commit there
        are no rows: the table's schema."""
        if as_of is None:
            return self.schema
        writes = self.timeline.write_timeline()
        first, last = writes.first(), writes.last()
        if last is None or first is None or as_of >= last.requested_time or as_of < first.requested_time:
            return self.schema
        known = self._schemas_as_of.get(as_of)
        if known is None:
            known = table_schema(self.storage, self.config, self.timeline.until(as_of))
            self._schemas_as_of.put(as_of, known)
        return known

    def schema_and_listing(self, as_of: str | None = None) -> tuple[pa.Schema, ListingSource]:
        """The schema (as of ``as_of``: :meth:`schema_as_of`) and the listing source, which a
        filtered plan needs both of. On an object store the listing source (the MDT) opens while
        the schema's commit is read: both come after the timeline, so neither needs the other's
        round trip first."""
        opened = "listing" in self.__dict__ or "schema" in self.__dict__
        if opened or self.storage.is_local_disk:
            return self.schema_as_of(as_of), self.listing
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=1) as pool:
            opening = pool.submit(lambda: self.listing)
            schema = self.schema_as_of(as_of)
            with contextlib.suppress(Exception):  # opened again below, raising it in this thread
                opening.result()
        return schema, self.listing

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.uri!r}, version={self.table_version}, type={self.table_type})"


def _instant_files(timeline: Timeline) -> tuple[str, ...]:
    """A timeline as its instants' file names: each names the instant's time, action and state."""
    return tuple(i.file_name for i in timeline.instants)
