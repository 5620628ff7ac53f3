"""Planning at scale (issue 17): storage requests, bytes and plan time per query at 1k .. 1M
partitions, hudi-md against Apache Hudi 1.2's own file index, hudi-rs and Spark's listing.

    .venv/bin/python benchmarks/plan_scale_bench.py --partitions 1000 --partitions 10000 \\
        --partitions 100000 [--no-spark] [--spark-listing-max 100000] [--hudi-rs-data-max 100000]

Tables: benchmarks/scale_tables.py (N partitions, one file each, ``v`` clustered; built once and
kept under build/plan-scale/). Queries, the same for every system:

* ``eq``: ``dt = <a partition in the middle>``; ``eq_first``: ``dt = p0000001``, whose key shares
  the files partition's first HFile block with the ``__all_partitions__`` record;
* ``range``: ten adjacent partitions (``dt >= a AND dt <= b``);
* ``none``: no filter (every file);
* ``data_1pct``: ``v >= x`` selecting 1 % of the rows, on a clustered column (1 % of the files).

What is measured:

* ``hudi_md``: hudi-md's planner in this process (``open_table(path).plan(filters)``, what the
  Spark planner process runs): storage requests and bytes counted by hudi-md's storage layer
  (total, MDT, the rest), for a cold plan (a newly opened table: the timeline, the MDT and the
  schema read from storage) and the warm plan (the same plan repeated on that opened table, median
  of ``--repeats``); and ``mdt_read_s``: the time to read again, with plain range reads, exactly the
  MDT bytes the cold plan read (item 3 compares the cold plan with it). With ``--cold-repeats
  N``: the medians of N cold plans (and their CPU time, ``cold_cpu_s``) and of N re-reads.
* ``spark``: one PySpark 3.5 session with Apache Hudi 1.2's Spark bundle and the hudi-md shim. Plan
  time of a system = wall time from ``spark.read...load(path)`` through ``where(...)`` to the
  files its ``FileSourceScanExec`` selects (``selectedPartitions``: the file index's listing with
  the pushed filters), i.e. schema resolution + file index + pruning, no data read. hudi-md twice:
  ``hudi_md`` through the V1 file scan (``spark.hudi_md.read.connector=v1``), ``hudi_md_v2``
  through its DataSource V2 scan (the default; to the ``BatchScanExec``'s input partitions). ``cold``: the
  first plan of the query on the table (hudi-md: a table state not cached by the planner process,
  which is already running; Hudi: a new ``HoodieFileIndex``, as for every DataFrame; Spark: a new
  ``InMemoryFileIndex``), ``warm``: the median of ``--repeats`` more. Hudi reads with
  ``hoodie.metadata.enable=true`` and ``hoodie.enable.data.skipping=true``. The selected file
  names of each system are compared (read from the listing after the timing), and each query is
  counted (``count()``) by hudi-md, Hudi and Spark's listing (the unfiltered one up to
  ``--count-max`` partitions).
* ``hudi_rs``: ``HudiTableBuilder...build()`` + ``get_file_slices(filters)`` (cold) and the call
  repeated on the built table (warm), with ``hoodie.metadata.enable=true``.

* ``hudi_md_s3`` (``--s3``): the same plans against the table's ``.hoodie/`` copied to an S3 API
  server on loopback (moto, one request ~ a few ms), where reading is no longer nearly free:
  item 3 compares the cold plan with re-reading the MDT bytes it read there.

Results: one JSON line per table size in benchmarks/results/plan_scale_bench.jsonl;
benchmarks/plan_scale_report.py draws the plots of benchmarks/REPORT.md from them.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import scale_tables

import hudi_md
from hudi_md.storage.base import Storage

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "plan_scale_bench.jsonl"
MDT = ".hoodie/metadata"


@dataclass(frozen=True)
class Query:
    name: str
    filters: list[tuple[str, str, Any]] | None  # hudi-md (pyarrow style)
    where: str | None  # Spark SQL
    rs_filters: list[tuple[str, str, str]]  # hudi-rs
    expected_rows: int
    expected_files: int


def queries(n: int) -> list[Query]:
    p = scale_tables.partition_name
    rows_per = scale_tables.ROWS_PER_PARTITION
    # the middle, off the partitions the second commit rewrote (multiples of n / 10)
    mid = n // 2 + 1
    threshold = n * rows_per * 99 // 100
    return [
        Query("eq", [("dt", "=", p(mid))], f"dt = '{p(mid)}'", [("dt", "=", p(mid))], rows_per, 1),
        Query("eq_first", [("dt", "=", p(1))], f"dt = '{p(1)}'", [("dt", "=", p(1))], rows_per, 1),
        Query(
            "range",
            [("dt", ">=", p(mid)), ("dt", "<=", p(mid + 9))],
            f"dt >= '{p(mid)}' AND dt <= '{p(mid + 9)}'",
            [("dt", ">=", p(mid)), ("dt", "<=", p(mid + 9))],
            10 * rows_per,
            10,
        ),
        Query("none", None, None, [], n * rows_per, n),
        Query(
            "data_1pct",
            [("v", ">=", threshold)],
            f"v >= {threshold}",
            [("v", ">=", str(threshold))],
            n * rows_per - threshold,
            n // 100,
        ),
    ]


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


# --- hudi-md's planner, in process ------------------------------------------------------------------


class RecordingReads:
    """Records every range read and whole read of a storage (path, offset, length)."""

    def __init__(self) -> None:
        self.reads: list[tuple[str, int, int]] = []
        self._range = Storage.read_range
        self._bytes = Storage.read_bytes

    def __enter__(self) -> RecordingReads:
        rec = self

        def read_range(storage: Storage, path: str, offset: int, length: int) -> bytes:
            rec.reads.append((storage.uri(path), offset, length))
            return rec._range(storage, path, offset, length)

        def read_bytes(storage: Storage, path: str) -> bytes:
            data = rec._bytes(storage, path)
            rec.reads.append((storage.uri(path), 0, len(data)))
            return data

        Storage.read_range = read_range  # type: ignore[method-assign]
        Storage.read_bytes = read_bytes  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        Storage.read_range = self._range  # type: ignore[method-assign]
        Storage.read_bytes = self._bytes  # type: ignore[method-assign]


# Emulated round-trip latency of a request (--request-latency-ms): moto on loopback answers in a
# few ms of CPU, a cloud object store in tens of ms of waiting (first byte), which requests
# in flight together wait out together.
REQUEST_LATENCY_S = 0.0


def replay_seconds(
    reads: list[tuple[str, int, int]], storage_options: dict[str, Any], in_flight: int = 1
) -> float:
    """Time to read the same byte ranges again with fsspec directly: one request each, one at a
    time (``in_flight`` 1) or that many at once."""
    from concurrent.futures import ThreadPoolExecutor

    from fsspec.core import url_to_fs

    if not reads:
        return 0.0
    fs, _ = url_to_fs(reads[0][0], **storage_options)

    def read(r: tuple[str, int, int]) -> bytes:
        if REQUEST_LATENCY_S:
            time.sleep(REQUEST_LATENCY_S)
        uri, offset, length = r
        return fs.cat_file(uri, start=offset, end=offset + length)

    start = time.perf_counter()
    if in_flight == 1:
        for r in reads:
            read(r)
    else:
        with ThreadPoolExecutor(max_workers=in_flight) as pool:
            list(pool.map(read, reads))
    return time.perf_counter() - start


class RequestLatency:
    """Every storage request of hudi-md waits :data:`REQUEST_LATENCY_S` first (threads in flight
    wait together, as on a network)."""

    def __enter__(self) -> RequestLatency:
        self._call = Storage._call
        real = self._call

        def call(storage: Storage, op: str, path: str, fn: Callable[[], Any], **kw: Any) -> Any:
            if REQUEST_LATENCY_S:
                time.sleep(REQUEST_LATENCY_S)
            return real(storage, op, path, fn, **kw)

        Storage._call = call  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        Storage._call = self._call  # type: ignore[method-assign]


def hudi_md_plans(
    uri: str,
    qs: list[Query],
    repeats: int,
    storage_options: dict[str, Any] | None = None,
    cold_repeats: int = 1,
) -> dict[str, Any]:
    from hudi_md.table.state import SnapshotCache

    options = storage_options or {}
    out: dict[str, Any] = {}
    for q in qs:
        colds, cold_cpus = [], []
        for _ in range(cold_repeats):
            cpu = time.process_time()
            with RecordingReads() as rec:
                cold_s, (table, plan) = timed(lambda q=q: _open_and_plan(uri, q, options))
            colds.append(cold_s)
            cold_cpus.append(time.process_time() - cpu)
        cold_s = statistics.median(colds)
        stats = table.state.storage.stats
        files = sorted(_slice_files(plan.slices))
        mdt_reads = [r for r in rec.reads if f"/{MDT}/" in r[0]]
        warm, repeat = [], []
        before = stats.snapshot()
        for _ in range(repeats):
            # the plan computed again, from the MDT records and file groups the state holds
            table.state.plan_results = SnapshotCache()
            s, again = timed(lambda q=q, table=table: table.plan(q.filters))
            warm.append(s)
            assert sorted(_slice_files(again.slices)) == files
            # and the same plan asked again: answered from the state's plan results
            repeat.append(timed(lambda q=q, table=table: table.plan(q.filters))[0])
        out[q.name] = {
            "cold_s": round(cold_s, 4),
            "warm_s": round(statistics.median(warm), 4),
            "repeat_s": round(statistics.median(repeat), 5),
            "requests": stats.requests,
            "bytes": stats.bytes_read,
            "mdt_requests": stats.requests_under(MDT),
            "mdt_bytes": stats.bytes_read_under(MDT),
            "warm_requests": stats.requests - before["requests"],
            "cold_cpu_s": round(statistics.median(cold_cpus), 4),
            "cold_repeats": cold_repeats,
            "mdt_read_s": round(
                statistics.median(replay_seconds(mdt_reads, options) for _ in range(cold_repeats)), 4
            ),
            "all_reads_s": round(
                statistics.median(replay_seconds(rec.reads, options) for _ in range(cold_repeats)), 4
            ),
            # the same MDT ranges, 8 requests in flight (hudi-md's reader has up to 8)
            "mdt_read_parallel_s": round(
                statistics.median(replay_seconds(mdt_reads, options, 8) for _ in range(cold_repeats)), 4
            ),
            "files": len(files),
            "counters": plan.counters,
            "_file_names": files,
        }
    return out


def planner_warm(uri: str, hadoop_conf: dict[str, str], repeats: int) -> dict[str, Any]:
    """A new DataFrame repeating a query on an unchanged table, as the Spark planner process serves
    it: the shim's schema request, then its plan request naming the answer the shim holds (each
    request checks first that the table did not change). Median seconds and storage requests of
    the pair; Spark's own planning around it is not in it."""
    from hudi_md.spark import protocol as P
    from hudi_md.spark.planner import Planner

    planner = Planner()
    base = {P.PATH: uri, P.OPTIONS: {}, P.HADOOP_CONF: hadoop_conf}
    first, _ = planner.handle({**base, P.OP: P.OP_PLAN})
    calls = [0]
    real = Storage._call

    def counted(storage: Storage, op: str, path: str, fn: Callable[[], Any], **kw: Any) -> Any:
        calls[0] += 1
        return real(storage, op, path, fn, **kw)

    times, requests = [], []
    Storage._call = counted  # type: ignore[method-assign]
    try:
        for _ in range(repeats):
            calls[0] = 0
            start = time.perf_counter()
            planner.handle({**base, P.OP: P.OP_SCHEMA})
            header, _ = planner.handle({**base, P.OP: P.OP_PLAN, P.KNOWN_ANSWER: first[P.ANSWER]})
            times.append(time.perf_counter() - start)
            requests.append(calls[0])
            assert header.get(P.UNCHANGED), header
    finally:
        Storage._call = real  # type: ignore[method-assign]
    return {"warm_shim_s": round(statistics.median(times), 4), "requests": max(requests)}


