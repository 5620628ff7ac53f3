"""Every route of the metastore's HTTP API (hudi_md.metastore.protocol), on SQLite and PostgreSQL:
databases and tables, the instant lifecycle with metadata bytes, heartbeats and their expiry,
partitions (drop, revive, clean), the snapshot routes, and the error bodies."""

from __future__ import annotations

import json
import time

import pytest
from server_helpers import Api, b64, commit_meta

from hudi_md.formats.commit_metadata import parse_instant_metadata
from hudi_md.formats.commit_metadata_writer import (
    clean_metadata_record,
    commit_metadata_record,
    serialize_instant_metadata,
)
from hudi_md.metastore import protocol as P
from hudi_md.metastore_server import timeline as server_timeline


def error_code(response: object) -> str:
    body = response.json()  # type: ignore[attr-defined]
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, body
    return body["error"]["code"]


# --- table service ------------------------------------------------------------------------------------


def test_databases(api: Api) -> None:
    created = api.ok(
        api.post("/v1/databases", {"name": "sales", "description": "d", "params": {"k": "v"}}), 201
    )
    assert created["name"] == "sales" and created["params"] == {"k": "v"} and created["created"]
    r = api.post("/v1/databases", {"name": "sales"})
    assert r.status_code == 409 and error_code(r) == "exists"
    api.ok(api.post("/v1/databases", {"name": "hr", "location": "s3://bucket/hr"}), 201)
    assert [d["name"] for d in api.ok(api.get("/v1/databases"))] == ["hr", "sales"]
    got = P.Database.model_validate(api.ok(api.get("/v1/databases/sales")))
    assert got.description == "d" and got.params == {"k": "v"}
    r = api.get("/v1/databases/nope")
    assert r.status_code == 404 and error_code(r) == "not_found"
    api.table("sales", "orders", "/data/orders")
    r = api.delete("/v1/databases/sales")
    assert r.status_code == 409 and error_code(r) == "conflict"
    assert api.delete("/v1/databases/sales/tables/orders").status_code == 204
    assert api.delete("/v1/databases/sales").status_code == 204
    assert api.get("/v1/databases/sales").status_code == 404


def test_tables(api: Api) -> None:
    schema = json.dumps(
        {
            "type": "record",
            "name": "r",
            "fields": [{"name": "id", "type": "string"}, {"name": "city", "type": "string"}],
        }
    )
    api.ok(api.post("/v1/databases", {"name": "db1"}), 201)
    body = {
        "name": "trips",
        "location": "s3a://bucket/warehouse/trips/",
        "table_type": "MERGE_ON_READ",
        "partition_fields": [{"name": "city", "type": "string"}],
        "record_key_fields": ["id"],
        "params": {"hoodie.table.name": "trips", "hoodie.table.version": "9"},
        "schema_json": schema,
    }
    table = P.Table.model_validate(api.ok(api.post("/v1/databases/db1/tables", body), 201))
    assert (table.db, table.name, table.version) == ("db1", "trips", 0)
    assert (
        table.params == body["params"] and table.record_key_fields == ["id"] and table.schema_json == schema
    )
    r = api.post("/v1/databases/db1/tables", body)
    assert r.status_code == 409 and error_code(r) == "exists"
    r = api.post(
        "/v1/databases/db1/tables", {**body, "name": "trips2", "location": "s3://bucket/warehouse/trips"}
    )
    assert r.status_code == 409 and error_code(r) == "exists"  # the same location, spelled otherwise
    r = api.post("/v1/databases/nodb/tables", {**body, "name": "x", "location": "s3://b/x"})
    assert r.status_code == 404
    api.ok(api.post("/v1/databases/db1/tables", {**body, "name": "local", "location": "/data/local"}), 201)
    assert [t["name"] for t in api.ok(api.get("/v1/databases/db1/tables"))] == ["local", "trips"]
    assert P.Table.model_validate(api.ok(api.get("/v1/databases/db1/tables/trips"))) == table
    for spelling in (
        "s3://bucket/warehouse/trips",
        "s3a://bucket/warehouse/trips/",
        "S3://bucket/warehouse/trips",
    ):
        found = api.ok(api.get("/v1/tables", params={"location": spelling}))
        assert [t["name"] for t in found] == ["trips"], spelling
    for spelling in ("/data/local", "file:/data/local", "file:///data/local/"):
        assert [t["name"] for t in api.ok(api.get("/v1/tables", params={"location": spelling}))] == ["local"]
    assert api.ok(api.get("/v1/tables", params={"location": "/data/other"})) == []
    # the schema table holds the columns, the partition column flagged
    import sqlalchemy as sa

    from hudi_md.metastore_server import schema as S

    with api.engine.connect() as conn:
        rows = conn.execute(
            sa.select(S.schema.c.name, S.schema.c.is_partition_col)
            .join(S.tbl, S.tbl.c.tbl_id == S.schema.c.tbl_id)
            .where(S.tbl.c.name == "trips")
            .order_by(S.schema.c.position)
        ).all()
    assert [tuple(r) for r in rows] == [("id", False), ("city", True)]
    route = "/v1/databases/db1/tables/trips"
    ts = api.instant_time(route)
    api.ok(api.commit(route, ts, commit_meta(ts, {"city=sf": [("f1", 10)]})))
    assert api.delete(route).status_code == 204
    assert api.get(route).status_code == 404
    assert api.ok(api.get("/v1/tables", params={"location": "s3://bucket/warehouse/trips"})) == []


