"""``hudi-md``: scriptable table, timeline and metadata-table commands (``--json`` for machines)."""

from __future__ import annotations

import contextlib
import json
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from functools import wraps
from typing import TYPE_CHECKING, Any

import click

from hudi_md.errors import HudiMdError
from hudi_md.metastore_server.cli import metastore as metastore_group

if TYPE_CHECKING:
    from hudi_md.metadata.reader import MetadataTable
    from hudi_md.table.state import TableState
    from hudi_md.write.writer import HudiWriter


def _emit(ctx: click.Context, data: Any, text: Callable[[Any], str]) -> None:
    if ctx.obj.get("json"):
        click.echo(json.dumps(data, indent=2, default=str, sort_keys=False))
    else:
        click.echo(text(data))


def _errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (HudiMdError, FileNotFoundError) as e:
            click.echo(f"error: {e}", err=True)
            sys.exit(2)

    return wrapper


def _open(path: str, options: tuple[str, ...]) -> Any:
    from hudi_md.api import open_table

    opts = {}
    for item in options:
        if "=" not in item:
            raise click.BadParameter(f"expected KEY=VALUE, got {item!r}", param_hint="--option")
        k, v = item.split("=", 1)
        opts[k] = v
    return open_table(path, opts)


_option = click.option("--option", "-o", "options", multiple=True, help="KEY=VALUE (hoodie.* or storage)")
_json = click.option("--json", "as_json", is_flag=True, help="machine-readable output")


def _set_json(ctx: click.Context, as_json: bool) -> None:
    ctx.ensure_object(dict)
    ctx.obj["json"] = ctx.obj.get("json") or as_json


@click.group()
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
@click.pass_context
def main(ctx: click.Context, as_json: bool) -> None:
    """hudi-md: Apache Hudi tables and their metadata table, from Python."""
    ctx.ensure_object(dict)
    ctx.obj["json"] = as_json


# --- table ---------------------------------------------------------------------------------------


@main.group()
def table() -> None:
    """Table-level commands."""


@table.command("show")
@click.argument("path")
@_option
@_json
@click.pass_context
@_errors
def table_show(ctx: click.Context, path: str, options: tuple[str, ...], as_json: bool) -> None:
    """Table config, type, version, partitioning and what the MDT holds."""
    _set_json(ctx, as_json)
    t = _open(path, options)
    last = t.timeline.write_timeline().last()
    data = {
        "path": t.uri,
        "name": t.table_name,
        "table_type": t.table_type,
        "table_version": t.table_version,
        "partition_fields": t.partition_fields,
        "record_key_fields": t.config.record_key_fields,
        "ordering_fields": t.config.ordering_fields,
        "keygen": t.config.keygen,
        "record_merge_mode": t.config.record_merge_mode,
        "metadata_partitions": t.config.metadata_partitions,
        "metadata_partitions_inflight": t.config.metadata_partitions_inflight,
        "latest_commit": last.requested_time if last else None,
        "instants": len(t.timeline),
        "properties": t.config.to_dict(),
    }

    def text(d: dict[str, Any]) -> str:
        lines = [f"{k}: {v}" for k, v in d.items() if k != "properties"]
        lines.append("properties:")
        lines += [f"  {k}={v}" for k, v in sorted(d["properties"].items())]
        return "\n".join(lines)

    _emit(ctx, data, text)


# --- timeline ------------------------------------------------------------------------------------


