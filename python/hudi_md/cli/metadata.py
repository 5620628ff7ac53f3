"""``hudi-md metadata ...``: read, validate, build, repair and delete the metadata table."""

from __future__ import annotations

import json
import sys
from collections import Counter
from typing import TYPE_CHECKING, Any

import click

from hudi_md.cli.common import (
    cli_writer,
    emit,
    fail,
    handle_errors,
    json_flag,
    open_cli_table,
    option_flag,
    progress_bars,
    set_json,
)

if TYPE_CHECKING:
    from hudi_md.metadata.reader import MetadataTable
    from hudi_md.table.state import TableState


@click.group()
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
@option_flag
@json_flag
@click.pass_context
@handle_errors
def list_partitions(ctx: click.Context, path: str, options: tuple[str, ...], as_json: bool) -> None:
    """All partitions, from the MDT `files` partition."""
    set_json(ctx, as_json)
    parts = _mdt(open_cli_table(path, options)).files.all_partitions()
    emit(ctx, parts, lambda ps: "\n".join(p if p else '""' for p in ps))


@metadata.command("list-files")
@click.argument("path")
@option_flag
@json_flag
@click.option("--partition", default=None, help="partition path (default: every partition)")
@click.pass_context
@handle_errors
def list_files(
    ctx: click.Context, path: str, options: tuple[str, ...], as_json: bool, partition: str | None
) -> None:
    """Files the MDT lists, per partition (as recorded: including not-yet-cleaned files)."""
    set_json(ctx, as_json)
    t = open_cli_table(path, options)
    mdt = _mdt(t)
    every_partition = mdt.files.all_partitions()
    if partition is not None and partition not in every_partition:
        # Listing it would print nothing and exit 0, as if the partition existed and were empty.
        fail(
            f"partition {partition!r} does not exist in {t.uri} ({len(every_partition)} partitions)",
            "'hudi-md metadata list-partitions PATH' lists them",
        )
    parts = [partition] if partition is not None else every_partition
    listing = mdt.files.files_in_partitions(parts)
    rows = [
        {"partition_path": p, "file_name": e.name, "size": e.size} for p in parts for e in listing.get(p, [])
    ]
    emit(ctx, rows, lambda rs: "\n".join(f"{r['partition_path']}\t{r['file_name']}\t{r['size']}" for r in rs))


@metadata.command("stats")
@click.argument("path")
@option_flag
@json_flag
@click.pass_context
@handle_errors
def stats(ctx: click.Context, path: str, options: tuple[str, ...], as_json: bool) -> None:
    """MDT partitions, file groups, files and sizes; deltacommits since the last MDT compaction."""
    set_json(ctx, as_json)
    t = open_cli_table(path, options)
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

    emit(ctx, data, text)


@metadata.command("validate")
@click.argument("path")
@option_flag
@json_flag
@click.pass_context
@handle_errors
def validate(ctx: click.Context, path: str, options: tuple[str, ...], as_json: bool) -> None:
    """Compare the MDT with a storage listing, its indexes with the files, and the table's schema
    with its earlier commits' (schema_narrowed: columns a write dropped); print every difference,
    exit 1 on any."""
    set_json(ctx, as_json)
    t = open_cli_table(path, (*options, "hoodie.metadata.enable=true"))
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


@metadata.command("create")
@click.argument("path")
@option_flag
@click.option(
    "--partitions",
    default=None,
    help="MDT partitions to build (default: files,column_stats[,partition_stats] per the options)",
)
@click.option("--progress/--no-progress", default=True, help="show a progress bar")
@click.pass_context
@handle_errors
def metadata_create(
    ctx: click.Context, path: str, options: tuple[str, ...], partitions: str | None, progress: bool
) -> None:
    """Build the MDT of an existing table from one listing (RFC-15 initialisation)."""
    from hudi_md.table.config import TableConfig
    from hudi_md.write.config import WriteConfig
    from hudi_md.write.table_setup import create_metadata_partitions, wanted_mdt_partitions

    w = cli_writer(path, options)
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
    with progress_bars(progress) as report:
        missing, config = create_metadata_partitions(w, wanted, progress=report)
    click.echo(
        f"created MDT partitions: {', '.join(missing)} ({', '.join(config.metadata_partitions)} available)"
    )


@metadata.command("repair")
@click.argument("path")
@option_flag
@click.option(
    "--partitions", default=None, help="MDT partitions to build (default: those the MDT had, at least files)"
)
@click.option("--progress/--no-progress", default=True, help="show a progress bar")
@click.pass_context
@handle_errors
def metadata_repair(
    ctx: click.Context, path: str, options: tuple[str, ...], partitions: str | None, progress: bool
) -> None:
    """Rebuild the MDT from the files on storage (for a federated layout: every prefix under the
    storage path), keeping only files of completed instants. Safe to run again."""
    from hudi_md.write.table_setup import repair_metadata_table

    w = cli_writer(path, options)
    names = [p.strip() for p in partitions.split(",") if p.strip()] if partitions else None
    with progress_bars(progress) as report:
        config = repair_metadata_table(w, names, progress=report)
    click.echo(f"rebuilt the metadata table of {w.storage.uri()}: {', '.join(config.metadata_partitions)}")


@metadata.command("delete")
@click.argument("path")
@option_flag
@click.pass_context
@handle_errors
def metadata_delete(ctx: click.Context, path: str, options: tuple[str, ...]) -> None:
    """Delete the MDT and clear hoodie.table.metadata.partitions (config first, then files)."""
    from hudi_md.write.table_setup import delete_metadata

    w = cli_writer(path, options)
    delete_metadata(w)
    click.echo(f"deleted the metadata table of {w.storage.uri()}")


@metadata.command("drop-index")
@click.argument("path")
@click.argument("names", nargs=-1, required=True)
@option_flag
@click.pass_context
@handle_errors
def metadata_drop_index(
    ctx: click.Context, path: str, names: tuple[str, ...], options: tuple[str, ...]
) -> None:
    """Drop metadata-table indexes (e.g. secondary_index_<name>), as Hudi's DROP INDEX does."""
    from hudi_md.write.table_setup import drop_metadata_indexes

    w = cli_writer(path, options)
    config = drop_metadata_indexes(w, names)
    click.echo(
        f"dropped {', '.join(names)} from the metadata table of {w.storage.uri()}; "
        f"it keeps {', '.join(config.metadata_partitions) or 'nothing'}"
    )


@metadata.command("init")
@click.argument("path")
@option_flag
@click.pass_context
@handle_errors
def metadata_init(ctx: click.Context, path: str, options: tuple[str, ...]) -> None:
    """Bring the MDT up to date: roll back failed writes, build missing partitions, compact if due."""
    from hudi_md.write import services
    from hudi_md.write.table_setup import bring_metadata_up_to_date

    w = cli_writer(path, options)
    rolled, config = bring_metadata_up_to_date(w)
    compacted = services.compact_metadata_table(w)
    click.echo(
        f"MDT partitions: {', '.join(config.metadata_partitions) or '(none)'}; "
        f"rolled back: {', '.join(rolled) or 'nothing'}; compaction: {compacted or 'not due'}"
    )