# --- timeline service ---------------------------------------------------------------------------------


def test_instant_times_increase(api: Api) -> None:
    route = api.table()
    times = [api.instant_time(route) for _ in range(50)]
    assert times == sorted(set(times)) and all(len(t) == 17 and t.isdigit() for t in times)
    later = api.ok(api.post(f"{route}/instant-times", {"after": "99990101000000000"}))["instant_time"]
    assert later == "99990101000000001"
    assert api.instant_time(route) > later
    # a client's own requested time moves the table's clock too
    api.ok(api.post(f"{route}/instants", {"requested_time": "99991231235959998", "action": "commit"}), 201)
    assert api.instant_time(route) == "99991231235959999"
    r = api.post(f"{route}/instant-times", {"after": "x1"})
    assert r.status_code == 400 and error_code(r) == "invalid"


def test_instant_lifecycle_and_metadata_bytes(api: Api) -> None:
    route = api.table()
    ts = api.instant_time(route)
    plan = b"\x00\x01 a plan \xff"
    created = api.ok(
        api.post(
            f"{route}/instants", {"requested_time": ts, "action": "deltacommit", "metadata_b64": b64(plan)}
        ),
        201,
    )
    assert created == {
        "requested_time": ts,
        "action": "deltacommit",
        "state": "requested",
        "completion_time": None,
        "heartbeat_expires": None,
    }
    r = api.post(f"{route}/instants", {"requested_time": ts, "action": "commit"})
    assert r.status_code == 409 and error_code(r) == "exists"
    to_inflight = {
        "action": "deltacommit",
        "from_state": "requested",
        "to_state": "inflight",
        "metadata_b64": b64(b"wip"),
    }
    r = api.post(f"{route}/instants/{ts}/transition", {**to_inflight, "action": "commit"})
    assert r.status_code == 409 and error_code(r) == "conflict"  # not that instant's action
    r = api.post(
        f"{route}/instants/{ts}/transition",
        {**to_inflight, "from_state": "inflight", "to_state": "completed"},
    )
    assert r.status_code == 409 and error_code(r) == "conflict"  # not in that state
    r = api.post(f"{route}/instants/{ts}/transition", {**to_inflight, "to_state": "completed"})
    assert r.status_code == 400 and error_code(r) == "invalid"  # no such transition
    assert api.ok(api.post(f"{route}/instants/{ts}/transition", to_inflight))["state"] == "inflight"
    assert (
        api.ok(api.post(f"{route}/instants/{ts}/transition", to_inflight))["state"] == "inflight"
    )  # a retry
    # completed with Avro commit metadata as hudi-md writes it
    record = commit_metadata_record(
        {
            "city=sf": [
                {
                    "fileId": "f1",
                    "path": f"city=sf/.f1_{ts}.log.1_0-1-0",
                    "fileSizeInBytes": 7,
                    "logFiles": [f".f1_{ts}.log.1_0-1-0"],
                }
            ]
        },
        operation_type="UPSERT",
        extra_metadata={"schema": ""},
    )
    avro = serialize_instant_metadata("deltacommit", record)
    bad = {
        "action": "deltacommit",
        "from_state": "inflight",
        "to_state": "completed",
        "metadata_b64": b64(b"{not json"),
    }
    r = api.post(f"{route}/instants/{ts}/transition", bad)
    assert r.status_code == 400 and error_code(r) == "invalid"
    done = {**bad, "metadata_b64": b64(avro), "completion_time": str(int(ts) + 5)}
    completed = api.ok(api.post(f"{route}/instants/{ts}/transition", done))
    assert completed["state"] == "completed" and completed["completion_time"] == str(int(ts) + 5)
    assert api.ok(api.post(f"{route}/instants/{ts}/transition", done)) == completed  # a retry answers again
    r = api.post(f"{route}/instants/{ts}/transition", {**done, "metadata_b64": b64(b"{}")})
    assert r.status_code == 409 and error_code(r) == "conflict"
    # the bytes of every state, as given
    for state, data in (("requested", plan), ("inflight", b"wip"), ("completed", avro)):
        r = api.get(f"{route}/instants/{ts}/metadata", params={"state": state})
        assert (
            r.status_code == 200
            and r.headers["content-type"] == "application/octet-stream"
            and r.content == data
        )
    assert api.get(f"{route}/instants/{ts}/metadata").content == avro
    meta = parse_instant_metadata(api.get(f"{route}/instants/{ts}/metadata").content, "x")
    assert meta["partitionToWriteStats"]["city=sf"][0]["fileId"] == "f1"
    # a compaction completes as a commit
    c = api.instant_time(route)
    api.ok(api.commit(route, c, {"partitionToWriteStats": {}}, "compaction"))
    listed = api.ok(api.get(f"{route}/instants"))
    assert [(i["requested_time"], i["action"], i["state"]) for i in listed] == [
        (ts, "deltacommit", "completed"),
        (c, "commit", "completed"),
    ]
    assert listed[1]["completion_time"] > c
    # a pending instant: its metadata of a later state is not there; deleted, it is gone
    p = api.instant_time(route)
    api.ok(api.post(f"{route}/instants", {"requested_time": p, "action": "clean", "state": "inflight"}), 201)
    assert api.get(f"{route}/instants/{p}/metadata", params={"state": "completed"}).status_code == 404
    assert api.get(f"{route}/instants/{p}/metadata", params={"state": "inflight"}).content == b""
    assert api.delete(f"{route}/instants/{p}").status_code == 204
    assert api.get(f"{route}/instants/{p}/metadata").status_code == 404
    assert api.delete(f"{route}/instants/{p}").status_code == 404
    r = api.post(f"{route}/instants", {"requested_time": api.instant_time(route), "action": "frobnicate"})
    assert r.status_code == 400 and error_code(r) == "invalid"


