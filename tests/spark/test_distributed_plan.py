"""Distributed planning (``hudi_md.spark.plan``): column_stats pruning as a Spark job.

A table written by hudi-md with 2,000 files (one per partition, partition stats off so that
column_stats does the pruning), whose column_stats MDT partition has four file groups, each a base
HFile (the MDT was compacted) and log blocks of a later upsert. Hudi's in-memory threshold
(``hoodie.metadata.index.column.stats.inMemory.projection.threshold``) is set below the plan's
projection (file slices x filtered columns), so the plan runs on Spark; it must keep exactly the
slices of the in-process plan, and the files Spark's own Parquet reader finds matching rows in
must all be kept (and counting rows through the plan gives Spark's count). The planner process's
Python memory for the step is measured with tracemalloc against the in-process step's. An MDT
deltacommit of a data instant still inflight is ignored on the executors as in process.

The same through ``spark.read.format("hudi-md")``: the shim's planner process, offered the driver's
Spark, attaches to it for the plan and runs the job there (tagged ``hudi-md-plan``, in the caller's
job group); the files Spark scans are the in-process plan's, the rows Spark's own Parquet reader's;
cancelling the query's job group cancels the plan's job; nothing of the attach outlives the plan;
and without a usable engine the planner prunes in process only within its memory budget.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import hudi_md
from hudi_md.errors import EngineUnavailableError
from hudi_md.formats.commit_metadata_writer import commit_metadata_record, serialize_instant_metadata
from hudi_md.metadata import keys as K
from hudi_md.metadata.records_builder import ColumnRange, column_stats_record
from hudi_md.metadata.writer import MetadataTableWriter
from hudi_md.planning.column_stats_mode import (
    IN_MEMORY_PROJECTION_THRESHOLD,
    MEMORY_BUDGET,
    PROCESSING_MODE_OVERRIDE,
    ColumnStatsRequest,
)
from hudi_md.planning.filters import to_expression, to_json
from hudi_md.planning.planner import prune_by_column_stats
from hudi_md.spark import protocol as P
from hudi_md.spark.distributed_plan import SparkColumnStats
from hudi_md.spark.plan_engine import DriverEngine
from hudi_md.spark.planner import Planner
from hudi_md.spark.session import last_plan_counters
from hudi_md.table.timeline_writer import PendingInstant, new_instant_time
from hudi_md.write.writer import HudiWriter

PARTITIONS = 2000
ROWS = 2 * PARTITIONS
OPTIONS = {
    "hoodie.table.name": "dplan",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "dt",
    "hoodie.parquet.bloom.filter.enabled": "false",
    "hoodie.metadata.index.column.stats.enable": "true",
    "hoodie.metadata.index.partition.stats.enable": "false",
    "hoodie.metadata.index.column.stats.file.group.count": "4",
}
# below every plan's projection here (2,000 slices x 1..3 columns): the engine runs
BUDGET = {IN_MEMORY_PROJECTION_THRESHOLD: "1000"}

# (filters, the same predicate in Spark SQL, whether a file's columns must meet in a shuffle)
CASES = [
    ([("v", "<", 100)], "v < 100", False),
    ([[("v", "<", 100)], [("w", "<", 50)]], "v < 100 OR w < 50", True),
    ([("s", "=", "s003"), ("v", "<", 900)], "s = 's003' AND v < 900", False),
    (
        [("v", ">=", 3000), ("w", "<", 3000), ("s", "in", ["s001", "s050"])],
        "v >= 3000 AND w < 3000 AND s IN ('s001', 's050')",
        False,
    ),
]


def _rows(ids: range, bump: int = 0) -> pa.Table:
    return pa.table(
        {
            "id": [f"k{i}" for i in ids],
            "dt": [f"p{i // 2:05d}" for i in ids],
            "v": [i + bump for i in ids],
            "w": [(i * 7) % ROWS for i in ids],
            "s": [f"s{i % 97:03d}" for i in ids],
        }
    )


@pytest.fixture(scope="module")
def table_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("dplan") / "t"
    # the MDT compacts after its first deltacommit: column_stats file groups get base HFiles
    hudi_md.write(
        _rows(range(ROWS)),
        str(path),
        operation="insert",
        options={**OPTIONS, "hoodie.metadata.compact.max.delta.commits": "1"},
    )
    # an upsert moving some values: new file versions whose stats are in MDT log blocks
    hudi_md.write(_rows(range(0, ROWS, 50), bump=10_000), str(path), operation="upsert", options=OPTIONS)
    groups = sorted((path / ".hoodie" / "metadata" / K.COLUMN_STATS).iterdir())
    assert any(g.suffix == ".hfile" for g in groups), "the column_stats file groups have base HFiles"
    assert any(".log." in g.name for g in groups), "and log files after them"
    return path


def _slice_keys(slices: list[Any]) -> list[tuple[str, str, str]]:
    return sorted((s.partition_path, s.file_id, s.base_file.name if s.base_file else "") for s in slices)


def _base_files(path: Path, slices: list[Any]) -> set[str]:
    return {str(path / s.partition_path / s.base_file.name) for s in slices}


@pytest.mark.parametrize(("filters", "sql", "shuffled"), CASES, ids=[c[1] for c in CASES])
def test_distributed_plan_is_the_in_process_plan_and_keeps_every_matching_file(
    spark: Any, table_path: Path, oracle: Any, filters: list, sql: str, shuffled: bool
) -> None:
    from pyspark.sql import functions as F

    distributed = hudi_md.spark.plan(spark, str(table_path), filters, options=BUDGET)
    assert distributed.counters["column_stats_distributed"] == 1
    assert distributed.counters["column_stats_tasks"] == 4
    assert distributed.counters["column_stats_shuffled"] == int(shuffled)
    assert distributed.counters["column_stats_executor_bytes_read"] > 0

    # without a session: the same rule says the threshold is passed, and the plan says where it ran
    local = hudi_md.spark.plan(None, str(table_path), filters, options=BUDGET)
    assert local.counters["column_stats_distributed"] == 0
    assert _slice_keys(distributed.slices) == _slice_keys(local.slices)
    # under the threshold (Hudi's default), nothing changes: no engine, no counter
    assert "column_stats_distributed" not in hudi_md.open_table(str(table_path)).plan(filters).counters
    assert len(distributed.slices) < distributed.counters["file_slices"]

    # the oracle: Spark's own Parquet reader over every latest base file (read once, cached)
    rows = oracle.where(sql)
    matching_files = {r[0] for r in rows.select("file").distinct().collect()}
    kept = _base_files(table_path, distributed.slices)
    assert matching_files, "the predicate matches rows"
    assert matching_files <= kept, sorted(matching_files - kept)[:3]
    through_plan = rows.where(F.col("file").isin(sorted(kept)))
    assert through_plan.count() == rows.count()


@pytest.fixture(scope="module")
def oracle(spark: Any, table_path: Path) -> Any:
    """Every row of the latest base files, read by Spark's Parquet reader, with its file's path."""
    from pyspark.sql import functions as F

    everything = hudi_md.open_table(str(table_path)).plan(None).slices
    df = spark.read.parquet(*sorted(_base_files(table_path, everything)))
    local = F.regexp_replace(F.input_file_name(), "^file:(//)?", "")
    return df.withColumn("file", local).cache()


def test_planner_memory_for_stats_stays_small_when_distributed(spark: Any, table_path: Path) -> None:
    filters = CASES[3][0]

    def measured(step: Any) -> tuple[int, list[Any], dict[str, int]]:
        table = hudi_md.open_table(str(table_path), BUDGET).state  # what the pruning steps take
        slices = table.file_system_view(None).latest_file_slices(table.partitions())
        expr = to_expression(filters)
        counters: dict[str, int] = {}
        tracemalloc.start()
        try:
            kept = step(table, slices, expr, counters)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        return peak, kept, counters

    def in_process(table: Any, slices: list, expr: Any, counters: dict) -> list:
        return prune_by_column_stats(table.metadata_table.stats, table, slices, expr, table.schema)

    def on_spark(table: Any, slices: list, expr: Any, counters: dict) -> list:
        request = ColumnStatsRequest(table, slices, expr, table.schema, ("v", "w", "s"))
        return SparkColumnStats(spark.sparkContext)(request, counters)

    measured(on_spark)  # the first job starts Python workers; measure the second
    local_peak, local_kept, _ = measured(in_process)
    spark_peak, spark_kept, counters = measured(on_spark)
    assert _slice_keys(spark_kept) == _slice_keys(local_kept)
    assert counters["column_stats_tasks"] == 4
    # the in-process step holds the stats of 2,000 files x 3 columns; the distributed one the
    # answer only
    assert spark_peak * 3 < local_peak, (spark_peak, local_peak)


def _pending_mdt_stats(path: Path, partition: str, file_name: str) -> PendingInstant:
    """A data instant left inflight whose MDT deltacommit completed (what a writer that died
    before its commit leaves), carrying column_stats that, once valid, prune ``file_name``."""
    writer = HudiWriter(str(path), OPTIONS)
    state = writer.state()
    instant = new_instant_time(after=state.timeline.instants[-1].requested_time)
    pending = PendingInstant.begin(writer.timeline_writer(), instant, "commit")
    # merged with the file's own record (counts add up, ranges widen), it says "only nulls"
    nulls = ColumnRange("v", 6, 6, null_count=1000, value_count=0, total_size=0, total_uncompressed_size=0)
    record = column_stats_record(partition, file_name, nulls, pa.int64())
    MetadataTableWriter(writer.storage, state.config, OPTIONS).write_records(
        instant, [record], partitions=[K.COLUMN_STATS]
    )
    return pending


def test_log_blocks_of_an_inflight_instant_are_ignored_on_executors(
    spark: Any, table_path: Path, tmp_path: Path
) -> None:
    path = tmp_path / "t"
    shutil.copytree(table_path, path)
    filters = [("v", "<", 100)]
    before = hudi_md.spark.plan(spark, str(path), filters, options=BUDGET)
    target = next(s for s in before.slices if s.partition_path == "p00003")
    pending = _pending_mdt_stats(path, target.partition_path, target.base_file.name)

    distributed = hudi_md.spark.plan(spark, str(path), filters, options=BUDGET)
    assert distributed.counters["column_stats_distributed"] == 1
    assert _slice_keys(distributed.slices) == _slice_keys(before.slices)
    local = hudi_md.open_table(str(path), BUDGET).plan(filters)
    assert _slice_keys(local.slices) == _slice_keys(before.slices)

    # once the data instant completes, the same block is valid: both prune the file
    meta = commit_metadata_record({}, operation_type="UPSERT", extra_metadata={})
    pending.complete(serialize_instant_metadata("commit", meta))
    distributed = hudi_md.spark.plan(spark, str(path), filters, options=BUDGET)
    local = hudi_md.open_table(str(path), BUDGET).plan(filters)
    expected = [k for k in _slice_keys(before.slices) if k[0] != target.partition_path]
    assert _slice_keys(distributed.slices) == _slice_keys(local.slices) == expected


# --- through spark.read.format("hudi-md"): the planner process plans on the driver's Spark -----------

ENGINE = {PROCESSING_MODE_OVERRIDE: "engine"}
DATA_COLUMNS = ["id", "dt", "v", "w", "s"]


def _read(spark: Any, path: Path, sql: str, options: dict[str, str]) -> Any:
    return spark.read.format("hudi-md").options(**options).load(str(path)).where(sql)


def _scanned_files(df: Any) -> set[str]:
    """The files Spark's scan of ``df`` reads: what the hudi-md file index answered (local paths)."""
    leaves = df._jdf.queryExecution().sparkPlan().collectLeaves()
    (scan,) = [
        leaf
        for leaf in (leaves.apply(i) for i in range(leaves.size()))
        if leaf.getClass().getSimpleName() in ("FileSourceScanExec", "BatchScanExec")
    ]
    if scan.getClass().getSimpleName() == "BatchScanExec":  # the V2 scan: its file partitions
        partitions = scan.inputPartitions().iterator()
    else:
        partitions = scan.inputRDD().filePartitions().iterator()
    files = set()
    while partitions.hasNext():
        for f in partitions.next().files():
            files.add(str(f.filePath().toString()).removeprefix("file://").removeprefix("file:"))
    return files


