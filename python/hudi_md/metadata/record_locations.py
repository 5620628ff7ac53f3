"""The MDT ``record_index`` partition: where each record key lives, read column-wise."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_md.errors import MetadataTableError
from hudi_md.formats.hfile import CellColumns, HFileReader
from hudi_md.metadata import keys as K
from hudi_md.metadata import metrics
from hudi_md.metadata.record_index_columns import (
    LOCATION_SCHEMA,
    CellEvent,
    DeleteEvent,
    cell_event,
    locations_of_events,
)
from hudi_md.metadata.slice_sources import DENSE_LOOKUP_RATIO, DeleteSource, HFileSource
from hudi_md.table.fs_view import FileSlice

if TYPE_CHECKING:
    from hudi_md.metadata.reader import MetadataTable


@dataclass(frozen=True)
class RecordLocation:
    record_key: str
    partition_path: str
    file_id: str
    instant_time: int | None
    position: int | None


class RecordIndex:
    """The ``record_index`` partition of ``mdt``."""

    def __init__(self, mdt: MetadataTable) -> None:
        self._mdt = mdt

    def locations(self, record_keys: Iterable[str] | None = None) -> dict[str, RecordLocation]:
        """Locations of ``record_keys`` (absent keys are left out), or of every indexed key."""
        keys = None if record_keys is None else pa.array(list(record_keys), pa.string())
        table = self.table(keys)
        return {
            k: RecordLocation(record_key=k, partition_path=p, file_id=f, instant_time=t, position=n)
            for k, p, f, t, n in zip(*(table[c].to_pylist() for c in LOCATION_SCHEMA.names), strict=True)
        }

    def table(self, record_keys: pa.Array | pa.ChunkedArray | None = None) -> pa.Table:
        """:meth:`locations` as Arrow rows (:data:`record_index_columns.LOCATION_SCHEMA`, sorted
        by key within each MDT file group), read column-wise: a write's tagging asks for every
        incoming key at once."""
        self._mdt.read_counters["lookups"] += 1
        with metrics.timed("lookup_record_index" if record_keys is not None else "scan_record_index"):
            slices = self._mdt.file_slices(K.RECORD_INDEX)
            if record_keys is None:
                parts = [self._slice_locations(s, None) for s in slices]
            else:
                keys = pc.unique(record_keys.cast(pa.string()))
                if isinstance(keys, pa.ChunkedArray):
                    keys = keys.combine_chunks()
                if keys.null_count:
                    raise MetadataTableError("record keys to look up must not be null")
                index = K.file_group_indexes_of_column(keys, len(slices))
                parts = [
                    self._slice_locations(slices[i], keys.filter(pa.array(index == i)))
                    for i in np.unique(index).tolist()
                ]
            return pa.concat_tables([LOCATION_SCHEMA.empty_table(), *parts])

    def _slice_locations(self, file_slice: FileSlice, keys: pa.Array | None) -> pa.Table:
        """One record_index file slice's entries for ``keys`` (None: all), merged as
        :meth:`MetadataTable.read_slice_records` merges them."""
        return locations_of_events(self.slice_events(file_slice, keys))

    def slice_events(
        self, file_slice: FileSlice, keys: pa.Array | None = None
    ) -> list[CellEvent | DeleteEvent]:
        """What an MDT file slice (of any MDT partition) holds for ``keys`` (None: every key),
        source by source in merge order: the base HFile's cells, then each valid log block's cells
        or deleted keys, as Arrow columns (:mod:`record_index_columns`)."""
        wanted = None if keys is None else keys.cast(pa.binary())
        events: list[CellEvent | DeleteEvent] = []

        def cells(reader: HFileReader) -> CellColumns:
            if wanted is None:
                return reader.scan_columns()
            if len(wanted) * DENSE_LOOKUP_RATIO > reader.entry_count:
                found = reader.scan_columns()  # most of the file is wanted: one pass over it
                return found.take(pc.indices_nonzero(pc.is_in(found.rows, value_set=wanted)).to_numpy())
            return reader.get_many_columns(wanted.to_pylist())

        for source in self._mdt.slice_reader.sources(file_slice):
            if isinstance(source, HFileSource):
                events.append(cell_event(cells(source.reader), source.schema, source.where))
            elif isinstance(source, DeleteSource):
                gone = pa.array(source.keys, pa.binary())
                if wanted is not None:
                    gone = gone.filter(pc.is_in(gone, value_set=wanted))
                events.append(DeleteEvent(gone))
            else:
                block = source.frame
                raise MetadataTableError(
                    f"{block.file_name}: unexpected {block.block_type.name} block in the metadata table"
                )
        return events


def record_locations_to_arrow(locations: Iterable[RecordLocation]) -> pa.Table:
    locs = list(locations)
    return pa.table(
        {
            "record_key": pa.array([r.record_key for r in locs], pa.string()),
            "partition_path": pa.array([r.partition_path for r in locs], pa.string()),
            "file_id": pa.array([r.file_id for r in locs], pa.string()),
            "instant_time": pa.array([r.instant_time for r in locs], pa.int64()),
            "position": pa.array([r.position for r in locs], pa.int64()),
        }
    )
