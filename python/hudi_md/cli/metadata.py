"""``hudi-md metadata ...``: read, validate, build, repair and delete the metadata table."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

import click

from hudi_md.cli.common import (
    EXIT_FAILED,
    InputError,
    cli_writer,
    command_progress,
    emit,
    handle_errors,
    json_option,
    open_cli_state,
    option_flag,
    progress_option,
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
        raise InputError(
            f"{t.uri} has no readable metadata table"
            + (f": {reason}" if reason else " (hoodie.table.metadata.partitions lacks 'files')"),
            "'hudi-md metadata create PATH' builds one, 'hudi-md metadata repair PATH' rebuilds one",
        )
    return mdt


def _mdt_partition_names(text: str | None) -> list[str] | None:
    """``--partitions`` of create / repair: MDT partitions hudi-md builds, refused otherwise (the
    builders would fail half-way)."""
    from hudi_md.metadata import keys as K

    if text is None:
        return None
    names = [p.strip() for p in text.split(",") if p.strip()]
    unknown = [n for n in names if n not in K.MAINTAINED_PARTITIONS]
    if not names or unknown:
        raise InputError(
            f"--partitions {text!r}: "
            + (f"hudi-md cannot build {', '.join(unknown)}" if unknown else "names no partition"),
            f"hudi-md builds {', '.join(K.MAINTAINED_PARTITIONS)}",
        )
    return names


@metadata.command("list-partitions")
@click.argument("path")
@option_flag
@json_option('a list of {partition_path} ("" for a non-partitioned table)')
@handle_errors
def list_partitions(path: str, options: tuple[str, ...]) -> None:
    """All partitions, from the MDT `files` partition."""
    parts = _mdt(open_cli_state(path, options)).files.all_partitions()
    emit(
        [{"partition_path": p} for p in parts],
        lambda rows: "\n".join(r["partition_path"] or '""' for r in rows),
    )


@metadata.command("list-files")
@click.argument("path")
@option_flag
@json_option("a list of {partition_path, file_name, size} (size in bytes)")
@click.option("--partition", default=None, help="partition path (default: every partition)")
@handle_errors
def list_files(path: str, options: tuple[str, ...], partition: str | None) -> None:
    """Files the MDT lists, per partition (as recorded: including not-yet-cleaned files)."""
    t = open_cli_state(path, options)
    mdt = _mdt(t)
    every_partition = mdt.files.all_partitions()
    if partition is not None and partition not in every_partition:
        # Listing it would print nothing and exit 0, as if the partition existed and were empty.
        raise InputError(
            f"partition {partition!r} does not exist in {t.uri} ({len(every_partition)} partitions)",
            "'hudi-md metadata list-partitions PATH' lists them",
        )
    parts = [partition] if partition is not None else every_partition
    listing = mdt.files.files_in_partitions(parts)
    rows = [
        {"partition_path": p, "file_name": e.name, "size": e.size} for p in parts for e in listing.get(p, [])
    ]
    emit(rows, lambda rs: "\n".join(f"{r['partition_path']}\t{r['file_name']}\t{r['size']}" for r in rs))


@metadata.command("stats")
@click.argument("path")
@option_flag
@json_option(
    "an object {path, metadata_path, table_version, available_partitions, inflight_partitions, "
    "mdt_instants, latest_mdt_instant, last_mdt_compaction, deltacommits_since_last_compaction, "
    "valid_instants, partition_count, partitions: {MDT partition: {file_groups, base_files, log_files, "
    "max_log_files_per_file_group, total_size}}, reader_metrics, metrics, storage}"
)
@handle_errors
def stats(path: str, options: tuple[str, ...]) -> None:
    """MDT partitions, file groups, files and sizes; deltacommits since the last MDT compaction."""
    t = open_cli_state(path, options)
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

    emit(data, text)


@metadata.command("validate")
@click.argument("path")
@option_flag
@json_option(
    "an object {ok, differences: [{kind, partition_path, file_name, mdt_size, storage_size, detail, "
    "message}]}"
)
@progress_option
@handle_errors
def validate(path: str, options: tuple[str, ...]) -> None:
    """Compare the MDT with a storage listing (for a federated layout: the storage path), its
    indexes with the files, and the table's schema with its earlier commits' (schema_narrowed:
    columns a write dropped); report files no instant wrote (foreign_file). Print every difference,
    exit 1 on any."""
    from hudi_md.metadata.validate import validate_metadata_table

    with command_progress() as progress:
        t = open_cli_state(path, (*options, "hoodie.metadata.enable=true"))
        progress.say(f"validating the metadata table of {t.uri}...")
        diffs = validate_metadata_table(t, progress=lambda step: progress.say(f"  {step}"))
        progress.done(f"{len(diffs)} difference{'' if len(diffs) == 1 else 's'}")

    def text(data: dict[str, Any]) -> str:
        kinds = Counter(d["kind"] for d in data["differences"])
        return "\n".join(
            [
                *(d["message"] for d in data["differences"]),
                "OK: MDT matches storage"
                if data["ok"]
                else f"FAILED: {len(diffs)} differences {dict(kinds)}",
            ]
        )

    emit({"ok": not diffs, "differences": [d.to_dict() for d in diffs]}, text)
    if diffs:
        raise SystemExit(EXIT_FAILED)


@metadata.command("create")
@click.argument("path")
@option_flag
@click.option(
    "--partitions",
    default=None,
    help="MDT partitions to build (default: files,column_stats[,partition_stats] per the options)",
)
@json_option("an object {created: [MDT partitions built], metadata_partitions: [available after]}")
@progress_option
@handle_errors
def metadata_create(path: str, options: tuple[str, ...], partitions: str | None) -> None:
    """Build the MDT of an existing table from one listing (RFC-15 initialisation)."""
    from hudi_md.table.config import TableConfig
    from hudi_md.write.config import WriteConfig
    from hudi_md.write.table_setup import create_metadata_partitions, wanted_mdt_partitions

    asked = _mdt_partition_names(partitions)
    w = cli_writer(path, options)
    config = TableConfig.load(w.storage)
    if config.table_version != 9:
        raise InputError(
            f"hudi-md builds MDTs for table version 9; {path} is {config.table_version}",
            "Apache Hudi's own tools build MDTs of older tables",
        )
    cfg = WriteConfig.from_options(w.options, config)
    wanted = asked or wanted_mdt_partitions(cfg) or ["files"]
    missing: list[str] = []
    with command_progress() as progress:
        if not all(p in config.metadata_partitions for p in wanted):
            progress.say(f"building MDT partitions {', '.join(wanted)} of {w.storage.uri()}...")
            missing, config = create_metadata_partitions(w, wanted, progress=progress.bar)
            progress.done()

    def text(data: dict[str, Any]) -> str:
        if not data["created"]:
            return f"MDT partitions {', '.join(wanted)} already exist"
        return (
            f"created MDT partitions: {', '.join(data['created'])} "
            f"({', '.join(data['metadata_partitions'])} available)"
        )

    emit({"created": missing, "metadata_partitions": config.metadata_partitions}, text)


@metadata.command("repair")
@click.argument("path")
@option_flag
@click.option(
    "--partitions", default=None, help="MDT partitions to build (default: those the MDT had, at least files)"
)
@json_option("an object {path, metadata_partitions: [MDT partitions rebuilt]}")
@progress_option
@handle_errors
def metadata_repair(path: str, options: tuple[str, ...], partitions: str | None) -> None:
    """Rebuild the MDT from the files on storage (for a federated layout: every prefix under the
    storage path), keeping only files of completed instants. Safe to run again."""
    from hudi_md.write.table_setup import repair_metadata_table

    names = _mdt_partition_names(partitions)
    w = cli_writer(path, options)
    with command_progress() as progress:
        progress.say(f"rebuilding the metadata table of {w.storage.uri()} from a listing of its files...")
        config = repair_metadata_table(w, names, progress=progress.bar)
        progress.done()
    emit(
        {"path": w.storage.uri(), "metadata_partitions": config.metadata_partitions},
        lambda d: f"rebuilt the metadata table of {d['path']}: {', '.join(d['metadata_partitions'])}",
    )


@metadata.command("delete")
@click.argument("path")
@option_flag
@json_option("an object {path, metadata_partitions: [] (none left)}")
@handle_errors
def metadata_delete(path: str, options: tuple[str, ...]) -> None:
    """Delete the MDT and clear hoodie.table.metadata.partitions (config first, then files)."""
    from hudi_md.write.table_setup import delete_metadata

    w = cli_writer(path, options)
    config = delete_metadata(w)
    emit(
        {"path": w.storage.uri(), "metadata_partitions": config.metadata_partitions},
        lambda d: f"deleted the metadata table of {d['path']}",
    )


def dropped_indexes_text(data: dict[str, Any]) -> str:
    return (
        f"dropped {', '.join(data['dropped'])} from the metadata table of {data['path']}; "
        f"it keeps {', '.join(data['metadata_partitions']) or 'nothing'}"
    )


@metadata.command("drop-index")
@click.argument("path")
@click.argument("names", nargs=-1, required=True)
@option_flag
@json_option("an object {path, dropped: [indexes], metadata_partitions: [MDT partitions kept]}")
@handle_errors
def metadata_drop_index(path: str, names: tuple[str, ...], options: tuple[str, ...]) -> None:
    """Drop metadata-table indexes (e.g. secondary_index_<name>), as Hudi's DROP INDEX does."""
    from hudi_md.write.table_setup import drop_metadata_indexes

    w = cli_writer(path, options)
    config = drop_metadata_indexes(w, names)
    emit(
        {"path": w.storage.uri(), "dropped": list(names), "metadata_partitions": config.metadata_partitions},
        dropped_indexes_text,
    )


