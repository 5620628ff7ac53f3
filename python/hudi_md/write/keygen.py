"""Record keys and partition paths from Arrow batches, as Hudi's Simple/Complex/NonPartitioned
key generators produce them."""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

import pyarrow as pa

from hudi_md.errors import InvalidOptionError

HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
NULL_KEY = "__null__"
EMPTY_KEY = "__empty__"


def _to_str(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, datetime.datetime):
        # Hudi stringifies the Avro value: timestamp-micros is a long.
        epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
        if v.tzinfo is None:
            v = v.replace(tzinfo=datetime.timezone.utc)
        delta = v - epoch
        return str((delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds)
    if isinstance(v, datetime.date):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return format(v, "f")
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return str(v)


def _column(table: pa.Table, name: str) -> list[Any]:
    if table.schema.get_field_index(name) < 0:
        raise InvalidOptionError(f"column {name!r} (a record key or partition path field) is not in the data")
    return table.column(name).to_pylist()


def _fast_strings(table: pa.Table, name: str) -> pa.Array | None:
    """The column as strings, vectorised, for types whose Arrow cast prints what Hudi prints."""
    import pyarrow.compute as pc

    if table.schema.get_field_index(name) < 0:
        return None
    col = table.column(name).combine_chunks()
    t = col.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return col.cast(pa.string())
    if pa.types.is_integer(t):
        return pc.cast(col, pa.string())
    return None


def record_keys(table: pa.Table, fields: Sequence[str], keygen: str) -> pa.Array:
    """``_hoodie_record_key`` values: the field's value, or ``f1:v1,f2:v2`` for complex keys.

    ComplexKeyGenerator prefixes the field name even for a single key field: Hudi does so for
    every table of version 9 (``hoodie.write.complex.keygen.new.encoding`` only applies below 9),
    and a table whose writers disagree on the encoding holds every key twice.
    """
    import pyarrow.compute as pc

    complex_keys = keygen == "COMPLEX" or len(fields) > 1
    if not complex_keys:
        fast = _fast_strings(table, fields[0])
        if fast is not None:
            bad = pc.or_(pc.is_null(fast), pc.equal(fast, ""))
            if not pc.any(bad).as_py():
                return fast
    columns = [_column(table, f) for f in fields]
    out: list[str] = []
    for i in range(table.num_rows):
        if not complex_keys:
            v = columns[0][i]
            if v is None or v == "":
                raise InvalidOptionError(
                    f"record key field {fields[0]!r} is null or empty in row {i}: every record needs a key"
                )
            out.append(_to_str(v))
            continue
        parts = []
        all_null = True
        for f, col in zip(fields, columns, strict=True):
            v = col[i]
            if v is None:
                parts.append(f"{f}:{NULL_KEY}")
            elif v == "":
                parts.append(f"{f}:{EMPTY_KEY}")
            else:
                all_null = False
                parts.append(f"{f}:{_to_str(v)}")
        if all_null:
            raise InvalidOptionError(f"all record key fields {list(fields)} are null or empty in row {i}")
        out.append(",".join(parts))
    return pa.array(out, pa.string())


def partition_paths(
    table: pa.Table, fields: Sequence[str], *, hive_style: bool, url_encode: bool
) -> pa.Array:
    import pyarrow.compute as pc

    if not fields:
        return pa.array([""] * table.num_rows, pa.string())
    fast = [_fast_strings(table, f) for f in fields]
    if not url_encode and all(a is not None for a in fast):
        parts = []
        for f, a in zip(fields, fast, strict=True):
            a = pc.if_else(pc.or_(pc.is_null(a), pc.equal(a, "")), HIVE_DEFAULT_PARTITION, a)
            parts.append(pc.binary_join_element_wise(f"{f}=", a, "") if hive_style else a)
        return parts[0] if len(parts) == 1 else pc.binary_join_element_wise(*parts, "/")
    columns = [_column(table, f) for f in fields]
    out = []
    for i in range(table.num_rows):
        parts = []
        for f, col in zip(fields, columns, strict=True):
            v = col[i]
            s = HIVE_DEFAULT_PARTITION if v is None or v == "" else _to_str(v)
            if url_encode:
                s = quote(s, safe="")
            parts.append(f"{f}={s}" if hive_style else s)
        out.append("/".join(parts))
    return pa.array(out, pa.string())
