"""The partition service: partitions as the snapshot sync records them, and pruning in SQL.

A partition's values are rows of ``partition_key_val`` (one per partition column: the value as
written in the path, decoded as Hudi reads it, null for ``__HIVE_DEFAULT_PARTITION__``; for a
numeric column also the value as a number). A :class:`~hudi_md.metastore.protocol.Filter` becomes
one parameterized statement (:func:`prune`): every comparison is an ``EXISTS`` over the partition's
row of that column, so a partition whose value is absent or null fails every comparison but
``is_null``, and ``and`` / ``or`` / ``not`` are plain two-valued logic. Values compare as the
column's type. Integer (up to 64 bits), date and timestamp columns are *typed*: each value is also
stored as an exact integer (``part_key_int``: the integer, days since the epoch, a timestamp's
epoch count in the column's unit, which is what Hudi writes in the path), and a filter value is
placed in the column's domain as the MDT's own pruning binds it
(:func:`hudi_md.planning.binding.coerce_literal`: ``"2019"`` is 2019, ``year < 2019.5`` is
``year <= 2019``, a date or timestamp from its ISO text, a naive timestamp as UTC), so ranges and
``in`` prune exactly as the MDT does. A stored value that does not read as its type (or was stored
before the column was typed), and a filter value that does not, compare as untyped values do:
numbers (``part_key_num``) when the partition column is numeric and the value is a number (or a
numeric string), else text (``part_key_val``). Values are bound parameters, never spliced into the
SQL. :func:`retype_partitions` changes a table's partition column types (``hudi-md metastore
sync`` corrects tables registered with every column as ``string``).

Dropping a partition (:func:`drop_partition`) marks it deleted and records in its params that its
physical clean is pending (``hudi_md.clean.pending``); the snapshot sync clears that once a clean
or rollback has left the partition without live files.
"""

from __future__ import annotations

import datetime
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pyarrow as pa
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from hudi_md.errors import InvalidOptionError
from hudi_md.metastore import protocol as P
from hudi_md.metastore_server import schema as S
from hudi_md.metastore_server.as_of import check_version, later_instants, partition_live
from hudi_md.metastore_server.catalog import (
    TableRow,
    lock_table,
    now,
    table_by_id,
    table_config,
    table_params,
)
from hudi_md.metastore_server.errors import invalid, not_found
from hudi_md.planning.binding import Rounded, coerce_literal
from hudi_md.planning.expressions import BoundReference
from hudi_md.table.partitions import PartitionScheme, coerce

CLEAN_PENDING = "hudi_md.clean.pending"
DROPPED_TIME = "hudi_md.dropped.time"
MAX_FILTER_NODES = 10_000

_COMPARE: dict[str, Callable[[Any, Any], sa.ColumnElement[bool]]] = {
    "eq": lambda c, v: c == v,
    "ne": lambda c, v: c != v,
    "lt": lambda c, v: c < v,
    "le": lambda c, v: c <= v,
    "gt": lambda c, v: c > v,
    "ge": lambda c, v: c >= v,
}


def as_number(value: Any) -> float | None:
    """A filter value as a number, when it is one (JSON numbers and numeric strings; not bools)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def as_text(value: Any) -> str:
    """A filter value as partition paths write it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return value if isinstance(value, str) else repr(value)
    raise invalid(f"a filter value is a string, number or boolean, not {type(value).__name__}")


_EPOCH_DATE = datetime.date(1970, 1, 1)
_EPOCH = datetime.datetime(1970, 1, 1)
_EPOCH_UTC = _EPOCH.replace(tzinfo=datetime.timezone.utc)
_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}
_INT64 = (-(2**63), 2**63 - 1)
_RAW_INTEGER = re.compile(r"^-?[0-9]{1,19}$")


def typed_key(value: Any, arrow_type: pa.DataType) -> int | None:
    """A typed value (``int``, ``date``, ``datetime`` as :func:`coerce_literal` gives them) of a
    typed partition column as its exact ``part_key_int``: the integer, days since the epoch, the
    timestamp's count of the column's unit since the epoch (naive: UTC wall time)."""
    if pa.types.is_timestamp(arrow_type):
        epoch = _EPOCH_UTC if value.tzinfo is not None else _EPOCH
        delta = value - epoch
        micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
        key = micros * _PER_SECOND[arrow_type.unit] // 1_000_000  # exact: the value is in the unit
    elif pa.types.is_date(arrow_type):
        key = (value - _EPOCH_DATE).days
    else:
        key = int(value)
    return key if _INT64[0] <= key <= _INT64[1] else None