@main.command("timeline")
@click.argument("path")
@_option
@_json
@click.option("--metadata", "of_metadata", is_flag=True, help="the MDT's timeline instead")
@click.pass_context
@_errors
def timeline_cmd(
    ctx: click.Context, path: str, options: tuple[str, ...], as_json: bool, of_metadata: bool
) -> None:
    """Instants of the active timeline: requested time, action, state, completion time."""
    _set_json(ctx, as_json)
    t = _open(path, options)
    tl = t.timeline
    if of_metadata:
        mdt = t.metadata_table
        if mdt is None:
            raise click.ClickException(f"{t.uri} has no readable metadata table")
        tl = mdt.timeline
    rows = [
        {
            "requested_time": i.requested_time,
            "action": i.action,
            "state": i.state.name,
            "completion_time": i.completion_time,
        }
        for i in tl
    ]
    _emit(
        ctx,
        rows,
        lambda rs: "\n".join(
            f"{r['requested_time']}  {r['action']:<14} {r['state']:<10} {r['completion_time'] or ''}"
            for r in rs
        ),
    )


# --- read ----------------------------------------------------------------------------------------


@main.command("read")
@click.argument("path")
@_option
@_json
@click.option("--limit", type=int, default=20, show_default=True)
@click.option("--columns", help="comma-separated columns")
@click.option("--as-of", "as_of", help="time travel instant")
@click.option(
    "--query-type", type=click.Choice(["snapshot", "read_optimized", "incremental"]), default="snapshot"
)
@click.option("--start", help="incremental start (exclusive)")
@click.option("--end", help="incremental end (inclusive)")
@click.option("--filter", "filters", multiple=True, help='COLUMN OP VALUE, e.g. "city = sf"')
@click.pass_context
@_errors
def read_cmd(
    ctx: click.Context,
    path: str,
    options: tuple[str, ...],
    as_json: bool,
    limit: int,
    columns: str | None,
    as_of: str | None,
    query_type: str,
    start: str | None,
    end: str | None,
    filters: tuple[str, ...],
) -> None:
    """Print rows of the table."""
    _set_json(ctx, as_json)
    t = _open(path, options)
    parsed = [_parse_filter(f) for f in filters] or None
    rows = t.read(
        filters=parsed,
        columns=columns.split(",") if columns else None,
        as_of=as_of,
        query_type=query_type,
        start=start,
        end=end,
    )
    total = rows.num_rows
    head = rows.slice(0, limit) if limit >= 0 else rows
    if ctx.obj.get("json"):
        click.echo(json.dumps({"total_rows": total, "rows": head.to_pylist()}, default=str, indent=2))
        return
    for r in head.to_pylist():
        click.echo(json.dumps(r, default=str))
    click.echo(f"({total} rows{'' if total <= head.num_rows else f', {head.num_rows} shown'})")


def _parse_filter(text: str) -> tuple[str, str, Any]:
    for op in (" not in ", " in ", "!=", "<=", ">=", "==", "=", "<", ">"):
        if op in text:
            col, value = text.split(op, 1)
            value = value.strip()
            if op.strip() in ("in", "not in"):
                return (col.strip(), op.strip(), [v.strip() for v in value.strip("()[]").split(",")])
            return (col.strip(), op.strip(), value)
    raise click.BadParameter(f"cannot parse filter {text!r}; use COLUMN OP VALUE", param_hint="--filter")


# --- metadata ------------------------------------------------------------------------------------


@main.group()
def metadata() -> None:
    """Metadata-table commands (hudi-cli's `metadata ...`)."""


def _mdt(t: TableState) -> MetadataTable:
    mdt = t.metadata_table
    if mdt is None:
        reason = t.metadata_error
        raise click.ClickException(
            f"{t.uri} has no readable metadata table"
            + (f": {reason}" if reason else " (hoodie.table.metadata.partitions lacks 'files')")
        )
    return mdt


@metadata.command("list-partitions")
@click.argument("path")
@_option
@_json
@click.pass_context
@_errors
def list_partitions(ctx: click.Context, path: str, options: tuple[str, ...], as_json: bool) -> None:
    """All partitions, from the MDT `files` partition."""
    _set_json(ctx, as_json)
    parts = _mdt(_open(path, options)).all_partitions()
    _emit(ctx, parts, lambda ps: "\n".join(p if p else '""' for p in ps))