def _data_rows(df: Any) -> list[tuple]:
    return sorted(tuple(r) for r in df.select(*DATA_COLUMNS).collect())


def _plan_jobs(spark: Any, group: str | None = None) -> set[int]:
    """Spark's jobs carrying the plan jobs' tag (or of a job group), by the status tracker."""
    tracker = spark.sparkContext._jsc.sc().statusTracker()
    return set(tracker.getJobIdsForGroup(group) if group else tracker.getJobIdsForTag(P.PLAN_JOB_TAG))


def _lent(spark: Any) -> int:
    return spark.sparkContext._jvm.hudi.md.spark.PlanEngine.lentNow()


@pytest.mark.parametrize(
    ("options", "case"),
    [(ENGINE, CASES[0]), (BUDGET, CASES[1])],
    ids=["override engine: v < 100", "threshold: v < 100 OR w < 50"],
)
def test_format_reads_plan_on_the_drivers_spark(
    hudi_spark: Any, table_path: Path, options: dict[str, str], case: tuple
) -> None:
    filters, sql, shuffled = case
    sc = hudi_spark.sparkContext
    tagged = _plan_jobs(hudi_spark)
    sc.setJobGroup("hudi-md-test-read", "a query reading a hudi-md table")
    try:
        df = _read(hudi_spark, table_path, sql, options)
        scanned = _scanned_files(df)
        got = _data_rows(df)
    finally:
        sc._jsc.clearJobGroup()
    counters = last_plan_counters(hudi_spark)
    assert counters["column_stats_distributed"] == 1, counters
    assert counters["column_stats_tasks"] == 4
    assert counters["column_stats_shuffled"] == int(shuffled)
    # Spark saw the plan's job, with the plan jobs' tag and in the caller's job group
    plan_jobs = _plan_jobs(hudi_spark) - tagged
    assert len(plan_jobs) == 1, plan_jobs
    assert plan_jobs <= _plan_jobs(hudi_spark, "hudi-md-test-read")
    assert _lent(hudi_spark) == 0, "the plan's Py4J server is stopped with the plan"

    in_process = hudi_md.open_table(str(table_path)).plan(filters)
    assert "column_stats_distributed" not in in_process.counters
    assert scanned == _base_files(table_path, in_process.slices)
    assert counters["file_slices_after_column_stats"] == len(in_process.slices) < counters["file_slices"]
    # the oracle: Spark's own Parquet reader over every latest base file, same filter
    everything = _base_files(table_path, hudi_md.open_table(str(table_path)).plan(None).slices)
    expected = _data_rows(hudi_spark.read.parquet(*sorted(everything)).where(sql))
    assert got == expected and expected


