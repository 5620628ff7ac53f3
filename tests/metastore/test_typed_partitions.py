"""Typed partition columns on the metastore (issue 37, item 1), on SQLite and PostgreSQL: a table
whose first write (``hudi_md.write`` with ``hoodie.metaserver.*``) registers it gets its partition
columns' types (int, long, date, timestamp), and filters on them (``<``, ``<=``, ``>``, ``>=``,
``=``, ``in``, ranges, values between two of the column's) read through the server exactly the rows
of the table's own MDT read (the oracle; hudi-rs too where its filter strings say the same), the
server's SQL pruning returning exactly the partitions holding them; a table registered with the
old rule (every partition column a ``string``) is corrected by ``hudi-md metastore sync``, as are
values stored before the server typed them; and the Hive adapter shows the columns' types and
prunes by them."""

from __future__ import annotations

import datetime
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import hudi
import pyarrow as pa
import pytest
import sqlalchemy as sa
from hmsclient import hmsclient
from server_helpers import PgDatabases, ServerProcess, engine_of, token_for

import hudi_md
from hudi_md.metastore import protocol as P
from hudi_md.metastore.client import MetastoreClient
from hudi_md.metastore.mirror import sync_table
from hudi_md.metastore.resolve import TableRef
from hudi_md.metastore_server import schema as S
from hudi_md.metastore_server.hms.server import HmsServer
from hudi_md.storage import Storage
from hudi_md.table.config import TableConfig
from hudi_md.write.metastore_admin import sync
from hudi_md.write.transaction import WritableTable

UTC = datetime.timezone.utc
D = datetime.date
T = datetime.datetime
BIG = 2**53  # doubles stop holding every integer here


class Kind(NamedTuple):
    arrow: pa.DataType
    registered: str  # the type the first write registers
    hive: str  # Hive's type of the partition key
    spark: str  # Spark's type in the table's schema properties
    values: list[Any]  # the partition values, sorted
    extra: list[list[tuple[str, str, Any]]]  # filters of this kind beyond the common ones


KINDS = {
    "int": Kind(
        pa.int32(), "int32", "int", "integer",
        [-7, 0, 7, 99, 100, 1000, 2018, 2019, 2020],
        [
            [("c", "<", 2019.5)], [("c", ">", "99")], [("c", "<=", 99.9)], [("c", "=", 7.5)],
            [("c", "in", [7.0, 2019.5, "100"])], [("c", ">=", -7), ("c", "<", 100)],
            [("c", ">", 2**40)], [("c", "<", -(2**40))],
        ],
    ),
    "long": Kind(
        pa.int64(), "int64", "bigint", "long",
        [-(2**62), -5, 0, 99, 100, BIG - 1, BIG, BIG + 1, BIG + 2, 2**62],
        [
            [("c", ">", BIG)], [("c", ">=", BIG + 1)], [("c", "<=", BIG + 1)], [("c", "<", BIG)],
            [("c", "=", BIG + 1)], [("c", "in", [BIG - 1, BIG + 2])], [("c", ">", BIG), ("c", "<", 2**62)],
            [("c", "<", -(2**61))],
        ],
    ),
    "date": Kind(
        pa.date32(), "date32[day]", "date", "date",
        [D(1969, 12, 31), D(1970, 1, 1), D(2019, 12, 31), D(2020, 1, 1), D(2020, 2, 29), D(2024, 7, 4)],
        [
            [("c", ">=", T(2020, 1, 1))], [("c", ">", T(2019, 12, 31, 12))], [("c", "<", "2020-01-01")],
            [("c", "<=", T(2020, 2, 29, 0, 0, 1))], [("c", "in", ["2020-02-29", D(1970, 1, 1)])],
            [("c", "=", T(2020, 1, 1, 6))], [("c", ">=", "2019-12-31"), ("c", "<=", "2020-02-29")],
        ],
    ),
    "timestamp": Kind(
        pa.timestamp("us", tz="UTC"), "timestamp[us, tz=UTC]", "timestamp", "timestamp",
        [
            T(1969, 12, 31, 23, 59, 59, 999999, UTC), T(1970, 1, 1, tzinfo=UTC),
            T(2020, 1, 1, tzinfo=UTC), T(2020, 1, 1, 7, tzinfo=UTC), T(2020, 1, 1, 7, 0, 0, 1, tzinfo=UTC),
            T(2020, 1, 1, 14, tzinfo=UTC), T(2024, 7, 4, 12, 30, tzinfo=UTC),
        ],
        [
            [("c", ">=", "2020-01-01T14:00:00+00:00")], [("c", "<", "2020-01-01T08:00:00+01:00")],
            [("c", ">", T(2020, 1, 1, 7))], [("c", "<=", "2020-01-01")], [("c", ">=", D(2020, 1, 1))],
            [("c", "in", ["2020-01-01T07:00:00Z", "1970-01-01T00:00:00+00:00"])],
            [("c", ">", "1970-01-01")],
        ],
    ),
    "timestamp_ntz": Kind(
        pa.timestamp("us"), "timestamp[us]", "timestamp", "timestamp_ntz",
        [T(1969, 12, 31, 23), T(2020, 1, 1), T(2020, 1, 1, 0, 0, 0, 500), T(2020, 6, 1, 12), T(2030, 1, 1)],
        [
            [("c", ">", "2020-01-01T00:00:00")], [("c", "<", T(2020, 6, 1, 12, tzinfo=UTC))],
            [("c", "in", [T(2020, 1, 1), "2030-01-01 00:00:00"])],
            [("c", ">=", D(2020, 1, 1)), ("c", "<", D(2021, 1, 1))],
        ],
    ),
}  # fmt: skip