def s3_copy(server: Any, path: Path, n: int) -> str:
    """The table's ``.hoodie/`` (timeline, MDT: all a plan reads) copied to a bucket of the S3
    server; its URI there."""
    import s3fs

    bucket = f"plan-scale-{n}"
    server.create_bucket(bucket)
    fs = s3fs.S3FileSystem(**server.storage_options())
    fs.put(str(path / ".hoodie"), f"{bucket}/t/.hoodie", recursive=True)
    return f"s3://{bucket}/t"


def _open_and_plan(uri: str, q: Query, options: dict[str, Any]) -> tuple[hudi_md.Table, Any]:
    table = hudi_md.open_table(uri, options)
    return table, table.plan(q.filters)


def _slice_files(slices: Any) -> list[str]:
    return [s.base_file.name for s in slices if s.base_file is not None]


# --- hudi-rs ------------------------------------------------------------------------------------------


def hudi_rs_plans(path: Path, qs: list[Query], repeats: int, data_max: int, n: int) -> dict[str, Any]:
    import hudi

    out: dict[str, Any] = {}
    for q in qs:
        if q.name == "data_1pct" and n > data_max:
            out[q.name] = {
                "skipped": f"hudi-rs reads every file's footer for a data filter; above {data_max}"
            }
            continue
        options = hudi.HudiReadOptions(filters=q.rs_filters) if q.rs_filters else hudi.HudiReadOptions()

        def build() -> Any:
            return (
                hudi.HudiTableBuilder.from_base_uri(str(path))
                .with_option("hoodie.metadata.enable", "true")
                .build()
            )

        cold_s, (table, slices) = timed(lambda options=options: _rs_build_and_plan(build, options))
        warm = [
            timed(lambda table=table, options=options: table.get_file_slices(options))[0]
            for _ in range(repeats)
        ]
        files = sorted(s.base_file_name for s in slices if s.base_file_name)
        out[q.name] = {
            "cold_s": round(cold_s, 4),
            "warm_s": round(statistics.median(warm), 4),
            "files": len(files),
            "_file_names": files,
        }
    return out