@metadata.command("list-files")
@click.argument("path")
@_option
@_json
@click.option("--partition", default=None, help="partition path (default: every partition)")
@click.pass_context
@_errors
def list_files(
    ctx: click.Context, path: str, options: tuple[str, ...], as_json: bool, partition: str | None
) -> None:
    """Files the MDT lists, per partition (as recorded: including not-yet-cleaned files)."""
    _set_json(ctx, as_json)
    mdt = _mdt(_open(path, options))
    parts = [partition] if partition is not None else mdt.all_partitions()
    listing = mdt.files_in_partitions(parts)
    rows = [
        {"partition_path": p, "file_name": e.name, "size": e.size} for p in parts for e in listing.get(p, [])
    ]
    _emit(
        ctx, rows, lambda rs: "\n".join(f"{r['partition_path']}\t{r['file_name']}\t{r['size']}" for r in rs)
    )


@metadata.command("stats")
@click.argument("path")
@_option
@_json
@click.pass_context
@_errors
def stats(ctx: click.Context, path: str, options: tuple[str, ...], as_json: bool) -> None:
    """MDT partitions, file groups, files and sizes; deltacommits since the last MDT compaction."""
    _set_json(ctx, as_json)
    t = _open(path, options)
    mdt = _mdt(t)
    from hudi_md.metadata.stats import metadata_stats

    data = metadata_stats(t, mdt)

    def text(d: dict[str, Any]) -> str:
        lines = [f"{k}: {v}" for k, v in d.items() if k != "partitions"]
        for name, p in d["partitions"].items():
            lines.append(
                f"  {name}: {p['file_groups']} file groups, {p['base_files']} base files, "
                f"{p['log_files']} log files (max {p['max_log_files_per_file_group']} per group), "
                f"{p['total_size']} bytes"
            )
        return "\n".join(lines)

    _emit(ctx, data, text)


@metadata.command("validate")
@click.argument("path")
@_option
@_json
@click.pass_context
@_errors
def validate(ctx: click.Context, path: str, options: tuple[str, ...], as_json: bool) -> None:
    """Compare the MDT with a storage listing; print every difference, exit 1 on any."""
    _set_json(ctx, as_json)
    t = _open(path, (*options, "hoodie.metadata.enable=true"))
    from hudi_md.metadata.validate import validate_metadata_table

    diffs = validate_metadata_table(t)
    if ctx.obj.get("json"):
        click.echo(json.dumps({"ok": not diffs, "differences": [d.to_dict() for d in diffs]}, indent=2))
    else:
        for d in diffs:
            click.echo(d.describe())
        kinds = Counter(d.kind for d in diffs)
        click.echo(
            "OK: MDT matches storage" if not diffs else f"FAILED: {len(diffs)} differences {dict(kinds)}"
        )
    if diffs:
        sys.exit(1)


def _writer(path: str, options: tuple[str, ...]) -> HudiWriter:
    from hudi_md.write.writer import HudiWriter

    opts = dict(item.split("=", 1) for item in options if "=" in item)
    return HudiWriter(path, opts)


@contextlib.contextmanager
def _progress_bars(enabled: bool) -> Iterator[Callable[[str, int, int], None]]:
    """A progress callback ``(partition, done, total)`` drawing one bar per MDT partition on
    stderr (nothing when not ``enabled``); the last bar is finished on exit."""
    bar: Any = None

    def report(partition: str, done: int, total: int) -> None:
        nonlocal bar
        if not enabled:
            return
        if bar is None or bar.label != partition:
            if bar is not None:
                bar.render_finish()
            bar = click.progressbar(length=max(total, 1), label=partition, file=sys.stderr)
        bar.update(done - bar.pos)

    try:
        yield report
    finally:
        if bar is not None:
            bar.render_finish()


