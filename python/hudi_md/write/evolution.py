"""The schema a write gives the table: the table's schema evolved by the records' schema, as
Apache Hudi 1.2 evolves it (``HoodieSchemaUtils.deduceWriterSchema``), decided before the instant
starts so that a refused write leaves nothing behind.

The rules, each settled by running Hudi 1.2's Spark bundle on the same inputs (COW and MOR alike):

* **Missing columns** (top-level or nested) are refused (:class:`MissingSchemaFieldError`), for
  every operation that writes records (insert, upsert, bulk_insert, the overwrites). Hudi's
  opt-ins: ``hoodie.write.set.null.for.missing.columns=true`` keeps them and writes nulls;
  ``hoodie.datasource.write.reconcile.schema=true`` does the same when the records add no column
  (with a new column Hudi refuses the missing ones anyway);
  ``hoodie.datasource.write.schema.allow.auto.evolution.column.drop=true`` drops them from the
  table.
* **Deletes** (``delete``, ``delete_partition``) keep the table's schema whatever columns the
  records carry; they need only the record key (and partition) columns.
* **New columns** are appended (nested ones at the end of their struct) and must be nullable
  (Hudi: ``READER_FIELD_MISSING_DEFAULT_VALUE``); the table's column order is kept.
* **Types**: a column whose incoming type Hudi converts to the table's type keeps the table's
  type (the values are converted, :mod:`hudi_md.formats.promotion`); otherwise a table type Hudi
  promotes to the incoming type becomes the incoming type (older files read converted); anything
  else is refused (:class:`IncompatibleSchemaChangeError`). Structs, lists and maps are resolved
  field by field.

One deliberate difference: Hudi 1.2 accepts ``long`` → ``timestamp`` as a promotion (the same
Avro primitive) and then reads the old numbers as microseconds in COW and as seconds in MOR;
hudi-md refuses it, since either reading changes what the stored values mean.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pyarrow as pa

from hudi_md.config import write as W
from hudi_md.errors import (
    IncompatibleSchemaChangeError,
    MissingSchemaFieldError,
    SchemaEvolutionError,
)
from hudi_md.formats.avro_arrow import META_COLUMNS, avro_schema_to_arrow, cast_array
from hudi_md.write.schema import arrow_to_avro_schema

__all__ = [
    "ALLOW_COLUMN_DROP",
    "DELETE_OPERATIONS",
    "RECONCILE_SCHEMA",
    "SET_NULL_FOR_MISSING",
    "SchemaOptions",
    "WriterSchema",
    "canonical_schema",
    "evolve",
]

SET_NULL_FOR_MISSING = W.SET_NULL_FOR_MISSING.key
RECONCILE_SCHEMA = W.RECONCILE_SCHEMA.key
ALLOW_COLUMN_DROP = W.ALLOW_COLUMN_DROP.key
DELETE_OPERATIONS = ("delete", "delete_partition")
_INTERNAL_COLUMNS = frozenset({*META_COLUMNS, "_hoodie_md_op"})


@dataclass(frozen=True)
class SchemaOptions:
    """Hudi's opt-ins for records that lack table columns (all off by default, as in Hudi)."""

    set_null_for_missing: bool = False
    reconcile: bool = False
    allow_column_drop: bool = False


@dataclass(frozen=True)
class WriterSchema:
    """The table's data schema after a write (no meta columns) and what changed: columns
    ``added``, ``promoted`` (name → (old type, new type)), ``filled`` with nulls, ``dropped``."""

    schema: pa.Schema
    added: tuple[str, ...] = ()
    promoted: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    filled: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()
    keeps_records: bool = True  # False for deletes: the records are keys, not rows to write

    def conform(self, data: pa.Table, table: str = "table") -> pa.Table:
        """``data`` with this schema's columns and types (missing ones null), values converted
        as Hudi converts them; a value that does not convert raises
        :class:`SchemaEvolutionError` naming the column. Deletes pass through unchanged."""
        if not self.keeps_records:
            return data
        names = set(data.column_names)
        columns = []
        for f in self.schema:
            if f.name not in names:
                columns.append(pa.nulls(data.num_rows, f.type))
                continue
            column = data.column(f.name)
            if not column.type.equals(f.type):
                try:
                    column = pa.chunked_array([cast_array(c, f.type) for c in column.chunks], type=f.type)
                except SchemaEvolutionError as e:
                    raise SchemaEvolutionError(
                        f"{table}: column {f.name}: {e}. Nothing was written"
                    ) from None
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
                    raise SchemaEvolutionError(
                        f"{table}: column {f.name}: its values cannot become {f.type}: {e}. "
                        "Nothing was written"
                    ) from None
            columns.append(column)
        schema = pa.schema([f.with_nullable(True) for f in self.schema])
        return pa.Table.from_arrays(columns, schema=schema)