def common_filters(values: list[Any]) -> list[list[tuple[str, str, Any]]]:
    """``<``, ``<=``, ``>``, ``>=``, ``=`` on a middle value, ``in``, and a range."""
    mid = values[len(values) // 2]
    return [
        [("c", "<", mid)],
        [("c", "<=", mid)],
        [("c", ">", mid)],
        [("c", ">=", mid)],
        [("c", "=", mid)],
        [("c", "in", [values[0], mid, values[-1]])],
        [("c", ">=", values[1]), ("c", "<", values[-2])],
    ]


def hudi_rs_value(value: Any) -> str | None:
    """A filter value as hudi-rs's filter strings spell it (None: not compared with hudi-rs)."""
    if isinstance(value, bool) or not isinstance(value, (int, D, str)) or isinstance(value, T):
        return None
    return value.isoformat() if isinstance(value, D) else str(value)


# --- a server per database kind ------------------------------------------------------------------------


class Metastore(NamedTuple):
    url: str  # the database
    options: dict[str, str]  # hoodie.metaserver.*

    @property
    def client(self) -> MetastoreClient:
        client = MetastoreClient.from_options(self.options)
        assert client is not None
        return client


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def metastore(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Metastore]:
    pg: PgDatabases | None = None
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('typed') / 'metastore.db'}"
    else:
        pg = request.getfixturevalue("pg_databases")
        if pg is None:
            pytest.skip(f"PostgreSQL is not available: {request.getfixturevalue('postgres_server').reason}")
        url = pg.create()
    token = token_for(url)
    server = ServerProcess(url, tmp_path_factory.mktemp("typed-log"), "--sync-interval", "0.2")
    try:
        server.wait_ready()
        yield Metastore(
            url,
            {
                "hoodie.metaserver.enabled": "true",
                "hoodie.metaserver.uris": server.url,
                "hoodie.metaserver.token": token,
            },
        )
    finally:
        server.stop()
        if pg is not None:
            pg.drop(url)


def _rows(columns: dict[str, tuple[pa.DataType, list[Any]]], per_value: int = 3) -> pa.Table:
    """``per_value`` rows for each value of the first column's (the others cycle)."""
    first = next(iter(columns.values()))[1]
    n = len(first) * per_value
    data: dict[str, pa.Array] = {
        "id": pa.array([f"k{i:03d}" for i in range(n)]),
        "ts": pa.array(list(range(n)), pa.int64()),
    }
    for name, (typ, values) in columns.items():
        data[name] = pa.array([values[i % len(values)] for i in range(n)], typ)
    return pa.table(data)


def _options(db: str, table: str, partition_fields: str) -> dict[str, str]:
    return {
        "hoodie.table.name": table,
        "hoodie.database.name": db,
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": partition_fields,
        "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.ComplexKeyGenerator",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.hive_style_partitioning": "true",
    }


