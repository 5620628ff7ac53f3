"""``hudi-md table show``, ``timeline``, ``read``: a table, its timeline, its rows."""

from __future__ import annotations

import json
from typing import Any

import click

from hudi_md.cli.common import emit, handle_errors, json_flag, open_cli_table, option_flag, set_json
from hudi_md.planning.expressions import and_
from hudi_md.planning.filter_text import parse_filter_text


@click.group()
def table() -> None:
    """Table-level commands."""


@table.command("show")
@click.argument("path")
@option_flag
@json_flag
@click.pass_context
@handle_errors
def table_show(ctx: click.Context, path: str, options: tuple[str, ...], as_json: bool) -> None:
    """Table config, type, version, partitioning and what the MDT holds."""
    set_json(ctx, as_json)
    t = open_cli_table(path, options)
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

    emit(ctx, data, text)


# --- timeline ------------------------------------------------------------------------------------


@click.command("timeline")
@click.argument("path")
@option_flag
@json_flag
@click.option("--metadata", "of_metadata", is_flag=True, help="the MDT's timeline instead")
@click.pass_context
@handle_errors
def timeline_cmd(
    ctx: click.Context, path: str, options: tuple[str, ...], as_json: bool, of_metadata: bool
) -> None:
    """Instants of the active timeline: requested time, action, state, completion time."""
    set_json(ctx, as_json)
    t = open_cli_table(path, options)
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
    emit(
        ctx,
        rows,
        lambda rs: "\n".join(
            f"{r['requested_time']}  {r['action']:<14} {r['state']:<10} {r['completion_time'] or ''}"
            for r in rs
        ),
    )


# --- read ----------------------------------------------------------------------------------------


@click.command("read")
@click.argument("path")
@option_flag
@json_flag
@click.option("--limit", type=int, default=20, show_default=True)
@click.option("--columns", help="comma-separated columns")
@click.option("--as-of", "as_of", help="time travel instant")
@click.option(
    "--query-type", type=click.Choice(["snapshot", "read_optimized", "incremental"]), default="snapshot"
)
@click.option("--start", help="incremental start (exclusive)")
@click.option("--end", help="incremental end (inclusive)")
@click.option(
    "--filter",
    "filters",
    multiple=True,
    help='a SQL-style condition, e.g. "city = \'sf\' AND fare > 20" or "city IN (sf, nyc)": '
    "= != <> < <= > >= [NOT] IN (...), [NOT] BETWEEN a AND b, IS [NOT] NULL, AND, OR, NOT, parentheses; "
    "'quoted' strings ('' for a quote), `quoted` columns. Repeated filters must all hold.",
)
@click.pass_context
@handle_errors
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
    set_json(ctx, as_json)
    t = open_cli_table(path, options)
    rows = t.read(
        filters=and_(*(parse_filter_text(f) for f in filters)) if filters else None,
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