class ServerClock:
    """The server's clock (``timeline.now_ms``) held still and moved by the test: heartbeat expiry
    is decided by it alone, not by how long a loaded machine takes between two requests."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.ms = int(time.time() * 1000)
        monkeypatch.setattr(server_timeline, "now_ms", lambda: self.ms)

    def advance(self, seconds: float) -> None:
        self.ms += int(seconds * 1000)

    @property
    def seconds(self) -> float:
        return self.ms / 1000.0


def test_heartbeat_expiry_releases_the_instant(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = ServerClock(monkeypatch)
    route = api.table()
    ts = api.instant_time(route)
    created = api.ok(
        api.post(f"{route}/instants", {"requested_time": ts, "action": "commit", "heartbeat_s": 1.0}), 201
    )
    assert created["heartbeat_expires"] == pytest.approx(clock.seconds + 1.0)
    clock.advance(0.4)
    beat = api.ok(api.post(f"{route}/instants/{ts}/heartbeat"))
    assert beat["heartbeat_expires"] == pytest.approx(clock.seconds + 1.0)
    r = api.delete(f"{route}/instants/{ts}")
    assert r.status_code == 409 and error_code(r) == "conflict"  # a live writer's instant
    clock.advance(0.999)
    assert api.post(f"{route}/instants/{ts}/heartbeat").status_code == 200  # still live at the edge
    clock.advance(1.3)
    listed = api.ok(api.get(f"{route}/instants"))
    assert listed[0]["state"] == "requested" and listed[0]["heartbeat_expires"] < clock.seconds
    r = api.post(f"{route}/instants/{ts}/heartbeat")
    assert r.status_code == 409 and error_code(r) == "conflict"
    r = api.post(
        f"{route}/instants/{ts}/transition",
        {"action": "commit", "from_state": "requested", "to_state": "inflight"},
    )
    assert r.status_code == 409 and "expired" in r.json()["error"]["message"]
    assert api.delete(f"{route}/instants/{ts}").status_code == 204  # released: anyone rolls it back
    assert api.ok(api.get(f"{route}/instants")) == []
    assert api.post(f"{route}/instants/{ts}/heartbeat").status_code == 404


def test_an_expired_writer_does_not_block_another(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    """A dead writer's pending instant on the same file group: the next writer completes."""
    clock = ServerClock(monkeypatch)
    route = api.table()
    dead = api.instant_time(route)
    api.ok(
        api.post(f"{route}/instants", {"requested_time": dead, "action": "commit", "heartbeat_s": 0.3}), 201
    )
    clock.advance(0.5)
    ts = api.instant_time(route)
    assert api.commit(route, ts, commit_meta(ts, {"city=sf": [("f1", 1)]})).status_code == 200
    states = {i["requested_time"]: i["state"] for i in api.ok(api.get(f"{route}/instants"))}
    assert states == {dead: "requested", ts: "completed"}


