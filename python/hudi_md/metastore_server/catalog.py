"""The table service: databases and tables (``db``, ``db_params``, ``tbl``, ``tbl_params``,
``schema``), and :class:`TableRow`, the one-statement look-up every table route starts with."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import pyarrow as pa
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from hudi_md.config import table as T
from hudi_md.metastore import protocol as P
from hudi_md.metastore_server import schema as S
from hudi_md.metastore_server.errors import conflict, exists, invalid, not_found
from hudi_md.metastore_server.validation import DEFAULT_SCHEMES, location_key
from hudi_md.table import config as C
from hudi_md.table.config import TableConfig

# tbl_timestamp's first value: every instant time is later.
EPOCH_TS = "0" * 17
# Partition column types compared as numbers (Arrow's names, and Avro / Spark SQL ones).
_NUMERIC_PREFIXES = ("int", "uint", "float", "double", "halffloat", "decimal", "long", "short", "byte")
_NUMERIC_NAMES = frozenset({"bigint", "smallint", "tinyint", "integer", "number", "numeric", "real"})


def now() -> datetime:
    return datetime.now(timezone.utc)


def iso(value: datetime) -> str:
    # SQLite gives naive datetimes back; every stored time is UTC.
    return (value if value.tzinfo else value.replace(tzinfo=timezone.utc)).isoformat()


def is_numeric_type(type_name: str) -> bool:
    t = type_name.strip().lower()
    return t in _NUMERIC_NAMES or t.startswith(_NUMERIC_PREFIXES)


# Partition column types whose values are compared as exact 64-bit integers (``part_key_int``):
# integers, dates (days since the epoch) and timestamps (the epoch count in the column's unit, as
# Hudi's key generators write a timestamp's Avro long into the path). Avro / Spark SQL names map to
# the Arrow type hudi-md reads them as.
_TYPED_NAMES: dict[str, pa.DataType] = {
    "int": pa.int32(),
    "integer": pa.int32(),
    "long": pa.int64(),
    "bigint": pa.int64(),
    "short": pa.int16(),
    "smallint": pa.int16(),
    "byte": pa.int8(),
    "tinyint": pa.int8(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "timestamp_ltz": pa.timestamp("us", tz="UTC"),
    "timestamp_ntz": pa.timestamp("us"),
    "timestamp-millis": pa.timestamp("ms", tz="UTC"),
    "timestamp-micros": pa.timestamp("us", tz="UTC"),
    "local-timestamp-millis": pa.timestamp("ms"),
    "local-timestamp-micros": pa.timestamp("us"),
}
_ARROW_INTEGERS = {
    f"{sign}int{bits}": getattr(pa, f"{sign}int{bits}")()
    for sign in ("", "u")
    for bits in (8, 16, 32, 64)
    if (sign, bits) != ("u", 64)  # beyond BIGINT: compared as numbers
}
_ARROW_TIMESTAMP = re.compile(r"^timestamp\[(s|ms|us|ns)(?:, tz=(.+))?\]$")


def typed_partition_type(type_name: str) -> pa.DataType | None:
    """The Arrow type of a partition column whose values compare as exact integers (integers up to
    64 bits, dates, timestamps), from its registered type name (Arrow's, Avro's or Spark SQL's);
    None for any other type."""
    t = type_name.strip().lower()
    if t in _TYPED_NAMES:
        return _TYPED_NAMES[t]
    if t in _ARROW_INTEGERS:
        return _ARROW_INTEGERS[t]
    if t in ("date32[day]", "date32"):
        return pa.date32()
    if t in ("date64[ms]", "date64"):
        return pa.date64()
    m = _ARROW_TIMESTAMP.match(type_name.strip())
    if m is not None:
        return pa.timestamp(m.group(1), tz=m.group(2))
    return None


@dataclass(frozen=True)
class TableRow:
    """A table as one statement finds it (:func:`find_table`)."""

    tbl_id: int
    db: str
    name: str
    location: str
    table_type: str
    partition_fields: tuple[P.FieldSchema, ...]
    record_key_fields: tuple[str, ...]
    schema_json: str | None
    created: datetime
    version: int  # completed instants
    synced_version: int  # the last version the snapshot sync applied
    unsynced: int  # versions not applied yet

    def numeric_columns(self) -> dict[str, bool]:
        return {f.name: is_numeric_type(f.type) for f in self.partition_fields}

    def typed_columns(self) -> dict[str, pa.DataType]:
        """The partition columns compared as exact integers, with their Arrow types."""
        out = {}
        for f in self.partition_fields:
            t = typed_partition_type(f.type)
            if t is not None:
                out[f.name] = t
        return out

    def model(self, params: Mapping[str, str]) -> P.Table:
        return P.Table(
            db=self.db,
            name=self.name,
            location=self.location,
            table_type=self.table_type,  # type: ignore[arg-type]  # a str: pydantic checks the Literal
            partition_fields=list(self.partition_fields),
            record_key_fields=list(self.record_key_fields),
            params=dict(params),
            schema_json=self.schema_json,
            created=iso(self.created),
            version=self.synced_version,
        )


def _table_select() -> sa.Select[Any]:
    v = S.tbl_version
    unsynced = (
        sa.select(sa.func.count())
        .where(v.c.tbl_id == S.tbl.c.tbl_id, v.c.snapshot_status != S.SYNC_DONE)
        .scalar_subquery()
    )
    synced = (
        sa.select(sa.func.coalesce(sa.func.max(v.c.version), 0))
        .where(v.c.tbl_id == S.tbl.c.tbl_id, v.c.snapshot_status == S.SYNC_DONE)
        .scalar_subquery()
    )
    t = S.tbl.c
    return sa.select(
        t.tbl_id,
        S.db.c.name.label("db_name"),
        t.name,
        t.location,
        t.table_type,
        t.partition_fields,
        t.record_key_fields,
        t.schema_json,
        t.create_time,
        t.version,
        synced.label("synced_version"),
        unsynced.label("unsynced"),
    ).select_from(S.tbl.join(S.db, S.db.c.db_id == S.tbl.c.db_id))


def _row(r: Any) -> TableRow:
    return TableRow(
        tbl_id=r.tbl_id,
        db=r.db_name,
        name=r.name,
        location=r.location,
        table_type=r.table_type,
        partition_fields=tuple(P.FieldSchema(**f) for f in json.loads(r.partition_fields)),
        record_key_fields=tuple(json.loads(r.record_key_fields)),
        schema_json=r.schema_json,
        created=r.create_time,
        version=r.version,
        synced_version=r.synced_version,
        unsynced=r.unsynced,
    )


def find_table(conn: Connection, db: str, name: str) -> TableRow:
    r = conn.execute(_table_select().where(S.db.c.name == db, S.tbl.c.name == name)).first()
    if r is None:
        raise not_found(f"no table {db}.{name}")
    return _row(r)


def table_by_id(conn: Connection, tbl_id: int) -> TableRow:
    r = conn.execute(_table_select().where(S.tbl.c.tbl_id == tbl_id)).first()
    if r is None:
        raise not_found(f"no table with id {tbl_id}")
    return _row(r)


def table_params(conn: Connection, tbl_id: int) -> dict[str, str]:
    rows = conn.execute(
        sa.select(S.tbl_params.c.param_key, S.tbl_params.c.param_value).where(S.tbl_params.c.tbl_id == tbl_id)
    )
    return {r.param_key: r.param_value for r in rows}


def table_config(table: TableRow, params: Mapping[str, str]) -> TableConfig:
    """The table's ``hoodie.properties`` as registered, completed with what the registration
    says otherwise (name, type, partition fields) and Hudi's defaults (version 9)."""
    props = dict(params)
    props.setdefault(C.TABLE_NAME, table.name)
    props.setdefault(C.TABLE_TYPE, table.table_type)
    props.setdefault(C.TABLE_VERSION, "9")
    if table.partition_fields and not T.PARTITION_FIELDS.is_set(props):
        props[C.PARTITION_FIELDS] = ",".join(f.name for f in table.partition_fields)
    return TableConfig(props=props, source=f"metastore {table.db}.{table.name}")


# --- databases ----------------------------------------------------------------------------------------


def _db_id(conn: Connection, name: str) -> int:
    db_id = conn.execute(sa.select(S.db.c.db_id).where(S.db.c.name == name)).scalar()
    if db_id is None:
        raise not_found(f"no database {name}")
    return int(db_id)


def create_database(
    conn: Connection, body: P.DatabaseIn, allowed_schemes: tuple[str, ...] = DEFAULT_SCHEMES
) -> P.Database:
    if body.location is not None:
        location_key(body.location, allowed_schemes)
    if conn.execute(sa.select(S.db.c.db_id).where(S.db.c.name == body.name)).first() is not None:
        raise exists(f"database {body.name} exists")
    t = now()
    db_id = conn.execute(
        S.db.insert()
        .values(
            name=body.name,
            desc=body.description,
            location_uri=body.location,
            create_time=t,
            update_time=t,
        )
        .returning(S.db.c.db_id)
    ).scalar_one()
    if body.params:
        conn.execute(
            S.db_params.insert(),
            [{"db_id": db_id, "param_key": k, "param_value": v} for k, v in body.params.items()],
        )
    return P.Database(
        name=body.name,
        description=body.description,
        location=body.location,
        params=dict(body.params),
        created=iso(t),
    )


def list_databases(conn: Connection, name: str | None = None) -> list[P.Database]:
    query = sa.select(S.db).order_by(S.db.c.name)
    if name is not None:
        query = query.where(S.db.c.name == name)
    rows = conn.execute(query).all()
    ids = [r.db_id for r in rows]
    params: dict[int, dict[str, str]] = {i: {} for i in ids}
    if ids:
        for p in conn.execute(sa.select(S.db_params).where(S.db_params.c.db_id.in_(ids))):
            params[p.db_id][p.param_key] = p.param_value
    return [
        P.Database(
            name=r.name,
            description=r.desc,
            location=r.location_uri,
            params=params[r.db_id],
            created=iso(r.create_time),
        )
        for r in rows
    ]


def get_database(conn: Connection, name: str) -> P.Database:
    found = list_databases(conn, name)
    if not found:
        raise not_found(f"no database {name}")
    return found[0]


def drop_database(conn: Connection, name: str) -> None:
    db_id = _db_id(conn, name)
    n = conn.execute(sa.select(sa.func.count()).where(S.tbl.c.db_id == db_id)).scalar_one()
    if n:
        raise conflict(f"database {name} has {n} table(s): drop them first")
    conn.execute(S.db_params.delete().where(S.db_params.c.db_id == db_id))
    conn.execute(S.db.delete().where(S.db.c.db_id == db_id))


# --- tables -------------------------------------------------------------------------------------------


def schema_rows(
    tbl_id: int, version: int, schema_json: str | None, partition_fields: list[P.FieldSchema]
) -> list[dict[str, Any]]:
    """``schema`` rows: the Avro schema's top-level fields, then the partition columns (a data
    column that is also a partition column is one row, flagged, with the partition type)."""
    columns: list[tuple[str, str]] = []
    if schema_json:
        try:
            record = json.loads(schema_json)
            fields = record["fields"]
            columns = [(str(f["name"]), json.dumps(f["type"], sort_keys=True)) for f in fields]
        except (ValueError, TypeError, KeyError) as e:
            raise invalid(f"schema_json is not an Avro record schema: {e}") from e
    part_types = {f.name: f.type for f in partition_fields}
    rows = []
    seen = set()
    for name, typ in columns:
        if name in seen:
            continue
        seen.add(name)
        rows.append((name, part_types.get(name, typ), name in part_types))
    rows += [(f.name, f.type, True) for f in partition_fields if f.name not in seen]
    return [
        {
            "tbl_id": tbl_id,
            "version": version,
            "name": name[:256],
            "type": typ,
            "is_partition_col": is_part,
            "position": i,
        }
        for i, (name, typ, is_part) in enumerate(rows)
    ]


def create_table(
    conn: Connection, db: str, body: P.TableIn, allowed_schemes: tuple[str, ...] = DEFAULT_SCHEMES
) -> P.Table:
    db_id = _db_id(conn, db)
    key = location_key(body.location, allowed_schemes)
    names = [f.name for f in body.partition_fields]
    if len(set(names)) != len(names) or any(not n or len(n) > 256 for n in names):
        raise invalid("partition fields have distinct names of 1 to 256 characters")
    if conn.execute(
        sa.select(S.tbl.c.tbl_id).where(S.tbl.c.db_id == db_id, S.tbl.c.name == body.name)
    ).first():
        raise exists(f"table {db}.{body.name} exists")
    taken = conn.execute(
        sa.select(S.db.c.name, S.tbl.c.name)
        .select_from(S.tbl.join(S.db, S.db.c.db_id == S.tbl.c.db_id))
        .where(S.tbl.c.location_key == key)
    ).first()
    if taken is not None:
        # One location, one timeline: two registrations would each keep their own.
        raise exists(f"{body.location} is registered already, as {taken[0]}.{taken[1]}")
    t = now()
    tbl_id = conn.execute(
        S.tbl.insert()
        .values(
            db_id=db_id,
            name=body.name,
            create_time=t,
            update_time=t,
            location=body.location,
            location_key=key,
            table_type=body.table_type,
            record_key_fields=json.dumps(list(body.record_key_fields)),
            partition_fields=json.dumps([f.model_dump() for f in body.partition_fields]),
            schema_json=body.schema_json,
            version=0,
        )
        .returning(S.tbl.c.tbl_id)
    ).scalar_one()
    if body.params:
        conn.execute(
            S.tbl_params.insert(),
            [{"tbl_id": tbl_id, "param_key": k, "param_value": v} for k, v in body.params.items()],
        )
    rows = schema_rows(tbl_id, 0, body.schema_json, list(body.partition_fields))
    if rows:
        conn.execute(S.schema.insert(), rows)
    conn.execute(S.tbl_timestamp.insert().values(tbl_id=tbl_id, ts=EPOCH_TS))
    return table_by_id(conn, tbl_id).model(body.params)


def _tables(conn: Connection, where: sa.ColumnElement[bool]) -> list[P.Table]:
    rows = [_row(r) for r in conn.execute(_table_select().where(where).order_by(S.db.c.name, S.tbl.c.name))]
    params: dict[int, dict[str, str]] = {r.tbl_id: {} for r in rows}
    if rows:
        for p in conn.execute(sa.select(S.tbl_params).where(S.tbl_params.c.tbl_id.in_(list(params)))):
            params[p.tbl_id][p.param_key] = p.param_value
    return [r.model(params[r.tbl_id]) for r in rows]


def list_tables(conn: Connection, db: str) -> list[P.Table]:
    db_id = _db_id(conn, db)
    return _tables(conn, S.tbl.c.db_id == db_id)


def tables_at(
    conn: Connection, location: str, allowed_schemes: tuple[str, ...] = DEFAULT_SCHEMES
) -> list[P.Table]:
    return _tables(conn, S.tbl.c.location_key == location_key(location, allowed_schemes))


def resolve_table(conn: Connection, ref: str, allowed_schemes: tuple[str, ...] = DEFAULT_SCHEMES) -> TableRow:
    """The table ``ref`` names: ``db.table``, or the one table registered at location ``ref``
    (404 when none is, 400 when several are: the caller names one)."""
    db, dot, name = ref.partition(".")
    if dot and "/" not in ref and ":" not in ref:
        return find_table(conn, db, name)
    location = ref.rstrip("/")
    rows = [
        _row(r)
        for r in conn.execute(
            _table_select()
            .where(S.tbl.c.location_key == location_key(location, allowed_schemes))
            .order_by(S.db.c.name, S.tbl.c.name)
        )
    ]
    if len(rows) > 1:
        names = ", ".join(f"{r.db}.{r.name}" for r in rows)
        raise invalid(f"{ref} is registered as several tables ({names}): name one")
    if rows:
        return rows[0]
    # Spark's data source qualifies a name it was given as a path (file:/<cwd>/db.table)
    db, dot, name = location.rsplit("/", 1)[-1].partition(".")
    if dot and P.NAME_RE.fullmatch(db) and P.NAME_RE.fullmatch(name):
        found = conn.execute(_table_select().where(S.db.c.name == db, S.tbl.c.name == name)).first()
        if found is not None:
            return _row(found)
    raise not_found(f"no table is registered at {ref}")


def get_table(conn: Connection, db: str, name: str) -> P.Table:
    row = find_table(conn, db, name)
    return row.model(table_params(conn, row.tbl_id))


def lock_table(conn: Connection, tbl_id: int) -> None:
    """Hold the table's row until the transaction ends (PostgreSQL: ``FOR UPDATE``; SQLite's
    write transactions hold the whole database already)."""
    conn.execute(sa.select(S.tbl.c.tbl_id).where(S.tbl.c.tbl_id == tbl_id).with_for_update()).first()


def drop_table(conn: Connection, db: str, name: str) -> None:
    row = find_table(conn, db, name)
    tid = row.tbl_id
    lock_table(conn, tid)
    for table in (
        S.files,
        S.partition_key_val,
        S.partition_params,
        S.partitions,
        S.tbl_version,
        S.instant_meta,
        S.instant,
        S.tbl_timestamp,
        S.schema,
        S.tbl_params,
    ):
        conn.execute(table.delete().where(table.c.tbl_id == tid))
    conn.execute(S.tbl.delete().where(S.tbl.c.tbl_id == tid))
