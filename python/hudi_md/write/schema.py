"""Arrow schemas as the Avro schemas Hudi-on-Spark records, in both of the forms it writes.

Hudi derives a table's Avro schema from the Spark ``StructType`` (``AvroConversionUtils.
convertStructTypeToAvroSchema`` → Spark's ``SchemaConverters.toAvroType``) with record name
``<table>_record`` and namespace ``hoodie.<table>``. Two spellings of that schema appear on disk
(checked against every fixture table, v6/v8/v9):

* **table form** (``hoodie.table.create.schema`` in ``hoodie.properties``): a nullable field is the
  union ``[T, "null"]`` and fields carry no default;
* **writer form** (``extraMetadata.schema`` of commits, ``parquet.avro.schema`` in base files):
  every union with ``null`` has ``null`` first and every nullable record field has
  ``"default": null``. Base files additionally start with the five meta fields
  (``["null", "string"]``, ``"doc": ""``, ``"default": null``).

Naming rules (Spark): a struct field ``f`` of a record whose full name is ``R`` becomes a record
named ``f`` in namespace ``R``; list items and map values are converted with the *field's* name and
namespace, so a ``list<struct>`` field ``f`` holds records named ``f`` too; a decimal field ``f``
becomes ``fixed`` named ``fixed`` in namespace ``R.f``, sized to the fewest bytes holding its
precision. Timestamps with a time zone become ``timestamp-micros``, without one
``local-timestamp-micros`` (Spark's ``TIMESTAMP_NTZ``); ``int8``/``int16`` widen to ``int`` as
Spark's byte and short types do.

JSON produced here follows Avro's ``Schema.toString`` key order and namespace elision, so
``json.dumps(schema, separators=(",", ":"))`` is byte-identical to what Hudi writes.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, overload

import pyarrow as pa

from hudi_md.errors import UnsupportedFeatureError
from hudi_md.formats.avro_arrow import META_COLUMNS, avro_schema_to_arrow

if TYPE_CHECKING:
    from hudi_md.formats.avro import AvroSchema


__all__ = [
    "META_FIELDS",
    "arrow_to_avro_schema",
    "avro_schema_json",
    "avro_to_arrow_schema",
    "with_meta_fields",
    "writer_schema",
]

# The meta fields exactly as Hudi prepends them (HoodieAvroUtils.addMetadataFields).
META_FIELDS: tuple[dict[str, Any], ...] = tuple(
    {"name": name, "type": ["null", "string"], "doc": "", "default": None} for name in META_COLUMNS
)

# The reverse mapping already exists for the read path; re-exported under the writer's name.
avro_to_arrow_schema = avro_schema_to_arrow


def avro_schema_json(schema: Mapping[str, Any]) -> str:
    """Compact JSON text, as Avro's ``Schema.toString()`` prints it."""
    return json.dumps(schema, separators=(",", ":"), ensure_ascii=False)


def arrow_to_avro_schema(schema: pa.Schema, record_name: str, namespace: str) -> dict[str, Any]:
    """The table-form Avro schema (as in ``hoodie.table.create.schema``) of an Arrow schema."""
    converter = _Converter()
    child_ns = _child_namespace(namespace, record_name)

    def fields() -> dict[str, Any]:
        return {
            "fields": [
                {"name": f.name, "type": converter.convert(f.type, f.nullable, f.name, child_ns)}
                for f in schema
            ]
        }

    out: dict[str, Any] = converter.define("record", record_name, namespace, fields)
    return out


def writer_schema(avro_schema: Mapping[str, Any]) -> dict[str, Any]:
    """The writer form of a schema: ``null`` first in unions, ``"default": null`` on nullable fields.

    Idempotent; the input is not modified.
    """
    return _null_first(copy.deepcopy(dict(avro_schema)))


def with_meta_fields(avro_schema: Mapping[str, Any]) -> dict[str, Any]:
    """``avro_schema`` with Hudi's five meta fields first (fields already present are kept as is)."""
    out = copy.deepcopy(dict(avro_schema))
    if out.get("type") != "record":
        raise UnsupportedFeatureError("meta fields can only be added to a record schema")
    existing = {f["name"] for f in out["fields"]}
    meta = [copy.deepcopy(f) for f in META_FIELDS if f["name"] not in existing]
    out["fields"] = meta + list(out["fields"])
    return out


# --- Arrow -> Avro -----------------------------------------------------------------------------------


def _child_namespace(namespace: str, name: str) -> str:
    return f"{namespace}.{name}" if namespace else name


def _named(kind: str, name: str, namespace: str | None, enclosing: str | None, **rest: Any) -> dict[str, Any]:
    """A named type with Avro's key order; ``namespace`` is printed only where it differs from the
    enclosing one (``Schema.toString`` elides it otherwise)."""
    out: dict[str, Any] = {"type": kind, "name": name}
    if (namespace or None) != enclosing:
        out["namespace"] = namespace
    out.update(rest)
    return out


def _decimal_bytes(precision: int) -> int:
    """Fewest bytes whose two's complement holds ``precision`` decimal digits (Spark's
    ``minBytesForPrecision``)."""
    n = 1
    while 2 ** (8 * n - 1) < 10**precision:
        n += 1
    return n