def test_format_reads_ignore_stats_of_an_inflight_instant(
    hudi_spark: Any, table_path: Path, tmp_path: Path
) -> None:
    path = tmp_path / "t"
    shutil.copytree(table_path, path)
    sql = "v < 100"
    before = hudi_md.open_table(str(path)).plan([("v", "<", 100)])
    target = next(s for s in before.slices if s.partition_path == "p00003")
    target_file = str(path / target.partition_path / target.base_file.name)
    pending = _pending_mdt_stats(path, target.partition_path, target.base_file.name)

    scanned = _scanned_files(_read(hudi_spark, path, sql, ENGINE))
    assert last_plan_counters(hudi_spark)["column_stats_distributed"] == 1
    assert scanned == _base_files(path, before.slices) and target_file in scanned

    meta = commit_metadata_record({}, operation_type="UPSERT", extra_metadata={})
    pending.complete(serialize_instant_metadata("commit", meta))
    scanned = _scanned_files(_read(hudi_spark, path, sql, ENGINE))
    assert last_plan_counters(hudi_spark)["column_stats_distributed"] == 1
    assert scanned == _base_files(path, before.slices) - {target_file}


def _planner_threads(spark: Any) -> int:
    pid = spark.sparkContext._jvm.hudi.md.spark.PlannerClient.pid()
    return len(os.listdir(f"/proc/{pid}/task"))