@metadata.command("init")
@click.argument("path")
@option_flag
@json_option(
    "an object {metadata_partitions: [available after], rolled_back: [failed write instants], "
    "compaction_instant: the MDT compaction run, or null}"
)
@progress_option
@handle_errors
def metadata_init(path: str, options: tuple[str, ...]) -> None:
    """Bring the MDT up to date: roll back failed writes, build missing partitions, compact if due."""
    from hudi_md.write import services
    from hudi_md.write.table_setup import bring_metadata_up_to_date

    w = cli_writer(path, options)
    with command_progress() as progress:
        progress.say(f"bringing the metadata table of {w.storage.uri()} up to date...")
        rolled, config = bring_metadata_up_to_date(w)
        progress.say(f"rolled back {len(rolled)} failed writes; compacting the metadata table if due...")
        compacted = services.compact_metadata_table(w)
        progress.done()
    data = {
        "metadata_partitions": config.metadata_partitions,
        "rolled_back": rolled,
        "compaction_instant": compacted,
    }

    def text(d: dict[str, Any]) -> str:
        return (
            f"MDT partitions: {', '.join(d['metadata_partitions']) or '(none)'}; "
            f"rolled back: {', '.join(d['rolled_back']) or 'nothing'}; "
            f"compaction: {d['compaction_instant'] or 'not due'}"
        )

    emit(data, text)
