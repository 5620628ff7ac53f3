"""``hudi-md index ...``: asynchronous MDT indexing (RFC-45's ``indexing`` action)."""

from __future__ import annotations

from typing import Any

import click

from hudi_md.cli.common import (
    cli_writer,
    command_progress,
    emit,
    handle_errors,
    json_option,
    open_cli_state,
    option_flag,
    progress_option,
)
from hudi_md.cli.metadata import dropped_indexes_text


@click.group()
def index() -> None:
    """Asynchronous MDT indexing (RFC-45's `indexing` action)."""


def _names(text: str) -> list[str]:
    return [p.strip() for p in text.split(",") if p.strip()]


@index.command("show")
@click.argument("path")
@option_flag
@json_option(
    "an object {available: [MDT partitions], inflight: [MDT partitions], pending_indexing: [{instant, "
    "state, partitions: [{partition, up_to_instant}] or null, error}], completed_indexing: [{instant, "
    "completed, partitions}]}"
)
@handle_errors
def index_show(path: str, options: tuple[str, ...]) -> None:
    """MDT partitions available, inflight, and planned by pending `indexing` instants."""
    from hudi_md.metadata.indexing import indexing_state

    t = open_cli_state(path, options)
    state = indexing_state(t.storage, t.config, t.timeline).to_dict()
    for pending in state["pending_indexing"]:
        pending.setdefault("error", None)  # the same keys whether its plan could be read or not

    def text(d: dict[str, Any]) -> str:
        lines = [
            f"available: {', '.join(d['available']) or '(none)'}",
            f"inflight:  {', '.join(d['inflight']) or '(none)'}",
        ]
        for p in d["pending_indexing"]:
            parts = ", ".join(f"{x['partition']} up to {x['up_to_instant']}" for x in p["partitions"] or [])
            lines.append(f"pending {p['instant']} ({p['state']}): {parts or p.get('error') or '?'}")
        for c in d["completed_indexing"]:
            parts = ", ".join(f"{x['partition']} up to {x['up_to_instant']}" for x in c["partitions"] or [])
            lines.append(f"completed {c['instant']} at {c['completed']}: {parts}")
        return "\n".join(lines)

    emit(state, text)


@index.command("schedule")
@click.argument("path")
@click.option("--partitions", required=True, help="MDT partitions to build, e.g. record_index,column_stats")
@click.option("--columns", default=None, help="columns column_stats indexes, comma-separated")
@option_flag
@json_option("an object {instant: the indexing instant, partitions: [MDT partitions planned]}")
@handle_errors
def index_schedule(path: str, partitions: str, columns: str | None, options: tuple[str, ...]) -> None:
    """Plan building MDT partitions beside running writers (an `indexing` instant)."""
    from hudi_md.write.indexing import schedule_indexing

    names = _names(partitions)
    cols = _names(columns) if columns else None
    instant = schedule_indexing(cli_writer(path, options), names, columns=cols)
    emit({"instant": instant, "partitions": names}, lambda d: f"scheduled indexing {d['instant']}")


@index.command("run")
@click.argument("path")
@click.option("--instant", default=None, help="the indexing instant (default: the earliest pending)")
@click.option(
    "--timeout",
    "timeout_s",
    type=float,
    default=None,
    help="seconds to wait for writes that began before the schedule, then roll the indexing back "
    "(default: hoodie.metadata.index.check.timeout.seconds, 900)",
)
@click.option(
    "--spark-master",
    default=None,
    help="read the table's files on a Spark cluster (e.g. local[4], spark://host:7077, yarn)",
)
@option_flag
@json_option("an object {instant: the indexing instant completed, or null when none was pending}")
@progress_option
@handle_errors
def index_run(
    path: str,
    instant: str | None,
    timeout_s: float | None,
    spark_master: str | None,
    options: tuple[str, ...],
) -> None:
    """Build what a pending `indexing` instant plans, then make the partitions available."""
    from hudi_md.write.indexing import run_indexing

    writer = cli_writer(path, options)
    builder = None
    if spark_master:
        from pyspark.sql import SparkSession

        from hudi_md.spark.indexing import spark_builder
        from hudi_md.spark.session import configure

        spark = configure(
            SparkSession.builder.master(spark_master).appName("hudi-md index run")
        ).getOrCreate()
        builder = spark_builder(spark)
    with command_progress() as progress:
        which = instant or "the earliest pending indexing instant"
        progress.say(f"indexing {writer.storage.uri()}: building what {which} plans...")
        done = run_indexing(writer, instant, progress=progress.bar, builder=builder, timeout_s=timeout_s)
        progress.done()
    emit(
        {"instant": done},
        lambda d: f"indexing {d['instant']} completed" if d["instant"] else "no pending indexing instant",
    )


@index.command("drop")
@click.argument("path")
@click.option("--partitions", required=True, help="MDT partitions to drop, comma-separated")
@option_flag
@json_option("an object {path, dropped: [MDT partitions], metadata_partitions: [MDT partitions kept]}")
@handle_errors
def index_drop(path: str, partitions: str, options: tuple[str, ...]) -> None:
    """Drop MDT partitions (indexes); a pending indexing of them is rolled back."""
    from hudi_md.write.table_setup import drop_metadata_indexes

    w = cli_writer(path, options)
    names = _names(partitions)
    config = drop_metadata_indexes(w, names)
    emit(
        {"path": w.storage.uri(), "dropped": names, "metadata_partitions": config.metadata_partitions},
        dropped_indexes_text,
    )