def stored_key(value: str | None, arrow_type: pa.DataType) -> int | None:
    """``part_key_int`` of a partition value as the path writes it, read as Hudi reads partition
    values (:func:`hudi_md.table.partitions.coerce`: an integer, an ISO date); a timestamp's path
    value is the Avro long Hudi's key generators write (the count of the column's unit since the
    epoch). None when it is null or does not read as the type: it then compares untyped."""
    if value is None:
        return None
    if pa.types.is_timestamp(arrow_type):
        key = int(value) if _RAW_INTEGER.match(value) else None
        return key if key is not None and _INT64[0] <= key <= _INT64[1] else None
    try:
        typed = coerce(value, arrow_type)
    except (ValueError, OverflowError):
        return None
    return typed_key(typed, arrow_type)


def key_values(
    scheme: PartitionScheme,
    numeric: Mapping[str, bool],
    part_id: int,
    tbl_id: int,
    path: str,
    typed: Mapping[str, pa.DataType] | None = None,
) -> list[dict[str, Any]]:
    """The ``partition_key_val`` rows of a partition (none when its path does not carry the values
    in a form Hudi reads back, e.g. the timestamp key generator's formatted dates); ``typed``: the
    columns compared as exact integers (:meth:`TableRow.typed_columns`)."""
    values = scheme.parse(path)
    if not values:
        return []
    rows = []
    for position, field in enumerate(scheme.fields):
        value = values.get(field)
        number = as_number(value) if value is not None and numeric.get(field, False) else None
        arrow_type = typed.get(field) if typed else None
        rows.append(
            {
                "part_id": part_id,
                "tbl_id": tbl_id,
                "part_key_name": field,
                "part_key_val": value,
                "part_key_num": number,
                "part_key_int": stored_key(value, arrow_type) if arrow_type is not None else None,
                "position": position,
            }
        )
    return rows


# --- pruning ------------------------------------------------------------------------------------------


