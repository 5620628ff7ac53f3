"""``hudi-md table show``, ``timeline``, ``read``: a table, its timeline, its rows."""

from __future__ import annotations

import json
from typing import Any

import click

from hudi_md.cli.common import (
    InputError,
    emit,
    handle_errors,
    json_default,
    json_option,
    open_cli_state,
    open_cli_table,
    option_flag,
)
from hudi_md.planning.expressions import and_
from hudi_md.planning.filter_text import parse_filter_text


@click.group()
def table() -> None:
    """Table-level commands."""


@table.command("show")
@click.argument("path")
@option_flag
@json_option(
    "an object {path, name, table_type, table_version, partition_fields, record_key_fields, "
    "ordering_fields, keygen, record_merge_mode, metadata_partitions, metadata_partitions_inflight, "
    "latest_commit, instants, properties: {hoodie.properties key: value}}"
)
@handle_errors
def table_show(path: str, options: tuple[str, ...]) -> None:
    """Table config, type, version, partitioning and what the MDT holds."""
    t = open_cli_state(path, options)
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

    emit(data, text)


# --- timeline ------------------------------------------------------------------------------------


@click.command("timeline")
@click.argument("path")
@option_flag
@json_option("a list of {requested_time, action, state, completion_time} (null while pending), oldest first")
@click.option("--metadata", "of_metadata", is_flag=True, help="the MDT's timeline instead")
@handle_errors
def timeline_cmd(path: str, options: tuple[str, ...], of_metadata: bool) -> None:
    """Instants of the active timeline: requested time, action, state, completion time."""
    t = open_cli_state(path, options)
    tl = t.timeline
    if of_metadata:
        mdt = t.metadata_table
        if mdt is None:
            raise InputError(
                f"{t.uri} has no readable metadata table"
                + (f": {t.metadata_error}" if t.metadata_error else ""),
                "'hudi-md metadata create PATH' builds one",
            )
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
@json_option(
    "an object {total_rows, rows: [one object per row, column: value]} (times as ISO 8601, decimals "
    "as strings, bytes as base64)"
)
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
@handle_errors
def read_cmd(
    path: str,
    options: tuple[str, ...],
    limit: int,
    columns: str | None,
    as_of: str | None,
    query_type: str,
    start: str | None,
    end: str | None,
    filters: tuple[str, ...],
) -> None:
    """Print rows of the table: one JSON object per line, then the row count (--limit -1: every
    row)."""
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

    def text(data: dict[str, Any]) -> str:
        lines = [json.dumps(r, default=json_default) for r in data["rows"]]
        shown = len(data["rows"])
        return "\n".join([*lines, f"({total} rows{'' if total <= shown else f', {shown} shown'})"])

    emit({"total_rows": total, "rows": head.to_pylist()}, text)
