"""The Arrow schema of a table's rows, as Hudi's ``TableSchemaResolver`` resolves it."""

from __future__ import annotations

import functools

import pyarrow as pa
import pyarrow.parquet as pq

from hudi_md.errors import (
    CommitMetadataError,
    CorruptFileError,
    ParquetFileError,
    TableConfigError,
    UnsupportedFeatureError,
)
from hudi_md.formats.avro_arrow import avro_schema_to_arrow, with_meta_columns
from hudi_md.storage import Storage
from hudi_md.table.config import TableConfig
from hudi_md.table.fs_view import FileSystemView
from hudi_md.table.layout import storage_listing
from hudi_md.table.timeline import Timeline


def table_schema(storage: Storage, config: TableConfig, timeline: Timeline) -> pa.Schema:
    """The Arrow schema of the table's rows.

    Taken, as Hudi's ``TableSchemaResolver`` does, from the writer schema of the latest completed
    commit that recorded one (``extraMetadata["schema"]``), else ``hoodie.table.create.schema``,
    else the Parquet schema of the latest base file. Hudi's five meta columns come first when the
    table populates them; dropped partition columns are appended as strings. Every top-level
    column is nullable (schema evolution can leave any of them null in older files). For a
    time-travel read pass ``timeline.until(as_of)``: the rows as of an instant have that instant's
    schema.
    """
    schema = recorded_schema(storage, config, timeline) or pa.schema([])
    if config.populate_meta_fields:
        schema = with_meta_columns(schema)
    if config.drop_partition_columns:
        missing = [f for f in config.partition_fields if f not in schema.names]
        schema = pa.schema([*schema, *(pa.field(f, pa.string()) for f in missing)])
    return pa.schema([f.with_nullable(True) for f in schema])


def recorded_schema(storage: Storage, config: TableConfig, timeline: Timeline) -> pa.Schema | None:
    """The table's schema as its writers recorded it (nullability as written, no meta columns
    added): the latest completed commit's writer schema, else ``hoodie.table.create.schema``,
    else the latest base file's Parquet schema; None for a table with none of them. The writer
    evolves this schema (:mod:`hudi_md.write.evolution`)."""
    schema: pa.Schema | None = None
    for instant in reversed(timeline.write_timeline().instants):
        extra = timeline.metadata(instant).get("extraMetadata") or {}
        text = extra.get("schema")
        if text:
            schema = parse_embedded_schema(text, CommitMetadataError, f"{timeline.name}/{instant.file_name}")
            break
    if schema is None and config.create_schema:
        schema = parse_embedded_schema(config.create_schema, TableConfigError, "hoodie.properties")
    if schema is None:
        schema = _latest_base_file_schema(storage, config, timeline)
    return schema


def parse_embedded_schema(text: str, error: type[CorruptFileError], where: str) -> pa.Schema:
    """An embedded Avro schema as Arrow; a schema that does not parse is an error of the file
    that carries it (an instant, ``hoodie.properties``, a log block)."""
    try:
        return _schema_from_avro(text)
    except UnsupportedFeatureError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise error(where, f"embedded Avro schema does not parse: {type(exc).__name__}: {exc}") from exc


@functools.lru_cache(maxsize=64)
def _schema_from_avro(text: str) -> pa.Schema:
    # Every block of every log file of a table repeats the same schema string.
    return avro_schema_to_arrow(text)


def _latest_base_file_schema(storage: Storage, config: TableConfig, timeline: Timeline) -> pa.Schema | None:
    view = FileSystemView(config, timeline, storage_listing(storage, config.to_dict()))
    bases = [s.base_file for s in view.latest_base_files() if s.base_file is not None]
    if not bases:
        return None
    latest = max(bases, key=lambda b: (b.instant, b.path))
    try:
        return pq.read_schema(pa.BufferReader(storage.read_bytes(latest.path))).remove_metadata()
    except (pa.ArrowException, OSError) as exc:
        raise ParquetFileError(storage.uri(latest.path), f"cannot read the Parquet schema: {exc}") from exc