class _Compiler:
    def __init__(self, table: TableRow, collation: str | None) -> None:
        self.tbl_id = table.tbl_id
        self.numeric = table.numeric_columns()
        self.typed = table.typed_columns()
        self.collation = collation
        self.nodes = 0
        self.part = S.partitions

    def column(self, f: P.Filter) -> str:
        if f.column is None:
            raise invalid(f"filter {f.op} needs a column")
        if f.column not in self.numeric:
            known = ", ".join(self.numeric) or "none"
            raise invalid(f"{f.column!r} is not a partition column (partition columns: {known})")
        return f.column

    def has(self, column: str, condition: Callable[[Any], sa.ColumnElement[bool]]) -> sa.ColumnElement[bool]:
        # the partitions whose value matches, found through the (table, column, value) indexes: an
        # uncorrelated subquery, not a test per partition of the table
        kv = S.partition_key_val.alias()
        matching = sa.select(kv.c.part_id).where(
            kv.c.tbl_id == self.tbl_id,
            kv.c.part_key_name == column,
            condition(kv),
        )
        return self.part.c.part_id.in_(matching)

    def compile(self, f: P.Filter) -> sa.ColumnElement[bool]:
        self.nodes += 1
        if self.nodes > MAX_FILTER_NODES:
            raise invalid(f"a filter has at most {MAX_FILTER_NODES} nodes")
        if f.op == "and":
            return sa.and_(sa.true(), *(self.compile(a) for a in f.args))
        if f.op == "or":
            return sa.or_(sa.false(), *(self.compile(a) for a in f.args))
        if f.op == "not":
            if len(f.args) != 1:
                raise invalid("not takes exactly one argument")
            return sa.not_(self.compile(f.args[0]))
        column = self.column(f)
        if f.op == "is_null":
            return sa.not_(self.has(column, lambda kv: kv.c.part_key_val.is_not(None)))
        if f.op == "not_null":
            return self.has(column, lambda kv: kv.c.part_key_val.is_not(None))
        typed = self.typed.get(column)
        if f.op == "in":
            values = [v for v in f.values if v is not None]  # nothing equals null
            untyped_in = self.untyped_in(column, values)
            if typed is None:
                return sa.false() if untyped_in is None else self.has(column, untyped_in)
            keys: set[int] = set()
            uncoercible = []
            for v in values:
                rounded = self.rounded(column, typed, v)
                if rounded is None:
                    uncoercible.append(v)
                elif rounded.exact:
                    key = typed_key(rounded.floor, typed)
                    assert key is not None  # rounded() answers None when a bound has no key
                    keys.add(key)
            untyped_bad = self.untyped_in(column, uncoercible)

            def member(kv: Any) -> sa.ColumnElement[bool]:
                parts: list[sa.ColumnElement[bool]] = []
                if keys:
                    parts.append(kv.c.part_key_int.in_(sorted(keys)))
                if untyped_in is not None:
                    parts.append(sa.and_(kv.c.part_key_int.is_(None), untyped_in(kv)))
                if untyped_bad is not None:
                    parts.append(untyped_bad(kv))
                return sa.or_(sa.false(), *parts)

            return self.has(column, member) if keys or untyped_in is not None else sa.false()
        if f.value is None:
            raise invalid(f"{f.op} compares with a value (is_null / not_null test for null)")
        untyped = self.untyped_compare(column, f.op, f.value)
        rounded = self.rounded(column, typed, f.value) if typed is not None else None
        if typed is None or rounded is None:
            return self.has(column, untyped)
        exact = _typed_compare(f.op, rounded, typed)
        return self.has(
            column,
            lambda kv: sa.or_(exact(kv), sa.and_(kv.c.part_key_int.is_(None), untyped(kv))),
        )

    @staticmethod
    def rounded(column: str, typed: pa.DataType, value: Any) -> Rounded | None:
        """A filter value placed in a typed column's domain as the MDT's pruning binds it
        (:func:`coerce_literal`); None when it does not read as the type (it then compares as
        untyped partitions do)."""
        try:
            rounded = coerce_literal(BoundReference(pa.field(column, typed), 0), value)
        except InvalidOptionError:
            return None
        keys = [typed_key(v, typed) for v in (rounded.floor, rounded.ceil) if v is not None]
        return rounded if all(k is not None for k in keys) else None

    def untyped_in(self, column: str, values: list[Any]) -> Callable[[Any], sa.ColumnElement[bool]] | None:
        """``in`` over the values as written (numbers for numeric columns, else text); None
        when no value can match."""
        numeric = self.numeric[column]
        numbers: list[float] = []
        texts: list[str] = []
        for v in values:
            n = as_number(v) if numeric else None
            if n is not None:
                numbers.append(n)
            else:
                texts.append(as_text(v))
        if not numbers and not texts:
            return None

        def member(kv: Any) -> sa.ColumnElement[bool]:
            parts = []
            if numbers:
                parts.append(kv.c.part_key_num.in_(numbers))
            if texts:
                parts.append(kv.c.part_key_val.in_(texts))
            return sa.or_(*parts)

        return member

    def untyped_compare(self, column: str, op: str, value: Any) -> Callable[[Any], sa.ColumnElement[bool]]:
        """A comparison with the value as written: numbers for numeric columns, else text."""
        compare = _COMPARE[op]
        n = as_number(value) if self.numeric[column] else None
        if n is not None:
            return lambda kv: compare(kv.c.part_key_num, n)
        text = as_text(value)
        if op in ("eq", "ne") or self.collation is None:
            return lambda kv: compare(kv.c.part_key_val, text)
        # Text orders by code point, as Spark and Hudi compare strings, whatever the database's
        # default collation.
        return lambda kv: compare(kv.c.part_key_val.collate(self.collation), text)


