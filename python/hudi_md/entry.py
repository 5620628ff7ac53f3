"""``hudi_md.write``: the one write entry point, for Arrow tables (written in-process) and PySpark
DataFrames (written by the Spark executors). It sits above every layer, as it reaches both the
writer and the Spark plugin."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from hudi_md.config import check_options
from hudi_md.config import write as W
from hudi_md.errors import InvalidOptionError
from hudi_md.write.config import OPERATION, OPERATIONS
from hudi_md.write.result import WriteResult
from hudi_md.write.writer import HudiWriter

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def write(
    data: Any, uri: str, *, operation: str | None = None, options: Mapping[str, Any] | None = None
) -> WriteResult:
    """Write ``data`` to the Hudi table at ``uri``; returns what the commit recorded, a
    :class:`~hudi_md.write.result.WriteResult`: the instant time (it *is* that string, so code
    using the instant keeps working) with the rows inserted, updated and deleted, the files added
    and removed, the bytes written and the time its metadata-table update took.

    ``data``: a ``pyarrow.Table`` or ``RecordBatch``, a pandas or polars DataFrame (or anything
    else with the Arrow C stream interface, read whole), a PySpark DataFrame (written by the Spark
    executors), or a ``pyarrow.RecordBatchReader``: a stream, written batch by batch without
    holding it whole, for ``insert`` and ``bulk_insert`` (other operations merge the records by
    key and refuse a stream with :class:`InvalidOptionError`; pass ``reader.read_all()``).
    ``operation``: ``upsert`` (the default), ``insert``, ``bulk_insert``, ``delete``,
    ``insert_overwrite``, ``insert_overwrite_table`` or ``delete_partition``; it may be
    given as Hudi's ``hoodie.datasource.write.operation`` option instead (both, when they differ,
    are refused). ``options`` take Hudi's keys (``hoodie.table.name``,
    ``hoodie.datasource.write.recordkey.field``, ...) with Hudi's defaults; other keys go to
    fsspec as storage options.
    """
    check_options(options or {})
    operation = resolve_operation(operation, options)
    if _is_spark_dataframe(data):
        # Imported here: PySpark is an optional dependency.
        from hudi_md.spark.writer import write_dataframe

        return write_dataframe(data, uri, operation=operation, options=options)
    if isinstance(data, pa.RecordBatchReader):
        # read as it is written, batch by batch (insert and bulk_insert; others are refused)
        return HudiWriter(uri, options).write_batches(data, operation).write_result
    table = as_arrow_table(data)
    return HudiWriter(uri, options).write(table, operation).write_result


def resolve_operation(operation: str | None, options: Mapping[str, Any] | None) -> str:
    """The write operation: ``operation``, else ``hoodie.datasource.write.operation``, else
    ``upsert``; names are Hudi's (case-insensitive). Unknown names, and an argument and option
    that disagree, raise :class:`InvalidOptionError`."""
    given = None if options is None else W.OPERATION.raw(options)
    names = {}
    for source, value in (("operation", operation), (OPERATION, given)):
        if value is None or str(value).strip() == "":
            continue
        name = str(value).strip().lower()
        if name not in OPERATIONS:
            raise InvalidOptionError(
                f"{source}={value!r} is not an operation: use one of {', '.join(OPERATIONS)}"
            )
        names[source] = name
    if len(set(names.values())) > 1:
        raise InvalidOptionError(
            f"operation={operation!r} and {OPERATION}={given!r} disagree: give the operation once"
        )
    return next(iter(names.values()), "upsert")


def _is_spark_dataframe(data: Any) -> bool:
    module = type(data).__module__ or ""
    return module.startswith("pyspark.") and type(data).__name__ == "DataFrame"


def as_arrow_table(data: Any) -> pa.Table:
    """``data`` as a ``pyarrow.Table``: Arrow tables, batches and batch readers (read to the end),
    pandas DataFrames (without their index), polars DataFrames, and anything else that exports
    the Arrow C stream interface (``__arrow_c_stream__``). Anything else raises
    :class:`InvalidOptionError` naming its type."""
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.read_all()
    module = type(data).__module__ or ""
    if module.startswith("pandas.") and type(data).__name__ == "DataFrame":
        return pa.Table.from_pandas(data, preserve_index=False)
    if module.startswith("polars.") and hasattr(data, "to_arrow"):
        return data.to_arrow()
    if hasattr(data, "__arrow_c_stream__"):
        return pa.table(data)
    raise InvalidOptionError(
        f"data of type {type(data).__module__}.{type(data).__qualname__} cannot be written: pass a "
        "pyarrow Table, RecordBatch or RecordBatchReader, a pandas or polars DataFrame, or a PySpark "
        "DataFrame"
    )


def schedule_indexing(
    uri: str,
    partitions: Sequence[str],
    *,
    columns: Sequence[str] | None = None,
    options: Mapping[str, Any] | None = None,
) -> str:
    """Plan building MDT ``partitions`` (``record_index``, ``column_stats``, ``partition_stats``,
    ``bloom_filters``) beside running writers: an ``indexing`` instant (RFC-45, Apache Hudi's
    bytes). Returns its instant time; :func:`run_indexing` builds it. ``columns``: what
    ``column_stats`` indexes (default: Hudi's first 32 columns)."""
    from hudi_md.write import indexing

    return indexing.schedule_indexing(HudiWriter(uri, options), partitions, columns=columns)


def run_indexing(
    uri: str,
    *,
    instant: str | None = None,
    spark: SparkSession | None = None,
    timeout_s: float | None = None,
    options: Mapping[str, Any] | None = None,
) -> str | None:
    """Build what the pending ``indexing`` instant (default: the earliest) plans and make its
    partitions available; returns the instant, or None when none is pending. With a
    ``SparkSession`` (``spark``), the executors read the table's files and return the records;
    the driver only writes the MDT's files. ``timeout_s``: how long to wait for writes that began
    before the schedule (default ``hoodie.metadata.index.check.timeout.seconds``, 900); on timeout
    the indexing is rolled back (``IndexingTimeoutError``)."""
    from hudi_md.write import indexing

    builder = None
    if spark is not None:
        from hudi_md.spark.indexing import spark_builder

        builder = spark_builder(spark)
    return indexing.run_indexing(HudiWriter(uri, options), instant, builder=builder, timeout_s=timeout_s)


def drop_index(uri: str, partitions: Sequence[str], *, options: Mapping[str, Any] | None = None) -> list[str]:
    """Drop MDT partitions (indexes) under the table lock; a pending indexing of one of them is
    rolled back whole. Returns the MDT partitions the table keeps."""
    from hudi_md.write.table_setup import drop_metadata_indexes

    return list(drop_metadata_indexes(HudiWriter(uri, options), partitions).metadata_partitions)


__all__ = ["as_arrow_table", "drop_index", "resolve_operation", "run_indexing", "schedule_indexing", "write"]