@metadata.command("create")
@click.argument("path")
@_option
@click.option(
    "--partitions",
    default=None,
    help="MDT partitions to build (default: files,column_stats[,partition_stats] per the options)",
)
@click.option("--progress/--no-progress", default=True, help="show a progress bar")
@click.pass_context
@_errors
def metadata_create(
    ctx: click.Context, path: str, options: tuple[str, ...], partitions: str | None, progress: bool
) -> None:
    """Build the MDT of an existing table from one listing (RFC-15 initialisation)."""
    from hudi_md.table.config import TableConfig
    from hudi_md.write.config import WriteConfig
    from hudi_md.write.table_setup import create_metadata_partitions, wanted_mdt_partitions

    w = _writer(path, options)
    config = TableConfig.load(w.storage)
    if config.table_version != 9:
        raise click.ClickException(
            f"hudi-md builds MDTs for table version 9; {path} is {config.table_version}"
        )
    cfg = WriteConfig.from_options(w.options, config)
    wanted = partitions.split(",") if partitions else wanted_mdt_partitions(cfg) or ["files"]
    if all(p in config.metadata_partitions for p in wanted):
        click.echo(f"MDT partitions {', '.join(wanted)} already exist")
        return
    with _progress_bars(progress) as report:
        missing, config = create_metadata_partitions(w, wanted, progress=report)
    click.echo(
        f"created MDT partitions: {', '.join(missing)} ({', '.join(config.metadata_partitions)} available)"
    )


@metadata.command("repair")
@click.argument("path")
@_option
@click.option(
    "--partitions", default=None, help="MDT partitions to build (default: those the MDT had, at least files)"
)
@click.option("--progress/--no-progress", default=True, help="show a progress bar")
@click.pass_context
@_errors
def metadata_repair(
    ctx: click.Context, path: str, options: tuple[str, ...], partitions: str | None, progress: bool
) -> None:
    """Rebuild the MDT from the files on storage (for a federated layout: every prefix under the
    storage path), keeping only files of completed instants. Safe to run again."""
    from hudi_md.write.table_setup import repair_metadata_table

    w = _writer(path, options)
    names = [p.strip() for p in partitions.split(",") if p.strip()] if partitions else None
    with _progress_bars(progress) as report:
        config = repair_metadata_table(w, names, progress=report)
    click.echo(f"rebuilt the metadata table of {w.storage.uri()}: {', '.join(config.metadata_partitions)}")


@metadata.command("delete")
@click.argument("path")
@_option
@click.pass_context
@_errors
def metadata_delete(ctx: click.Context, path: str, options: tuple[str, ...]) -> None:
    """Delete the MDT and clear hoodie.table.metadata.partitions (config first, then files)."""
    from hudi_md.write.table_setup import delete_metadata

    w = _writer(path, options)
    delete_metadata(w)
    click.echo(f"deleted the metadata table of {w.storage.uri()}")


@metadata.command("drop-index")
@click.argument("path")
@click.argument("names", nargs=-1, required=True)
@_option
@click.pass_context
@_errors
def metadata_drop_index(
    ctx: click.Context, path: str, names: tuple[str, ...], options: tuple[str, ...]
) -> None:
    """Drop metadata-table indexes (e.g. secondary_index_<name>), as Hudi's DROP INDEX does."""
    from hudi_md.write.table_setup import drop_metadata_indexes

    w = _writer(path, options)
    config = drop_metadata_indexes(w, names)
    click.echo(
        f"dropped {', '.join(names)} from the metadata table of {w.storage.uri()}; "
        f"it keeps {', '.join(config.metadata_partitions) or 'nothing'}"
    )


@metadata.command("init")
@click.argument("path")
@_option
@click.pass_context
@_errors
def metadata_init(ctx: click.Context, path: str, options: tuple[str, ...]) -> None:
    """Bring the MDT up to date: roll back failed writes, build missing partitions, compact if due."""
    from hudi_md.write import services
    from hudi_md.write.table_setup import bring_metadata_up_to_date

    w = _writer(path, options)
    rolled, config = bring_metadata_up_to_date(w)
    compacted = services.compact_metadata_table(w)
    click.echo(
        f"MDT partitions: {', '.join(config.metadata_partitions) or '(none)'}; "
        f"rolled back: {', '.join(rolled) or 'nothing'}; compaction: {compacted or 'not due'}"
    )