def test_plans_on_spark_leave_no_gateway_or_thread_behind(hudi_spark: Any, table_path: Path) -> None:
    """Three plans on Spark, the last through an SQL table on the provider (its OPTIONS force the
    engine): after each, no Py4J server is left in the driver and the planner has no more threads
    than after the first."""
    override = PROCESSING_MODE_OVERRIDE
    hudi_spark.sql(
        f"CREATE TABLE dplan_sql USING `hudi-md` OPTIONS ('{override}' 'engine') LOCATION '{table_path}'"
    )

    def plan(df: Any) -> int:
        _scanned_files(df)
        assert last_plan_counters(hudi_spark)["column_stats_distributed"] == 1
        assert _lent(hudi_spark) == 0
        # py4j's finalizer thread of a closed gateway ends within its 1 s poll
        deadline = time.monotonic() + 5
        while _planner_threads(hudi_spark) > settled.get("threads", 1 << 30) and time.monotonic() < deadline:
            time.sleep(0.2)
        return _planner_threads(hudi_spark)

    try:
        settled: dict[str, int] = {}
        settled["threads"] = plan(_read(hudi_spark, table_path, "v < 7", ENGINE))
        assert plan(_read(hudi_spark, table_path, "v < 8", ENGINE)) <= settled["threads"]
        assert plan(hudi_spark.sql("SELECT * FROM dplan_sql WHERE v < 9")) <= settled["threads"]
    finally:
        hudi_spark.sql("DROP TABLE IF EXISTS dplan_sql")