def _typed_compare(op: str, rounded: Rounded, typed: pa.DataType) -> Callable[[Any], sa.ColumnElement[bool]]:
    """A comparison of ``part_key_int`` with a value placed in the column's domain, as the MDT's
    pruning binds it (:func:`hudi_md.planning.binding._bind_comparison`): ``year < 2019.5`` is
    ``year <= 2019``, ``year = 2019.5`` matches nothing, a bound past the type's range all or
    nothing."""
    compare = _COMPARE[op]

    def key(value: Any) -> int:
        k = typed_key(value, typed)
        assert k is not None  # rounded() refuses values without a key
        return k

    if rounded.exact:
        exact = key(rounded.floor)
        return lambda kv: compare(kv.c.part_key_int, exact)
    if op == "eq":
        return lambda kv: sa.false()
    if op == "ne":
        return lambda kv: kv.c.part_key_int.is_not(None)
    if op in ("lt", "le"):
        if rounded.floor is None:
            return lambda kv: sa.false()
        if rounded.ceil is None:
            return lambda kv: kv.c.part_key_int.is_not(None)
        floor = key(rounded.floor)
        return lambda kv: kv.c.part_key_int <= floor
    if rounded.ceil is None:
        return lambda kv: sa.false()
    if rounded.floor is None:
        return lambda kv: kv.c.part_key_int.is_not(None)
    ceil = key(rounded.ceil)
    return lambda kv: kv.c.part_key_int >= ceil


def compile_filter(table: TableRow, f: P.Filter, dialect: str = "sqlite") -> sa.ColumnElement[bool]:
    """``f`` as a boolean SQL expression over ``partitions`` (SQLite compares text by code point
    already; PostgreSQL is told to, with ``COLLATE "C"``)."""
    return _Compiler(table, "C" if dialect == "postgresql" else None).compile(f)


def _partitions_select(table: TableRow) -> sa.Select[Any]:
    p, kv, pp = S.partitions, S.partition_key_val.alias("kvo"), S.partition_params
    return (
        sa.select(
            p.c.part_id,
            p.c.part_name,
            p.c.created_instant,
            p.c.updated_instant,
            p.c.is_deleted,
            kv.c.part_key_name,
            kv.c.part_key_val,
            pp.c.param_value.label("clean_pending"),
        )
        .select_from(
            p.outerjoin(kv, kv.c.part_id == p.c.part_id).outerjoin(
                pp, sa.and_(pp.c.part_id == p.c.part_id, pp.c.param_key == CLEAN_PENDING)
            )
        )
        .where(p.c.tbl_id == table.tbl_id)
        .order_by(p.c.part_name, kv.c.position)
    )


def _collect(table: TableRow, rows: Any) -> list[P.Partition]:
    out: dict[int, P.Partition] = {}
    fields = [f.name for f in table.partition_fields]
    for r in rows:
        part = out.get(r.part_id)
        if part is None:
            part = out[r.part_id] = P.Partition(
                path=r.part_name,
                values={},
                created_instant=r.created_instant,
                updated_instant=r.updated_instant,
                dropped=bool(r.is_deleted),
                clean_pending=r.clean_pending == "true",
            )
        if r.part_key_name is not None:
            part.values[r.part_key_name] = r.part_key_val
    for part in out.values():
        if part.values:
            for name in fields:
                part.values.setdefault(name, None)
    return list(out.values())


def prune(conn: Connection, table: TableRow, query: P.PartitionQuery) -> list[P.Partition]:
    """The partitions matching ``query``, in ONE statement over ``partitions`` and
    ``partition_key_val`` (as of ``query.version``: :mod:`hudi_md.metastore_server.as_of`)."""
    check_version(table, query.version)
    stmt = _partitions_select(table)
    if not query.include_dropped:
        stmt = stmt.where(partition_live(later_instants(table, query.version)))
    if query.filter is not None:
        stmt = stmt.where(compile_filter(table, query.filter, conn.dialect.name))
    return _collect(table, conn.execute(stmt))


def get_partition(
    conn: Connection, table: TableRow, path: str, *, include_dropped: bool = False
) -> P.Partition:
    stmt = _partitions_select(table).where(S.partitions.c.part_name == path)
    found = _collect(table, conn.execute(stmt))
    if not found or (found[0].dropped and not include_dropped):
        raise not_found(f"no partition {path!r} in {table.db}.{table.name}")
    return found[0]


def set_param(conn: Connection, part_id: int, tbl_id: int, key: str, value: str | None) -> None:
    pp = S.partition_params
    conn.execute(pp.delete().where(pp.c.part_id == part_id, pp.c.param_key == key))
    if value is not None:
        conn.execute(pp.insert().values(part_id=part_id, tbl_id=tbl_id, param_key=key, param_value=value))


