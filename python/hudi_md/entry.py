"""``hudi_md.write``: the one write entry point, for Arrow tables (written in-process) and PySpark
DataFrames (written by the Spark executors). It sits above every layer, as it reaches both the
writer and the Spark plugin."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from hudi_md.write.writer import HudiWriter


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


__all__ = ["write"]