@pytest.mark.parametrize(("how", "sql"), [("job group", "w < 77"), ("interrupt", "w < 78")])
def test_cancelling_the_query_cancels_the_plan_job(
    hudi_spark: Any, table_path: Path, how: str, sql: str
) -> None:
    """Both of local[2]'s task slots are held by another job, so the plan's job waits in Spark's
    queue: it is seen there (its tag; the query's group), the query is cancelled (its job group
    cancelled, or the JVM thread waiting for the plan interrupted: the shim then cancels the job by
    its tag), the read fails naming the cancellation, and the planner serves the next plan. The
    waiting thread is the query's on Spark 3.5, an AQE stage-creation thread on Spark 4. (The read
    runs on this thread: a session reused with ADD JAR sees the shim on it only.)"""
    from pyspark import InheritableThread

    sc = hudi_spark.sparkContext
    jvm = sc._jvm
    seen: dict[str, Any] = {}

    def planning_thread() -> Any:
        """The JVM thread waiting in the shim for the planner's answer while the job runs."""
        traces = jvm.java.lang.Thread.getAllStackTraces()
        for thread in traces.keySet().toArray():
            frames = [(str(f.getClassName()), str(f.getMethodName())) for f in traces.get(thread) or []]
            if any("PlannerClient" in c and "awaitInput" in m for c, m in frames):
                return thread
        return None

    def hold_slots() -> None:
        sc.setJobGroup("hudi-md-test-blocker", "holds the task slots", True)
        with contextlib.suppress(Exception):  # cancelled at the end of the test
            sc.parallelize(range(2), 2).foreach(lambda _: time.sleep(120))

    def cancel_once_submitted() -> None:
        deadline = time.monotonic() + 120
        while not seen.get("jobs") and time.monotonic() < deadline:
            seen["jobs"] = _plan_jobs(hudi_spark) - tagged
            time.sleep(0.1)
        seen["in_group"] = seen["jobs"] <= _plan_jobs(hudi_spark, "hudi-md-test-cancelled")
        if how == "job group":
            sc.cancelJobGroup("hudi-md-test-cancelled")
            return
        while (waiting := planning_thread()) is None and time.monotonic() < deadline:
            time.sleep(0.1)
        seen["interrupted"] = waiting is not None and waiting.interrupt() is None

    tagged = _plan_jobs(hudi_spark)
    blocker = InheritableThread(target=hold_slots, daemon=True)
    canceller = InheritableThread(target=cancel_once_submitted, daemon=True)
    blocker.start()
    try:
        deadline = time.monotonic() + 60
        while not sc._jsc.sc().statusTracker().getActiveStageIds() and time.monotonic() < deadline:
            time.sleep(0.1)
        canceller.start()
        sc.setJobGroup("hudi-md-test-cancelled", "a query to cancel", True)
        with pytest.raises(Exception, match="EngineJobError") as failed:
            _read(hudi_spark, table_path, sql, ENGINE).count()
        canceller.join(60)
    finally:
        jvm.java.lang.Thread.interrupted()  # the shim keeps an interrupted thread interrupted
        sc._jsc.clearJobGroup()
        sc.cancelJobGroup("hudi-md-test-blocker")
        blocker.join(60)
    assert seen["jobs"], "the plan's job was submitted"
    assert seen["in_group"], "in the query's job group"
    assert how == "job group" or seen["interrupted"]
    assert "cancel" in str(failed.value)
    assert _lent(hudi_spark) == 0
    assert _read(hudi_spark, table_path, sql, ENGINE).count() > 0
    assert last_plan_counters(hudi_spark)["column_stats_distributed"] == 1