# --- partition and snapshot services -----------------------------------------------------------------


def wait_synced(api: Api, route: str) -> dict:
    for _ in range(200):
        status = api.ok(api.get(f"{route}/snapshot/status"))
        if status["status"] == "synced":
            return status
        time.sleep(0.05)
    raise AssertionError(status)


def test_partitions_and_snapshot_routes(api: Api) -> None:
    route = api.table(partition_fields=[{"name": "city", "type": "string"}])
    t1 = api.instant_time(route)
    api.ok(
        api.commit(route, t1, commit_meta(t1, {"city=sf": [("a", 10), ("b", 20)], "city=nyc": [("c", 30)]}))
    )
    t2 = api.instant_time(route)
    api.ok(
        api.commit(
            route,
            t2,
            commit_meta(t2, {"city=sf": [("a", 11)], "city=__HIVE_DEFAULT_PARTITION__": [("d", 1)]}),
        )
    )
    status = wait_synced(api, route)
    assert status["synced_instant"] == t2 and status["pending"] == []
    assert api.ok(api.get(route))["version"] == 2
    parts = {p["path"]: p for p in api.ok(api.post(f"{route}/partitions/query", {}))}
    assert set(parts) == {"city=sf", "city=nyc", "city=__HIVE_DEFAULT_PARTITION__"}
    assert parts["city=sf"]["values"] == {"city": "sf"} and parts["city=__HIVE_DEFAULT_PARTITION__"][
        "values"
    ] == {"city": None}
    assert (parts["city=sf"]["created_instant"], parts["city=sf"]["updated_instant"]) == (t1, t2)
    assert api.ok(api.get(f"{route}/partitions/city=nyc"))["updated_instant"] == t1
    assert api.get(f"{route}/partitions/city=la").status_code == 404
    # slices: one per file group, the latest base file
    slices = api.ok(api.post(f"{route}/snapshot/slices", {}))
    latest = {(s["partition"], s["file_id"]): s["base_file"]["name"] for s in slices}
    assert latest[("city=sf", "a")] == f"a_0-1-0_{t2}.parquet" and len(latest) == 4
    only = api.ok(api.post(f"{route}/snapshot/slices", {"partitions": ["city=nyc"]}))
    assert [s["file_id"] for s in only] == ["c"]
    as_of = api.ok(api.post(f"{route}/snapshot/slices", {"as_of": t1}))
    assert {(s["partition"], s["file_id"]): s["base_instant"] for s in as_of} == {
        ("city=sf", "a"): t1,
        ("city=sf", "b"): t1,
        ("city=nyc", "c"): t1,
    }
    # files: incremental after an instant, all live versions (for clean)
    after = api.ok(api.get(f"{route}/snapshot/files", params={"after": t1}))
    assert sorted((f["partition"], f["name"]) for f in after) == sorted(
        [("city=sf", f"a_0-1-0_{t2}.parquet"), ("city=__HIVE_DEFAULT_PARTITION__", f"d_0-1-0_{t2}.parquet")]
    )
    every = api.ok(api.get(f"{route}/snapshot/all-files", params={"partition": "city=sf"}))
    assert sorted(f["name"] for f in every) == sorted(
        [f"a_0-1-0_{t1}.parquet", f"a_0-1-0_{t2}.parquet", f"b_0-1-0_{t1}.parquet"]
    )
    assert {f["instant"] for f in every} == {t1, t2} and {f["file_id"] for f in every} == {"a", "b"}
    # a clean deletes the old version of a
    c = api.instant_time(route)
    clean = clean_metadata_record(
        instant=c, earliest_to_retain=t2, last_completed=t2, policy="KEEP_LATEST_COMMITS",
        deleted={"city=sf": [f"a_0-1-0_{t1}.parquet"]},
    )  # fmt: skip
    api.ok(api.commit(route, c, serialize_instant_metadata("clean", clean), "clean"))
    every = api.ok(api.get(f"{route}/snapshot/all-files", params={"partition": "city=sf"}))
    assert sorted(f["name"] for f in every) == sorted([f"a_0-1-0_{t2}.parquet", f"b_0-1-0_{t1}.parquet"])
    # time travel before the clean still sees the cleaned file
    as_of = api.ok(api.post(f"{route}/snapshot/slices", {"as_of": t1, "partitions": ["city=sf"]}))
    assert {s["base_file"]["name"] for s in as_of} == {f"a_0-1-0_{t1}.parquet", f"b_0-1-0_{t1}.parquet"}