def canonical_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` (less Hudi's meta columns) with the types its Avro form reads back as: what a
    table records for these columns (``int8`` → ``int32``, ``large_string`` → ``string``,
    nanosecond timestamps → microseconds, dictionaries → their values, ...)."""
    data = pa.schema([f for f in schema if f.name not in _INTERNAL_COLUMNS])
    if not len(data):
        return data
    return avro_schema_to_arrow(arrow_to_avro_schema(data, "r", "hoodie.r"))


def evolve(
    table_schema: pa.Schema | None,
    incoming: pa.Schema,
    *,
    operation: str,
    options: SchemaOptions,
    table: str = "table",
    required: Sequence[str] = (),
) -> WriterSchema:
    """The schema a write of records of schema ``incoming`` gives a table whose schema is
    ``table_schema`` (None: a new table). ``required``: columns the records must have whatever
    the operation (record key and partition fields); their absence raises
    :class:`MissingSchemaFieldError`."""
    records = canonical_schema(incoming)
    lacking = [c for c in required if c not in records.names]
    if lacking:
        raise MissingSchemaFieldError(table, lacking)
    if table_schema is None:
        return WriterSchema(records, added=tuple(records.names))
    current = pa.schema([f for f in table_schema if f.name not in _INTERNAL_COLUMNS])
    if operation in DELETE_OPERATIONS:
        return WriterSchema(current, keeps_records=False)
    resolver = _Resolver(table, options)
    fields = resolver.fields(list(current), list(records), "")
    return WriterSchema(
        pa.schema(fields),
        added=tuple(resolver.added),
        promoted=dict(resolver.promoted),
        filled=tuple(resolver.filled),
        dropped=tuple(resolver.dropped),
    )


# Which type a column may change to, as Hudi 1.2 decides (numbers, strings and bytes only).
# KEEP: records of the first type are converted to the table's second type, which stays.
# PROMOTE: a table type that becomes the records' type (older values read converted).
_INT, _LONG, _FLOAT, _DOUBLE = "int", "long", "float", "double"
_STRING, _BYTES, _DECIMAL, _DATE = "string", "bytes", "decimal", "date"
_KEEP = {
    _INT: {_LONG, _FLOAT, _DOUBLE, _STRING, _DECIMAL},
    _LONG: {_FLOAT, _DOUBLE, _STRING, _DECIMAL},
    _FLOAT: {_DOUBLE, _STRING, _DECIMAL},
    _DOUBLE: {_STRING, _DECIMAL},
    _DECIMAL: {_STRING},
    _DATE: {_STRING},
    _BYTES: {_STRING},
    _STRING: {_BYTES, _DECIMAL, _DATE},
}
_PROMOTE = {
    _INT: {_LONG, _FLOAT, _DOUBLE, _STRING},
    _LONG: {_FLOAT, _DOUBLE, _STRING},
    _FLOAT: {_DOUBLE, _STRING},
    _DOUBLE: {_STRING},
}


def _kind(t: pa.DataType) -> str | None:
    if pa.types.is_int32(t) or pa.types.is_int8(t) or pa.types.is_int16(t):
        return _INT
    if pa.types.is_int64(t):
        return _LONG
    if pa.types.is_float32(t):
        return _FLOAT
    if pa.types.is_float64(t):
        return _DOUBLE
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return _STRING
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return _BYTES
    if pa.types.is_decimal(t):
        return _DECIMAL
    if pa.types.is_date(t):
        return _DATE
    return None


def _decimal_fits(narrow: pa.DataType, wide: pa.DataType) -> bool:
    """Every value of decimal ``narrow`` is exactly a value of decimal ``wide``."""
    return narrow.scale <= wide.scale and narrow.precision - narrow.scale <= wide.precision - wide.scale


def _shown(t: pa.DataType) -> str:
    return str(t)


class _Resolver:
    def __init__(self, table: str, options: SchemaOptions) -> None:
        self.table = table
        self.options = options
        self.added: list[str] = []
        self.promoted: dict[str, tuple[str, str]] = {}
        self.filled: list[str] = []
        self.dropped: list[str] = []

    def fields(self, current: list[pa.Field], records: list[pa.Field], prefix: str) -> list[pa.Field]:
        by_name = {f.name: f for f in records}
        known = {f.name for f in current}
        missing = [f for f in current if f.name not in by_name]
        new = [f for f in records if f.name not in known]
        o = self.options
        fill = o.set_null_for_missing or (o.reconcile and not new)
        if missing and not fill and not o.allow_column_drop:
            raise MissingSchemaFieldError(self.table, [prefix + f.name for f in missing])
        out = []
        for f in current:
            incoming = by_name.get(f.name)
            if incoming is None:
                if fill:
                    self.filled.append(prefix + f.name)
                    out.append(f.with_nullable(True))
                else:
                    self.dropped.append(prefix + f.name)
                continue
            out.append(self.field(f, incoming, prefix))
        for f in new:
            if not f.nullable:
                raise IncompatibleSchemaChangeError(
                    self.table,
                    prefix + f.name,
                    "absent",
                    f"{_shown(f.type)} not null",
                    "a new column must be nullable: the table's older rows have no value for it "
                    "(Apache Hudi refuses it too); make the column nullable",
                )
            self.added.append(prefix + f.name)
            out.append(f)
        return out

    def field(self, current: pa.Field, incoming: pa.Field, prefix: str) -> pa.Field:
        path = prefix + current.name
        t = self.type(current.type, incoming.type, path)
        return pa.field(current.name, t, nullable=current.nullable or incoming.nullable)

    def type(self, t: pa.DataType, i: pa.DataType, path: str) -> pa.DataType:
        if t.equals(i):
            return t
        if pa.types.is_null(i):
            return t  # a column of nulls fits any type
        if pa.types.is_null(t):
            self.promoted[path] = (_shown(t), _shown(i))
            return i
        if pa.types.is_struct(t) and pa.types.is_struct(i):
            fields = self.fields(list(t), list(i), path + ".")
            return pa.struct(fields)
        if pa.types.is_list(t) and pa.types.is_list(i):
            item = self.field(t.value_field, i.value_field, path + ".")
            return pa.list_(item.with_name(t.value_field.name))
        if pa.types.is_map(t) and pa.types.is_map(i):
            if not t.key_type.equals(i.key_type):
                raise self._refuse(path, t, i)
            item = self.field(t.item_field, i.item_field, path + ".")
            return pa.map_(t.key_field, item.with_name(t.item_field.name))
        tk, ik = _kind(t), _kind(i)
        if tk == _DECIMAL and ik == _DECIMAL:
            if _decimal_fits(i, t):
                return t
            if _decimal_fits(t, i):
                self.promoted[path] = (_shown(t), _shown(i))
                return i
            raise self._refuse(path, t, i, "neither decimal holds every value of the other")
        if tk is not None and ik is not None:
            if tk in _KEEP.get(ik, ()):
                return t
            if ik in _PROMOTE.get(tk, ()):
                self.promoted[path] = (_shown(t), _shown(i))
                return i
        if pa.types.is_int64(t) and pa.types.is_timestamp(i):
            raise self._refuse(
                path,
                t,
                i,
                "Apache Hudi 1.2 accepts it but reads the stored numbers as microseconds in COW and "
                "as seconds in MOR; hudi-md refuses to change what the stored values mean",
            )
        raise self._refuse(path, t, i)

    def _refuse(
        self, path: str, t: pa.DataType, i: pa.DataType, reason: str = ""
    ) -> IncompatibleSchemaChangeError:
        return IncompatibleSchemaChangeError(self.table, path, _shown(t), _shown(i), reason)