def test_without_a_usable_engine_the_planner_prunes_in_process_only_within_its_budget(
    table_path: Path,
) -> None:
    filters = [("v", "<", 100)]
    expected = hudi_md.open_table(str(table_path)).plan(filters)

    def request(options: dict[str, str]) -> dict[str, Any]:
        return {
            P.OP: P.OP_PLAN,
            P.PATH: str(table_path),
            P.OPTIONS: options,
            P.FILTERS: json.loads(json.dumps(to_json(to_expression(filters)))),
            P.ENGINE: True,
        }

    closed = _closed_port()
    refusals = {
        "the shim lends none": lambda message: {P.OK: False, P.MESSAGE: "no session"},
        "the gateway refuses": lambda message: {
            P.OK: True,
            P.GATEWAY_PORT: closed,
            P.GATEWAY_SECRET: "x" * 16,
            P.ENGINE_JOB: "none",
        },
    }
    for why, ask in refusals.items():
        planner = Planner(DriverEngine(ask))
        header, _ = planner.handle(request(ENGINE))
        counters = header[P.COUNTERS]
        assert counters["column_stats_distributed"] == 0, why
        assert counters["column_stats_engine_unavailable"] == 1, why
        assert header[P.ROWS] == len(expected.slices) == counters["file_slices_after_column_stats"]
        with pytest.raises(EngineUnavailableError, match=MEMORY_BUDGET):
            Planner(DriverEngine(ask)).handle(request({**ENGINE, MEMORY_BUDGET: "1k"}))
    # the same rule without a session at all (hudi_md.spark.plan(None, ...))
    with pytest.raises(EngineUnavailableError, match="no Spark session"):
        hudi_md.spark.plan(None, str(table_path), filters, options={**ENGINE, MEMORY_BUDGET: "1k"})


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
