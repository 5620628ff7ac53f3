"""``hudi-md index ...``: asynchronous MDT indexing (RFC-45's ``indexing`` action)."""

from __future__ import annotations

from typing import Any

import click

from hudi_md.cli.common import (
    cli_writer,
    emit,
    handle_errors,
    json_flag,
    open_cli_table,
    option_flag,
    progress_bars,
    set_json,
)


@click.group()
def index() -> None:
    """Asynchronous MDT indexing (RFC-45's `indexing` action)."""


@index.command("show")
@click.argument("path")
@option_flag
@json_flag
@click.pass_context
@handle_errors
def index_show(ctx: click.Context, path: str, options: tuple[str, ...], as_json: bool) -> None:
    """MDT partitions available, inflight, and planned by pending `indexing` instants."""
    from hudi_md.metadata.indexing import indexing_state

    set_json(ctx, as_json)
    t = open_cli_table(path, options)
    state = indexing_state(t.storage, t.config, t.timeline).to_dict()

    def text(d: dict[str, Any]) -> str:
        lines = [
            f"available: {', '.join(d['available']) or '(none)'}",
            f"inflight:  {', '.join(d['inflight']) or '(none)'}",
        ]
        for p in d["pending_indexing"]:
            parts = ", ".join(f"{x['partition']} up to {x['up_to_instant']}" for x in p["partitions"] or [])
            lines.append(f"pending {p['instant']} ({p['state']}): {parts or p.get('error', '?')}")
        for c in d["completed_indexing"]:
            parts = ", ".join(f"{x['partition']} up to {x['up_to_instant']}" for x in c["partitions"] or [])
            lines.append(f"completed {c['instant']} at {c['completed']}: {parts}")
        return "\n".join(lines)

    emit(ctx, state, text)


@index.command("schedule")
@click.argument("path")
@click.option("--partitions", required=True, help="MDT partitions to build, e.g. record_index,column_stats")
@click.option("--columns", default=None, help="columns column_stats indexes, comma-separated")
@option_flag
@click.pass_context
@handle_errors
def index_schedule(
    ctx: click.Context, path: str, partitions: str, columns: str | None, options: tuple[str, ...]
) -> None:
    """Plan building MDT partitions beside running writers (an `indexing` instant)."""
    from hudi_md.write.indexing import schedule_indexing

    names = [p.strip() for p in partitions.split(",") if p.strip()]
    cols = [c.strip() for c in columns.split(",") if c.strip()] if columns else None
    click.echo(f"scheduled indexing {schedule_indexing(cli_writer(path, options), names, columns=cols)}")


@index.command("run")
@click.argument("path")
@click.option("--instant", default=None, help="the indexing instant (default: the earliest pending)")
@click.option("--progress/--no-progress", default=True, help="show a progress bar")
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
@click.pass_context
@handle_errors
def index_run(
    ctx: click.Context,
    path: str,
    instant: str | None,
    progress: bool,
    timeout_s: float | None,
    spark_master: str | None,
    options: tuple[str, ...],
) -> None:
    """Build what a pending `indexing` instant plans, then make the partitions available."""
    from hudi_md.write.indexing import run_indexing

    builder = None
    if spark_master:
        from pyspark.sql import SparkSession

        from hudi_md.spark.indexing import spark_builder
        from hudi_md.spark.session import configure

        spark = configure(
            SparkSession.builder.master(spark_master).appName("hudi-md index run")
        ).getOrCreate()
        builder = spark_builder(spark)
    with progress_bars(progress) as report:
        done = run_indexing(
            cli_writer(path, options), instant, progress=report, builder=builder, timeout_s=timeout_s
        )
    click.echo(f"indexing {done} completed" if done else "no pending indexing instant")


@index.command("drop")
@click.argument("path")
@click.option("--partitions", required=True, help="MDT partitions to drop, comma-separated")
@option_flag
@click.pass_context
@handle_errors
def index_drop(ctx: click.Context, path: str, partitions: str, options: tuple[str, ...]) -> None:
    """Drop MDT partitions (indexes); a pending indexing of them is rolled back."""
    from hudi_md.write.table_setup import drop_metadata_indexes

    w = cli_writer(path, options)
    names = [p.strip() for p in partitions.split(",") if p.strip()]
    config = drop_metadata_indexes(w, names)
    click.echo(
        f"dropped {', '.join(names)} from the metadata table of {w.storage.uri()}; "
        f"it keeps {', '.join(config.metadata_partitions) or 'nothing'}"
    )
