"""The public Python API: ``open_table`` and :class:`Table`."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

import pyarrow as pa

from hudi_md.errors import HudiMdError, InvalidOptionError, UnsupportedFeatureError
from hudi_md.planning.expressions import Expression, to_expression
from hudi_md.storage import Storage
from hudi_md.table.config import SUPPORTED_VERSIONS, TableConfig
from hudi_md.table.fs_view import FileSlice, FileSystemView
from hudi_md.table.listing import ListingSource, StorageListing
from hudi_md.table.partitions import PartitionScheme
from hudi_md.table.timeline import Timeline, resolve_instant

log = logging.getLogger(__name__)

METADATA_ENABLE = "hoodie.metadata.enable"
QUERY_TYPES = ("snapshot", "read_optimized", "incremental")

Filters = Sequence[tuple[str, str, Any]] | Sequence[Sequence[tuple[str, str, Any]]] | None


_RETRY_KEYS = "hoodie.filesystem.operation.retry."


def open_table(uri: str, options: Mapping[str, Any] | None = None) -> Table:
    """Open the Hudi table at ``uri`` (local path or any fsspec URL).

    ``options`` take Hudi's keys (``hoodie.metadata.enable``) and fsspec storage options
    (everything not starting with ``hoodie.``, e.g. ``key``/``secret``/``endpoint_url`` for s3fs).
    """
    opts = {str(k): v for k, v in (options or {}).items()}
    # fsspec's options, and Hudi's file-system retry keys (the storage layer applies those).
    storage_opts = {k: v for k, v in opts.items() if not k.startswith("hoodie.") or k.startswith(_RETRY_KEYS)}
    hoodie_opts = {k: str(v) for k, v in opts.items() if k.startswith("hoodie.")}
    storage = Storage(uri, storage_opts)
    return Table(storage, hoodie_opts)


class Table:
    """A Hudi table of version 6, 8 or 9, read through its metadata table when it has one."""

    def __init__(self, storage: Storage, options: Mapping[str, str] | None = None) -> None:
        self.storage = storage
        self.options = dict(options or {})
        enable = self.options.get(METADATA_ENABLE)
        if enable is not None and enable.lower() not in ("true", "false"):
            raise InvalidOptionError(f"{METADATA_ENABLE} must be true or false, got {enable!r}")
        self.config = TableConfig.load(storage)
        if self.config.table_version not in SUPPORTED_VERSIONS:
            raise UnsupportedFeatureError(
                f"{storage.uri()}: table version {self.config.table_version} is not supported "
                f"(hudi-md reads versions {', '.join(map(str, SUPPORTED_VERSIONS))})"
            )
        self.timeline: Timeline = Timeline.load(
            storage, self.config.timeline_path, self.config.timeline_layout_version
        )
        self.partition_scheme = PartitionScheme(self.config)
        self._metadata_error: Exception | None = None
        self._archived: bool | None = None

    # --- properties --------------------------------------------------------------------------------

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
                history = self.config.get("hoodie.timeline.history.path") or "history"
                folder = f"{self.config.timeline_path}/{history}"
                self._archived = any(s.name.endswith(".parquet") for s in self.storage.list(folder))
            else:
                folder = f".hoodie/{self.config.get('hoodie.archivelog.folder') or 'archived'}"
                self._archived = any(
                    s.name.startswith(".commits_.archive") for s in self.storage.list(folder)
                )
        return self._archived

    def storage_stats(self) -> dict[str, int]:
        """Requests and bytes this table's storage has served so far."""
        return self.storage.stats.snapshot()

    # --- metadata table ------------------------------------------------------------------------------

    @property
    def metadata_forced(self) -> bool:
        return self.options.get(METADATA_ENABLE, "").lower() == "true"

    @property
    def uses_metadata_table(self) -> bool:
        return self.metadata_table is not None

    @cached_property
    def metadata_table(self) -> Any:
        """The :class:`~hudi_md.metadata.reader.MetadataTable`, or None when listing storage instead.

        Used when ``files`` is among ``hoodie.table.metadata.partitions`` and the option
        ``hoodie.metadata.enable`` is not ``false``. An MDT that cannot be read falls back to
        listing with a warning, unless the option forces it on (then the error is raised).
        """
        if self.options.get(METADATA_ENABLE, "true").lower() == "false":
            return None
        if "files" not in self.config.metadata_partitions:
            if self.metadata_forced:
                log.info("%s: no MDT files partition; listing storage", self.uri)
            return None
        from hudi_md.metadata.reader import MetadataTable

        try:
            mdt = MetadataTable(self.storage, self.config, self.timeline)
            mdt.all_partitions()  # read the partition list now, so a broken MDT is found here
            return mdt
        except (HudiMdError, OSError, EOFError, ValueError) as e:
            if self.metadata_forced:
                raise
            self._metadata_error = e
            warnings.warn(
                f"hudi-md: the metadata table of {self.uri} cannot be read ({e}); listing storage instead",
                RuntimeWarning,
                stacklevel=3,
            )
            return None

    @cached_property
    def listing(self) -> ListingSource:
        mdt = self.metadata_table
        return mdt if mdt is not None else StorageListing(self.storage)

    def file_system_view(self, as_of: str | None = None) -> FileSystemView:
        return FileSystemView(self.config, self.timeline, self.listing, as_of=as_of)

    # --- schema --------------------------------------------------------------------------------------

    @cached_property
    def schema(self) -> pa.Schema:
        """Arrow schema of the table (latest commit's writer schema, meta columns first)."""
        from hudi_md.read.slice_reader import table_schema

        return table_schema(self.storage, self.config, self.timeline)

    # --- planning --------------------------------------------------------------------------------------

    def partitions(self) -> list[str]:
        return self.listing.all_partitions()

    def resolve_instant(self, as_of: str | None) -> str | None:
        """``as_of`` as an instant time (see :func:`hudi_md.table.timeline.resolve_instant`)."""
        return resolve_instant(as_of)

    def plan(
        self,
        filters: Filters = None,
        as_of: str | None = None,
        *,
        read_optimized: bool = False,
    ) -> Any:
        """A :class:`~hudi_md.planning.planner.ScanPlan`: the slices to read and pruning counters."""
        from hudi_md.planning.planner import plan_scan

        return plan_scan(
            self,
            self.to_expression(filters),
            as_of=self.resolve_instant(as_of),
            read_optimized=read_optimized,
        )

    def file_slices(self, filters: Filters = None, as_of: str | None = None) -> pa.Table:
        """Latest file slices after partition, record-index and column-stats pruning, as Arrow."""
        return slices_to_arrow(self.plan(filters, as_of).slices)

    # --- reading -------------------------------------------------------------------------------------------

    def to_expression(self, filters: Filters) -> Expression | None:
        """``filters`` as an expression (see :func:`hudi_md.planning.expressions.to_expression`)."""
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
        from hudi_md.read.scan import TableScan

        scan = TableScan(self, filters=self.to_expression(filters), columns=columns)
        if query_type == "incremental":
            if as_of is not None:
                raise InvalidOptionError("as_of cannot be combined with query_type='incremental' (use end)")
            return scan.incremental(self.resolve_instant(start), self.resolve_instant(end))
        return scan.snapshot(self.resolve_instant(as_of), read_optimized=query_type == "read_optimized")

    def __repr__(self) -> str:
        return f"Table({self.uri!r}, version={self.table_version}, type={self.table_type})"


def slices_to_arrow(slices: Sequence[FileSlice]) -> pa.Table:
    slices = sorted(slices, key=lambda s: (s.partition_path, s.file_id))
    return pa.table(
        {
            "partition_path": pa.array([s.partition_path for s in slices], pa.string()),
            "file_id": pa.array([s.file_id for s in slices], pa.string()),
            "base_instant": pa.array([s.base_instant for s in slices], pa.string()),
            "base_file": pa.array([s.base_file.path if s.base_file else None for s in slices], pa.string()),
            "base_file_size": pa.array(
                [s.base_file.size if s.base_file else None for s in slices], pa.int64()
            ),
            "log_files": pa.array([[lf.path for lf in s.log_files] for s in slices], pa.list_(pa.string())),
            "log_file_sizes": pa.array(
                [[lf.size for lf in s.log_files] for s in slices], pa.list_(pa.int64())
            ),
            "total_size": pa.array([s.total_size for s in slices], pa.int64()),
        }
    )
