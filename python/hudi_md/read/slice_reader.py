"""Reading the rows of one file slice as Arrow: a base file alone (COW, read-optimized) or a base
file merged with its log files (MOR snapshot).

Log scanning follows Hudi 1.x (``BaseHoodieLogRecordReader``, hudi-format.md §4.5): log files in
Hudi's log order, blocks in file order; a data or delete block is skipped unless its
``INSTANT_TIME`` is valid for the read (completed, and at or before the query instant: the
caller's ``is_valid_instant``); a ROLLBACK command block removes the already queued blocks of its
``TARGET_INSTANT_TIME``. The surviving blocks are merged oldest to newest by
:mod:`hudi_md.read.merge`.

Partition columns of tables written with ``hoodie.datasource.write.drop.partition.columns`` are
part of :func:`table_schema` but not of the files: they read as null here, and the caller fills
them from the partition path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from hudi_md.errors import (
    InvalidOptionError,
    LogFormatError,
    ParquetFileError,
    UnsupportedFeatureError,
)
from hudi_md.formats.avro_arrow import (
    align_to_schema,
    avro_records_to_arrow,
)
from hudi_md.formats.logfile import HeaderKey, LogBlock, LogBlockType, read_log_file
from hudi_md.read.merge import LogRecordBuffer, MergeSpec, merge_with_base
from hudi_md.storage import Storage
from hudi_md.table.fs_view import BaseFile, FileSlice, LogFile
from hudi_md.table.schema import parse_embedded_schema, table_schema
from hudi_md.table.state import TableState
from hudi_md.table.timeline import instant_validator

__all__ = [
    "MergeSpec",
    "apply_log_blocks",
    "instant_validator",
    "read_base_file",
    "read_file_slice",
    "scan_log_blocks",
    "table_schema",
]

_DATA_BLOCKS = (
    LogBlockType.AVRO_DATA,
    LogBlockType.PARQUET_DATA,
    LogBlockType.HFILE_DATA,
    LogBlockType.DELETE,
)


# --- base files ----------------------------------------------------------------------------------


def _project(schema: pa.Schema, columns: Sequence[str] | None) -> pa.Schema:
    if columns is None:
        return schema
    unknown = [c for c in columns if c not in schema.names]
    if unknown:
        raise InvalidOptionError(f"unknown column(s) {unknown}; the table has {schema.names}")
    return pa.schema([schema.field(c) for c in dict.fromkeys(columns)])


def read_base_file(
    storage: Storage,
    base_file: BaseFile,
    *,
    schema: pa.Schema,
    columns: Sequence[str] | None = None,
    filter: pc.Expression | None = None,
) -> pa.Table:
    """Rows of one Parquet base file, aligned to ``schema`` (by name; missing columns null).

    ``columns`` projects (only those columns are decoded); ``filter`` is pushed into the Parquet
    read when the file can evaluate it as it is, and otherwise applied after alignment.
    """
    if not base_file.name.endswith(".parquet"):
        raise UnsupportedFeatureError(f"{storage.uri(base_file.path)}: only Parquet base files are supported")
    target = _project(schema, columns)
    raw = storage.read_bytes(base_file.path)
    try:
        return _read_parquet(pa.BufferReader(raw), schema, target, filter)
    except (pa.ArrowException, OSError) as exc:
        # pyarrow names no file in its errors (and ArrowInvalid is no hudi-md error).
        raise ParquetFileError(
            storage.uri(base_file.path), f"cannot read Parquet: {type(exc).__name__}: {exc}"
        ) from exc


def _read_parquet(
    data: pa.BufferReader, schema: pa.Schema, target: pa.Schema, filter: pc.Expression | None
) -> pa.Table:
    parquet = pq.ParquetFile(data)
    file_names = set(parquet.schema_arrow.names)
    read_cols = [n for n in target.names if n in file_names]
    if filter is None:
        return align_to_schema(parquet.read(columns=read_cols), target)
    try:
        # Row groups whose statistics exclude the filter are skipped. Not pq.read_table(filters=):
        # its threaded dataset scan leaves threads that abort the process at exit now and then
        # ("terminate called without an active exception", apache/arrow#34314), after a read
        # that returned the right rows.
        fragment = ds.ParquetFileFormat().make_fragment(data)
        groups = [g.id for part in fragment.split_by_row_group(filter) for g in part.row_groups]
        table = parquet.read_row_groups(groups, columns=read_cols).filter(filter)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, KeyError):
        # The filter names a column this file lacks or types it differently: filter after
        # alignment instead, where missing columns are nulls of the table's type.
        table = parquet.read(columns=[n for n in schema.names if n in file_names])
        return align_to_schema(align_to_schema(table, schema).filter(filter), target)
    return align_to_schema(table, target)


# --- log files -----------------------------------------------------------------------------------


def scan_log_blocks(
    storage: Storage, log_files: Sequence[LogFile], is_valid_instant: Callable[[str], bool]
) -> list[LogBlock]:
    """The data and delete blocks of ``log_files`` that take part in a merge, oldest first.

    ``log_files`` must be in Hudi's log order (as :class:`FileSlice` holds them).
    """
    queued: list[LogBlock] = []
    for log_file in log_files:
        for block in read_log_file(storage.input_file(log_file.path, log_file.size)):
            if block.block_type is LogBlockType.COMMAND:
                if block.is_rollback_command:
                    # Applied whatever the rollback instant: its target is a failed write, whose
                    # blocks must never be merged, also when reading as of an earlier time.
                    target = block.target_instant_time
                    queued = [q for q in queued if q.instant_time != target]
                continue
            if block.block_type not in _DATA_BLOCKS:
                continue
            instant = block.instant_time
            if instant is None or not is_valid_instant(instant):
                continue
            queued.append(block)
    return queued


def apply_log_blocks(buffer: LogRecordBuffer, blocks: Sequence[LogBlock]) -> None:
    """Feed decoded blocks, oldest first, into ``buffer``."""
    for block in blocks:
        if block.header.get(HeaderKey.IS_PARTIAL, "").lower() == "true":
            raise UnsupportedFeatureError(
                f"{block.file_name}: block at offset {block.offset} holds partial updates (not supported)"
            )
        if block.block_type is LogBlockType.AVRO_DATA:
            if block.schema is None:
                raise UnsupportedFeatureError(f"{block.file_name}: AVRO_DATA block without a SCHEMA header")
            block_schema = parse_embedded_schema(
                block.schema, LogFormatError, f"{block.file_name} (block at offset {block.offset})"
            )
            buffer.add_data(avro_records_to_arrow(block.avro_records(), block_schema))
        elif block.block_type is LogBlockType.PARQUET_DATA:
            buffer.add_data(block.parquet_table())
        elif block.block_type is LogBlockType.DELETE:
            buffer.add_deletes(block.delete_records())
        elif block.block_type is LogBlockType.HFILE_DATA:
            raise UnsupportedFeatureError(
                f"{block.file_name}: HFile data blocks in a data table's log are not supported"
            )


# --- slices --------------------------------------------------------------------------------------


def read_file_slice(
    storage: Storage,
    file_slice: FileSlice,
    *,
    schema: pa.Schema,
    merge: MergeSpec,
    is_valid_instant: Callable[[str], bool],
    columns: list[str] | None = None,
    filter: pc.Expression | None = None,
) -> pa.Table:
    """The merged rows of one file slice, with the columns of ``schema`` (or ``columns``, in that order).

    A slice without log files is its base file. Otherwise the base file's rows are merged with
    the valid log blocks per record key (see :mod:`hudi_md.read.merge`); ``filter`` applies to
    the merged rows, so a row updated by the log is judged by its new values. Row order is base
    order for unchanged rows followed by rows that came from the log.
    """
    output = _project(schema, columns)
    if not file_slice.log_files:
        if file_slice.base_file is None:
            return output.empty_table()
        return read_base_file(storage, file_slice.base_file, schema=schema, columns=columns, filter=filter)

    # Decode only what the answer and the merge need; a filter may reference any column.
    if columns is None or filter is not None:
        work = schema
    else:
        wanted = [*columns, *(c for c in merge.merge_columns() if c in schema.names)]
        work = _project(schema, list(dict.fromkeys(wanted)))
    base = (
        read_base_file(storage, file_slice.base_file, schema=work)
        if file_slice.base_file is not None
        else None
    )
    buffer = LogRecordBuffer(work, merge)
    apply_log_blocks(buffer, scan_log_blocks(storage, file_slice.log_files, is_valid_instant))
    merged = merge_with_base(base, buffer)
    if filter is not None:
        merged = merged.filter(filter)
    return align_to_schema(merged, output)


RECORD_KEY = "_hoodie_record_key"


class SliceRowReader:
    """Reads the merged rows of any file slice of one table (base file with its valid log blocks,
    deletes applied) with the merge rules and instant validity set up once: tagging, the MDT's
    record index and column stats, and their checks all read slices this way."""

    def __init__(self, table: TableState) -> None:
        self.table = table
        self._merge = MergeSpec.from_config(table.config)
        self._valid = instant_validator(table.timeline)

    def rows(self, file_slice: FileSlice, columns: list[str] | None = None) -> pa.Table:
        return read_file_slice(
            self.table.storage,
            file_slice,
            schema=self.table.schema,
            merge=self._merge,
            is_valid_instant=self._valid,
            columns=columns,
        )

    def keys(self, file_slice: FileSlice) -> pa.Array:
        """The live record keys of the slice."""
        return self.rows(file_slice, [RECORD_KEY]).column(RECORD_KEY).combine_chunks()

    def routing_keys(self, file_slice: FileSlice) -> pa.Array:
        """The keys a write's records of which go to this slice: its live keys and, under event
        time, the keys its base file holds whose latest state is a delete ordered like a record
        (a ``_hoodie_is_deleted`` record's). Apache Hudi's default index finds those in the base
        file, so a re-insert meets that delete and loses to it when its ordering value is lower.
        A key deleted by key (a commit-time delete) is not routed here: a re-insert of it starts
        anew, as in a COW table (Hudi 1.2's MOR would let the base row come back, hiding the
        re-insert)."""
        merge = self._merge
        if not file_slice.log_files or file_slice.base_file is None or not merge.event_time:
            return self.keys(file_slice)
        schema = self.table.schema
        work = _project(
            schema, [c for c in dict.fromkeys([RECORD_KEY, *merge.merge_columns()]) if c in schema.names]
        )
        base = read_base_file(self.table.storage, file_slice.base_file, schema=work)
        buffer = LogRecordBuffer(work, merge)
        apply_log_blocks(buffer, scan_log_blocks(self.table.storage, file_slice.log_files, self._valid))
        live = merge_with_base(base, buffer).column(RECORD_KEY).combine_chunks()
        ordered_deletes = pa.array(
            [k for k, e in buffer.entries.items() if e.is_delete and not e.is_commit_time_delete], pa.string()
        )
        base_keys = base.column(RECORD_KEY).combine_chunks()
        tombstoned = ordered_deletes.filter(pc.is_in(ordered_deletes, value_set=base_keys))
        return pa.concat_arrays([live.cast(pa.string()), tombstoned])
