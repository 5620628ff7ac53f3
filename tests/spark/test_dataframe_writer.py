"""``df.write.format("hudi-md").mode(...).options(...).save(path)``: the rows go through
``hudi_md.write``'s Spark writer in a Python process attached to the driver JVM (the shim's
``WriteBridge``), whatever the driver; these tests drive it from PySpark.

Seeded random sequences of save modes and operations (upsert, insert, bulk_insert, delete,
insert_overwrite, overwrite = insert_overwrite_table) on COW and MOR tables, partitioned and not,
equal an in-memory model after every step (hudi-md's reader), and at the end through hudi-md by
listing, hudi-rs, ``spark.read.format("hudi-md")`` and the MDT validator; every commit's operation
is the one the save mode means. Then the save modes' refusals, bad options, a table with another
record key, a write that fails midway (nothing left pending, the next write succeeds), secrets
kept out of messages and logs, and writes in a row served by Python processes started ahead (one
that died is replaced).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import hudi_md
from hudi_md.metadata.validate import validate_metadata_table
from table_model import CITIES, Model, assert_readers, pending_instants, read_hudi_md, rows

SCHEMA = "id string, city string, ts long, fare double"

# (save mode, hoodie.datasource.write.operation or None) of the steps after the first
CHOICES = [
    ("append", None),  # upsert
    ("append", "insert"),
    ("append", "bulk_insert"),
    ("append", "delete"),
    ("append", "insert_overwrite"),
    ("overwrite", None),  # insert_overwrite_table
]
# what each step's commit records (Hudi's WriteOperationType)
OPERATION_TYPES = {
    None: "UPSERT",
    "insert": "INSERT",
    "bulk_insert": "BULK_INSERT",
    "delete": "DELETE",
    "insert_overwrite": "INSERT_OVERWRITE",
}
CASES = [
    pytest.param(1, "COPY_ON_WRITE", True, id="seed1-cow-partitioned"),
    pytest.param(2, "MERGE_ON_READ", False, id="seed2-mor-unpartitioned"),
    pytest.param(3, "MERGE_ON_READ", True, id="seed3-mor-partitioned-record-index"),
]


def plan(seed: int) -> list[tuple[str, str | None]]:
    """Seed n's steps: two cards of one shuffled deck of CHOICES (the three seeds' together cover
    every choice) and one drawn at random, in a random order."""
    deck = random.Random(0).sample(CHOICES, len(CHOICES))
    rng = random.Random(seed)
    steps = [*deck[2 * (seed - 1) : 2 * seed], rng.choice(CHOICES)]
    rng.shuffle(steps)
    return steps


def options(table_type: str, partitioned: bool, **extra: str) -> dict[str, str]:
    opts = {
        "hoodie.table.name": "dfw",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.datasource.write.hive_style_partitioning": "true",
        **extra,
    }
    if partitioned:
        opts["hoodie.datasource.write.partitionpath.field"] = "city"
    return opts


def frame(spark: Any, data: pa.Table) -> Any:
    return spark.createDataFrame(data.select(["id", "city", "ts", "fare"]).to_pylist(), SCHEMA)


def last_operation(path: str) -> str:
    timeline = hudi_md.open_table(path).timeline
    return timeline.metadata(timeline.write_timeline().last())["operationType"]


def step_rows(rng: random.Random, model: Model, op: str | None, mode: str, next_id: int, ts: int) -> pa.Table:
    existing = sorted(int(r["id"][3:]) for r in model.rows.values())
    fresh = list(range(next_id, next_id + rng.randint(5, 15)))
    if op == "delete":
        ids = rng.sample(existing, min(len(existing), rng.randint(3, 8))) + fresh[:2]  # absent keys: no-ops
    elif op in ("insert", "bulk_insert"):
        ids = fresh
    elif op == "insert_overwrite":
        touched = set(rng.sample(range(len(CITIES)), 2))  # leaves one partition alone
        ids = [i for i in existing + fresh if i % len(CITIES) in touched][:12]
    elif mode == "overwrite":
        ids = fresh + rng.sample(existing, min(len(existing), 3))
    else:  # upsert: some updates, some new keys
        ids = rng.sample(existing, min(len(existing), rng.randint(3, 8))) + fresh
    return rows(sorted(set(ids)), ts, seed=ts * 100 + next_id)


@pytest.mark.parametrize(("seed", "table_type", "partitioned"), CASES)
def test_dataframe_writer_sequences_equal_the_model(
    hudi_spark, tmp_path: Path, seed: int, table_type: str, partitioned: bool
) -> None:
    rng = random.Random(seed)
    path = str(tmp_path / "t")
    extra = {"hoodie.metadata.record.index.enable": "true"} if seed == 3 else {}
    opts = options(table_type, partitioned, **extra)
    model = Model(["city"] if partitioned else [])
    # The first write creates the table: errorifexists / ignore / overwrite on a new path, or
    # partitionBy instead of the partition option.
    first = rows(range(20), 1, seed=seed)
    writer = frame(hudi_spark, first).write.format("hudi-md" if seed % 2 else "hudi_md")
    if seed == 3:
        create_opts = {k: v for k, v in opts.items() if k != "hoodie.datasource.write.partitionpath.field"}
        writer.partitionBy("city").mode("ignore").options(**create_opts).save(path)
    else:
        writer.mode("errorifexists" if seed == 1 else "overwrite").options(**opts).save(path)
    model.upsert(first)
    assert read_hudi_md(path) == model.expected()
    assert last_operation(path) == "UPSERT"
    if partitioned:
        assert hudi_md.open_table(path).partition_fields == ["city"]
    next_id = 20
    for i, (mode, op) in enumerate(plan(seed), start=2):
        data = step_rows(rng, model, op, mode, next_id, ts=i)
        next_id += 20
        step_opts = {**opts, "hoodie.datasource.write.operation": op} if op else opts
        frame(hudi_spark, data).write.format("hudi-md").mode(mode).options(**step_opts).save(path)
        if mode == "overwrite":
            model.apply("insert_overwrite_table", data)
        else:
            model.apply(op or "upsert", data)
        assert read_hudi_md(path) == model.expected(), f"step {i}: {mode} {op}"
        want = "INSERT_OVERWRITE_TABLE" if mode == "overwrite" else OPERATION_TYPES[op]
        assert last_operation(path) == want, f"step {i}: {mode} {op}"
    table, _ = assert_readers(path, model.expected())
    assert validate_metadata_table(table) == []
    spark_rows = hudi_spark.read.format("hudi-md").load(path).select("id", "ts", "fare").collect()
    assert sorted((r.id, r.ts, r.fare) for r in spark_rows) == model.expected()
    assert pending_instants(path) == []


def listing(root: str) -> dict[str, str]:
    """Every file under ``root`` with a hash of its bytes."""
    out = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            p = Path(dirpath) / f
            out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@pytest.fixture
def written(hudi_spark, tmp_path: Path) -> tuple[str, dict[str, str]]:
    """A COW table of 9 rows, written through the DataFrameWriter."""
    path = str(tmp_path / "t")
    opts = options("COPY_ON_WRITE", True)
    frame(hudi_spark, rows(range(9), 1, seed=1)).write.format("hudi-md").options(**opts).save(path)
    return path, opts


def assert_fails_unchanged(path: str, action: Callable[[], Any], error: type, *needles: str) -> str:
    before = listing(path)
    with pytest.raises(error) as e:
        action()
    message = str(e.value)
    for needle in needles:
        assert needle in message, message
    assert listing(path) == before, "the table changed"
    return message


@pytest.mark.spark_smoke  # a write on every Spark line
def test_save_modes_on_an_existing_table(hudi_spark, written) -> None:
    from pyspark.errors import AnalysisException

    path, opts = written
    df = frame(hudi_spark, rows(range(100, 103), 2, seed=2))
    assert_fails_unchanged(
        path,
        lambda: df.write.format("hudi-md").mode("errorifexists").options(**opts).save(path),
        AnalysisException,
        "exists",
        "ErrorIfExists",
    )
    before = listing(path)
    df.write.format("hudi_md").mode("ignore").options(**opts).save(path)
    assert listing(path) == before
    # delete works with append only, as in Apache Hudi
    delete = {**opts, "hoodie.datasource.write.operation": "delete"}
    assert_fails_unchanged(
        path,
        lambda: df.write.format("hudi-md").mode("overwrite").options(**delete).save(path),
        Exception,
        "append only",
    )


def test_bad_options_and_another_record_key_fail_before_anything_is_written(hudi_spark, written) -> None:
    from pyspark.errors import IllegalArgumentException

    path, opts = written
    df = frame(hudi_spark, rows(range(100, 103), 2, seed=2))
    for key, value in [
        ("hoodie.metadata.enable", "perhaps"),
        ("hoodie.datasource.write.operation", "merge"),
        ("hoodie.write.concurrency.mode", "NON_BLOCKING_CONCURRENCY_CONTROL"),
        ("hoodie.datasource.write.recordkey.field", "fare"),
    ]:
        assert_fails_unchanged(
            path,
            lambda key=key, value=value: (
                df.write.format("hudi-md").mode("append").options(**{**opts, key: value}).save(path)
            ),
            IllegalArgumentException,
            key,
        )
    new = str(Path(path).parent / "new")
    no_name = {k: v for k, v in opts.items() if k != "hoodie.table.name"}
    with pytest.raises(IllegalArgumentException, match=r"hoodie\.table\.name is required"):
        df.write.format("hudi-md").options(**no_name).save(new)
    assert not Path(new, ".hoodie", "timeline").exists()


def test_a_write_that_fails_midway_leaves_nothing_pending(hudi_spark, written) -> None:
    """A row without a record key fails on the executors, after the instant began: the write
    fails naming the error, its instant is rolled back at once, readers see the rows before, and
    the next write succeeds."""
    path, opts = written
    model = Model(["city"])
    model.upsert(rows(range(9), 1, seed=1))
    bad = hudi_spark.createDataFrame([("k1", "sf", 5, 1.0), (None, "sf", 5, 2.0)], SCHEMA)
    with pytest.raises(Exception, match="record key field 'id' is null"):
        bad.write.format("hudi-md").mode("append").options(**opts).save(path)
    assert pending_instants(path) == []
    assert read_hudi_md(path) == model.expected()
    good = rows(range(3), 7, seed=7)
    frame(hudi_spark, good).write.format("hudi-md").mode("append").options(**opts).save(path)
    model.upsert(good)
    assert read_hudi_md(path) == model.expected()
    assert pending_instants(path) == []


@contextlib.contextmanager
def jvm_log(spark: Any, logger: str) -> Iterator[Any]:
    """Everything ``logger`` (and its children) logs at INFO in the driver JVM, into a
    ``java.io.StringWriter`` (log4j2, as Spark 3.5 and 4 use)."""
    jvm = spark.sparkContext._jvm
    log4j = jvm.org.apache.logging.log4j
    writer = jvm.java.io.StringWriter()
    layout = log4j.core.layout.PatternLayout.createDefaultLayout()
    appender = log4j.core.appender.WriterAppender.createAppender(
        layout, None, writer, "hudi-md-test", False, True
    )
    appender.start()
    log4j.core.config.Configurator.setLevel(logger, log4j.Level.INFO)
    context = log4j.LogManager.getContext(False)
    config = context.getConfiguration().getLoggerConfig(logger)
    config.addAppender(appender, log4j.Level.INFO, None)
    context.updateLoggers()
    try:
        yield writer
    finally:
        config.removeAppender("hudi-md-test")
        log4j.core.config.Configurator.setLevel(logger, log4j.Level.ERROR)
        context.updateLoggers()
        appender.stop()


def test_secrets_stay_out_of_messages_and_logs(hudi_spark, written) -> None:
    """Values of options whose key looks secret (Spark's spark.redaction.regex) are redacted from
    the error and from the driver's log, even where the Python error quotes them."""
    from pyspark.errors import IllegalArgumentException

    path, opts = written
    secret = "s3cr3t-Value-1234"
    df = frame(hudi_spark, rows(range(3), 2, seed=2))
    with jvm_log(hudi_spark, "hudi.md.spark") as log, pytest.raises(IllegalArgumentException) as e:
        df.write.format("hudi-md").mode("append").options(
            **{**opts, "fs.s3a.secret.key": secret, "hoodie.datasource.write.operation": secret}
        ).save(path)
    assert secret not in str(e.value) and "redacted" in str(e.value), str(e.value)
    logged = log.toString()
    assert "hudi-md write" in logged and "redacted" in logged, logged
    assert secret not in logged


def test_writes_in_a_row_take_processes_started_ahead_and_a_dead_one_is_replaced(hudi_spark, written) -> None:
    """Each write runs in a Python process of its own, started ahead of it (its interpreter and
    imports are most of a small write's fixed cost): writes in a row take the one waiting. One
    that died while it waited is not used: the write starts another, and succeeds."""
    path, opts = written
    bridge = hudi_spark.sparkContext._jvm.hudi.md.spark.WriteBridge
    model = Model(["city"])
    model.upsert(rows(range(9), 1, seed=1))

    def write(ts: int) -> None:
        data = rows(range(ts, ts + 4), ts, seed=ts)
        frame(hudi_spark, data).write.format("hudi-md").mode("append").options(**opts).save(path)
        model.upsert(data)

    before = json.loads(bridge.processCounts())
    for ts in (2, 3, 4):
        write(ts)
    counts = json.loads(bridge.processCounts())
    assert counts["ahead"] - before["ahead"] >= 2, (before, counts)  # the second and third at least
    assert read_hudi_md(path) == model.expected()

    deadline = time.monotonic() + 120
    while (pid := bridge.spareProcessId()) < 0:  # started in the background after a write
        assert time.monotonic() < deadline, "no process was started ahead"
        time.sleep(0.2)
    os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):  # a child of the JVM, not of this process
        os.waitpid(pid, 0)
    while Path(f"/proc/{pid}").exists() and "Z" not in Path(f"/proc/{pid}/stat").read_text().split()[2]:
        time.sleep(0.05)
    before = json.loads(bridge.processCounts())
    write(5)
    counts = json.loads(bridge.processCounts())
    assert counts["ahead"] == before["ahead"] and counts["started"] > before["started"], (before, counts)
    assert read_hudi_md(path) == model.expected()
    assert pending_instants(path) == []