def _rs_build_and_plan(build: Callable[[], Any], options: Any) -> tuple[Any, Any]:
    table = build()
    return table, table.get_file_slices(options)


# --- Spark: hudi-md, Apache Hudi 1.2, Spark's listing ------------------------------------------------


def spark_session() -> Any:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    from hudi_md.spark.session import configure

    jars = subprocess.run(
        [str(REPO / "scripts" / "fetch-hudi-bundle")], check=True, capture_output=True, text=True
    ).stdout.split()
    builder = (
        SparkSession.builder.master("local[2]")
        .config("spark.jars", ",".join(j for j in jars if j.endswith(".jar")))
        .config("spark.serializer", "org.apache.spark.serializer.KryoSerializer")
        .config("spark.sql.extensions", "org.apache.spark.sql.hudi.HoodieSparkSessionExtension")
        .config("spark.kryo.registrator", "org.apache.spark.HoodieSparkKryoRegistrar")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", os.environ.get("BENCH_DRIVER_MEMORY", "6g"))
        .config("spark.sql.session.timeZone", "UTC")
    )
    spark = configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def scan_listing(df: Any) -> Any:
    """The query's scan listing, the planning being timed: a V1 ``FileSourceScanExec``'s
    ``selectedPartitions`` (the file index's listing with the pushed filters), or the V2
    ``BatchScanExec``'s input partitions (hudi-md's scan, whose listing it returns)."""
    found: list[Any] = []

    def walk(node: Any) -> None:
        name = node.getClass().getSimpleName()
        if name == "AdaptiveSparkPlanExec":
            walk(node.executedPlan())
            return
        if name in ("FileSourceScanExec", "BatchScanExec"):
            found.append(node)
        children = node.children()
        for i in range(children.size()):
            walk(children.apply(i))

    walk(df._jdf.queryExecution().executedPlan())
    if len(found) != 1:
        raise AssertionError(f"expected one file scan, found {len(found)}")
    if found[0].getClass().getSimpleName() == "BatchScanExec":
        found[0].inputPartitions()
        return found[0].scan()
    return found[0].selectedPartitions()


