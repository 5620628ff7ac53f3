"""Spark schemas ⇄ Arrow schemas, without PySpark's private ``pyspark.sql.pandas.types``.

Both directions go through Spark's public JSON form of a schema (``StructType.jsonValue()`` /
``StructType.fromJson``, the form the JVM's ``DataType.fromJson`` reads), so the planner process
needs no PySpark at all and the writer works on every PySpark line.

Spark → Arrow follows PySpark 3.5's conversion: ``timestamp`` → ``timestamp[us, tz=UTC]``,
``timestamp_ntz`` → ``timestamp[us]``, list items named ``element`` (nullable per
``containsNull``), map keys non-null and values nullable per ``valueContainsNull``. Arrow → Spark
follows PySpark's ``from_arrow_schema`` (a timestamp without a time zone becomes ``timestamp``, as
before; dictionaries become their value type).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from hudi_md.errors import UnsupportedFeatureError

if TYPE_CHECKING:
    from pyspark.sql.types import StructType


_SIMPLE_TO_ARROW: dict[str, pa.DataType] = {
    "string": pa.string(),
    "binary": pa.binary(),
    "boolean": pa.bool_(),
    "byte": pa.int8(),
    "short": pa.int16(),
    "integer": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "timestamp_ntz": pa.timestamp("us"),
    "void": pa.null(),
}
_DECIMAL = re.compile(r"decimal\(\s*(\d+)\s*,\s*(-?\d+)\s*\)")
_CHAR = re.compile(r"(?:var)?char\(\s*\d+\s*\)")


def _json(schema: StructType | dict[str, Any]) -> dict[str, Any]:
    """A PySpark DataType (or StructType) as its JSON value; JSON values pass through."""
    return schema.jsonValue() if hasattr(schema, "jsonValue") else schema


def spark_schema_to_arrow(schema: StructType | dict[str, Any]) -> pa.Schema:
    """The Arrow schema of a Spark ``StructType`` (a PySpark object or its ``jsonValue()``).

    Raises :class:`~hudi_md.errors.UnsupportedFeatureError` naming the column for types hudi-md
    does not write (intervals, variant, ...).
    """
    value = _json(schema)
    if not isinstance(value, dict) or value.get("type") != "struct":
        raise UnsupportedFeatureError(f"expected a Spark StructType, got {value!r}")
    return pa.schema([_field_to_arrow(f, "") for f in value["fields"]])


def _field_to_arrow(field: dict[str, Any], prefix: str) -> pa.Field:
    name = field["name"]
    path = f"{prefix}{name}"
    return pa.field(name, _type_to_arrow(field["type"], path), nullable=bool(field.get("nullable", True)))


def _type_to_arrow(t: Any, path: str) -> pa.DataType:
    if isinstance(t, str):
        simple = _SIMPLE_TO_ARROW.get(t)
        if simple is not None:
            return simple
        m = _DECIMAL.fullmatch(t)
        if m:
            return pa.decimal128(int(m.group(1)), int(m.group(2)))
        if _CHAR.fullmatch(t):
            return pa.string()
    elif isinstance(t, dict):
        kind = t.get("type")
        if kind == "array":
            item = pa.field("element", _type_to_arrow(t["elementType"], f"{path}.element"), t["containsNull"])
            return pa.list_(item)
        if kind == "map":
            key = pa.field("key", _type_to_arrow(t["keyType"], f"{path}.key"), nullable=False)
            value = pa.field("value", _type_to_arrow(t["valueType"], f"{path}.value"), t["valueContainsNull"])
            return pa.map_(key, value)
        if kind == "struct":
            return pa.struct([_field_to_arrow(f, f"{path}.") for f in t["fields"]])
        if kind == "udt" and "sqlType" in t:
            return _type_to_arrow(t["sqlType"], path)
    raise UnsupportedFeatureError(f"column {path!r}: Spark type {_describe(t)} cannot be written by hudi-md")


def _describe(t: Any) -> str:
    if isinstance(t, dict):
        return str(t.get("type", t))
    return str(t)


def arrow_schema_to_spark_json(schema: pa.Schema) -> dict[str, Any]:
    """The Spark ``StructType`` JSON value of an Arrow schema (``StructType.fromJson`` in PySpark,
    ``DataType.fromJson`` on the JVM). Raises :class:`~hudi_md.errors.UnsupportedFeatureError`
    naming the column for Arrow types Spark has no type for."""
    return {"type": "struct", "fields": [_field_to_spark(f, "") for f in schema]}


def _field_to_spark(field: pa.Field, prefix: str) -> dict[str, Any]:
    path = f"{prefix}{field.name}"
    return {
        "name": field.name,
        "type": _type_to_spark(field.type, path),
        "nullable": field.nullable,
        "metadata": {},
    }


def _type_to_spark(t: pa.DataType, path: str) -> Any:
    types = pa.types
    if types.is_boolean(t):
        return "boolean"
    if types.is_int8(t):
        return "byte"
    if types.is_int16(t):
        return "short"
    if types.is_int32(t):
        return "integer"
    if types.is_int64(t):
        return "long"
    if types.is_float32(t):
        return "float"
    if types.is_float64(t):
        return "double"
    if types.is_decimal(t):
        return f"decimal({t.precision},{t.scale})"
    if types.is_string(t) or types.is_large_string(t):
        return "string"
    if types.is_binary(t) or types.is_large_binary(t):
        return "binary"
    if types.is_date32(t):
        return "date"
    if types.is_timestamp(t):
        return "timestamp"
    if types.is_duration(t):
        return "interval day to second"
    if types.is_list(t) or types.is_large_list(t) or types.is_fixed_size_list(t):
        return {
            "type": "array",
            "elementType": _type_to_spark(t.value_type, f"{path}.element"),
            "containsNull": True,
        }
    if types.is_map(t):
        return {
            "type": "map",
            "keyType": _type_to_spark(t.key_type, f"{path}.key"),
            "valueType": _type_to_spark(t.item_type, f"{path}.value"),
            "valueContainsNull": True,
        }
    if types.is_struct(t):
        return {
            "type": "struct",
            "fields": [_field_to_spark(t.field(i), f"{path}.") for i in range(t.num_fields)],
        }
    if types.is_dictionary(t):
        return _type_to_spark(t.value_type, path)
    if types.is_null(t):
        return "void"
    raise UnsupportedFeatureError(f"column {path!r}: Arrow type {t} has no Spark type")
