"""Writing Hudi tables (table version 9) with the metadata table kept in step."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa


def write(data: Any, uri: str, *, operation: str = "upsert", options: Mapping[str, Any] | None = None) -> str:
    """Write ``data`` (a PySpark DataFrame or a ``pyarrow.Table``) to the Hudi table at ``uri``.

    Returns the instant time of the commit. ``options`` take Hudi's keys
    (``hoodie.table.name``, ``hoodie.datasource.write.recordkey.field``, ...) with Hudi's defaults;
    other keys go to fsspec as storage options.
    """
    if isinstance(data, pa.Table):
        from hudi_md.write.writer import HudiWriter

        return HudiWriter(uri, options).write(data, operation).instant
    if isinstance(data, pa.RecordBatch):
        return write(pa.Table.from_batches([data]), uri, operation=operation, options=options)
    from hudi_md.spark.writer import write_dataframe

    return write_dataframe(data, uri, operation=operation, options=options)


__all__ = ["write"]