_FILE_PATH = re.compile(r"path=([^;]+);")


def file_names(spark: Any, listing: Any) -> list[str]:
    """Names of the files of a ``selectedPartitions`` answer or of hudi-md's V2 scan, in one JVM
    call, outside the time measured."""
    if listing.getClass().getSimpleName() == "HudiMdScan":
        return sorted(p.rsplit("/", 1)[-1] for p in str(listing.plannedFiles()).splitlines() if p)
    # commons-lang's ArrayUtils.toString takes the array as an Object (py4j cannot pass a typed array
    # where Object[] is expected) and prints each PartitionDirectory with its files (Hadoop's
    # FileStatus.toString prints ``path=...;``)
    text = str(spark.sparkContext._jvm.org.apache.commons.lang3.ArrayUtils.toString(listing))
    return sorted(m.rsplit("/", 1)[-1] for m in _FILE_PATH.findall(text))


class SparkPeers:
    def __init__(self, spark: Any) -> None:
        self.spark = spark
        self._nonce = 0

    def reader(self, system: str, path: str, cold: bool) -> Any:
        spark = self.spark
        if system in ("hudi_md", "hudi_md_v2"):
            # the same format, through the V1 file scan or the V2 scan (the session extension's default)
            spark.conf.set("spark.hudi_md.read.connector", "v2" if system == "hudi_md_v2" else "v1")
            r = spark.read.format("hudi-md")
            if cold:  # a table state the planner has not cached (its cache key includes the options)
                self._nonce += 1
                r = r.option("hoodie.bench.cold", str(self._nonce))
            return r.load(path)
        if system == "hudi":
            return (
                spark.read.format("hudi")
                .option("hoodie.metadata.enable", "true")
                .option("hoodie.enable.data.skipping", "true")
                .load(path)
            )
        return spark.read.option("basePath", path).parquet(path)

    def plan(self, system: str, path: str, q: Query, cold: bool) -> tuple[float, list[str]]:
        def run() -> Any:
            df = self.reader(system, path, cold)
            return scan_listing(df.where(q.where) if q.where else df)

        seconds, listing = timed(run)
        return seconds, file_names(self.spark, listing)

    def count(self, system: str, path: str, q: Query) -> int:
        df = self.reader(system, path, cold=False)
        return int((df.where(q.where) if q.where else df).count())

    def warmup(self, path: str) -> None:
        """Loads the JVM's classes, Hudi's and the planner's code on a small separate table."""
        for system in ("hudi_md", "hudi_md_v2", "hudi", "spark"):
            for q in queries(1000)[:1]:
                self.plan(system, path, q, cold=True)


