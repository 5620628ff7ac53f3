"""hudi-md tables and partitions as Hive metastore objects (the generated ``ttypes`` of Hive's
``hive_metastore.thrift``).

A table comes back as Hudi's Hive sync registers a data-source table: an ``EXTERNAL_TABLE`` whose
columns and partition keys are the registered schema in Hive types, stored with Hudi's input
format and Parquet's SerDe (a Hive-family client without Hudi's jars fails on the class instead of
reading every file version), and whose parameters carry what Spark restores a data-source table
from: ``spark.sql.sources.provider=hudi-md``, the Spark schema (``spark.sql.sources.schema.*``,
data columns then partition columns) and the partition columns; the location is also the
``path`` SerDe parameter, which Spark reads as the data source's path.

The Spark schema is derived from the registered Avro schema (Hudi's five meta columns first when
the table populates them, as Hudi's Hive sync does). A schema this module cannot map (a union of
several types, say) leaves the schema properties out: Spark then asks the data source, which reads
the table's own schema, rather than trusting a guess.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pyarrow as pa
from hmsclient.genthrift.hive_metastore import ttypes as H

from hudi_md.metastore import protocol as P
from hudi_md.metastore.options import METASERVER_ENABLED, METASERVER_URIS
from hudi_md.metastore_server.catalog import TableRow, is_numeric_type, table_config, typed_partition_type

PROVIDER = "hudi-md"
OWNER = "hudi-md"
HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
META_COLUMNS = (
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
)
SERDE = "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe"
INPUT_FORMATS = {
    "COPY_ON_WRITE": "org.apache.hudi.hadoop.HoodieParquetInputFormat",
    "MERGE_ON_READ": "org.apache.hudi.hadoop.realtime.HoodieParquetRealtimeInputFormat",
}
OUTPUT_FORMAT = "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat"
# Spark splits its schema JSON into properties of at most this many characters (its default
# spark.sql.sources.schemaStringLengthThreshold).
SCHEMA_PART_CHARS = 4000
# Characters Hive escapes in partition names (FileUtils.escapePathName), besides controls.
_ESCAPED = frozenset("\"#%'*/:=?\\\x7f{[]^")


class UnmappedType(ValueError):
    """An Avro type with no single Spark / Hive counterpart."""


# --- types --------------------------------------------------------------------------------------------

_PRIMITIVES: dict[str, tuple[str, str]] = {  # Avro -> (Spark JSON type, Hive type)
    "boolean": ("boolean", "boolean"),
    "int": ("integer", "int"),
    "long": ("long", "bigint"),
    "float": ("float", "float"),
    "double": ("double", "double"),
    "bytes": ("binary", "binary"),
    "string": ("string", "string"),
}
_LOGICAL: dict[str, tuple[str, str]] = {
    "date": ("date", "date"),
    "timestamp-millis": ("timestamp", "timestamp"),
    "timestamp-micros": ("timestamp", "timestamp"),
    "local-timestamp-millis": ("timestamp_ntz", "timestamp"),
    "local-timestamp-micros": ("timestamp_ntz", "timestamp"),
    "uuid": ("string", "string"),
}


def _hive_name(name: str) -> str:
    return name if name.replace("_", "a").isalnum() else "`" + name.replace("`", "``") + "`"


def avro_type(avro_json: Any) -> tuple[Any, str, bool]:
    """An Avro schema (parsed JSON) as (Spark's JSON data type, Hive's type string, nullable)."""
    if isinstance(avro_json, list):
        members = [m for m in avro_json if m != "null"]
        if len(members) != 1:
            raise UnmappedType(f"a union of {len(members)} non-null types")
        spark, hive, _ = avro_type(members[0])
        return spark, hive, True
    if isinstance(avro_json, str):
        if avro_json in _PRIMITIVES:
            spark, hive = _PRIMITIVES[avro_json]
            return spark, hive, False
        raise UnmappedType(f"Avro type {avro_json!r}")
    if not isinstance(avro_json, dict):
        raise UnmappedType(f"Avro avro_json {avro_json!r}")
    kind = avro_json.get("type")
    logical = avro_json.get("logicalType")
    if logical == "decimal":
        p, s = int(avro_json["precision"]), int(avro_json.get("scale", 0))
        return f"decimal({p},{s})", f"decimal({p},{s})", False
    if logical in _LOGICAL and kind in ("int", "long", "string"):
        spark, hive = _LOGICAL[logical]
        return spark, hive, False
    if kind == "enum":
        return "string", "string", False
    if kind == "fixed":
        return "binary", "binary", False
    if kind == "array":
        spark, hive, nullable = avro_type(avro_json["items"])
        return {"type": "array", "elementType": spark, "containsNull": nullable}, f"array<{hive}>", False
    if kind == "map":
        spark, hive, nullable = avro_type(avro_json["values"])
        spark_map = {"type": "map", "keyType": "string", "valueType": spark, "valueContainsNull": nullable}
        return spark_map, f"map<string,{hive}>", False
    if kind == "record":
        fields = [_field(f) for f in avro_json.get("fields", [])]
        hive_fields = ",".join(f"{_hive_name(f['name'])}:{h}" for f, h in fields)
        return {"type": "struct", "fields": [f for f, _ in fields]}, f"struct<{hive_fields}>", False
    if isinstance(kind, (str, list, dict)):
        return avro_type(kind)
    raise UnmappedType(f"Avro avro_json {avro_json!r}")


def _field(field: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    spark, hive, _ = avro_type(field["type"])
    # Every column is nullable to Spark: a stored schema stricter than the files fails the read.
    return {"name": str(field["name"]), "type": spark, "nullable": True, "metadata": {}}, hive


def partition_column_type(type_name: str) -> tuple[str, str]:
    """A registered partition column's type (Arrow, Avro or Spark SQL names) as (Spark, Hive)."""
    typed = typed_partition_type(type_name)
    if typed is not None and pa.types.is_date(typed):
        return "date", "date"
    if typed is not None and pa.types.is_timestamp(typed):
        # as the data column's Avro type maps: timestamp-* is Spark's timestamp, local-* its _ntz
        return ("timestamp" if typed.tz is not None else "timestamp_ntz"), "timestamp"
    t = type_name.strip().lower()
    if t in ("int", "int32", "integer", "int16", "int8", "short", "byte", "smallint", "tinyint"):
        return "integer", "int"
    if t in ("long", "int64", "bigint"):
        return "long", "bigint"
    if t in ("double", "float64"):
        return "double", "double"
    if t in ("float", "float32"):
        return "float", "float"
    if is_numeric_type(t):
        return "double", "double"
    return "string", "string"