def _wait_synced(ms: Metastore, db: str, table: str) -> None:
    client = ms.client
    deadline = time.monotonic() + 60
    while True:
        status = client.snapshot_status(db, table)
        if status.status == "synced" and not status.pending:
            return
        assert time.monotonic() < deadline, status
        time.sleep(0.05)


def _ids(t: pa.Table) -> list[str]:
    return sorted(t.column("id").to_pylist())


def _check_filters(
    ms: Metastore, path: Path, name: str, filters: list[list[tuple[str, str, Any]]], *, rs: bool = True
) -> None:
    """Every filter reads through the server exactly the MDT's rows (and hudi-rs's, where its
    filter strings say the same), and the server's pruning returns exactly their partitions."""
    own = hudi_md.open_table(str(path))
    assert own.state.uses_metadata_table
    rs_table = hudi.HudiTableBuilder.from_base_uri(str(path)).build() if rs else None
    for f in filters:
        through = hudi_md.open_table(name, ms.options)
        assert through.state.source is not None, "planned from the metastore"
        want = own.read(filters=f, columns=["id", "_hoodie_partition_path"])
        got = through.read(filters=f, columns=["id"])
        assert _ids(got) == _ids(want), (name, f)
        plan = through.plan(f)
        # the server's SQL alone prunes exactly: the partitions holding the rows, no other
        holding = set(want.column("_hoodie_partition_path").to_pylist())
        assert plan.counters["partitions_from_catalog"] == len(holding), (name, f)
        rs_filters = [
            (c, op, hudi_rs_value(v) if op != "in" else [hudi_rs_value(x) for x in v]) for c, op, v in f
        ]
        if rs_table is not None and all(
            v is not None and (not isinstance(v, list) or None not in v) for _, _, v in rs_filters
        ):
            o = hudi.HudiReadOptions(
                filters=[(c, op, ",".join(v) if isinstance(v, list) else v) for c, op, v in rs_filters]
            )  # type: ignore[misc]
            try:
                rs_rows = pa.Table.from_batches(rs_table.read(o))
            except Exception as e:  # hudi-rs refuses a value out of the column type's range
                assert "Unable to cast" in str(e), e
                continue
            assert sorted(rs_rows.column("id").to_pylist()) == _ids(want), ("hudi-rs", name, f)


# --- the first write registers the types ---------------------------------------------------------------


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_first_write_types_the_partition_column(metastore: Metastore, tmp_path: Path, kind: str) -> None:
    k = KINDS[kind]
    path = tmp_path / "t"
    db, table = "lake", f"first_{kind}"
    hudi_md.write(
        _rows({"c": (k.arrow, k.values)}),
        str(path),
        options={**_options(db, table, "c"), **metastore.options},
    )
    registered = metastore.client.table(db, table)
    assert registered.partition_fields == [P.FieldSchema(name="c", type=k.registered)]
    _wait_synced(metastore, db, table)
    _check_filters(
        metastore,
        path,
        f"{db}.{table}",
        common_filters(k.values) + k.extra,
        rs=kind in ("int", "long", "date"),
    )
    if kind == "timestamp_ntz":
        return  # hudi-rs 0.5 does not read local-timestamp columns ("not yet implemented")
    # hudi-rs reads the same values (a timestamp partition: the epoch count in the path is the
    # instant the column holds), through the server as through the MDT
    rs = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(str(path)).build().read())
    through = hudi_md.open_table(f"{db}.{table}", metastore.options).read(columns=["id", "c"])
    assert sorted(zip(rs.column("id").to_pylist(), rs.column("c").to_pylist(), strict=True)) == sorted(
        zip(through.column("id").to_pylist(), through.column("c").to_pylist(), strict=True)
    )


# --- tables registered before ---------------------------------------------------------------------------


# a filter each kind answers wrongly while its values compare as text
WRONG_AS_TEXT = {
    "int": [("c", "<", 2019)],
    "date": [("c", ">=", T(2020, 1, 1))],
    "timestamp": [("c", ">=", "2020-01-01T14:00:00+00:00")],
}