class _Converter:
    """Spark's ``toAvroType`` with Avro's printing rules; remembers named types already defined,
    because Avro prints a repeated named type as a bare reference."""

    def __init__(self) -> None:
        self._defined: set[str] = set()
        # The namespace of the innermost enclosing named type while printing (Avro's "current space").
        self._space: list[str | None] = []

    def convert(self, t: pa.DataType, nullable: bool, name: str, namespace: str) -> Any:
        avro = self._convert(t, name, namespace)
        if nullable and avro != "null":
            return [avro, "null"]
        return avro

    def _enclosing(self) -> str | None:
        return self._space[-1] if self._space else None

    def define(self, kind: str, name: str, namespace: str, build: Any) -> Any:
        full = _child_namespace(namespace, name)
        if full in self._defined:
            return full if namespace != self._enclosing() else name
        self._defined.add(full)
        enclosing = self._enclosing()
        self._space.append(namespace or None)
        try:
            return _named(kind, name, namespace, enclosing, **build())
        finally:
            self._space.pop()

    def _convert(self, t: pa.DataType, name: str, namespace: str) -> Any:
        if pa.types.is_boolean(t):
            return "boolean"
        if pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_int32(t):
            return "int"
        if pa.types.is_int64(t):
            return "long"
        if pa.types.is_float32(t):
            return "float"
        if pa.types.is_float64(t):
            return "double"
        if pa.types.is_string(t) or pa.types.is_large_string(t) or _is(t, "is_string_view"):
            return "string"
        if pa.types.is_binary(t) or pa.types.is_large_binary(t) or _is(t, "is_binary_view"):
            return "bytes"
        if pa.types.is_fixed_size_binary(t):
            # Spark has no fixed binary type: it reads such columns as BinaryType.
            return "bytes"
        if pa.types.is_date(t):
            return {"type": "int", "logicalType": "date"}
        if pa.types.is_timestamp(t):
            logical = "timestamp-micros" if t.tz is not None else "local-timestamp-micros"
            return {"type": "long", "logicalType": logical}
        if pa.types.is_decimal(t):
            size = _decimal_bytes(t.precision)
            fixed_ns = _child_namespace(namespace, name)
            return self.define(
                "fixed",
                "fixed",
                fixed_ns,
                lambda: {"size": size, "logicalType": "decimal", "precision": t.precision, "scale": t.scale},
            )
        if pa.types.is_null(t):
            return "null"
        if pa.types.is_dictionary(t):
            return self._convert(t.value_type, name, namespace)
        if (
            pa.types.is_list(t)
            or pa.types.is_large_list(t)
            or pa.types.is_fixed_size_list(t)
            or _is(t, "is_list_view")
        ):
            item = t.value_field
            return {"type": "array", "items": self.convert(item.type, item.nullable, name, namespace)}
        if pa.types.is_map(t):
            if not (pa.types.is_string(t.key_type) or pa.types.is_large_string(t.key_type)):
                # Avro maps have string keys only; Spark refuses other key types the same way.
                raise UnsupportedFeatureError(f"map key type {t.key_type} cannot be written as Avro")
            item = t.item_field
            return {"type": "map", "values": self.convert(item.type, item.nullable, name, namespace)}
        if pa.types.is_struct(t):
            child_ns = _child_namespace(namespace, name)

            def fields() -> dict[str, Any]:
                return {
                    "fields": [
                        {"name": f.name, "type": self.convert(f.type, f.nullable, f.name, child_ns)}
                        for f in t
                    ]
                }

            return self.define("record", name, namespace, fields)
        raise UnsupportedFeatureError(f"Arrow type {t} has no Avro equivalent Hudi writes")


def _is(t: pa.DataType, predicate: str) -> bool:
    """``pa.types.<predicate>(t)`` where this pyarrow has it (view types are recent)."""
    check = getattr(pa.types, predicate, None)
    return bool(check and check(t))


# --- table form -> writer form -----------------------------------------------------------------------


@overload
def _null_first(schema: dict[str, Any]) -> dict[str, Any]: ...
@overload
def _null_first(schema: AvroSchema) -> AvroSchema: ...
def _null_first(schema: AvroSchema) -> AvroSchema:
    # a dict comes back as itself, rewritten in place; a union as a new list
    if isinstance(schema, list):
        branches: list[AvroSchema] = [_null_first(b) for b in schema]
        if "null" in branches:
            branches = ["null"] + [b for b in branches if b != "null"]
        return branches
    if not isinstance(schema, dict):
        return schema
    kind = schema.get("type")
    if kind == "record":
        fields = []
        for f in schema.get("fields", []):
            f = dict(f)
            f["type"] = _null_first(f["type"])
            if isinstance(f["type"], list) and f["type"] and f["type"][0] == "null" and "default" not in f:
                f["default"] = None
            fields.append(_order_field(f))
        schema["fields"] = fields
    elif kind == "array":
        schema["items"] = _null_first(schema["items"])
    elif kind == "map":
        schema["values"] = _null_first(schema["values"])
    elif isinstance(kind, (list, dict)):
        schema["type"] = _null_first(kind)
    return schema


_FIELD_KEY_ORDER = ("name", "type", "doc", "default", "order", "aliases")


def _order_field(field: dict[str, Any]) -> dict[str, Any]:
    """Keys in ``Schema.Field`` print order (name, type, doc, default, ...), other props last."""
    out = {k: field[k] for k in _FIELD_KEY_ORDER if k in field}
    out.update({k: v for k, v in field.items() if k not in out})
    return out
