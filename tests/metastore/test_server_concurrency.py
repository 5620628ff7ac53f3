"""Two ``hudi-md metastore serve`` processes on one database (SQLite file, PostgreSQL): instant
times stay unique and strictly increasing under concurrent requests to both, and two writers
completing overlapping file groups at once get one success and one 409 ``conflict``
(Hudi's SimpleConcurrentFileWritesConflictResolutionStrategy, as hudi-md's write/conflicts.py)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import sqlalchemy as sa
from server_helpers import Api, ServerProcess, b64, commit_meta, engine_of, token_for

from hudi_md.metastore_server import schema as S

ROUTE = "/v1/databases/db1/tables/t1"


def two_servers(
    db_url: str, tmp_path: Path, servers: list[ServerProcess]
) -> tuple[list[str], dict[str, str]]:
    token = token_for(db_url)
    for _ in range(2):
        servers.append(ServerProcess(db_url, tmp_path))
    for s in servers:
        s.wait_ready()
    auth = {"Authorization": f"Bearer {token}"}
    urls = [s.url for s in servers]
    assert httpx.post(f"{urls[0]}/v1/databases", json={"name": "db1"}, headers=auth).status_code == 201
    table = {
        "name": "t1",
        "location": str(tmp_path / "t1"),
        "table_type": "COPY_ON_WRITE",
        "partition_fields": [{"name": "city", "type": "string"}],
        "params": {"hoodie.datasource.write.hive_style_partitioning": "true"},
    }
    assert httpx.post(f"{urls[1]}/v1/databases/db1/tables", json=table, headers=auth).status_code == 201
    return urls, auth


def test_instant_times_from_two_processes(db_url: str, tmp_path: Path, servers: list[ServerProcess]) -> None:
    urls, auth = two_servers(db_url, tmp_path, servers)
    calls: list[tuple[float, float, str]] = []  # (sent, answered, instant time)
    lock = threading.Lock()

    def client(url: str) -> None:
        with httpx.Client(base_url=url, headers=auth, timeout=60) as http:
            mine = []
            for _ in range(30):
                sent = time.monotonic()
                r = http.post(f"{ROUTE}/instant-times", json={})
                answered = time.monotonic()
                assert r.status_code == 200, r.text
                mine.append((sent, answered, r.json()["instant_time"]))
            times = [t for _, _, t in mine]
            assert times == sorted(times) and len(set(times)) == len(times)
            with lock:
                calls.extend(mine)

    threads = [threading.Thread(target=client, args=(urls[i % 2],)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    values = [v for _, _, v in calls]
    assert len(calls) == 180 and len(set(values)) == 180
    assert all(len(v) == 17 and v.isdigit() for v in values)
    # linearizable: a time handed out before another request was sent is smaller than its time
    ordered = sorted(calls)
    for _, answered_a, a in ordered:
        for sent_b, _, b in ordered:
            if answered_a < sent_b:
                assert a < b, (a, b)
    engine = engine_of(db_url)
    with engine.connect() as conn:
        assert conn.execute(sa.select(S.tbl_timestamp.c.ts)).scalar_one() == max(values)
    engine.dispose()


def _complete(
    url: str, auth: dict[str, str], ts: str, meta: dict[str, Any], barrier: threading.Barrier
) -> httpx.Response:
    body = {
        "action": "commit",
        "from_state": "inflight",
        "to_state": "completed",
        "metadata_b64": b64(json.dumps(meta).encode()),
    }
    barrier.wait()
    return httpx.post(f"{url}{ROUTE}/instants/{ts}/transition", json=body, headers=auth, timeout=60)


def _start(url: str, auth: dict[str, str]) -> str:
    ts = httpx.post(f"{url}{ROUTE}/instant-times", json={}, headers=auth).json()["instant_time"]
    assert (
        httpx.post(
            f"{url}{ROUTE}/instants", json={"requested_time": ts, "action": "commit"}, headers=auth
        ).status_code
        == 201
    )
    body = {"action": "commit", "from_state": "requested", "to_state": "inflight"}
    assert httpx.post(f"{url}{ROUTE}/instants/{ts}/transition", json=body, headers=auth).status_code == 200
    return ts


def test_racing_writers_one_wins(db_url: str, tmp_path: Path, servers: list[ServerProcess]) -> None:
    urls, auth = two_servers(db_url, tmp_path, servers)
    for round_ in range(6):
        a, b = _start(urls[0], auth), _start(urls[1], auth)
        shared = f"g{round_}"
        metas = [
            commit_meta(a, {"city=sf": [(shared, 10), (f"a{round_}", 1)]}),
            commit_meta(b, {"city=sf": [(shared, 20)], "city=nyc": [(f"b{round_}", 1)]}),
        ]
        barrier = threading.Barrier(2)
        results: dict[str, httpx.Response] = {}

        def run(i: int, ts: str) -> None:
            results[ts] = _complete(urls[i], auth, ts, metas[i], barrier)  # noqa: B023 - joined below

        threads = [threading.Thread(target=run, args=(i, ts)) for i, ts in enumerate((a, b))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        statuses = sorted(r.status_code for r in results.values())
        assert statuses == [200, 409], {k: v.text for k, v in results.items()}
        loser = next(ts for ts, r in results.items() if r.status_code == 409)
        body = results[loser].json()
        assert body["error"]["code"] == "conflict" and f"city=sf/{shared}" in body["error"]["message"]
        # the loser stays inflight until its writer rolls it back
        states = {i["requested_time"]: i["state"] for i in httpx.get(f"{urls[0]}{ROUTE}/instants").json()}
        assert states[loser] == "inflight"
        assert httpx.delete(f"{urls[1]}{ROUTE}/instants/{loser}", headers=auth).status_code == 204
    # writers on other file groups never conflict, concurrent or not
    a, b = _start(urls[0], auth), _start(urls[1], auth)
    barrier = threading.Barrier(2)
    out: list[httpx.Response] = []
    threads = [
        threading.Thread(
            target=lambda: out.append(
                _complete(urls[0], auth, a, commit_meta(a, {"city=sf": [("x", 1)]}), barrier)
            )
        ),
        threading.Thread(
            target=lambda: out.append(
                _complete(urls[1], auth, b, commit_meta(b, {"city=sf": [("y", 1)]}), barrier)
            )
        ),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [r.status_code for r in out] == [200, 200]
    # a write that starts after the other completed does not conflict with it
    c = _start(urls[0], auth)
    assert (
        _complete(urls[0], auth, c, commit_meta(c, {"city=sf": [("x", 2)]}), threading.Barrier(1)).status_code
        == 200
    )


def test_conflict_by_server_order_despite_client_clocks(api: Api) -> None:
    """A writer whose clock runs ahead requests B after A started; A completes with an early
    completion time of its own. A still completed after B was created on the server: B's overlapping
    completion is refused."""
    route = api.table()
    a = api.instant_time(route)
    api.ok(api.post(f"{route}/instants", {"requested_time": a, "action": "commit"}), 201)
    b = str(int(a) + 60_000)  # a minute ahead
    api.ok(api.post(f"{route}/instants", {"requested_time": b, "action": "commit"}), 201)
    for ts in (a, b):
        api.ok(
            api.post(
                f"{route}/instants/{ts}/transition",
                {"action": "commit", "from_state": "requested", "to_state": "inflight"},
            )
        )
    done = {
        "action": "commit",
        "from_state": "inflight",
        "to_state": "completed",
        "metadata_b64": b64(json.dumps(commit_meta(a, {"city=sf": [("f1", 1)]})).encode()),
        "completion_time": str(int(a) + 1),
    }
    api.ok(api.post(f"{route}/instants/{a}/transition", done))
    r = api.post(
        f"{route}/instants/{b}/transition",
        {
            **done,
            "metadata_b64": b64(json.dumps(commit_meta(b, {"city=sf": [("f1", 2)]})).encode()),
            "completion_time": None,
        },
    )
    assert r.status_code == 409 and r.json()["error"]["code"] == "conflict"


def test_pending_compaction_plan_conflicts(api: Api) -> None:
    route = api.table(table_type="MERGE_ON_READ")
    t1 = api.instant_time(route)
    api.ok(api.commit(route, t1, commit_meta(t1, {"city=sf": [("f1", 1), ("f2", 1)]}), "deltacommit"))
    c = api.instant_time(route)
    plan = {"operations": [{"partitionPath": "city=sf", "fileId": "f1", "baseInstantTime": t1}]}
    api.ok(
        api.post(
            f"{route}/instants",
            {"requested_time": c, "action": "compaction", "metadata_b64": b64(json.dumps(plan).encode())},
        ),
        201,
    )
    t2 = api.instant_time(route)
    r = api.commit(route, t2, commit_meta(t2, {"city=sf": [("f1", 2)]}), "deltacommit")
    assert r.status_code == 409 and "compaction" in r.json()["error"]["message"]
    t3 = api.instant_time(route)
    assert api.commit(route, t3, commit_meta(t3, {"city=sf": [("f2", 2)]}), "deltacommit").status_code == 200
