"""The partition service: partitions as the snapshot sync records them, and pruning in SQL.

A partition's values are rows of ``partition_key_val`` (one per partition column: the value as
written in the path, decoded as Hudi reads it, null for ``__HIVE_DEFAULT_PARTITION__``; for a
numeric column also the value as a number). A :class:`~hudi_md.metastore.protocol.Filter` becomes
one parameterized statement (:func:`prune`): every comparison is an ``EXISTS`` over the partition's
row of that column, so a partition whose value is absent or null fails every comparison but
``is_null``, and ``and`` / ``or`` / ``not`` are plain two-valued logic. Values compare as the
column's type: numbers (``part_key_num``) when the partition column is numeric and the value is a
number (or a numeric string), else text (``part_key_val``). Values are bound parameters, never
spliced into the SQL.

Dropping a partition (:func:`drop_partition`) marks it deleted and records in its params that its
physical clean is pending (``hudi_md.clean.pending``); the snapshot sync clears that once a clean
or rollback has left the partition without live files.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from hudi_md.metastore import protocol as P
from hudi_md.metastore_server import schema as S
from hudi_md.metastore_server.catalog import TableRow, now
from hudi_md.metastore_server.errors import invalid, not_found
from hudi_md.table.partitions import PartitionScheme

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


def key_values(
    scheme: PartitionScheme, numeric: Mapping[str, bool], part_id: int, tbl_id: int, path: str
) -> list[dict[str, Any]]:
    """The ``partition_key_val`` rows of a partition (none when its path does not carry the values
    in a form Hudi reads back, e.g. the timestamp key generator's formatted dates)."""
    values = scheme.parse(path)
    if not values:
        return []
    rows = []
    for position, field in enumerate(scheme.fields):
        value = values.get(field)
        number = as_number(value) if value is not None and numeric.get(field, False) else None
        rows.append(
            {
                "part_id": part_id,
                "tbl_id": tbl_id,
                "part_key_name": field,
                "part_key_val": value,
                "part_key_num": number,
                "position": position,
            }
        )
    return rows


# --- pruning ------------------------------------------------------------------------------------------


class _Compiler:
    def __init__(self, table: TableRow, collation: str | None) -> None:
        self.numeric = table.numeric_columns()
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

    def has(self, column: str, condition: sa.ColumnElement[bool]) -> sa.ColumnElement[bool]:
        kv = S.partition_key_val.alias()
        return (
            sa.select(sa.literal(1))
            .where(kv.c.part_id == self.part.c.part_id, kv.c.part_key_name == column, condition(kv))  # type: ignore[operator]
            .exists()
        )

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
            return sa.not_(self.has(column, lambda kv: kv.c.part_key_val.is_not(None)))  # type: ignore[arg-type]
        if f.op == "not_null":
            return self.has(column, lambda kv: kv.c.part_key_val.is_not(None))  # type: ignore[arg-type]
        numeric = self.numeric[column]
        if f.op == "in":
            numbers: list[float] = []
            texts: list[str] = []
            for v in f.values:
                if v is None:
                    continue  # nothing equals null
                n = as_number(v) if numeric else None
                if n is not None:
                    numbers.append(n)
                else:
                    texts.append(as_text(v))
            if not numbers and not texts:
                return sa.false()

            def member(kv: Any) -> sa.ColumnElement[bool]:
                parts = []
                if numbers:
                    parts.append(kv.c.part_key_num.in_(numbers))
                if texts:
                    parts.append(kv.c.part_key_val.in_(texts))
                return sa.or_(*parts)

            return self.has(column, member)  # type: ignore[arg-type]
        if f.value is None:
            raise invalid(f"{f.op} compares with a value (is_null / not_null test for null)")
        compare = _COMPARE[f.op]
        n = as_number(f.value) if numeric else None
        if n is not None:
            return self.has(column, lambda kv: compare(kv.c.part_key_num, n))  # type: ignore[arg-type]
        text = as_text(f.value)
        if f.op in ("eq", "ne") or self.collation is None:
            return self.has(column, lambda kv: compare(kv.c.part_key_val, text))  # type: ignore[arg-type]
        # Text orders by code point, as Spark and Hudi compare strings, whatever the database's
        # default collation.
        return self.has(column, lambda kv: compare(kv.c.part_key_val.collate(self.collation), text))  # type: ignore[arg-type]


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
    ``partition_key_val``."""
    stmt = _partitions_select(table)
    if not query.include_dropped:
        stmt = stmt.where(S.partitions.c.is_deleted == sa.false())
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