@pytest.mark.parametrize("kind", list(WRONG_AS_TEXT))
def test_sync_corrects_a_table_registered_with_the_old_rule(
    metastore: Metastore, tmp_path: Path, kind: str
) -> None:
    k = KINDS[kind]
    path = tmp_path / "t"
    db, table = "lake", f"old_{kind}"
    hudi_md.write(_rows({"c": (k.arrow, k.values)}), str(path), options=_options(db, table, "c"))
    # registered as the first write did before: no schema, every partition column a string
    client = metastore.client
    config = TableConfig.load(Storage(str(path)))
    client.ensure_database(db)
    client.create_table(
        db,
        P.TableIn(
            name=table,
            location=Storage(str(path)).uri(),
            table_type=config.table_type,  # type: ignore[arg-type]
            partition_fields=[P.FieldSchema(name="c", type="string")],
            record_key_fields=config.record_key_fields,
            params=config.to_dict(),
        ),
    )
    w = WritableTable(str(path))
    ref = TableRef(db, table, Storage(str(path)).uri())
    sync_table(client, ref, w.timeline(), w.instant_file_reader(), w.requested_actions())
    _wait_synced(metastore, db, table)
    name = f"{db}.{table}"
    wrong = WRONG_AS_TEXT[kind]
    own = hudi_md.open_table(str(path)).read(filters=wrong, columns=["id"])
    assert _ids(hudi_md.open_table(name, metastore.options).read(filters=wrong, columns=["id"])) != _ids(own)

    _, done = sync(name, metastore.options)
    assert done["partition_types_corrected"] == 1
    assert client.table(db, table).partition_fields == [P.FieldSchema(name="c", type=k.registered)]
    _check_filters(metastore, path, name, [wrong, *common_filters(k.values), *k.extra], rs=False)
    # writes after the correction store typed values too; a second sync changes nothing
    more = _rows({"c": (k.arrow, k.values[:2])}, per_value=1)
    more = more.set_column(0, "id", pa.array([f"n{i}" for i in range(more.num_rows)]))
    hudi_md.write(more, str(path), options={**_options(db, table, "c"), **metastore.options})
    assert sync(name, metastore.options)[1]["partition_types_corrected"] == 0
    _wait_synced(metastore, db, table)
    _check_filters(metastore, path, name, [wrong, *common_filters(k.values)], rs=False)


def test_sync_types_values_stored_before_the_server_typed_them(metastore: Metastore, tmp_path: Path) -> None:
    """Values stored before migration 0002 have no typed key: they compare as before (a timestamp
    as text) until ``metastore sync`` types them."""
    k = KINDS["timestamp"]
    path = tmp_path / "t"
    db, table = "lake", "premigration"
    hudi_md.write(
        _rows({"c": (k.arrow, k.values)}),
        str(path),
        options={**_options(db, table, "c"), **metastore.options},
    )
    _wait_synced(metastore, db, table)
    engine = engine_of(metastore.url)
    try:
        with engine.begin() as conn:
            tbl_id = conn.execute(sa.select(S.tbl.c.tbl_id).where(S.tbl.c.name == table)).scalar_one()
            conn.execute(
                S.partition_key_val.update()
                .where(S.partition_key_val.c.tbl_id == tbl_id)
                .values(part_key_int=None)
            )
    finally:
        engine.dispose()
    name = f"{db}.{table}"
    wrong = WRONG_AS_TEXT["timestamp"]
    own = hudi_md.open_table(str(path)).read(filters=wrong, columns=["id"])
    assert _ids(hudi_md.open_table(name, metastore.options).read(filters=wrong, columns=["id"])) != _ids(own)
    assert sync(name, metastore.options)[1]["partition_types_corrected"] == 0  # the types were right
    _check_filters(metastore, path, name, [wrong, *common_filters(k.values)], rs=False)


def test_only_the_types_of_the_partition_columns_change(metastore: Metastore, tmp_path: Path) -> None:
    path = tmp_path / "t"
    db, table = "lake", "retype_refused"
    hudi_md.write(
        _rows({"c": (pa.int64(), [1, 2])}),
        str(path),
        options={**_options(db, table, "c"), **metastore.options},
    )
    client = metastore.client
    for fields in ([], [P.FieldSchema(name="other", type="int64")], [P.FieldSchema(name="c", type="")]):
        with pytest.raises(hudi_md.errors.MetastoreError) as e:
            client.update_table(db, table, P.TableUpdate(partition_fields=fields))
        assert e.value.code == "invalid"
    assert client.table(db, table).partition_fields == [P.FieldSchema(name="c", type="int64")]


