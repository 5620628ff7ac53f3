"""The Hive metastore (Thrift) adapter, called through the Thrift client generated from Hive's
``hive_metastore.thrift`` (hmsclient's): databases, tables as hudi-md data-source tables,
partitions pruned by Hive filter strings (checked against the filter evaluated here on the
partitions' values), filters that try to escape their quoting matched literally or refused, and
writes refused."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from click.testing import CliRunner
from hmsclient import hmsclient
from hmsclient.genthrift.hive_metastore import ttypes as H
from server_helpers import PgDatabases, commit_meta, make_api
from thrift.Thrift import TApplicationException
from thrift.transport.TTransport import TTransportException

from hudi_md.metastore_server.hms.server import HmsServer

SCHEMA = {
    "type": "record",
    "name": "trips",
    "fields": [
        {"name": "id", "type": "string"},
        {"name": "v", "type": ["null", "long"]},
        {"name": "fare", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "city", "type": "string"},
        {"name": "day", "type": "int"},
    ],
}
# (city, day) of every partition; day is numeric, so 10 sorts after 3
PARTITIONS = [("sf", 1), ("nyc", 2), ("it's", 3), ('say "hi"', 10), ("la", 10)]
URL = "http://metastore.example:9090"


def _path(city: str, day: int) -> str:
    return f"city={city}/day={day}"


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def hms_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HmsServer]:
    """One metastore per database kind for the module (every test only reads, or is refused a
    write)."""
    pg: PgDatabases | None = None
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('hms') / 'metastore.db'}"
    else:
        pg = request.getfixturevalue("pg_databases")
        if pg is None:
            pytest.skip(f"PostgreSQL is not available: {request.getfixturevalue('postgres_server').reason}")
        url = pg.create()
    apis = make_api(url)
    api = next(apis)
    route = api.table(
        db="lake",
        name="trips",
        location="file:///data/trips",
        partition_fields=[{"name": "city", "type": "string"}, {"name": "day", "type": "int"}],
    )
    api.table(db="lake", name="flat", location="file:///data/flat", partition_fields=[])
    ts = api.instant_time(route)
    meta = commit_meta(ts, {_path(c, d): [(f"f{i}", 100)] for i, (c, d) in enumerate(PARTITIONS)})
    meta["extraMetadata"] = {"schema": json.dumps(SCHEMA)}
    api.ok(api.commit(route, ts, meta))
    server = HmsServer(api.engine, port=0, metastore_url=URL).start()
    try:
        yield server
    finally:
        server.stop()
        apis.close()
        api.engine.dispose()
        if pg is not None:
            pg.drop(url)


@pytest.fixture(scope="module")
def hms(hms_server: HmsServer) -> Iterator[hmsclient.HMSClient]:
    with hmsclient.HMSClient(host="127.0.0.1", port=hms_server.port) as client:
        yield client


def test_databases(hms: hmsclient.HMSClient) -> None:
    assert hms.get_all_databases() == ["default", "lake"]
    assert hms.get_databases("la*|nothing") == ["lake"]
    assert hms.get_database("lake").name == "lake"
    assert hms.get_database("default").name == "default"  # Spark creates it at start otherwise
    with pytest.raises(H.NoSuchObjectException):
        hms.get_database("global_temp")  # Spark checks that its global temp database is absent


def test_table_is_a_hudi_md_data_source_table(hms: hmsclient.HMSClient) -> None:
    t = hms.get_table("lake", "trips")
    assert (t.dbName, t.tableName, t.tableType) == ("lake", "trips", "EXTERNAL_TABLE")
    p = t.parameters
    assert p["EXTERNAL"] == "TRUE"
    assert p["spark.sql.sources.provider"] == "hudi-md"
    assert t.sd.location == "file:///data/trips"
    serde = t.sd.serdeInfo.parameters
    assert serde["path"] == "file:///data/trips"
    assert serde["hoodie.metaserver.enabled"] == "true" and serde["hoodie.metaserver.uris"] == URL
    assert t.sd.inputFormat == "org.apache.hudi.hadoop.HoodieParquetInputFormat"
    # Spark's schema: meta columns, data columns, then the partition columns
    schema = json.loads(
        "".join(
            p[f"spark.sql.sources.schema.part.{i}"]
            for i in range(int(p["spark.sql.sources.schema.numParts"]))
        )
    )
    fields = [(f["name"], f["type"]) for f in schema["fields"]]
    assert fields[:5] == [
        (m, "string")
        for m in (
            "_hoodie_commit_time",
            "_hoodie_commit_seqno",
            "_hoodie_record_key",
            "_hoodie_partition_path",
            "_hoodie_file_name",
        )
    ]
    assert fields[5:] == [
        ("id", "string"),
        ("v", "long"),
        ("fare", "decimal(10,2)"),
        ("at", "timestamp"),
        ("tags", {"type": "array", "elementType": "string", "containsNull": False}),
        ("city", "string"),
        ("day", "integer"),
    ]
    assert [p[f"spark.sql.sources.schema.partCol.{i}"] for i in range(2)] == ["city", "day"]
    # Hive's view: data columns, and the partition keys apart
    assert [(c.name, c.type) for c in t.sd.cols][5:] == [
        ("id", "string"),
        ("v", "bigint"),
        ("fare", "decimal(10,2)"),
        ("at", "timestamp"),
        ("tags", "array<string>"),
    ]
    assert [(c.name, c.type) for c in t.partitionKeys] == [("city", "string"), ("day", "int")]
    assert hms.get_table_req(H.GetTableRequest(dbName="lake", tblName="trips")).table == t
    assert [x.tableName for x in hms.get_table_objects_by_name("lake", ["trips", "nope", "flat"])] == [
        "trips",
        "flat",
    ]
    assert [c.name for c in hms.get_schema("lake", "trips")][-2:] == ["city", "day"]
    # no registered schema: no schema properties (Spark then asks the data source), no columns
    flat = hms.get_table("lake", "flat")
    assert flat.parameters["spark.sql.sources.provider"] == "hudi-md"
    assert not [k for k in flat.parameters if k.startswith("spark.sql.sources.schema")]
    assert flat.sd.cols == [] and flat.partitionKeys == []
    with pytest.raises(H.NoSuchObjectException):
        hms.get_table("lake", "nope")
    with pytest.raises(H.NoSuchObjectException):
        hms.get_table("nodb", "trips")


def test_table_listing(hms: hmsclient.HMSClient) -> None:
    assert hms.get_tables("lake", "*") == ["flat", "trips"]
    assert hms.get_tables("lake", "TR*") == ["trips"]  # Hive's patterns ignore case
    assert hms.get_tables("lake", "t.*") == []  # '.' is not a wildcard
    assert hms.get_all_tables("default") == []
    assert [(m.dbName, m.tableName) for m in hms.get_table_meta("*", "fl*", [])] == [("lake", "flat")]
    assert hms.get_tables("nodb", "*") == []  # as Hive
    with pytest.raises(H.MetaException) as e:
        hms.get_partition_names("lake", "nope", -1)
    assert e.value.message == "no table lake.nope"  # declares no NoSuchObjectException


def _values(parts: list[H.Partition]) -> set[tuple[str, ...]]:
    return {tuple(p.values) for p in parts}


def _expect(pred: Callable[[str, int], bool]) -> set[tuple[str, ...]]:
    return {(c, str(d)) for c, d in PARTITIONS if pred(c, d)}


@pytest.mark.parametrize(
    ("hive_filter", "pred"),
    [
        ('city = "sf"', lambda c, d: c == "sf"),
        ("city = 'sf'", lambda c, d: c == "sf"),
        ('"sf" = city', lambda c, d: c == "sf"),
        ("city <> 'sf'", lambda c, d: c != "sf"),
        ("city != 'sf'", lambda c, d: c != "sf"),
        ("day > 2", lambda c, d: d > 2),  # numbers: 10 > 2
        ("day < 3", lambda c, d: d < 3),
        ("3 <= day", lambda c, d: d >= 3),
        ("city < 'n'", lambda c, d: c < "n"),  # code-point order
        ('day >= 2 and city = "nyc"', lambda c, d: d >= 2 and c == "nyc"),
        ('(city = "sf" or day = 10) and city != "la"', lambda c, d: (c == "sf" or d == 10) and c != "la"),
        ('city = "sf" or city = "la" and day = 1', lambda c, d: c == "sf" or (c == "la" and d == 1)),
        ("day between 2 and 3", lambda c, d: 2 <= d <= 3),
        ("day not between 2 and 3", lambda c, d: not 2 <= d <= 3),
        ('(city) in ("sf", "la")', lambda c, d: c in ("sf", "la")),
        ("(day) not in (1, 10)", lambda c, d: d not in (1, 10)),
        ('city = "it\'s"', lambda c, d: c == "it's"),
        ("city = 'say \"hi\"'", lambda c, d: c == 'say "hi"'),
        ("", lambda c, d: True),
        # attempts to leave the quotes: no escapes, so the whole text is the value
        ("city = \"x' or '1'='1\"", lambda c, d: False),
        ("city = 'sf\"; DROP TABLE tbl; --'", lambda c, d: False),
        ("city = 'sf\\' or day > 0", lambda c, d: c == "sf\\" or d > 0),
    ],
)
def test_partitions_by_filter(
    hms: hmsclient.HMSClient, hive_filter: str, pred: Callable[[str, int], bool]
) -> None:
    got = hms.get_partitions_by_filter("lake", "trips", hive_filter, -1)
    assert _values(got) == _expect(pred)
    for p in got:
        assert p.sd.location == "file:///data/trips/" + _path(p.values[0], int(p.values[1]))


@pytest.mark.parametrize(
    ("hive_filter", "message"),
    [
        ("city = 'sf' or 1 = 1", "expected a partition column name"),
        ("city = 'sf'; drop table tbl", "unexpected character ';'"),
        ("nosuch = 'x'", "not a partition column"),
        ("city like 's%'", "'like' is not supported"),
        ("city = sf", "expected a quoted string or an integer"),
        ("city = 'sf' 'x'", "adjacent string literals"),
        ("(city = 'sf'", "expected )"),
        ("city = 'sf' and", "expected a partition column name"),
        ("(" * 200 + "city = 'sf'" + ")" * 200, "nest at most 100 deep"),
    ],
)
def test_partition_filters_refused(hms: hmsclient.HMSClient, hive_filter: str, message: str) -> None:
    with pytest.raises(H.MetaException) as e:
        hms.get_partitions_by_filter("lake", "trips", hive_filter, -1)
    assert message in e.value.message
    assert len(hms.get_partitions("lake", "trips", -1)) == len(PARTITIONS)  # nothing changed


def test_partitions_by_name_and_spec(hms: hmsclient.HMSClient) -> None:
    names = hms.get_partition_names("lake", "trips", -1)
    assert sorted(names) == sorted(
        [
            "city=sf/day=1",
            "city=nyc/day=2",
            "city=it%27s/day=3",
            'city=say "hi"/day=10'.replace('"', "%22"),
            "city=la/day=10",
        ]
    )
    assert len(hms.get_partitions("lake", "trips", 2)) == 2  # max_parts
    assert hms.get_partition_by_name("lake", "trips", "city=it%27s/day=3").values == ["it's", "3"]
    assert hms.get_partition("lake", "trips", ["la", "10"]).values == ["la", "10"]
    with pytest.raises(H.NoSuchObjectException):
        hms.get_partition("lake", "trips", ["la", "1"])
    assert _values(hms.get_partitions_ps("lake", "trips", ["", "10"], -1)) == {
        ("la", "10"),
        ('say "hi"', "10"),
    }
    assert hms.get_partition_names_ps("lake", "trips", ["sf"], -1) == ["city=sf/day=1"]
    got = hms.get_partitions_by_names("lake", "trips", ["city=sf/day=1", "city=sf/day=9"])
    assert _values(got) == {("sf", "1")}
    assert hms.get_num_partitions_by_filter("lake", "trips", "day = 10") == 2
    assert hms.get_partitions("lake", "flat", -1) == []  # unpartitioned: no partitions, as Hive


def test_partitions_by_expr_is_an_unknown_method(hms: hmsclient.HMSClient) -> None:
    # Hive's client takes "unknown method" for "filter on the client side"
    req = H.PartitionsByExprRequest(dbName="lake", tblName="trips", expr=b"\x00", maxParts=-1)
    with pytest.raises(TApplicationException) as e:
        hms.get_partitions_by_expr(req)
    assert e.value.type == TApplicationException.UNKNOWN_METHOD


@pytest.mark.parametrize(
    "call",
    [
        lambda c, t: c.create_table(t),
        lambda c, t: c.drop_table("lake", "trips", True),
        lambda c, t: c.alter_table("lake", "trips", t),
        lambda c, t: c.add_partitions(
            [H.Partition(values=["x", "1"], dbName="lake", tableName="trips", sd=t.sd)]
        ),
        lambda c, t: c.drop_partition("lake", "trips", ["sf", "1"], True),
        lambda c, t: c.create_database(H.Database(name="other")),
        lambda c, t: c.drop_database("lake", True, True),
    ],
)
def test_writes_are_refused(hms: hmsclient.HMSClient, call: Callable[[Any, H.Table], Any]) -> None:
    table = hms.get_table("lake", "trips")
    with pytest.raises(H.MetaException) as e:
        call(hms, table)
    assert "managed by hudi-md" in e.value.message
    assert hms.get_table("lake", "trips") == table
    assert len(hms.get_partitions("lake", "trips", -1)) == len(PARTITIONS)


def test_oversized_requests_are_refused(hms_server: HmsServer) -> None:
    client = hmsclient.HMSClient(host="127.0.0.1", port=hms_server.port)
    with client, pytest.raises(TTransportException):
        client.get_table_objects_by_name("lake", ["t"] * 200_000)  # the connection is dropped
    with hmsclient.HMSClient(host="127.0.0.1", port=hms_server.port) as client:
        assert client.get_table("lake", "trips").tableName == "trips"  # the server still answers


def test_thrift_port_needs_anonymous_reads(tmp_path: Any) -> None:
    from hudi_md.metastore_server.cli import metastore

    result = CliRunner().invoke(
        metastore,
        ["serve", "--db", f"sqlite:///{tmp_path / 'm.db'}", "--thrift-port", "0", "--read-token-required"],
    )
    assert result.exit_code != 0
    assert "cannot be combined with --read-token-required" in result.output


def test_unmappable_schema_leaves_spark_to_infer() -> None:
    from datetime import datetime, timezone

    from hudi_md.metastore import protocol as P
    from hudi_md.metastore_server.catalog import TableRow
    from hudi_md.metastore_server.hms.tables import hive_table

    def table(schema: dict[str, Any]) -> TableRow:
        return TableRow(
            tbl_id=1,
            db="lake",
            name="t",
            location="/data/t",
            table_type="MERGE_ON_READ",
            partition_fields=(P.FieldSchema(name="city", type="string"),),
            record_key_fields=("id",),
            schema_json=json.dumps(schema),
            created=datetime.now(timezone.utc),
            version=1,
            synced_version=1,
            unsynced=0,
        )

    two_types = {"type": "record", "name": "r", "fields": [{"name": "x", "type": ["null", "int", "string"]}]}
    t = hive_table(table(two_types), {})
    assert not [k for k in t.parameters if k.startswith("spark.sql.sources.schema")]
    assert t.sd.inputFormat == "org.apache.hudi.hadoop.realtime.HoodieParquetRealtimeInputFormat"
    no_meta = {"type": "record", "name": "r", "fields": [{"name": "x", "type": "int"}]}
    t = hive_table(table(no_meta), {"hoodie.populate.meta.fields": "false"})
    assert [(c.name, c.type) for c in t.sd.cols] == [("x", "int")]
    assert json.loads(t.parameters["spark.sql.sources.schema.part.0"])["fields"][-1]["name"] == "city"


def test_connections_past_the_cap_are_closed(hms_server: HmsServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from hudi_md.metastore_server.hms import server as hms_module

    monkeypatch.setattr(hms_module, "MAX_CONNECTIONS", 1)
    capped = HmsServer(hms_server.engine, port=0).start()
    try:
        with hmsclient.HMSClient(host="127.0.0.1", port=capped.port) as first:
            assert first.get_all_databases() == ["default", "lake"]
            second = hmsclient.HMSClient(host="127.0.0.1", port=capped.port)
            with second, pytest.raises(TTransportException):
                second.get_all_databases()
        # the first one's slot is free again once it closed
        deadline = time.monotonic() + 10
        while True:
            try:
                with hmsclient.HMSClient(host="127.0.0.1", port=capped.port) as third:
                    assert third.get_all_databases() == ["default", "lake"]
                break
            except TTransportException:
                assert time.monotonic() < deadline
                time.sleep(0.05)
    finally:
        capped.stop()
