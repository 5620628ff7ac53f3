"""Metastore benchmark (issue 15): planning through the metastore server against planning through the
table's own MDT, and a load test of the server.

    .venv/bin/python benchmarks/metastore_bench.py --partitions 1000 --partitions 10000 [--db URL]
        [--clients 4 --clients 16] [--load-seconds 20]
    .venv/bin/python benchmarks/metastore_bench.py --table PATH [--db URL] ...

For each size a table of N partitions (``dt=p00000`` ..., five rows each, one file per partition)
is written with ``hudi_md.write`` while a ``hudi-md metastore serve`` process (SQLite by default,
or ``--db postgresql+psycopg://...``) records it. Then the query ``dt = 'p00042'`` is planned (the
file slices and counters only: the reading is the same for both) through the server and through
the MDT (median of ``--repeats``): "cold" in a new process each time (``open_table`` + ``plan``
after ``import hudi_md``), "reopened" on a newly opened table in a process that planned before,
"warm" repeated on one opened table; with the requests each made (HTTP requests to the server;
storage requests). The load tests run each ``--clients`` count of processes planning random
one-partition queries (a newly opened table each) for ``--load-seconds``, through the server and
through the MDT, and report throughput, p50/p99 latency and errors. Figures are
ratios between the two planners in the same run. ``--table PATH`` takes an existing table of one
``dt`` partition per file instead (e.g. plan_scale_bench's 100k-partition table, whose writing
takes ~1 h): a copy of it is registered with ``hudi-md metastore register`` and snapshot-synced,
the rest is the same. Results are appended to
benchmarks/results/metastore_bench.jsonl.
"""

from __future__ import annotations

import argparse
import compileall
import json
import multiprocessing
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa

import hudi_md
from hudi_md.metastore.client import MetastoreClient

