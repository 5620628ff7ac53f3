"""Reading the metadata table: base HFiles + HFile log blocks, merged, trusting only valid instants.

Every lookup touches a bounded number of files whatever the number of data partitions: the MDT
timeline listing, one listing per MDT partition used, and the HFiles/log files of the file groups
a key routes to.

:class:`MetadataTable` opens the MDT and reads its records; its parts read one MDT partition each:
``files`` (:class:`~hudi_md.metadata.files_index.FilesIndex`), the stats indexes
(:class:`~hudi_md.metadata.stats_index.StatsIndex`) and ``record_index``
(:class:`~hudi_md.metadata.record_locations.RecordIndex`). All of them walk file slices with one
:class:`~hudi_md.metadata.slice_sources.SliceReader`.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor

from hudi_md.errors import HudiMdError, MetadataTableError
from hudi_md.formats.avro import decode_schemaless
from hudi_md.metadata import keys as K
from hudi_md.metadata import metrics
from hudi_md.metadata.files_codec import files_record_decoder
from hudi_md.metadata.files_index import FilesIndex
from hudi_md.metadata.plan_source import MdtPlanSource
from hudi_md.metadata.record_locations import RecordIndex, RecordLocation, record_locations_to_arrow
from hudi_md.metadata.records import Record, is_live, merge, normalize
from hudi_md.metadata.slice_sources import DeleteSource, HFileSource, KeySelection, SliceReader
from hudi_md.metadata.stats_index import ColumnStat, StatsIndex, column_stat_of, column_stats_to_arrow
from hudi_md.storage import Storage
from hudi_md.table.config import TableConfig
from hudi_md.table.fs_view import FileSlice, FileSystemView
from hudi_md.table.listing import StorageListing
from hudi_md.table.state import TableState
from hudi_md.table.timeline import DELTA_COMMIT, RESTORE, ROLLBACK, Timeline

__all__ = [
    "METADATA_FOLDER",
    "ColumnStat",
    "KeySelection",
    "MetadataTable",
    "RecordLocation",
    "column_stat_of",
    "column_stats_to_arrow",
    "load_table_state",
    "open_metadata_table",
    "record_locations_to_arrow",
]

log = logging.getLogger(__name__)

METADATA_FOLDER = ".hoodie/metadata"
_INIT_PREFIX = "00000000000000"


class MetadataTable:
    """The MDT of one data table, as of the data timeline it was opened with.

    ``files``, ``stats`` and ``record_index`` read its MDT partitions; ``read_counters`` counts
    its lookups (``lookups``), the base HFiles it opened (``hfiles_opened``) and the log files it
    framed (``log_files_read``).
    """

    def __init__(
        self,
        data_storage: Storage,
        data_config: TableConfig,
        data_timeline: Timeline,
        *,
        mdt_timeline: Timeline | None = None,
    ) -> None:
        """``mdt_timeline``: the MDT's timeline as another process read it (Spark executors read
        slices with the driver's timelines, so log-block validity is the driver's); else loaded."""
        self.data_config = data_config
        self.data_timeline = data_timeline
        self.storage = data_storage.child(METADATA_FOLDER)
        listing = StorageListing(self.storage)
        # Three round trips side by side: the MDT's config, its timeline (in the data table's
        # layout, which an MDT shares; loaded again in the one its config names if not) and the
        # listing of the files partition, which every plan reads.
        # A failed listing is left to the view, which lists again and reports it as before.
        guess = (data_config.timeline_path, data_config.timeline_layout_version)
        with ThreadPoolExecutor(max_workers=2) as pool:
            if K.FILES in data_config.metadata_partitions:
                pool.submit(_list_ahead, listing, K.FILES)
            guessed = pool.submit(Timeline.load, self.storage, *guess) if mdt_timeline is None else None
            self.config = TableConfig.load(self.storage)
        layout = (self.config.timeline_path, self.config.timeline_layout_version)
        if mdt_timeline is not None:
            self.timeline = mdt_timeline
        elif guessed is not None and guess == layout:
            self.timeline = guessed.result()
        else:
            self.timeline = Timeline.load(self.storage, *layout)
        self.available_partitions = set(data_config.metadata_partitions)
        self.valid_instants = self._valid_instants()
        self._view = FileSystemView(self.config, self.timeline, listing)
        self.read_counters: dict[str, int] = {"lookups": 0, "hfiles_opened": 0, "log_files_read": 0}
        self.slice_reader = SliceReader(
            self.storage,
            self.config.timeline_layout_version,
            {i.requested_time: i.completion_time or i.requested_time for i in self.timeline.completed()},
            self.valid_instants,
            self.read_counters,
        )
        self.files = FilesIndex(self)
        self.stats = StatsIndex(self, self.files)
        self.record_index = RecordIndex(self)

    # --- valid instants (HoodieTableMetadataUtil.getValidInstantTimestamps) ---------------------

    def _valid_instants(self) -> frozenset[str]:
        data = self.data_timeline
        valid = {i.requested_time for i in data.completed()}
        pending_data = {i.requested_time for i in data.pending()}
        mdt_completed = self.timeline.completed()
        for i in mdt_completed:
            if i.action == DELTA_COMMIT and i.requested_time not in pending_data:
                valid.add(i.requested_time)  # MDT-only instants, e.g. the async indexer's
            if i.action in (ROLLBACK, RESTORE) or i.requested_time.startswith(_INIT_PREFIX):
                valid.add(i.requested_time)
        earliest = data.completed().first()
        for i in data.completed().of_actions(ROLLBACK, RESTORE):
            if earliest is not None and i.requested_time < earliest.requested_time:
                continue
            meta = data.metadata(i)
            valid.update(meta.get("commitsRollback") or ())
            for restored in meta.get("instantsToRollback") or ():
                if isinstance(restored, dict) and restored.get("commitTime"):
                    valid.add(restored["commitTime"])
        # A block also needs its MDT deltacommit completed (or older than the MDT timeline).
        mdt_done = mdt_completed.times()
        mdt_start = self.timeline.first()
        return frozenset(
            t for t in valid if t in mdt_done or (mdt_start is not None and t < mdt_start.requested_time)
        )

    # --- file slices of an MDT partition -----------------------------------------------------------

    def indexes(self) -> tuple[StatsIndex | None, RecordIndex | None]:
        """The stats and record index a plan may prune by: those the MDT holds."""
        stats = self.stats if self.stats.indexes else None
        return stats, self.record_index if K.RECORD_INDEX in self.available_partitions else None

    def plan_source(self, view: FileSystemView) -> MdtPlanSource:
        """The MDT as what a plan of the data table's ``view`` reads."""
        return MdtPlanSource(self, view)

    def file_slices(self, partition: str) -> list[FileSlice]:
        """Latest merged slices of an MDT partition, ordered by file-group index."""
        if partition not in self.available_partitions:
            raise MetadataTableError(
                f"MDT partition {partition!r} is not available for {self.storage.uri()} "
                f"(hoodie.table.metadata.partitions={','.join(sorted(self.available_partitions))})"
            )
        slices = self._view.latest_file_slices([partition])
        if not slices:
            raise MetadataTableError(
                f"MDT partition {partition!r} has no file groups in {self.storage.uri()}"
            )
        return sorted(slices, key=lambda s: K.file_group_index_of(s.file_id))

    def probe(self) -> None:
        """Open the ``files`` partition's base files and frame its log files: what every plan
        reads first, so an MDT that cannot be read is found when it is opened, without reading
        any record. The base files, log files and then HFile blocks are each read side by side."""
        self.slice_reader.prefetch(self.file_slices(K.FILES))

    # --- records ---------------------------------------------------------------------------------

    def read_slice_records(
        self, file_slice: FileSlice, sel: KeySelection | None = None
    ) -> dict[str, Record | None]:
        """The merged records of one MDT file slice (``sel``: which keys; None: all of them)."""
        sel = sel if sel is not None else KeySelection()
        result: dict[str, Record | None] = {}
        # Record-index entries of one file group and commit share their value bytes (the key is
        # not part of the value) and merge by replacement: decode each distinct value once.
        shared: dict[bytes, Record] | None = {} if file_slice.partition_path == K.RECORD_INDEX else None

        files = file_slice.partition_path == K.FILES

        def apply(source: HFileSource) -> None:
            schema = source.schema
            if schema is None:
                raise MetadataTableError(f"{source.where}: MDT HFile has no Avro schema in its file info")
            fast = files_record_decoder(schema) if files else None
            for key_bytes, value in sel.scan(source.reader):
                key = key_bytes.decode("utf-8")
                if fast is not None and (record := fast(value)) is not None:
                    record["key"] = key
                elif shared is not None:
                    decoded = shared.get(value)
                    if decoded is None:
                        decoded = shared[value] = normalize(
                            decode_schemaless(value, schema, return_record_name=True)
                        )
                    record = {**decoded, "key": key}
                else:
                    record = normalize(decode_schemaless(value, schema, return_record_name=True))
                    record["key"] = key
                result[key] = merge(result.get(key), record)

        for source in self.slice_reader.sources(file_slice):
            if isinstance(source, HFileSource):
                apply(source)
            elif isinstance(source, DeleteSource):
                for key in source.keys:
                    if sel.matches(key):
                        result[key] = None
            else:
                block = source.frame
                raise MetadataTableError(
                    f"{block.file_name}: unexpected {block.block_type.name} block in the metadata table"
                )
        return result

    def read_records(
        self,
        partition: str,
        *,
        keys: Iterable[str] | None = None,
        prefixes: Iterable[str] | None = None,
    ) -> dict[str, Record]:
        """Merged, live records of an MDT partition for exact keys, key prefixes, or everything."""
        self.read_counters["lookups"] += 1
        kind = "lookup" if keys is not None else "scan"
        with metrics.timed(f"{kind}_{partition}"):
            return self._read_records(partition, keys, prefixes)

    def _read_records(
        self, partition: str, keys: Iterable[str] | None, prefixes: Iterable[str] | None
    ) -> dict[str, Record]:
        slices = self.file_slices(partition)
        out: dict[str, Record | None] = {}
        if keys is not None:
            key_list = list(keys)
            by_group: dict[int, list[str]] = {}
            n = len(slices)
            for k in key_list:
                by_group.setdefault(K.file_group_index(k, n), []).append(k)
            for index, group_keys in sorted(by_group.items()):
                out.update(self.read_slice_records(slices[index], KeySelection(keys=group_keys)))
        else:
            sel = KeySelection(prefixes=prefixes)
            for s in slices:
                out.update(self.read_slice_records(s, sel))
        return {k: r for k, r in out.items() if r is not None and is_live(r)}