def test_drop_partition_then_clean_or_write(api: Api) -> None:
    route = api.table()
    t1 = api.instant_time(route)
    api.ok(api.commit(route, t1, commit_meta(t1, {"city=sf": [("a", 1)], "city=nyc": [("b", 1)]})))
    dropped = api.ok(api.delete(f"{route}/partitions/city=sf"))
    assert dropped["dropped"] and dropped["clean_pending"]
    assert api.get(f"{route}/partitions/city=sf").status_code == 404
    assert [p["path"] for p in api.ok(api.post(f"{route}/partitions/query", {}))] == ["city=nyc"]
    both = api.ok(api.post(f"{route}/partitions/query", {"include_dropped": True}))
    assert {p["path"]: p["clean_pending"] for p in both} == {"city=nyc": False, "city=sf": True}
    assert [s["partition"] for s in api.ok(api.post(f"{route}/snapshot/slices", {}))] == ["city=nyc"]
    assert api.ok(api.delete(f"{route}/partitions/city=sf"))["dropped"]  # again: the same answer
    # the client's delete_partition (a replacecommit replacing every file group), then a clean
    r = api.instant_time(route)
    api.ok(
        api.commit(
            route,
            r,
            {"partitionToWriteStats": {}, "partitionToReplaceFileIds": {"city=sf": ["a"]}},
            "replacecommit",
        )
    )
    c = api.instant_time(route)
    clean = clean_metadata_record(
        instant=c, earliest_to_retain=r, last_completed=r, policy="KEEP_LATEST_COMMITS",
        deleted={"city=sf": [f"a_0-1-0_{t1}.parquet"]},
    )  # fmt: skip
    api.ok(api.commit(route, c, serialize_instant_metadata("clean", clean), "clean"))
    both = api.ok(api.post(f"{route}/partitions/query", {"include_dropped": True}))
    assert {p["path"]: (p["dropped"], p["clean_pending"]) for p in both} == {
        "city=nyc": (False, False),
        "city=sf": (True, False),
    }
    # a write into a dropped partition brings it back
    api.ok(api.delete(f"{route}/partitions/city=nyc"))
    t3 = api.instant_time(route)
    api.ok(api.commit(route, t3, commit_meta(t3, {"city=nyc": [("b", 2)]})))
    nyc = api.ok(api.get(f"{route}/partitions/city=nyc"))
    assert not nyc["dropped"] and not nyc["clean_pending"] and nyc["updated_instant"] == t3