def spark_plans(
    peers: SparkPeers,
    path: Path,
    qs: list[Query],
    repeats: int,
    systems: list[str],
    n: int,
    count_max: int,
    listing_full_max: int,
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for system in systems:
        per: dict[str, Any] = {}
        for q in qs:
            # Spark's InMemoryFileIndex lists every partition directory whatever the filter (10k:
            # ~30 s a plan); above listing_full_max it is timed once, on the `eq` query, uncounted
            once = system == "spark" and n > listing_full_max
            if once and q.name != "eq":
                continue
            cold_s, files = peers.plan(system, str(path), q, cold=True)
            warm = [] if once else [peers.plan(system, str(path), q, cold=False)[0] for _ in range(repeats)]
            entry: dict[str, Any] = {
                "cold_s": round(cold_s, 4),
                "warm_s": round(statistics.median(warm), 4) if warm else None,
                "files": len(files),
                "_file_names": files,
            }
            if system in ("hudi_md", "hudi_md_v2"):
                from hudi_md.spark.session import last_plan

                entry["counters"] = last_plan(peers.spark).get("counters", {})
            if not once and (q.name != "none" or n <= count_max):
                entry["rows"] = peers.count(system, str(path), q)
            per[q.name] = entry
            print(json.dumps({"n": n, "system": system, "query": q.name, **_public(entry)}), flush=True)
        out[system] = per
    return out


def _public(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if not k.startswith("_")}


# --- the run ----------------------------------------------------------------------------------------


def agreement(n: int, qs: list[Query], results: dict[str, Any]) -> dict[str, Any]:
    """Per query: whether each system selected the same files as hudi-md's planner, and the rows."""
    out: dict[str, Any] = {}
    for q in qs:
        ref = results["hudi_md"][q.name]["_file_names"]
        entry: dict[str, Any] = {"expected_files": q.expected_files, "expected_rows": q.expected_rows}
        entry["hudi_md_files"] = len(ref)
        for system, per in [("hudi_rs", results.get("hudi_rs", {})), *results.get("spark", {}).items()]:
            r = per.get(q.name)
            if not r or "skipped" in r:
                continue
            entry[f"{system}_same_files"] = r["_file_names"] == ref
            entry[f"{system}_files"] = len(r["_file_names"])
            if "rows" in r:
                entry[f"{system}_rows"] = r["rows"]
        out[q.name] = entry
    return out


def strip(d: Any) -> Any:
    if isinstance(d, dict):
        return {k: strip(v) for k, v in d.items() if not str(k).startswith("_")}
    return d


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", type=int, action="append", required=True)
    ap.add_argument("--root", type=Path, default=scale_tables.DEFAULT_ROOT)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--cold-repeats",
        type=int,
        default=1,
        help="hudi-md in process and on S3: median of N cold plans (each a new table object) and N re-reads",
    )
    ap.add_argument(
        "--request-latency-ms",
        type=float,
        default=0.0,
        help="with --s3: every request (the plan's and the re-reads') waits this long first",
    )
    ap.add_argument("--no-spark", action="store_true")
    ap.add_argument("--no-hudi-rs", action="store_true")
    ap.add_argument("--spark-listing-max", type=int, default=100_000)
    ap.add_argument(
        "--spark-listing-full-max", type=int, default=10_000, help="above N, Spark's listing only once (eq)"
    )
    ap.add_argument("--hudi-max", type=int, default=10_000_000)
    ap.add_argument("--hudi-rs-data-max", type=int, default=100_000)
    ap.add_argument("--count-max", type=int, default=10_000, help="count the unfiltered query up to N")
    ap.add_argument(
        "--s3", action="store_true", help="also plan against the table's .hoodie/ copied to S3 (moto)"
    )
    ap.add_argument("--results", type=Path, default=RESULTS)
    args = ap.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
    s3 = None
    if args.s3:
        from plan_bench import S3Server

        s3 = S3Server()
    peers = None
    if not args.no_spark:
        peers = SparkPeers(spark_session())
        peers.warmup(str(scale_tables.table_path(args.root, 1000)))
    try:
        for n in args.partitions:
            build = scale_tables.build(args.root, n)
            path = scale_tables.table_path(args.root, n)
            qs = queries(n)
            record: dict[str, Any] = {
                "partitions": n,
                "commit": commit.stdout.strip(),
                "machine": f"{platform.machine()} {os.cpu_count()} cpus, load {os.getloadavg()[0]:.1f}",
                "build": build,
                "repeats": args.repeats,
            }
            results: dict[str, Any] = {
                "hudi_md": hudi_md_plans(str(path), qs, args.repeats, cold_repeats=args.cold_repeats)
            }
            results["planner_warm"] = planner_warm(str(path), {}, max(args.repeats, 5))
            print(json.dumps({"n": n, "hudi_md": strip(results["hudi_md"])}), flush=True)
            print(json.dumps({"n": n, "planner_warm": results["planner_warm"]}), flush=True)
            if s3 is not None:
                uri = s3_copy(s3, path, n)
                global REQUEST_LATENCY_S
                REQUEST_LATENCY_S = args.request_latency_ms / 1000
                with RequestLatency():
                    results["hudi_md_s3"] = hudi_md_plans(
                        uri, qs, args.repeats, s3.storage_options(), args.cold_repeats
                    )
                    results["planner_warm_s3"] = planner_warm(uri, s3.s3a_options(), max(args.repeats, 5))
                results["s3_request_latency_ms"] = args.request_latency_ms
                REQUEST_LATENCY_S = 0.0
                print(json.dumps({"n": n, "hudi_md_s3": strip(results["hudi_md_s3"])}), flush=True)
                print(json.dumps({"n": n, "planner_warm_s3": results["planner_warm_s3"]}), flush=True)
            if not args.no_hudi_rs:
                results["hudi_rs"] = hudi_rs_plans(path, qs, args.repeats, args.hudi_rs_data_max, n)
                print(json.dumps({"n": n, "hudi_rs": strip(results["hudi_rs"])}), flush=True)
            if peers is not None:
                systems = ["hudi_md", "hudi_md_v2"]
                if n <= args.hudi_max:
                    systems.append("hudi")
                if n <= args.spark_listing_max:
                    systems.append("spark")
                results["spark"] = spark_plans(
                    peers, path, qs, args.repeats, systems, n, args.count_max, args.spark_listing_full_max
                )
            record["agreement"] = agreement(n, qs, results)
            record.update(strip(results))
            record["load_after"] = round(os.getloadavg()[0], 1)
            args.results.parent.mkdir(parents=True, exist_ok=True)
            with open(args.results, "a") as f:
                f.write(json.dumps(record) + "\n")
            print(json.dumps({"n": n, "agreement": record["agreement"]}, indent=1), flush=True)

    finally:
        if s3 is not None:
            s3.stop()


if __name__ == "__main__":
    main()