def _list_ahead(listing: StorageListing, partition: str) -> None:
    """List ``partition`` into ``listing``'s cache ahead of its use; a failure is left for the
    use to meet (and report) again."""
    try:
        listing.files_in_partitions([partition])
    except Exception:  # the listing that follows meets it again and reports it
        log.debug("listing %s ahead failed", partition, exc_info=True)


def open_metadata_table(state: TableState) -> MetadataTable | None:
    """The MDT reader of ``state``'s table, or None to list storage instead.

    Used when ``files`` is among ``hoodie.table.metadata.partitions`` and the option
    ``hoodie.metadata.enable`` is not ``false``. An MDT that cannot be read falls back to listing
    with a warning, unless the option forces it on (then the error is raised).
    """
    if state.metadata_enabled is False:
        return None
    if K.FILES not in state.config.metadata_partitions:
        if state.metadata_forced:
            log.info("%s: no MDT files partition; listing storage", state.uri)
        return None
    try:
        mdt = MetadataTable(state.storage, state.config, state.timeline)
        mdt.probe()  # a broken MDT is found here, not in the middle of a plan
        return mdt
    except (HudiMdError, OSError, EOFError, ValueError) as e:
        if state.metadata_forced:
            raise
        state.metadata_error = e
        if state.is_federated:  # no listing to fall back to: the state's listing says so
            return None
        warnings.warn(
            f"hudi-md: the metadata table of {state.uri} cannot be read ({e}); listing storage instead",
            RuntimeWarning,
            stacklevel=4,
        )
        return None


def load_table_state(storage: Storage, options: Mapping[str, str] | None = None) -> TableState:
    """The state of the table at ``storage``, read through its MDT when it has a usable one."""
    return TableState(storage, options, open_metadata=open_metadata_table)
