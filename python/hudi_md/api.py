"""The public Python API: ``open_table`` and :class:`Table`."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeAlias

import pyarrow as pa

from hudi_md.config import check_options
from hudi_md.config.storage import RETRY_KEYS
from hudi_md.errors import InvalidOptionError
from hudi_md.metadata.reader import open_metadata_table
from hudi_md.metastore.options import metaserver_uri
from hudi_md.planning.column_stats_mode import ColumnStatsEngine
from hudi_md.planning.expressions import Expression
from hudi_md.planning.filters import Filters as PyarrowFilters
from hudi_md.planning.filters import to_expression
from hudi_md.planning.planner import ScanPlan, plan_scan
from hudi_md.planning.scan import TableScan
from hudi_md.storage import Storage
from hudi_md.table import slice_rows
from hudi_md.table.state import METADATA_ENABLE, TableSource, TableState
from hudi_md.table.timeline import Timeline, resolve_instant

if TYPE_CHECKING:
    from hudi_md.metadata.reader import MetadataTable

log = logging.getLogger(__name__)

__all__ = ["METADATA_ENABLE", "Table", "open_table"]
QUERY_TYPES = ("snapshot", "read_optimized", "incremental")

# pyarrow-style tuples, or an expression (parse_filter_text's)
Filters: TypeAlias = Expression | PyarrowFilters | None


# Table options: Hudi's keys, and hudi-md's own where Hudi has none (hudi_md.planner.*).
_TABLE_KEYS = ("hoodie.", "hudi_md.")


def open_table(uri: str, options: Mapping[str, Any] | None = None) -> Table:
    """Open the Hudi table at ``uri`` (local path or any fsspec URL).

    ``options`` take Hudi's keys (``hoodie.metadata.enable``), hudi-md's (``hudi_md.planner.*``)
    and fsspec storage options (everything else, e.g. ``key``/``secret``/``endpoint_url`` for s3fs).
    """
    opts = {str(k): v for k, v in (options or {}).items()}
    check_options(opts)
    # fsspec's options, and Hudi's file-system retry keys (the storage layer applies those).
    storage_opts = {k: v for k, v in opts.items() if not k.startswith(_TABLE_KEYS) or k in RETRY_KEYS}
    hoodie_opts = {k: str(v) for k, v in opts.items() if k.startswith(_TABLE_KEYS)}
    found = _metastore_source(uri, hoodie_opts)
    source, location = found if found is not None else (None, uri)  # planned from the metastore
    state = TableState(
        Storage(location, storage_opts), hoodie_opts, open_metadata=open_metadata_table, source=source
    )
    return Table(state)


def _metastore_source(uri: str, options: Mapping[str, str]) -> tuple[TableSource, str] | None:
    """The metastore's view of the table (``hoodie.metaserver.enabled``) and its location: by its
    registered name ``db.table`` or its location (``uri`` may be either); None when the metastore
    is not on."""
    if metaserver_uri(options) is None:
        return None
    from hudi_md.metastore.plan_client import PlanClient
    from hudi_md.metastore.source import open_metastore_table

    client = PlanClient.from_options(options)
    assert client is not None
    table = open_metastore_table(client, uri)
    return table, table.location


class Table:
    """A Hudi table of version 6, 8 or 9, read through its metadata table (MDT) when it has one:
    the user's front object, made by :func:`open_table`. A table is a snapshot of the timeline
    it was opened at; open it again to see later commits.

    Its members, all of them (``tests/test_api_surface.py`` holds this list, so that an addition
    is deliberate):

    - what the table is: ``uri``, ``table_name``, ``table_type`` (``COPY_ON_WRITE`` or
      ``MERGE_ON_READ``), ``table_version``, ``partition_fields``, ``schema`` (Arrow, the meta
      columns first), ``options`` (the ``hoodie.*`` / ``hudi_md.*`` options it was opened with);
    - its history and contents: ``timeline`` (the active timeline), ``partitions()``,
      ``metadata_table`` (the MDT reader, with its ``stats`` and ``record_index``; None when the
      table is read by listing storage);
    - reading: ``read(...)`` (a ``pyarrow.Table``), ``read_batches(...)`` (the same rows as a
      ``pyarrow.RecordBatchReader``, one file slice at a time), ``plan(...)`` (the file slices a
      read reads and the pruning counters), ``file_slices(...)`` (that plan as Arrow);
    - ``storage_stats()``: the requests and bytes its storage served so far;
    - ``state``: the :class:`~hudi_md.table.state.TableState` underneath (storage,
      ``hoodie.properties``, listing, file-system view, caches), which every layer below the API
      takes: for tools built on hudi-md's internals, not a stable API.
    """

    __slots__ = ("__weakref__", "state")

    def __init__(self, state: TableState) -> None:
        self.state = state

    # --- what the table is -------------------------------------------------------------------------

    @property
    def uri(self) -> str:
        return self.state.uri

    @property
    def table_name(self) -> str:
        return self.state.table_name

    @property
    def table_type(self) -> str:
        return self.state.table_type

    @property
    def table_version(self) -> int:
        return self.state.table_version

    @property
    def partition_fields(self) -> list[str]:
        return self.state.partition_fields

    @property
    def schema(self) -> pa.Schema:
        """Arrow schema of the table (the latest commit's writer schema, meta columns first)."""
        return self.state.schema

    @property
    def options(self) -> Mapping[str, str]:
        """The ``hoodie.*`` and ``hudi_md.*`` options the table was opened with (read-only)."""
        return MappingProxyType(self.state.options)

    @property
    def timeline(self) -> Timeline:
        """The active timeline as of opening (from the metastore when it planned the table)."""
        return self.state.timeline

    @property
    def metadata_table(self) -> MetadataTable | None:
        """The MDT reader (``stats``: column and partition stats, ``record_index``), opened on
        first use; None when the table is read by listing storage."""
        return self.state.metadata_table

    def partitions(self) -> list[str]:
        """Every partition path, from the MDT ``files`` partition or a storage listing."""
        return self.state.partitions()

    def storage_stats(self) -> dict[str, int]:
        """Requests and bytes this table's storage has served so far."""
        return self.state.storage_stats()

    # --- planning --------------------------------------------------------------------------------------

    def plan(
        self,
        filters: Filters = None,
        as_of: str | None = None,
        *,
        read_optimized: bool = False,
        column_stats_engine: ColumnStatsEngine | None = None,
    ) -> ScanPlan:
        """A :class:`~hudi_md.planning.planner.ScanPlan`: the slices to read and pruning counters.
        ``column_stats_engine``: where column_stats pruning runs past Hudi's in-memory threshold
        (``hudi_md.spark.plan`` passes a Spark one); None: in this process."""
        return plan_scan(
            self.state,
            to_expression(filters),
            as_of=resolve_instant(as_of),
            read_optimized=read_optimized,
            column_stats_engine=column_stats_engine,
        )

    def file_slices(self, filters: Filters = None, as_of: str | None = None) -> pa.Table:
        """Latest file slices after partition, record-index and column-stats pruning, as Arrow:
        the files' logical paths (relative to the table, as the MDT names them) and, in
        ``base_file_uri`` / ``log_file_uris``, where they are (under the storage path for a
        federated storage layout)."""
        logical = self.plan(filters, as_of).rows
        storage = self.state.storage
        physical = slice_rows.finish_rows(logical, uri=storage.uri, uri_prefix=storage.uri_prefix)
        return logical.append_column("base_file_uri", physical.column(slice_rows.BASE_FILE)).append_column(
            "log_file_uris", physical.column(slice_rows.LOG_FILES)
        )

    # --- reading -------------------------------------------------------------------------------------------

    def read(
        self,
        filters: Filters = None,
        columns: Sequence[str] | None = None,
        as_of: str | None = None,
        query_type: str = "snapshot",
        start: str | None = None,
        end: str | None = None,
    ) -> pa.Table:
        """Rows of the table as a ``pyarrow.Table``.

        ``query_type``: ``snapshot`` (base + logs merged), ``read_optimized`` (base files only),
        ``incremental`` (rows written by instants in ``(start, end]``).
        """
        scan, query = self._scan(filters, columns, as_of, query_type, start, end)
        if query_type == "incremental":
            return scan.incremental(*query)
        return scan.snapshot(query[0], read_optimized=query_type == "read_optimized")

    def read_batches(
        self,
        filters: Filters = None,
        columns: Sequence[str] | None = None,
        as_of: str | None = None,
        query_type: str = "snapshot",
        start: str | None = None,
        end: str | None = None,
    ) -> pa.RecordBatchReader:
        """The rows :meth:`read` returns (same arguments), as a ``pyarrow.RecordBatchReader`` that
        reads one file slice (its base file and log files, merged) as the batches are taken: memory
        holds one slice's rows, not the table's. The plan is made, and bad arguments raise, here;
        the slices are read as the reader is consumed (``for batch in reader``,
        ``reader.read_next_batch()``, or anything taking an Arrow stream)."""
        scan, query = self._scan(filters, columns, as_of, query_type, start, end)
        if query_type == "incremental":
            return scan.incremental_batches(*query)
        return scan.snapshot_batches(query[0], read_optimized=query_type == "read_optimized")

    def _scan(
        self,
        filters: Filters,
        columns: Sequence[str] | None,
        as_of: str | None,
        query_type: str,
        start: str | None,
        end: str | None,
    ) -> tuple[TableScan, tuple[str | None, ...]]:
        """The scan of a read and its instants: ``(as_of,)`` or, incremental, ``(start, end)``."""
        if query_type not in QUERY_TYPES:
            raise InvalidOptionError(
                f"query_type must be one of {', '.join(QUERY_TYPES)}, got {query_type!r}"
            )
        scan = TableScan(self.state, filters=to_expression(filters), columns=columns)
        if query_type == "incremental":
            if as_of is not None:
                raise InvalidOptionError("as_of cannot be combined with query_type='incremental' (use end)")
            return scan, (resolve_instant(start), resolve_instant(end))
        return scan, (resolve_instant(as_of),)

    def __repr__(self) -> str:
        return f"Table({self.uri!r}, version={self.table_version}, type={self.table_type})"