# --- async MDT indexing (RFC-45) ---------------------------------------------------------------


@main.group()
def index() -> None:
    """Asynchronous MDT indexing (RFC-45's `indexing` action)."""


@index.command("show")
@click.argument("path")
@_option
@_json
@click.pass_context
@_errors
def index_show(ctx: click.Context, path: str, options: tuple[str, ...], as_json: bool) -> None:
    """MDT partitions available, inflight, and planned by pending `indexing` instants."""
    from hudi_md.metadata.indexing import indexing_state

    _set_json(ctx, as_json)
    t = _open(path, options)
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

    _emit(ctx, state, text)


@index.command("schedule")
@click.argument("path")
@click.option("--partitions", required=True, help="MDT partitions to build, e.g. record_index,column_stats")
@click.option("--columns", default=None, help="columns column_stats indexes, comma-separated")
@_option
@click.pass_context
@_errors
def index_schedule(
    ctx: click.Context, path: str, partitions: str, columns: str | None, options: tuple[str, ...]
) -> None:
    """Plan building MDT partitions beside running writers (an `indexing` instant)."""
    from hudi_md.write.indexing import schedule_indexing

    names = [p.strip() for p in partitions.split(",") if p.strip()]
    cols = [c.strip() for c in columns.split(",") if c.strip()] if columns else None
    click.echo(f"scheduled indexing {schedule_indexing(_writer(path, options), names, columns=cols)}")


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
@_option
@click.pass_context
@_errors
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
    with _progress_bars(progress) as report:
        done = run_indexing(
            _writer(path, options), instant, progress=report, builder=builder, timeout_s=timeout_s
        )
    click.echo(f"indexing {done} completed" if done else "no pending indexing instant")


@index.command("drop")
@click.argument("path")
@click.option("--partitions", required=True, help="MDT partitions to drop, comma-separated")
@_option
@click.pass_context
@_errors
def index_drop(ctx: click.Context, path: str, partitions: str, options: tuple[str, ...]) -> None:
    """Drop MDT partitions (indexes); a pending indexing of them is rolled back."""
    from hudi_md.write.table_setup import drop_metadata_indexes

    w = _writer(path, options)
    names = [p.strip() for p in partitions.split(",") if p.strip()]
    config = drop_metadata_indexes(w, names)
    click.echo(
        f"dropped {', '.join(names)} from the metadata table of {w.storage.uri()}; "
        f"it keeps {', '.join(config.metadata_partitions) or 'nothing'}"
    )


# --- table services ------------------------------------------------------------------------------


@main.command("clean")
@click.argument("path")
@_option
@_errors
def clean_cmd(path: str, options: tuple[str, ...]) -> None:
    """Delete file slices outside the retained commits (hoodie.cleaner.* options)."""
    from hudi_md.table.config import TableConfig
    from hudi_md.write import services
    from hudi_md.write.config import WriteConfig

    w = _writer(path, options)
    instant = services.clean(w, WriteConfig.from_options(w.options, TableConfig.load(w.storage)))
    click.echo(f"clean {instant}" if instant else "nothing to clean")


@main.command("compaction")
@click.argument("path")
@_option
@_errors
def compaction_cmd(path: str, options: tuple[str, ...]) -> None:
    """Schedule and run a MOR compaction of every slice with log files."""
    from hudi_md.write import services

    instant = services.compact(_writer(path, options))
    click.echo(f"compaction {instant}" if instant else "nothing to compact")


