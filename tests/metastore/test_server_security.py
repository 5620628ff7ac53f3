"""The metastore's security: writes need a valid bearer token (401 with a JSON body otherwise),
reads are open unless the server requires a token for them too, tokens are stored as salted
hashes, names follow the protocol's pattern, SQL-injection strings in values are stored and
matched literally, table locations are checked (no ``..``, allowed schemes, absolute), and bodies
are limited in size (413)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa
from server_helpers import Api, ServerProcess, commit_meta, make_api, token_for

from hudi_md.metastore_server import schema as S

INJECTION = "x'; DROP TABLE tbl; --"


def code(r: httpx.Response) -> str:
    return r.json()["error"]["code"]


def write_requests(api: Api, route: str, ts: str) -> list[tuple[str, str, object]]:
    table = {"name": "t9", "location": "/data/t9", "table_type": "COPY_ON_WRITE"}
    transition = {"action": "commit", "from_state": "requested", "to_state": "inflight"}
    return [
        ("POST", "/v1/databases", {"name": "db9"}),
        ("DELETE", "/v1/databases/db1", None),
        ("POST", "/v1/databases/db1/tables", table),
        ("DELETE", route, None),
        ("POST", f"{route}/instant-times", {}),
        ("POST", f"{route}/instants", {"requested_time": "20990101000000000", "action": "commit"}),
        ("POST", f"{route}/instants/{ts}/transition", transition),
        ("POST", f"{route}/instants/{ts}/heartbeat", None),
        ("DELETE", f"{route}/instants/{ts}", None),
        ("DELETE", f"{route}/partitions/city=sf", None),
    ]


def test_writes_need_a_valid_token(api: Api) -> None:
    route = api.table()
    ts = api.instant_time(route)
    api.ok(api.post(f"{route}/instants", {"requested_time": ts, "action": "commit"}), 201)
    before = api.ok(api.get(f"{route}/instants"))
    bad_headers: list[dict[str, str]] = [
        {},
        {"Authorization": "Bearer"},
        {"Authorization": "Bearer nonsense"},
        {"Authorization": f"Basic {api.token}"},
        {"Authorization": "Bearer hmd_0000000000000000_" + "A" * 43},
        {"Authorization": f"Bearer {api.token[:-1]}{'B' if api.token[-1] != 'B' else 'C'}"},
        {"Authorization": f"Bearer {api.token}' OR '1'='1"},
    ]
    for method, path, body in write_requests(api, route, ts):
        for headers in bad_headers:
            r = api.client.request(method, path, json=body, headers=headers)
            assert r.status_code == 401, (method, path, headers, r.text)
            assert code(r) == "unauthorized" and r.headers["www-authenticate"] == "Bearer"
    assert api.ok(api.get(f"{route}/instants")) == before  # nothing changed
    assert api.ok(api.get("/v1/databases"))[0]["name"] == "db1"
    # a revoked token is refused too
    with api.engine.begin() as conn:
        conn.execute(S.api_token.update().values(revoked=True))
    r = api.post("/v1/databases", {"name": "db9"})
    assert r.status_code == 401 and code(r) == "unauthorized"


def test_tokens_are_stored_hashed(api: Api) -> None:
    secret = api.token.split("_", 2)[2]
    with api.engine.connect() as conn:
        rows = conn.execute(sa.select(S.api_token)).all()
    assert len(rows) == 1
    stored = " ".join(str(v) for v in rows[0])
    assert secret not in stored and api.token not in stored
    assert len(rows[0].salt) == 32 and len(rows[0].hash) == 64


def test_reads_are_open_by_default(api: Api) -> None:
    route = api.table()
    for path in (
        "/v1/databases",
        "/v1/databases/db1",
        f"{route}",
        f"{route}/instants",
        f"{route}/snapshot/status",
    ):
        assert api.get(path).status_code == 200, path
    assert api.client.post(f"{route}/partitions/query", json={}).status_code == 200
    assert api.client.post(f"{route}/snapshot/slices", json={}).status_code == 200


@pytest.fixture
def closed_api(db_url: str) -> Iterator[Api]:
    yield from make_api(db_url, read_token_required=True)


def test_reads_need_a_token_when_required(closed_api: Api) -> None:
    api = closed_api
    route = api.table()
    reads = [
        ("GET", "/v1/databases", None),
        ("GET", f"{route}/instants", None),
        ("GET", "/v1/tables?location=/data/t1", None),
        ("POST", f"{route}/partitions/query", {}),
        ("POST", f"{route}/snapshot/slices", {}),
        ("GET", f"{route}/snapshot/all-files", None),
    ]
    for method, path, body in reads:
        r = api.client.request(method, path, json=body)
        assert r.status_code == 401 and code(r) == "unauthorized", path
        assert api.client.request(method, path, json=body, headers=api.auth).status_code == 200, path


def test_names_follow_the_pattern(api: Api) -> None:
    route = api.table()
    for name in (INJECTION, "a b", "x" * 129, "", "db;", "é"):
        r = api.post("/v1/databases", {"name": name})
        assert r.status_code == 422 and code(r) == "invalid", name
        r = api.post(
            "/v1/databases/db1/tables", {"name": name, "location": "/data/x", "table_type": "COPY_ON_WRITE"}
        )
        assert r.status_code == 422 and code(r) == "invalid", name
    for path in ("/v1/databases/db1'--", "/v1/databases/db1%27%20OR%201=1/tables", f"{route}x;/instants"):
        r = api.get(path)
        assert r.status_code in (404, 422) and code(r) in ("invalid", "not_found"), path
    with api.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(S.tbl)).scalar_one() == 1


def test_values_are_stored_and_matched_literally(api: Api) -> None:
    """Injection strings where free text goes: database descriptions, params, partition values
    (a commit writes them), filter values."""
    api.ok(
        api.post(
            "/v1/databases", {"name": "dbx", "description": INJECTION, "params": {INJECTION: INJECTION}}
        ),
        201,
    )
    assert api.ok(api.get("/v1/databases/dbx"))["params"] == {INJECTION: INJECTION}
    route = api.table(
        "dbx",
        "t",
        "/data/t",
        params={"k": INJECTION, "hoodie.datasource.write.hive_style_partitioning": "true"},
    )
    assert api.ok(api.get(route))["params"]["k"] == INJECTION
    ts = api.instant_time(route)
    hostile = [INJECTION, "' OR '1'='1", "%' --", "a\\'b"]
    api.ok(
        api.commit(route, ts, commit_meta(ts, {f"city={v}": [(f"f{i}", 1)] for i, v in enumerate(hostile)}))
    )
    for v in hostile:
        got = api.ok(
            api.post(f"{route}/partitions/query", {"filter": {"op": "eq", "column": "city", "value": v}})
        )
        assert [p["values"]["city"] for p in got] == [v]
    assert (
        api.ok(
            api.post(f"{route}/partitions/query", {"filter": {"op": "eq", "column": "city", "value": "%"}})
        )
        == []
    )
    assert len(api.ok(api.post(f"{route}/partitions/query", {}))) == len(hostile)
    with api.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(S.tbl)).scalar_one() == 1


@pytest.mark.parametrize(
    "location",
    [
        "/data/../etc/t",
        "/data/t/..",
        "s3://bucket/a/../b",
        "s3://bucket/a/%2e%2e/b",
        "s3://bucket/a/%2E%2E/b",
        "file:///data/../../etc",
        "http://example.com/t",
        "ftp://host/t",
        "javascript:alert(1)",
        "data/t",
        "./t",
        "file://otherhost/data/t",
        "s3:///no-bucket",
        "s3://bucket/t?x=1",
        "s3://bucket/t#frag",
        "/data/t\x00",
        "/data/t\nx",
        "",
    ],
)
def test_bad_locations_are_refused(api: Api, location: str) -> None:
    api.ok(api.post("/v1/databases", {"name": "db1"}), 201)
    r = api.post(
        "/v1/databases/db1/tables", {"name": "t", "location": location, "table_type": "COPY_ON_WRITE"}
    )
    assert r.status_code in (400, 422) and code(r) == "invalid", (location, r.text)
    r = api.get("/v1/tables", params={"location": location})
    assert r.status_code in (400, 422) and code(r) == "invalid", (location, r.text)


@pytest.mark.parametrize(
    "location",
    [
        "/data/t",
        "file:///data/t",
        "s3://b/t",
        "s3a://b/t",
        "gs://b/t",
        "abfss://c@acct.host/t",
        "hdfs://nn:8020/t",
    ],
)
def test_good_locations_are_accepted(api: Api, location: str) -> None:
    api.ok(api.post("/v1/databases", {"name": "db1"}), 201)
    api.ok(
        api.post(
            "/v1/databases/db1/tables", {"name": "t", "location": location, "table_type": "COPY_ON_WRITE"}
        ),
        201,
    )


def test_allowed_schemes_are_configurable(db_url: str) -> None:
    for api in make_api(db_url, allowed_schemes=("s3",)):
        api.ok(api.post("/v1/databases", {"name": "db1"}), 201)
        r = api.post(
            "/v1/databases/db1/tables", {"name": "t", "location": "/data/t", "table_type": "COPY_ON_WRITE"}
        )
        assert r.status_code == 400 and "not allowed" in r.json()["error"]["message"]
        api.ok(
            api.post(
                "/v1/databases/db1/tables",
                {"name": "t", "location": "s3://b/t", "table_type": "COPY_ON_WRITE"},
            ),
            201,
        )


def test_oversized_bodies_are_refused(db_url: str) -> None:
    for api in make_api(db_url, max_body_bytes=4096):
        route = api.table()
        big = {"name": "db2", "description": "x" * 5000}
        r = api.post("/v1/databases", big)
        assert r.status_code == 413 and code(r) == "too_large"

        def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
            yield b'{"name": "db3", "description": "'
            for _ in range(10):
                yield b"y" * 1000
            yield b'"}'

        r = api.client.post(
            "/v1/databases", content=chunks(), headers={**api.auth, "content-type": "application/json"}
        )
        assert r.status_code == 413 and code(r) == "too_large"
        assert [d["name"] for d in api.ok(api.get("/v1/databases"))] == ["db1"]
        assert api.post(f"{route}/instant-times", {}).status_code == 200  # small bodies still pass
        body = json.dumps({"name": "db4", "description": "z" * 3000})
        headers = {**api.auth, "content-type": "application/json"}
        assert api.client.post("/v1/databases", content=body, headers=headers).status_code == 201


def test_the_cli_server_requires_tokens(db_url: str, tmp_path: Path, servers: list[ServerProcess]) -> None:
    """A real ``hudi-md metastore serve --read-token-required`` with a token from ``hudi-md
    metastore token create``."""
    token = token_for(db_url)
    assert token.startswith("hmd_") and len(token) > 40
    server = ServerProcess(db_url, tmp_path, "--read-token-required")
    servers.append(server)
    server.wait_ready()
    auth = {"Authorization": f"Bearer {token}"}
    r = httpx.get(f"{server.url}/v1/databases")
    assert r.status_code == 401 and code(r) == "unauthorized"
    r = httpx.post(f"{server.url}/v1/databases", json={"name": "db1"})
    assert r.status_code == 401
    assert httpx.post(f"{server.url}/v1/databases", json={"name": "db1"}, headers=auth).status_code == 201
    assert [d["name"] for d in httpx.get(f"{server.url}/v1/databases", headers=auth).json()] == ["db1"]
    assert token not in server.log()
