"""Rows of Arrow tables and Spark DataFrames as comparable, sorted lists of dicts, and other helpers
shared by the tests in tests/spark."""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

# Writer options matching the fixture table v9_txns_mor_simple_meta (tests that add a commit to it).
TXNS_MOR_WRITE_OPTIONS = {
    "hoodie.table.name": "v9_txns_mor_simple_meta",
    "hoodie.datasource.write.table.type": "MERGE_ON_READ",
    "hoodie.datasource.write.recordkey.field": "txn_id",
    "hoodie.datasource.write.partitionpath.field": "region",
    "hoodie.datasource.write.precombine.field": "txn_ts",
    "hoodie.datasource.write.hive_style_partitioning": "true",
}

META = ("_hoodie_record_key", "_hoodie_partition_path", "_hoodie_commit_time", "_hoodie_commit_seqno")


def _norm(v: Any) -> Any:
    if isinstance(v, (bytes, bytearray)):
        return bytes(v)
    if isinstance(v, decimal.Decimal):
        return v.normalize()
    if isinstance(v, datetime.datetime):  # only nested timestamps get here (top level: micros)
        return v.replace(tzinfo=None) if v.tzinfo is None else v.astimezone(datetime.timezone.utc)
    if isinstance(v, dict):
        return {k: _norm(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_norm(x) for x in v]
    return v


def _arrow_value(v: Any, t: pa.DataType) -> Any:
    if v is None:
        return None
    if pa.types.is_map(t):
        return {k: _arrow_value(x, t.item_type) for k, x in v}
    if pa.types.is_struct(t):
        return {
            t.field(i).name: _arrow_value(v[t.field(i).name], t.field(i).type) for i in range(t.num_fields)
        }
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [_arrow_value(x, t.value_type) for x in v]
    return v


def _sort_key(row: dict) -> tuple:
    return (*(str(row.get(c)) for c in META), repr(sorted(row.items(), key=lambda kv: kv[0])))


def arrow_rows(table: pa.Table, columns: list[str]) -> list[dict]:
    """Rows of an Arrow table as dicts; top-level timestamps as UTC epoch microseconds."""
    values = []
    for name in columns:
        col = table.column(name)
        if pa.types.is_timestamp(col.type):
            col = pc.cast(col.cast(pa.timestamp("us", tz=col.type.tz), safe=False), pa.int64())
        values.append([_norm(_arrow_value(v, col.type)) for v in col.to_pylist()])
    rows = [dict(zip(columns, vals, strict=True)) for vals in zip(*values, strict=True)] if values else []
    return sorted(rows, key=_sort_key)


def spark_rows(df: Any) -> list[dict]:
    from pyspark.sql import functions as F
    from pyspark.sql.types import TimestampNTZType, TimestampType

    cols = []
    for f in df.schema.fields:
        c = F.col(f"`{f.name}`")
        if isinstance(f.dataType, (TimestampType, TimestampNTZType)):
            c = F.unix_micros(c.cast("timestamp")).alias(f.name)
        cols.append(c)
    rows = [_norm(r.asDict(recursive=True)) for r in df.select(*cols).collect()]
    return sorted(rows, key=_sort_key)


@contextmanager
def conf(spark: Any, **settings: str) -> Iterator[None]:
    """Spark SQL settings for the duration of a block, restored afterwards."""
    old = {k: spark.conf.get(k, None) for k in settings}
    for k, v in settings.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)
