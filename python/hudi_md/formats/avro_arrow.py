"""Avro schemas and records as Arrow, typed the way the table's Parquet base files read.

Rows of one file slice come from Parquet base files, Parquet log blocks and Avro log blocks, and
must concatenate into one Arrow table. The Avro → Arrow mapping below therefore follows what
``pyarrow.parquet`` returns for files written by parquet-avro (Hudi's writer): ``decimal`` as
``decimal128``, ``timestamp-micros`` as ``timestamp[us, tz=UTC]``, ``local-timestamp-*`` without a
zone, ``date`` as ``date32``, ``fixed`` as ``fixed_size_binary``. Where the Parquet side differs
only in names Arrow does not compare loosely (list item names, map entry names) or in nested
nullability, :func:`align_to_schema` casts by field name.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from hudi_md.errors import UnsupportedFeatureError
from hudi_md.formats.promotion import promote

__all__ = [
    "META_COLUMNS",
    "align_to_schema",
    "avro_records_to_arrow",
    "avro_schema_to_arrow",
    "avro_type_to_arrow",
    "cast_array",
    "with_meta_columns",
]

# Hudi's five meta columns, in the order every base file starts with (hudi-format.md §1.7).
META_COLUMNS = (
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
)

_PRIMITIVES: dict[str, pa.DataType] = {
    "null": pa.null(),
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "bytes": pa.binary(),
    "string": pa.string(),
}

_TIMESTAMPS: dict[str, tuple[str, str | None]] = {
    "timestamp-millis": ("ms", "UTC"),
    "timestamp-micros": ("us", "UTC"),
    "timestamp-nanos": ("ns", "UTC"),
    "local-timestamp-millis": ("ms", None),
    "local-timestamp-micros": ("us", None),
    "local-timestamp-nanos": ("ns", None),
}

# Largest precision decimal128 holds; larger decimals need decimal256 (Parquet reads them so too).
_DECIMAL128_MAX_PRECISION = 38


def avro_schema_to_arrow(avro_schema_json: str | Mapping[str, Any]) -> pa.Schema:
    """The Arrow schema of an Avro record schema (JSON text or already-parsed JSON).

    Top-level fields are nullable when their Avro type is a union with ``null``; named types
    defined once and referenced later by name are resolved.
    """
    schema = json.loads(avro_schema_json) if isinstance(avro_schema_json, str) else avro_schema_json
    if not isinstance(schema, Mapping) or schema.get("type") != "record":
        raise UnsupportedFeatureError(f"expected an Avro record schema, got {str(schema)[:200]!r}")
    named: dict[str, Any] = {}
    struct = _convert(schema, named, schema.get("namespace"))
    assert isinstance(struct, pa.StructType)
    return pa.schema([struct.field(i) for i in range(struct.num_fields)])


def avro_type_to_arrow(avro_type: Any) -> tuple[pa.DataType, bool]:
    """``(arrow type, nullable)`` of one Avro type (a union with ``null`` is nullable)."""
    named: dict[str, Any] = {}
    return _convert_nullable(avro_type, named, None)


def _full_name(name: str, namespace: str | None) -> str:
    return name if "." in name or not namespace else f"{namespace}.{name}"


def _convert_nullable(
    avro_type: Any, named: dict[str, Any], namespace: str | None
) -> tuple[pa.DataType, bool]:
    if isinstance(avro_type, list):
        branches = [b for b in avro_type if b != "null"]
        nullable = len(branches) < len(avro_type)
        if len(branches) == 1:
            return _convert(branches[0], named, namespace), nullable
        if not branches:
            return pa.null(), True
        # Spark and Hudi never write these; Arrow has dense unions, Parquet has no equivalent.
        raise UnsupportedFeatureError(f"Avro union of several non-null types is not supported: {avro_type!r}")
    return _convert(avro_type, named, namespace), False


def _convert(avro_type: Any, named: dict[str, Any], namespace: str | None) -> pa.DataType:
    if isinstance(avro_type, str):
        if avro_type in _PRIMITIVES:
            return _PRIMITIVES[avro_type]
        full = _full_name(avro_type, namespace)
        for candidate in (full, avro_type):
            if candidate in named:
                return named[candidate]
        raise UnsupportedFeatureError(f"Avro type {avro_type!r} is referenced but never defined")
    if isinstance(avro_type, list):
        arrow_type, _ = _convert_nullable(avro_type, named, namespace)
        return arrow_type
    if not isinstance(avro_type, Mapping):
        raise UnsupportedFeatureError(f"not an Avro type: {avro_type!r}")
    kind = avro_type.get("type")
    logical = avro_type.get("logicalType")
    if logical == "decimal" and kind in ("bytes", "fixed"):
        precision = int(avro_type["precision"])
        scale = int(avro_type.get("scale", 0))
        out: pa.DataType = (
            pa.decimal128(precision, scale)
            if precision <= _DECIMAL128_MAX_PRECISION
            else pa.decimal256(precision, scale)
        )
        _register(avro_type, out, named, namespace)
        return out
    if logical == "date" and kind == "int":
        return pa.date32()
    if logical == "time-millis" and kind == "int":
        return pa.time32("ms")
    if logical == "time-micros" and kind == "long":
        return pa.time64("us")
    if logical in _TIMESTAMPS and kind == "long":
        unit, tz = _TIMESTAMPS[logical]
        return pa.timestamp(unit, tz=tz)
    if logical == "uuid" and kind in ("string", "fixed"):
        # parquet-avro writes uuid strings as plain strings; keep them text.
        return pa.string()
    if kind == "record":
        ns = avro_type.get("namespace", namespace)
        full = _full_name(avro_type["name"], ns)
        ns = full.rsplit(".", 1)[0] if "." in full else ns
        fields = []
        for f in avro_type.get("fields", []):
            field_type, nullable = _convert_nullable(f["type"], named, ns)
            fields.append(pa.field(f["name"], field_type, nullable=nullable))
        out = pa.struct(fields)
        named[full] = out
        return out
    if kind == "enum":
        _register(avro_type, pa.string(), named, namespace)
        return pa.string()
    if kind == "fixed":
        out = pa.binary(int(avro_type["size"]))
        _register(avro_type, out, named, namespace)
        return out
    if kind == "array":
        item_type, nullable = _convert_nullable(avro_type["items"], named, namespace)
        return pa.list_(pa.field("element", item_type, nullable=nullable))
    if kind == "map":
        value_type, nullable = _convert_nullable(avro_type["values"], named, namespace)
        # Avro map keys are always strings.
        key = pa.field("key", pa.string(), nullable=False)
        return pa.map_(key, pa.field("value", value_type, nullable=nullable))
    if isinstance(kind, (str, list, Mapping)):
        # {"type": "long"} and friends: a primitive (or a logical type we do not know) wrapped in
        # an object; an unknown logical type falls back to its underlying type, as Avro says.
        return _convert(kind, named, namespace)
    raise UnsupportedFeatureError(f"unsupported Avro type {avro_type!r}")


def _register(
    avro_type: Mapping[str, Any], arrow_type: pa.DataType, named: dict[str, Any], ns: str | None
) -> None:
    name = avro_type.get("name")
    if name:
        named[_full_name(name, avro_type.get("namespace", ns))] = arrow_type


# --- records -----------------------------------------------------------------------------------


def avro_records_to_arrow(records: Sequence[Mapping[str, Any]], schema: pa.Schema) -> pa.Table:
    """Rows decoded by fastavro (logical types already converted) as an Arrow table of ``schema``.

    Fields missing from a record become null, so records written with an older schema load into
    a newer one; extra fields are ignored. UUIDs (which fastavro returns as :class:`uuid.UUID`)
    become strings.
    """
    fixer = _value_fixer_for_schema(schema)
    if fixer is not None:
        records = [fixer(r) for r in records]
    return pa.Table.from_pylist(list(records), schema=schema)


def _value_fixer_for_schema(schema: pa.Schema) -> Callable[[Mapping[str, Any]], Mapping[str, Any]] | None:
    """A per-record converter for values pyarrow cannot ingest as decoded, or None if none are.

    Only string columns can receive such values (fastavro's ``uuid.UUID``); the check is made
    once per schema so the common case costs nothing per record.
    """
    string_fields = [f.name for f in schema if _has_string(f.type)]
    if not string_fields:
        return None

    def fix(record: Mapping[str, Any]) -> Mapping[str, Any]:
        if not any(_needs_fix(record.get(name)) for name in string_fields):
            return record
        return {k: _fix_value(v) for k, v in record.items()}

    return fix


def _has_string(t: pa.DataType) -> bool:
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return True
    if pa.types.is_struct(t):
        return any(_has_string(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _has_string(t.value_type)
    if pa.types.is_map(t):
        return _has_string(t.item_type)
    return False


def _needs_fix(v: Any) -> bool:
    if isinstance(v, uuid.UUID):
        return True
    if isinstance(v, Mapping):
        return any(_needs_fix(x) for x in v.values())
    if isinstance(v, list):
        return any(_needs_fix(x) for x in v)
    return False


def _fix_value(v: Any) -> Any:
    if isinstance(v, uuid.UUID):
        return str(v)
    if isinstance(v, Mapping):
        return {k: _fix_value(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_fix_value(x) for x in v]
    return v


# --- schema alignment ----------------------------------------------------------------------------


def with_meta_columns(schema: pa.Schema) -> pa.Schema:
    """``schema`` with Hudi's five meta columns first (added as nullable strings when absent)."""
    fields = [schema.field(n) if n in schema.names else pa.field(n, pa.string()) for n in META_COLUMNS]
    fields += [f for f in schema if f.name not in META_COLUMNS]
    return pa.schema(fields, metadata=schema.metadata)


def align_to_schema(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with exactly the columns of ``schema``, matched by name and cast to its types.

    Columns the table lacks (added to the table schema later, or dropped from this file) are
    null; columns the schema lacks are dropped. Structs are matched field by field by name, so a
    nested field added later reads as null too.
    """
    if table.schema.equals(schema, check_metadata=False):
        return table
    names = set(table.column_names)
    columns = []
    for field in schema:
        if field.name in names:
            column = table.column(field.name)
            if not column.type.equals(field.type):
                column = pa.chunked_array(
                    [cast_array(chunk, field.type) for chunk in column.chunks], type=field.type
                )
            columns.append(column)
        else:
            columns.append(pa.nulls(table.num_rows, field.type))
    return pa.Table.from_arrays(columns, schema=schema)


def cast_array(array: pa.Array, target: pa.DataType) -> pa.Array:
    source = array.type
    if source.equals(target):
        return array
    if pa.types.is_struct(source) and pa.types.is_struct(target):
        # By name: pyarrow's struct cast wants the same field names in the same order.
        assert isinstance(array, pa.StructArray)
        children = []
        fields = []
        source_names = {source.field(i).name for i in range(source.num_fields)}
        for i in range(target.num_fields):
            tf = target.field(i)
            if tf.name in source_names:
                child = cast_array(array.field(tf.name), tf.type)
            else:
                child = pa.nulls(len(array), tf.type)
            children.append(child)
            fields.append(tf)
        return pa.StructArray.from_arrays(children, fields=fields, mask=_mask(array))
    if _is_list(source) and _is_list(target):
        assert isinstance(array, (pa.ListArray, pa.LargeListArray))
        offsets, values = _rebased(array, array.values)
        cls = pa.LargeListArray if pa.types.is_large_list(target) else pa.ListArray
        return cls.from_arrays(offsets, cast_array(values, target.value_type), type=target, mask=_mask(array))
    if pa.types.is_map(source) and pa.types.is_map(target):
        assert isinstance(array, pa.MapArray)
        offsets, keys = _rebased(array, array.keys)
        _, items = _rebased(array, array.items)
        return pa.MapArray.from_arrays(
            offsets,
            cast_array(keys, target.key_type),
            cast_array(items, target.item_type),
            type=target,
            mask=_mask(array),
        )
    # A column the table promoted (int -> long -> ... -> string) reads older files' values
    # converted as Hudi converts them.
    return promote(array, target)


def _rebased(array: pa.Array, child: pa.Array) -> tuple[pa.Array, pa.Array]:
    """Offsets starting at 0 and the part of ``child`` they cover.

    A sliced list array's offsets point into its whole child array, and Arrow refuses to rebuild a
    list from sliced offsets plus a validity mask, so both are cut down to the slice.
    """
    offsets = array.offsets
    start = offsets[0].as_py()
    end = offsets[len(offsets) - 1].as_py()
    return pc.subtract(offsets, pa.scalar(start, offsets.type)), child.slice(start, end - start)


def _mask(array: pa.Array) -> pa.Array | None:
    return array.is_null() if array.null_count else None


def _is_list(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t)