REPO = Path(__file__).resolve().parents[1]
HUDI_MD = Path(sys.executable).with_name("hudi-md")
TIMEOUT = "hoodie.metaserver.request.timeout.seconds"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(
    db: str, log: Path, max_body_mb: float = 16.0
) -> tuple[subprocess.Popen[bytes], dict[str, str]]:
    import httpx

    token = subprocess.run(
        [str(HUDI_MD), "metastore", "token", "create", "--db", db], capture_output=True, text=True, check=True
    ).stdout.strip()
    port = _free_port()
    out = open(log, "wb")  # noqa: SIM115 - the server's log, for as long as it runs
    proc = subprocess.Popen(
        [
            str(HUDI_MD),
            "metastore",
            "serve",
            "--db",
            db,
            "--port",
            str(port),
            "--log-level",
            "warning",
            "--max-body-mb",
            str(max_body_mb),
        ],
        stdout=out,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            if httpx.get(f"{url}/openapi.json", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.1)
    ms = {
        "hoodie.metaserver.enabled": "true",
        "hoodie.metaserver.uris": url,
        "hoodie.metaserver.token": token,
        # a 100k-file commit waits for the snapshot sync of the one before it
        TIMEOUT: "3600",
    }
    return proc, ms


def build_table(path: str, partitions: int, ms: dict[str, str]) -> float:
    rows_per = 5
    n = partitions * rows_per
    data = pa.table(
        {
            "id": [f"k{i:08d}" for i in range(n)],
            "dt": [f"p{i // rows_per:05d}" for i in range(n)],
            "v": list(range(n)),
        }
    )
    start = time.perf_counter()
    hudi_md.write(
        data,
        path,
        operation="bulk_insert",
        options={
            "hoodie.table.name": "bench",
            "hoodie.database.name": "bench",
            "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "dt",
            "hoodie.datasource.write.hive_style_partitioning": "true",
            "hoodie.datasource.write.precombine.field": "v",
            **ms,
        },
    )
    return time.perf_counter() - start


def wait_synced(ms: dict[str, str], timeout_s: float = 3600) -> float:
    client = MetastoreClient.from_options(ms)
    assert client is not None
    start = time.perf_counter()
    while True:
        status = client.snapshot_status("bench", "bench")
        if status.status == "synced" and not status.pending and status.synced_instant:
            return time.perf_counter() - start
        if time.perf_counter() - start > timeout_s:
            raise TimeoutError(status)
        time.sleep(0.2)


_COLD = """
import json, sys, time
import hudi_md
from hudi_md.metastore.plan_client import PlanClient
path, options, where = json.loads(sys.argv[1])
start = time.perf_counter()
table = hudi_md.open_table(path, options)
plan = table.plan([tuple(w) for w in where])
elapsed = time.perf_counter() - start
client = PlanClient.from_options(options) if options else None
print(json.dumps({
    "s": elapsed,
    "slices": len(plan.slices),
    "http_requests": client.requests if client is not None else 0,
    "storage_requests": table.storage_stats()["requests"],
    "counters": plan.counters,
}))
"""


def plan_cold(path: str, options: dict[str, str], where: list[tuple[str, str, Any]]) -> dict[str, Any]:
    """One plan in a new process (``import hudi_md`` first, untimed: both paths pay it): the time
    of ``open_table`` + ``plan``, with every import and connection they make."""
    done = subprocess.run(
        [sys.executable, "-c", _COLD, json.dumps([path, options, where])],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def plan_reopened(
    path: str, options: dict[str, str], where: list[tuple[str, str, Any]], repeats: int
) -> float:
    """The median plan on a newly opened table in a process that planned before (imports and
    connections warm, nothing of the table kept)."""
    hudi_md.open_table(path, options).plan(where)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        hudi_md.open_table(path, options).plan(where)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def warm(path: str, options: dict[str, str], where: list[tuple[str, str, Any]], repeats: int) -> float:
    table = hudi_md.open_table(path, options)
    table.plan(where)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        table.plan(where)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def register_table(path: str, ms: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        [
            *(str(HUDI_MD), "metastore", "register", path, "--no-progress"),
            *("--db", "bench", "--table", "bench"),
            *(
                "-o",
                f"hoodie.metaserver.request.timeout.seconds={ms['hoodie.metaserver.request.timeout.seconds']}",
            ),
            *(f"--uri={ms['hoodie.metaserver.uris']}", f"--token={ms['hoodie.metaserver.token']}"),
        ],
        capture_output=True,
        text=True,
    )
    if done.returncode:
        raise RuntimeError(f"hudi-md metastore register failed: {done.stderr.strip()}")
    return time.perf_counter() - start


def _load_worker(args: tuple[str, dict[str, str], list[str], float, int]) -> dict[str, Any]:
    name, options, values, seconds, seed = args
    rng = random.Random(seed)
    latencies, errors = [], 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        where = [("dt", "=", rng.choice(values))]
        start = time.perf_counter()
        try:
            plan = hudi_md.open_table(name, options).plan(where)
            assert len(plan.slices) == 1
        except Exception:  # counted, the load test reports them
            errors += 1
            continue
        latencies.append(time.perf_counter() - start)
    return {"latencies": latencies, "errors": errors}


def load_test(
    name: str, options: dict[str, str], values: list[str], clients: int, seconds: float
) -> dict[str, Any]:
    """``clients`` processes planning random one-partition queries of ``name`` (each on a newly
    opened table) for ``seconds``."""
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(clients) as pool:
        results = pool.map(_load_worker, [(name, options, values, seconds, i) for i in range(clients)])
    lat = sorted(x for r in results for x in r["latencies"])
    q = statistics.quantiles(lat, n=100) if len(lat) >= 2 else [float("nan")] * 99
    return {
        "clients": clients,
        "seconds": seconds,
        "plans": len(lat),
        "plans_per_s": round(len(lat) / seconds, 1),
        "p50_ms": round(q[49] * 1000, 1),
        "p99_ms": round(q[98] * 1000, 1),
        "errors": sum(r["errors"] for r in results),
    }


def run(
    partitions: int,
    db: str | None,
    clients: list[int],
    load_seconds: float,
    repeats: int,
    existing: str | None = None,
    max_body_mb: float = 16.0,
) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="hudi-md-ms-bench-"))
    try:
        db_url = db or f"sqlite:///{root / 'metastore.db'}"
        proc, ms = start_server(db_url, root / "server.log", max_body_mb)
        try:
            path = str(root / "t")
            if existing:
                shutil.copytree(existing, path)
                values = sorted(d.split("=", 1)[1] for d in os.listdir(path) if d.startswith("dt="))
                partitions = len(values)
                build_s = register_table(path, ms)
            else:
                values = [f"p{i:05d}" for i in range(partitions)]
                build_s = build_table(path, partitions, ms)
            sync_s = wait_synced(ms)
            where = [("dt", "=", values[42])]
            # as installed: pip compiles every module, so a new process imports bytecode (with
            # PYTHONDONTWRITEBYTECODE set, a module never imported before is compiled at each import)
            compileall.compile_dir(Path(hudi_md.__file__).parent, quiet=1)
            via_server, via_mdt = [], []
            for _ in range(repeats):  # alternated: a drift in the machine's load hits both
                via_server.append(plan_cold(path, ms, where))
                via_mdt.append(plan_cold(path, {}, where))
            assert via_server[0]["slices"] == via_mdt[0]["slices"] == 1
            result = {
                "partitions": partitions,
                "db": db_url.split(":", 1)[0],
                "max_body_mb": max_body_mb,
                "table": "registered copy of " + existing if existing else "written with the server on",
                "build_s" if not existing else "register_s": round(build_s, 1),
                "snapshot_sync_s": round(sync_s, 1),
                # a new process per plan (median of --repeats)
                "server_cold_s": round(statistics.median(r["s"] for r in via_server), 4),
                "mdt_cold_s": round(statistics.median(r["s"] for r in via_mdt), 4),
                # a newly opened table in a process that planned before
                "server_reopened_s": round(plan_reopened(path, ms, where, repeats), 4),
                "mdt_reopened_s": round(plan_reopened(path, {}, where, repeats), 4),
                # a warm plan of an unchanged table may be a cached answer: microseconds
                "server_warm_s": round(warm(path, ms, where, repeats), 7),
                "mdt_warm_s": round(warm(path, {}, where, repeats), 7),
                "server_http_requests": via_server[0]["http_requests"],
                "server_storage_requests": via_server[0]["storage_requests"],
                "mdt_storage_requests": via_mdt[0]["storage_requests"],
                "server_counters": via_server[0]["counters"],
            }
            result["cold_ratio_server_over_mdt"] = round(result["server_cold_s"] / result["mdt_cold_s"], 3)
            result["reopened_ratio_server_over_mdt"] = round(
                result["server_reopened_s"] / result["mdt_reopened_s"], 3
            )
            warm_mdt = max(result["mdt_warm_s"], 1e-7)
            result["warm_ratio_server_over_mdt"] = round(result["server_warm_s"] / warm_mdt, 3)
            for n in clients:
                result[f"load_{n}_server"] = load_test("bench.bench", ms, values, n, load_seconds)
                result[f"load_{n}_mdt"] = load_test(path, {}, values, n, load_seconds)
            return result
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", type=int, action="append", default=None)
    ap.add_argument("--db", default=None, help="the metastore's database URL (default: a SQLite file)")
    ap.add_argument("--clients", type=int, action="append", default=None, help="readers (default: 4 and 16)")
    ap.add_argument("--load-seconds", type=float, default=20.0)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--max-body-mb", type=float, default=16.0, help="the server's request body limit")
    ap.add_argument("--table", default=None, help="an existing table of dt partitions to register instead")
    args = ap.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO)
    out = REPO / "benchmarks" / "results"
    out.mkdir(exist_ok=True)
    for n in args.partitions or ([0] if args.table else [1000, 10000]):
        result = {
            "commit": commit.stdout.strip(),
            "cores": os.cpu_count(),
            "load_before": os.getloadavg(),
            **run(
                n,
                args.db,
                args.clients or [4, 16],
                args.load_seconds,
                args.repeats,
                args.table,
                args.max_body_mb,
            ),
        }
        print(json.dumps(result, indent=2), flush=True)
        with open(out / "metastore_bench.jsonl", "a") as f:
            f.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