def test_non_partitioned_table(api: Api) -> None:
    route = api.table(partition_fields=[], params={})
    ts = api.instant_time(route)
    api.ok(api.commit(route, ts, commit_meta(ts, {"": [("a", 5)]})))
    assert api.ok(api.post(f"{route}/partitions/query", {})) == [
        {
            "path": "",
            "values": {},
            "created_instant": ts,
            "updated_instant": ts,
            "dropped": False,
            "clean_pending": False,
        }
    ]
    assert api.ok(api.get(f"{route}/partitions/{P.NON_PARTITIONED}"))["path"] == ""
    slices = api.ok(api.post(f"{route}/snapshot/slices", {"partitions": [""]}))
    assert [(s["partition"], s["base_file"]["name"]) for s in slices] == [("", f"a_0-1-0_{ts}.parquet")]
    files = api.ok(api.get(f"{route}/snapshot/all-files", params={"partition": P.NON_PARTITIONED}))
    assert [f["name"] for f in files] == [f"a_0-1-0_{ts}.parquet"]


def test_errors_are_json(api: Api) -> None:
    route = api.table()
    for r, status, code in (
        (api.get("/v1/nowhere"), 404, "not_found"),
        (api.client.put("/v1/databases", headers=api.auth), 405, "invalid"),
        (api.post("/v1/databases", {"nom": "x"}), 422, "invalid"),
        (
            api.client.post(
                "/v1/databases", content=b"{", headers={**api.auth, "content-type": "application/json"}
            ),
            422,
            "invalid",
        ),
        (api.get(f"{route}/instants/123/metadata"), 422, "invalid"),
        (api.get(f"{route}/instants/20240101000000000/metadata"), 404, "not_found"),
        (api.post(f"{route}/snapshot/slices", {"as_of": "yesterday"}), 400, "invalid"),
        (
            api.post(f"{route}/partitions/query", {"filter": {"op": "eq", "column": "nope", "value": 1}}),
            400,
            "invalid",
        ),
        (api.post(f"{route}/partitions/query", {"filter": {"op": "eq", "column": "city"}}), 400, "invalid"),
        (api.post(f"{route}/partitions/query", {"filter": {"op": "not", "args": []}}), 400, "invalid"),
        (api.post(f"{route}/instants", {"requested_time": "1", "action": "commit"}), 422, "invalid"),
        (
            api.post(
                f"{route}/instants/20240101000000000/transition",
                {"action": "commit", "from_state": "requested", "to_state": "inflight"},
            ),
            404,
            "not_found",
        ),
    ):
        assert r.status_code == status, (r.request.url, r.text)
        assert error_code(r) == code, (r.request.url, r.text)


def test_openapi_describes_every_route(api: Api) -> None:
    spec = api.ok(api.get("/openapi.json"))
    routes = {(m.upper(), p) for p, ops in spec["paths"].items() for m in ops}
    t = "/v1/databases/{db}/tables/{table}"
    expected = {
        ("POST", "/v1/databases"), ("GET", "/v1/databases"), ("GET", "/v1/databases/{db}"),
        ("DELETE", "/v1/databases/{db}"), ("POST", "/v1/databases/{db}/tables"),
        ("GET", "/v1/databases/{db}/tables"), ("GET", t), ("DELETE", t), ("GET", "/v1/tables"),
        ("POST", f"{t}/instant-times"), ("POST", f"{t}/instants"), ("GET", f"{t}/instants"),
        ("POST", f"{t}/instants/{{ts}}/transition"), ("POST", f"{t}/instants/{{ts}}/heartbeat"),
        ("DELETE", f"{t}/instants/{{ts}}"), ("GET", f"{t}/instants/{{ts}}/metadata"),
        ("POST", f"{t}/partitions/query"), ("GET", f"{t}/partitions/{{partition}}"),
        ("DELETE", f"{t}/partitions/{{partition}}"), ("POST", f"{t}/snapshot/slices"),
        ("GET", f"{t}/snapshot/files"), ("GET", f"{t}/snapshot/all-files"), ("GET", f"{t}/snapshot/status"),
    }  # fmt: skip
    assert expected <= routes, expected - routes


