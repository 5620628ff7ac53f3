"""Registering hudi-md tables in Spark's catalog, the way Hudi's Hive sync does."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def hive_sync(
    spark: SparkSession, uri: str, database: str, table: str, options: Mapping[str, str] | None = None
) -> None:
    """Create (or refresh) ``database.table`` so plain ``SELECT ... FROM database.table`` plans
    through hudi-md.

    Spark stores what Hudi's Hive sync stores for data-source tables: the provider
    (``spark.sql.sources.provider=hudi-md``), the schema split into ``spark.sql.sources.schema.part.N``
    properties, the partition columns and the ``path`` storage property. The schema comes from
    the table itself (the shim's ``schema`` request), so re-running after a schema change updates it.
    """
    opts = "".join(f", {_quote_str(k)} {_quote_str(v)}" for k, v in (options or {}).items())
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {_quote(database)}")
    name = f"{_quote(database)}.{_quote(table)}"
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    spark.sql(f"CREATE TABLE {name} USING `hudi-md` OPTIONS (path {_quote_str(uri)}{opts})")


def _quote_str(value: str) -> str:
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"