# --- tables -------------------------------------------------------------------------------------------


def _columns(table: TableRow, params: Mapping[str, str]) -> tuple[list[tuple[dict[str, Any], str]], bool]:
    """The data columns (not the partition columns) as (Spark field, Hive type), and whether they
    come from the registered schema (False: unknown, Spark asks the data source)."""
    if not table.schema_json:
        return [], False
    try:
        record = json.loads(table.schema_json)
        fields = [_field(f) for f in record["fields"]]
    except (ValueError, TypeError, KeyError, UnmappedType):
        return [], False
    partition_names = {f.name for f in table.partition_fields}
    names = {f["name"] for f, _ in fields}
    meta: list[tuple[dict[str, Any], str]] = []
    if table_config(table, params).populate_meta_fields:
        meta = [
            ({"name": m, "type": "string", "nullable": True, "metadata": {}}, "string")
            for m in META_COLUMNS
            if m not in names
        ]
    return meta + [(f, h) for f, h in fields if f["name"] not in partition_names], True


def _partition_columns(table: TableRow) -> list[tuple[dict[str, Any], str]]:
    out = []
    for f in table.partition_fields:
        spark, hive = partition_column_type(f.type)
        out.append(({"name": f.name, "type": spark, "nullable": True, "metadata": {}}, hive))
    return out


def spark_properties(table: TableRow, params: Mapping[str, str]) -> dict[str, str]:
    """The table properties Spark restores a data-source table from."""
    props = {
        "spark.sql.sources.provider": PROVIDER,
        "spark.sql.create.version": "3.5.0",
        # Partitions are this metastore's (SHOW PARTITIONS asks it, not the file system).
        "spark.sql.partitionProvider": "catalog",
    }
    columns, known = _columns(table, params)
    part_columns = _partition_columns(table)
    if known:
        schema = json.dumps({"type": "struct", "fields": [f for f, _ in columns + part_columns]})
        chunks = [schema[i : i + SCHEMA_PART_CHARS] for i in range(0, len(schema), SCHEMA_PART_CHARS)]
        props["spark.sql.sources.schema.numParts"] = str(len(chunks))
        props.update({f"spark.sql.sources.schema.part.{i}": c for i, c in enumerate(chunks)})
        props["spark.sql.sources.schema.numPartCols"] = str(len(part_columns))
        props.update(
            {f"spark.sql.sources.schema.partCol.{i}": f["name"] for i, (f, _) in enumerate(part_columns)}
        )
    return props