@pytest.mark.parametrize("state", ["requested", "inflight"])
def test_rolled_back_instants_leave(api: Api, state: str) -> None:
    """A completed instant a rollback removed (the mirror deletes it after the rollback): its files
    leave the snapshot; a pending one just goes."""
    route = api.table()
    t1 = api.instant_time(route)
    api.ok(api.commit(route, t1, commit_meta(t1, {"city=sf": [("a", 1)]})))
    t2 = api.instant_time(route)
    api.ok(api.commit(route, t2, commit_meta(t2, {"city=sf": [("b", 1)]})))
    wait_synced(api, route)
    assert api.delete(f"{route}/instants/{t2}").status_code == 204
    t3 = api.instant_time(route)
    api.ok(api.post(f"{route}/instants", {"requested_time": t3, "action": "commit", "state": state}), 201)
    assert api.delete(f"{route}/instants/{t3}").status_code == 204
    assert [s["file_id"] for s in api.ok(api.post(f"{route}/snapshot/slices", {}))] == ["a"]
    assert [f["name"] for f in api.ok(api.get(f"{route}/snapshot/all-files"))] == [f"a_0-1-0_{t1}.parquet"]
    assert [i["requested_time"] for i in api.ok(api.get(f"{route}/instants"))] == [t1]


def test_racing_transitions_of_one_instant(api: Api) -> None:
    """Many requests moving one instant requested → inflight at once (other metadata each): one
    moves it, the others get 409 conflict, never a 500."""
    import threading

    route = api.table()
    ts = api.instant_time(route)
    api.ok(api.post(f"{route}/instants", {"requested_time": ts, "action": "commit"}), 201)
    statuses: list[int] = []
    barrier = threading.Barrier(6)

    def move(i: int) -> None:
        body = {
            "action": "commit",
            "from_state": "requested",
            "to_state": "inflight",
            "metadata_b64": b64(bytes([i])),
        }
        barrier.wait()
        statuses.append(api.post(f"{route}/instants/{ts}/transition", body).status_code)

    threads = [threading.Thread(target=move, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(statuses) == [200] + [409] * 5, statuses
    assert len(api.get(f"{route}/instants/{ts}/metadata", params={"state": "inflight"}).content) == 1


def test_a_dropped_partition_has_no_slices(api: Api) -> None:
    route = api.table()
    ts = api.instant_time(route)
    api.ok(api.commit(route, ts, commit_meta(ts, {"city=sf": [("a", 1)], "city=la": [("b", 1)]})))
    api.ok(api.delete(f"{route}/partitions/city=sf"))
    got = api.ok(api.post(f"{route}/snapshot/slices", {"partitions": ["city=sf", "city=la"]}))
    assert [s["partition"] for s in got] == ["city=la"]


def test_an_unreadable_pending_plan_reads_no_file_group(api: Api) -> None:
    route = api.table(table_type="MERGE_ON_READ")
    c = api.instant_time(route)
    api.ok(
        api.post(
            f"{route}/instants",
            {"requested_time": c, "action": "compaction", "metadata_b64": b64(b"\x00junk")},
        ),
        201,
    )
    ts = api.instant_time(route)
    assert api.commit(route, ts, commit_meta(ts, {"city=sf": [("a", 1)]}), "deltacommit").status_code == 200


def test_a_released_table_service_is_taken_over(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    """A compaction whose runner died (heartbeat expired) is run by another: moved on, its
    heartbeat restarts, and it completes; a released write cannot complete."""
    clock = ServerClock(monkeypatch)
    route = api.table(table_type="MERGE_ON_READ")
    c = api.instant_time(route)
    api.ok(
        api.post(f"{route}/instants", {"requested_time": c, "action": "compaction", "heartbeat_s": 0.3}), 201
    )
    clock.advance(0.5)
    moved = api.ok(
        api.post(
            f"{route}/instants/{c}/transition",
            {"action": "compaction", "from_state": "requested", "to_state": "inflight"},
        )
    )
    assert moved["heartbeat_expires"] == pytest.approx(clock.seconds + 0.3)
    assert (
        api.ok(api.commit_transition(route, c, "compaction", {"partitionToWriteStats": {}}))["action"]
        == "commit"
    )