def retype_partitions(conn: Connection, table: TableRow, fields: list[P.FieldSchema]) -> TableRow:
    """Set the types of a table's partition columns (the same names, in the same order: only the
    types change) and store its partitions' values as those types. The values are stored again
    when a type changed, or when a typed column has values stored without their typed key (rows
    written before migration ``0002``); otherwise nothing is written. Returns the table."""
    names = [f.name for f in table.partition_fields]
    if [f.name for f in fields] != names:
        raise invalid(
            f"the partition columns of {table.db}.{table.name} are {names}: only their types can change"
        )
    if any(not f.type or len(f.type) > 256 for f in fields):
        raise invalid("partition column types are names of 1 to 256 characters")
    tid = table.tbl_id
    lock_table(conn, tid)
    table = table_by_id(conn, tid)
    kv = S.partition_key_val.c
    changed = list(fields) != list(table.partition_fields)
    if changed:
        conn.execute(
            S.tbl.update()
            .where(S.tbl.c.tbl_id == tid)
            .values(partition_fields=json.dumps([f.model_dump() for f in fields]), update_time=now())
        )
        sc = S.schema.c
        for f in fields:
            conn.execute(
                S.schema.update()
                .where(sc.tbl_id == tid, sc.name == f.name[:256], sc.is_partition_col == sa.true())
                .values(type=f.type)
            )
        table = table_by_id(conn, tid)
    typed = table.typed_columns()
    if not changed:
        untyped = sa.select(kv.part_id).where(
            kv.tbl_id == tid,
            kv.part_key_name.in_(sorted(typed)),
            kv.part_key_int.is_(None),
            kv.part_key_val.is_not(None),
        )
        if not typed or conn.execute(untyped.limit(1)).first() is None:
            return table
    p = S.partitions.c
    parts = conn.execute(sa.select(p.part_id, p.part_name).where(p.tbl_id == tid)).all()
    scheme = PartitionScheme(table_config(table, table_params(conn, tid)))
    numeric = table.numeric_columns()
    rows = [
        r for part in parts for r in key_values(scheme, numeric, part.part_id, tid, part.part_name, typed)
    ]
    conn.execute(S.partition_key_val.delete().where(kv.tbl_id == tid))
    for i in range(0, len(rows), 500):
        conn.execute(S.partition_key_val.insert(), rows[i : i + 500])
    return table


def drop_partition(conn: Connection, table: TableRow, path: str) -> P.Partition:
    p = S.partitions
    row = conn.execute(
        sa.select(p.c.part_id, p.c.is_deleted).where(p.c.tbl_id == table.tbl_id, p.c.part_name == path)
    ).first()
    if row is None:
        raise not_found(f"no partition {path!r} in {table.db}.{table.name}")
    if not row.is_deleted:
        t = now()
        conn.execute(p.update().where(p.c.part_id == row.part_id).values(is_deleted=True, update_time=t))
        set_param(conn, row.part_id, table.tbl_id, CLEAN_PENDING, "true")
        set_param(conn, row.part_id, table.tbl_id, DROPPED_TIME, t.isoformat())
    return get_partition(conn, table, path, include_dropped=True)


def remove_empty_partitions(conn: Connection, tbl_id: int, instants: Iterable[str]) -> None:
    """Partitions an undone instant created that have no live file left are gone (a rollback
    deletes such a partition's directory, and the MDT never lists it again)."""
    p, f = S.partitions.c, S.files.c
    live = sa.select(f.id).where(f.part_id == p.part_id, f.is_deleted == sa.false()).exists()
    empty = (
        conn.execute(
            sa.select(p.part_id).where(
                p.tbl_id == tbl_id, p.created_instant.in_(sorted(instants)), sa.not_(live)
            )
        )
        .scalars()
        .all()
    )
    for i in range(0, len(empty), 500):
        chunk = empty[i : i + 500]
        for table in (S.files, S.partition_key_val, S.partition_params):
            conn.execute(table.delete().where(table.c.part_id.in_(chunk)))
        conn.execute(S.partitions.delete().where(p.part_id.in_(chunk)))