# --- the Hive adapter -----------------------------------------------------------------------------------

MULTI = {
    "year": (pa.int32(), [7, 100, 2018, 2019, 2020]),
    "big": (pa.int64(), [BIG + 1, BIG, 5, BIG + 2, -1]),
    "d": (pa.date32(), [D(2020, 1, 1), D(2019, 12, 31), D(2020, 1, 2), D(1970, 1, 1), D(2024, 7, 4)]),
    "t": (pa.timestamp("us", tz="UTC"), [T(2020, 1, 1, h, tzinfo=UTC) for h in (0, 7, 14, 21, 23)]),
}
HIVE_FILTERS = [  # (Hive filter string, the same filter for hudi-md)
    ("year < 2019", [("year", "<", 2019)]),
    ("year >= 100", [("year", ">=", 100)]),
    ('year > "99"', [("year", ">", 99)]),
    ("year between 100 and 2019", [("year", ">=", 100), ("year", "<=", 2019)]),
    ("(year) in (7, 2020)", [("year", "in", [7, 2020])]),
    (f"big > {BIG}", [("big", ">", BIG)]),
    (f"big <= {BIG + 1}", [("big", "<=", BIG + 1)]),
    ("d >= '2020-01-01'", [("d", ">=", D(2020, 1, 1))]),
    ("d < '2020-01-01'", [("d", "<", D(2020, 1, 1))]),
    ("d between '2019-12-31' and '2020-01-01'", [("d", ">=", D(2019, 12, 31)), ("d", "<=", D(2020, 1, 1))]),
    ("t >= '2020-01-01 14:00:00'", [("t", ">=", T(2020, 1, 1, 14, tzinfo=UTC))]),
    (
        "t < '2020-01-01T07:00:00Z' or year = 2020",
        [[("t", "<", T(2020, 1, 1, 7, tzinfo=UTC))], [("year", "=", 2020)]],
    ),
]


def test_hive_adapter_shows_and_prunes_by_the_types(metastore: Metastore, tmp_path: Path) -> None:
    path = tmp_path / "t"
    db, table = "lake", "multi"
    hudi_md.write(
        _rows(MULTI, per_value=2),
        str(path),
        options={**_options(db, table, ",".join(MULTI)), **metastore.options},
    )
    _wait_synced(metastore, db, table)
    engine = engine_of(metastore.url)
    server = HmsServer(engine, port=0, metastore_url="http://metastore.example:9090").start()
    try:
        with hmsclient.HMSClient(host="127.0.0.1", port=server.port) as hms:
            t = hms.get_table(db, table)
            want = {"year": "int", "big": "bigint", "d": "date", "t": "timestamp"}
            assert {f.name: f.type for f in t.partitionKeys} == want
            assert {f.name: f.type for f in hms.get_schema(db, table) if f.name in want} == want
            assert not {f.name for f in hms.get_fields(db, table)} & set(want)  # data columns only
            params = t.parameters
            spark_schema = json.loads(
                "".join(
                    params[f"spark.sql.sources.schema.part.{i}"]
                    for i in range(int(params["spark.sql.sources.schema.numParts"]))
                )
            )
            spark_types = {f["name"]: f["type"] for f in spark_schema["fields"]}
            assert {n: spark_types[n] for n in want} == {
                "year": "integer",
                "big": "long",
                "d": "date",
                "t": "timestamp",
            }
            own = hudi_md.open_table(str(path))
            names = [f.name for f in t.partitionKeys]
            for hive_filter, f in HIVE_FILTERS:
                expected = set()
                for conjunction in f if isinstance(f[0], list) else [f]:  # an "or" of "and"s
                    rows = own.read(filters=conjunction, columns=["_hoodie_partition_path"])
                    expected |= set(rows.column("_hoodie_partition_path").to_pylist())
                got = hms.get_partitions_by_filter(db, table, hive_filter, -1)
                paths = {"/".join(f"{n}={v}" for n, v in zip(names, p.values, strict=True)) for p in got}
                assert paths == expected, hive_filter
            # a partition by its values as Hive shows them (a timestamp's: the path's epoch count)
            one = hms.get_partitions(db, table, 1)[0]
            assert hms.get_partition(db, table, one.values).values == one.values
    finally:
        server.stop()
        engine.dispose()