@main.command("rollback")
@click.argument("path")
@click.argument("instant")
@_option
@_errors
def rollback_cmd(path: str, instant: str, options: tuple[str, ...]) -> None:
    """Roll back the latest completed write INSTANT."""
    click.echo(f"rollback {_writer(path, options).rollback_commit(instant)}")


@main.command("restore")
@click.argument("path")
@click.argument("instant")
@_option
@_errors
def restore_cmd(path: str, instant: str, options: tuple[str, ...]) -> None:
    """Restore the table to its state right after INSTANT."""
    done = _writer(path, options).restore(instant)
    click.echo(f"restored to {instant}: {len(done)} rollbacks")


# --- the metastore's client side (the server's commands are hudi_md.metastore_server.cli's) ---------

_server = click.option(
    "--uri", default=None, help="the metastore server (default: hoodie.metaserver.uris of the options)"
)
_token = click.option(
    "--token",
    default=None,
    envvar="HUDI_MD_METASTORE_TOKEN",
    help="write token (or $HUDI_MD_METASTORE_TOKEN)",
)


def _metastore_options(options: tuple[str, ...], uri: str | None, token: str | None) -> dict[str, str]:
    opts = dict(item.split("=", 1) for item in options if "=" in item)
    opts["hoodie.metaserver.enabled"] = "true"
    if uri:
        opts["hoodie.metaserver.uris"] = uri
    if token:
        opts["hoodie.metaserver.token"] = token
    return opts


@metastore_group.command("register")
@click.argument("path")
@click.option("--db", "db", required=True, help="the database to register the table in (created if needed)")
@click.option("--table", "table", required=True, help="the table's name there")
@_server
@_token
@_option
@click.option("--progress/--no-progress", default=True, help="show a progress bar")
@_errors
def metastore_register(
    path: str,
    db: str,
    table: str,
    uri: str | None,
    token: str | None,
    options: tuple[str, ...],
    progress: bool,
) -> None:
    """Register the Hudi table at PATH as DB.TABLE, with its timeline."""
    from hudi_md.write.metastore_admin import register

    with _progress_bars(progress) as report:
        ref, done = register(
            path,
            db,
            table,
            _metastore_options(options, uri, token),
            progress=lambda n, t: report("timeline", n, t),
        )
    click.echo(f"registered {ref.location} as {ref.db}.{ref.table}: {done['created']} instants recorded")


@metastore_group.command("sync")
@click.argument("target")
@_server
@_token
@_option
@click.option("--progress/--no-progress", default=True, help="show a progress bar")
@_errors
def metastore_sync(
    target: str, uri: str | None, token: str | None, options: tuple[str, ...], progress: bool
) -> None:
    """Bring the metastore's timeline of a registered table (TARGET: its path or DB.TABLE) up to the
    table's own timeline."""
    from hudi_md.write.metastore_admin import sync

    with _progress_bars(progress) as report:
        ref, done = sync(
            target, _metastore_options(options, uri, token), progress=lambda n, t: report("timeline", n, t)
        )
    click.echo(
        f"{ref.db}.{ref.table}: {done['created']} instants recorded, {done['transitioned']} transitions, "
        f"{done['removed']} removed"
    )


@metastore_group.command("ls")
@click.argument("db", required=False)
@_server
@_token
@_option
@_json
@click.pass_context
@_errors
def metastore_ls(
    ctx: click.Context,
    db: str | None,
    uri: str | None,
    token: str | None,
    options: tuple[str, ...],
    as_json: bool,
) -> None:
    """The metastore's databases, or the tables of DB with their snapshot status."""
    from hudi_md.write.metastore_admin import listing

    _set_json(ctx, as_json)
    rows = listing(_metastore_options(options, uri, token), db)
    _emit(
        ctx, rows, lambda rs: "\n".join("  ".join(f"{k}={v}" for k, v in r.items()) for r in rs) or "(none)"
    )


main.add_command(metastore_group, "metastore")

if __name__ == "__main__":  # pragma: no cover
    main()
