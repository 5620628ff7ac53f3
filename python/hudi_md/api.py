"""The public Python API: ``open_table`` and :class:`Table`."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

import pyarrow as pa

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
from hudi_md.table.timeline import resolve_instant

log = logging.getLogger(__name__)

__all__ = ["METADATA_ENABLE", "Table", "open_table"]
QUERY_TYPES = ("snapshot", "read_optimized", "incremental")

Filters: TypeAlias = PyarrowFilters | None


_RETRY_KEYS = "hoodie.filesystem.operation.retry."
# Table options: Hudi's keys, and hudi-md's own where Hudi has none (hudi_md.planner.*).
_TABLE_KEYS = ("hoodie.", "hudi_md.")


def open_table(uri: str, options: Mapping[str, Any] | None = None) -> Table:
    """Open the Hudi table at ``uri`` (local path or any fsspec URL).

    ``options`` take Hudi's keys (``hoodie.metadata.enable``), hudi-md's (``hudi_md.planner.*``)
    and fsspec storage options (everything else, e.g. ``key``/``secret``/``endpoint_url`` for s3fs).
    """
    opts = {str(k): v for k, v in (options or {}).items()}
    # fsspec's options, and Hudi's file-system retry keys (the storage layer applies those).
    storage_opts = {
        k: v for k, v in opts.items() if not k.startswith(_TABLE_KEYS) or k.startswith(_RETRY_KEYS)
    }
    hoodie_opts = {k: str(v) for k, v in opts.items() if k.startswith(_TABLE_KEYS)}
    found = _metastore_source(uri, hoodie_opts)
    if found is not None:  # planned from the metastore; `uri` may be a registered name
        source, location = found
        return Table(Storage(location, storage_opts), hoodie_opts, source=source)
    return Table(Storage(uri, storage_opts), hoodie_opts)


def _metastore_source(uri: str, options: Mapping[str, str]) -> tuple[TableSource, str] | None:
    """The metastore's view of the table (``hoodie.metaserver.enabled``) and its location: by its
    registered name ``db.table`` or its location; None when the metastore is not on."""
    if metaserver_uri(options) is None:
        return None
    from hudi_md.metastore.plan_client import PlanClient
    from hudi_md.metastore.source import open_metastore_table

    client = PlanClient.from_options(options)
    assert client is not None
    table = open_metastore_table(client, uri)
    return table, table.location


class Table(TableState):
    """A Hudi table of version 6, 8 or 9, read through its metadata table when it has one.

    The user's front object: a :class:`~hudi_md.table.state.TableState` (what the table is, its
    timeline, MDT and schema, which every layer takes) plus the user's verbs below.
    """

    def __init__(
        self, storage: Storage, options: Mapping[str, str] | None = None, *, source: TableSource | None = None
    ) -> None:
        super().__init__(storage, options, open_metadata=open_metadata_table, source=source)

    # --- planning --------------------------------------------------------------------------------------

    def resolve_instant(self, as_of: str | None) -> str | None:
        """``as_of`` as an instant time (see :func:`hudi_md.table.timeline.resolve_instant`)."""
        return resolve_instant(as_of)

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
            self,
            self.to_expression(filters),
            as_of=self.resolve_instant(as_of),
            read_optimized=read_optimized,
            column_stats_engine=column_stats_engine,
        )

    def file_slices(self, filters: Filters = None, as_of: str | None = None) -> pa.Table:
        """Latest file slices after partition, record-index and column-stats pruning, as Arrow:
        the files' logical paths (relative to the table, as the MDT names them) and, in
        ``base_file_uri`` / ``log_file_uris``, where they are (under the storage path for a
        federated storage layout)."""
        logical = self.plan(filters, as_of).rows
        physical = slice_rows.finish_rows(logical, uri=self.storage.uri, uri_prefix=self.storage.uri_prefix)
        return logical.append_column("base_file_uri", physical.column(slice_rows.BASE_FILE)).append_column(
            "log_file_uris", physical.column(slice_rows.LOG_FILES)
        )

    # --- reading -------------------------------------------------------------------------------------------

    def to_expression(self, filters: Filters) -> Expression | None:
        """``filters`` as an expression (see :func:`hudi_md.planning.filters.to_expression`)."""
        return to_expression(filters)

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
        if query_type not in QUERY_TYPES:
            raise InvalidOptionError(
                f"query_type must be one of {', '.join(QUERY_TYPES)}, got {query_type!r}"
            )
        scan = TableScan(self, filters=self.to_expression(filters), columns=columns)
        if query_type == "incremental":
            if as_of is not None:
                raise InvalidOptionError("as_of cannot be combined with query_type='incremental' (use end)")
            return scan.incremental(self.resolve_instant(start), self.resolve_instant(end))
        return scan.snapshot(self.resolve_instant(as_of), read_optimized=query_type == "read_optimized")
