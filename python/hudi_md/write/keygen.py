"""Record keys and partition paths from Arrow batches, as Hudi's Simple/Complex/NonPartitioned
key generators produce them."""

from __future__ import annotations

import datetime
import decimal
import math
from collections.abc import Sequence
from typing import Any

import numpy
import pyarrow as pa

from hudi_md.errors import InvalidOptionError
from hudi_md.table.partitions import (
    ESCAPED_CHARS_PATTERN,
    HIVE_DEFAULT_PARTITION,
    escape_path_value,
    path_part,
)

NULL_KEY = "__null__"
EMPTY_KEY = "__empty__"


def java_double_string(v: float, *, single: bool = False) -> str:
    """Java's ``Double.toString`` (``Float.toString`` with ``single``), which Hudi's key generators
    use for floating-point values: plain from 1e-3 to 1e7, else ``d.dddE±n``; shortest digits."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    if v == 0:
        return "-0.0" if math.copysign(1.0, v) < 0 else "0.0"
    shortest = str(numpy.float32(v)) if single else repr(v)
    sign, digits, exp = decimal.Decimal(shortest).as_tuple()
    digits_s = "".join(map(str, digits)).rstrip("0") or "0"
    # Decimal exponent of the first digit: value = 0.d1d2... * 10**point
    point = len(digits) + int(exp)
    neg = "-" if sign else ""
    if 1e-3 <= abs(v) < 1e7:
        if point <= 0:
            return f"{neg}0.{'0' * -point}{digits_s}"
        whole = digits_s[:point].ljust(point, "0")
        frac = digits_s[point:] or "0"
        return f"{neg}{whole}.{frac}"
    return f"{neg}{digits_s[0]}.{digits_s[1:] or '0'}E{point - 1}"


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
    if isinstance(v, _Float32):
        return str(v)
    if isinstance(v, float):
        return java_double_string(v)
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return str(v)


def _column(table: pa.Table, name: str) -> list[Any]:
    if table.schema.get_field_index(name) < 0:
        raise InvalidOptionError(f"column {name!r} (a record key or partition path field) is not in the data")
    col = table.column(name)
    if pa.types.is_float32(col.type):
        # Float.toString of the float itself, not of its widening to a double.
        return [None if v is None else _Float32(v) for v in col.to_pylist()]
    return col.to_pylist()


class _Float32(float):
    def __str__(self) -> str:
        return java_double_string(self, single=True)


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
            bad = pc.or_kleene(pc.is_null(fast), pc.equal(fast, ""))  # a null is bad, not unknown
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


def auto_keys(
    instant: str, task: int, start: int, count: int, given: pa.ChunkedArray | None = None
) -> pa.Array:
    """Record keys of a table without record key fields, as Apache Hudi 1.2 generates them:
    ``<instant>_<task>_<row>`` (the write's instant time, the writing task's number, the row's
    number in that task, from ``start``). ``given``: keys the rows already have (rows of the table
    an ``UPDATE``/``MERGE``/``DELETE`` rewrites, carrying their ``_hoodie_record_key``): kept where
    not null."""
    import pyarrow.compute as pc

    rows = pa.array(numpy.arange(start, start + count, dtype=numpy.int64)).cast(pa.string())
    generated = pc.binary_join_element_wise(f"{instant}_{task}_", rows, "")
    if given is None:
        return generated
    return pc.coalesce(given.combine_chunks().cast(pa.string()), generated)


def partition_paths(
    table: pa.Table, fields: Sequence[str], *, hive_style: bool, url_encode: bool
) -> pa.Array:
    """``_hoodie_partition_path`` values, by the rules of :mod:`hudi_md.table.partitions`."""
    import pyarrow.compute as pc

    if not fields:
        return pa.array([""] * table.num_rows, pa.string())
    fast = [_fast_strings(table, f) for f in fields]
    if all(a is not None for a in fast):
        parts = []
        for f, a in zip(fields, fast, strict=True):
            a = pc.if_else(pc.or_kleene(pc.is_null(a), pc.equal(a, "")), HIVE_DEFAULT_PARTITION, a)
            if url_encode and pc.any(pc.match_substring_regex(a, ESCAPED_CHARS_PATTERN)).as_py():
                a = pa.array([escape_path_value(v) for v in a.to_pylist()], pa.string())
            if not url_encode and pc.any(pc.match_substring(a, ":")).as_py():
                _refuse_colon(f, a.filter(pc.match_substring(a, ":"))[0].as_py())
            parts.append(pc.binary_join_element_wise(f"{f}=", a, "") if hive_style else a)
        return parts[0] if len(parts) == 1 else pc.binary_join_element_wise(*parts, "/")
    # Each value stringified once, as Hudi's key generators stringify it.
    values = [[None if v is None else _to_str(v) for v in _column(table, f)] for f in fields]
    if not url_encode:
        for f, col in zip(fields, values, strict=True):
            bad = next((v for v in col if v is not None and ":" in v), None)
            if bad is not None:
                _refuse_colon(f, bad)
    out = [
        "/".join(
            path_part(f, v, hive_style=hive_style, url_encode=url_encode)
            for f, v in zip(fields, row, strict=True)
        )
        for row in zip(*values, strict=True)
    ]
    return pa.array(out, pa.string())


def _refuse_colon(field: str, value: str) -> None:
    # Hadoop parses `a:b` in a path as a URI scheme: Apache Hudi's own writer and reader fail on
    # such a partition directory, so it is refused before anything is written.
    raise InvalidOptionError(
        f"partition path field {field!r} has the value {value!r}, which holds ':'; Apache Hudi cannot "
        "read such a partition path: set hoodie.datasource.write.partitionpath.urlencode=true when "
        "creating the table (it writes ':' as %3A)"
    )