def _storage(
    table: TableRow, columns: list[H.FieldSchema], location: str, metastore_url: str | None
) -> H.StorageDescriptor:
    serde_params = {"path": table.location, "serialization.format": "1"}
    if metastore_url:
        # Spark passes SerDe parameters to the data source as options: plans then prune
        # partitions on this metastore (its HTTP API), not by listing storage.
        serde_params.update({METASERVER_ENABLED: "true", METASERVER_URIS: metastore_url})
    return H.StorageDescriptor(
        cols=columns,
        location=location,
        inputFormat=INPUT_FORMATS.get(table.table_type, INPUT_FORMATS["COPY_ON_WRITE"]),
        outputFormat=OUTPUT_FORMAT,
        compressed=False,
        numBuckets=-1,
        serdeInfo=H.SerDeInfo(
            name=None,
            serializationLib=SERDE,
            parameters=serde_params,
        ),
        bucketCols=[],
        sortCols=[],
        parameters={},
        skewedInfo=H.SkewedInfo(skewedColNames=[], skewedColValues=[], skewedColValueLocationMaps={}),
        storedAsSubDirectories=False,
    )


def _epoch(table: TableRow) -> int:
    return int(table.created.timestamp())


def hive_table(table: TableRow, params: Mapping[str, str], metastore_url: str | None = None) -> H.Table:
    """``table`` as Hive's object; ``metastore_url`` (this metastore's HTTP API) becomes the data
    source's ``hoodie.metaserver.*`` options."""
    columns, _ = _columns(table, params)
    properties = {k: v for k, v in params.items() if not k.startswith("spark.sql.")}
    properties.update(spark_properties(table, params))
    properties.update({"EXTERNAL": "TRUE", "hudi_md.version": str(table.synced_version)})
    return H.Table(
        tableName=table.name,
        dbName=table.db,
        owner=OWNER,
        createTime=_epoch(table),
        lastAccessTime=0,
        retention=0,
        sd=_storage(
            table,
            [H.FieldSchema(name=f["name"], type=h, comment=None) for f, h in columns],
            table.location,
            metastore_url,
        ),
        partitionKeys=[
            H.FieldSchema(name=f["name"], type=h, comment=None) for f, h in _partition_columns(table)
        ],
        parameters=properties,
        viewOriginalText=None,
        viewExpandedText=None,
        tableType="EXTERNAL_TABLE",
        temporary=False,
    )


def hive_database(db: P.Database) -> H.Database:
    return H.Database(
        name=db.name,
        description=db.description,
        locationUri=db.location or "",
        parameters=dict(db.params),
        ownerName=OWNER,
        ownerType=H.PrincipalType.USER,
    )


# --- partitions ---------------------------------------------------------------------------------------


def escape(value: str) -> str:
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED or ord(c) < 0x20 else c for c in value)


def partition_values(table: TableRow, part: P.Partition) -> list[str]:
    """A partition's values in partition-key order (null: Hive's default partition name)."""
    if not part.values and part.path:
        # Values the path does not carry in a form Hudi reads back (e.g. formatted dates): the
        # path's segments, one per partition column, as written.
        segments = [s.partition("=")[2] if "=" in s else s for s in part.path.split("/")]
        if len(segments) == len(table.partition_fields):
            return segments
    values = []
    for f in table.partition_fields:
        value = part.values.get(f.name)
        values.append(HIVE_DEFAULT_PARTITION if value is None else value)
    return values


def partition_name(table: TableRow, part: P.Partition) -> str:
    """Hive's name for a partition, ``k1=v1/k2=v2`` (escaped as Hive escapes path names)."""
    return "/".join(
        f"{escape(f.name)}={escape(v)}"
        for f, v in zip(table.partition_fields, partition_values(table, part), strict=True)
    )


def _partition_storage(hive: H.Table, location: str) -> H.StorageDescriptor:
    """The table's storage descriptor at ``location`` (its parts shared, not copied: thousands
    of partitions are answered at once, and the objects only get serialized)."""
    sd = hive.sd
    return H.StorageDescriptor(
        cols=sd.cols,
        location=location,
        inputFormat=sd.inputFormat,
        outputFormat=sd.outputFormat,
        compressed=sd.compressed,
        numBuckets=sd.numBuckets,
        serdeInfo=sd.serdeInfo,
        bucketCols=sd.bucketCols,
        sortCols=sd.sortCols,
        parameters=sd.parameters,
        skewedInfo=sd.skewedInfo,
        storedAsSubDirectories=sd.storedAsSubDirectories,
    )


def hive_partition(table: TableRow, hive: H.Table, part: P.Partition) -> H.Partition:
    location = table.location.rstrip("/") + ("/" + part.path if part.path else "")
    return H.Partition(
        values=partition_values(table, part),
        dbName=table.db,
        tableName=table.name,
        createTime=_epoch(table),
        lastAccessTime=0,
        sd=_partition_storage(hive, location),
        parameters={
            "hudi_md.created_instant": part.created_instant,
            "hudi_md.updated_instant": part.updated_instant,
        },
    )
