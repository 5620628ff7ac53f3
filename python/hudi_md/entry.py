"""``hudi_md.write``: the one write entry point, for Arrow tables (written in-process) and PySpark
DataFrames (written by the Spark executors). It sits above every layer, as it reaches both the
writer and the Spark plugin."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from hudi_md.write.writer import HudiWriter

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def write(data: Any, uri: str, *, operation: str = "upsert", options: Mapping[str, Any] | None = None) -> str:
    """Write ``data`` (a PySpark DataFrame or a ``pyarrow.Table``) to the Hudi table at ``uri``.

    Returns the instant time of the commit. ``options`` take Hudi's keys
    (``hoodie.table.name``, ``hoodie.datasource.write.recordkey.field``, ...) with Hudi's defaults;
    other keys go to fsspec as storage options.
    """
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    if isinstance(data, pa.Table):
        return HudiWriter(uri, options).write(data, operation).instant
    # Imported here: PySpark is an optional dependency.
    from hudi_md.spark.writer import write_dataframe

    return write_dataframe(data, uri, operation=operation, options=options)


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


__all__ = ["drop_index", "run_indexing", "schedule_indexing", "write"]
