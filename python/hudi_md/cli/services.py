"""``hudi-md clean | compaction | rollback | restore``: table services run by hand."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from hudi_md.cli.common import (
    InputError,
    cli_writer,
    command_progress,
    emit,
    handle_errors,
    json_option,
    option_flag,
    progress_option,
)

if TYPE_CHECKING:
    from hudi_md.write.writer import HudiWriter


def _instant_summary(writer: HudiWriter, instant: str, action: str) -> dict[str, Any]:
    """The completed instant's metadata, for the result's figures; empty if unreadable (the
    service is done either way, a summary must not turn it into a failure)."""
    try:
        timeline = writer.timeline().completed()
        found = timeline.get(instant, action)
        return timeline.metadata(found) if found is not None else {}
    except Exception:
        return {}


@click.command("clean")
@click.argument("path")
@option_flag
@json_option("an object {instant: the clean instant, or null when nothing was cleaned, files_deleted}")
@progress_option
@handle_errors
def clean_cmd(path: str, options: tuple[str, ...]) -> None:
    """Delete file slices outside the retained commits (hoodie.cleaner.* options)."""
    from hudi_md.table.config import TableConfig
    from hudi_md.write import services
    from hudi_md.write.config import WriteConfig

    w = cli_writer(path, options)
    cfg = WriteConfig.from_options(w.options, TableConfig.load(w.storage))
    deleted: int | None = 0
    with command_progress() as progress:
        progress.say(
            f"cleaning {w.storage.uri()}: planning which file slices the retained commits no longer need..."
        )
        instant = services.clean(w, cfg)
        if instant:
            found = _instant_summary(w, instant, "clean").get("totalFilesDeleted")
            deleted = int(found) if found is not None else None
            progress.say(
                f"clean {instant} completed" + (f": {deleted} files deleted" if deleted is not None else "")
            )
        progress.done()
    emit(
        {"instant": instant, "files_deleted": deleted},
        lambda d: f"clean {d['instant']}" if d["instant"] else "nothing to clean",
    )


@click.command("compaction")
@click.argument("path")
@option_flag
@json_option(
    "an object {instant: the compaction instant, or null when nothing was compacted, file_groups_compacted}"
)
@progress_option
@handle_errors
def compaction_cmd(path: str, options: tuple[str, ...]) -> None:
    """Schedule and run a MOR compaction of every slice with log files."""
    from hudi_md.write import services

    w = cli_writer(path, options)
    groups = 0
    with command_progress() as progress:
        progress.say(f"compacting {w.storage.uri()}: scheduling every file slice with log files...")
        instant = services.compact(w)
        if instant:
            groups = sum(len(s or ()) for s in _partition_stats(_instant_summary(w, instant, "commit")))
            progress.say(f"compaction {instant} completed: {groups} file groups compacted")
        progress.done()
    emit(
        {"instant": instant, "file_groups_compacted": groups},
        lambda d: f"compaction {d['instant']}" if d["instant"] else "nothing to compact",
    )


def _partition_stats(metadata: dict[str, object]) -> list[list[object]]:
    stats = metadata.get("partitionToWriteStats")
    return [list(v) for v in stats.values() if isinstance(v, list)] if isinstance(stats, dict) else []


def _check_write_instant(writer: HudiWriter, instant: str) -> None:
    """Refuse an INSTANT that is no completed write before reporting any progress (the writer
    checks it again under the table lock)."""
    if writer.timeline().write_timeline().get(instant) is None:
        raise InputError(
            f"no completed write instant {instant} in {writer.storage.uri()}",
            "'hudi-md commits show PATH' lists them",
        )


@click.command("rollback")
@click.argument("path")
@click.argument("instant")
@option_flag
@json_option("an object {instant: the rollback instant, rolled_back: INSTANT}")
@progress_option
@handle_errors
def rollback_cmd(path: str, instant: str, options: tuple[str, ...]) -> None:
    """Roll back the latest completed write INSTANT."""
    w = cli_writer(path, options)
    _check_write_instant(w, instant)
    with command_progress() as progress:
        progress.say(f"rolling back {instant} of {w.storage.uri()}...")
        done = w.rollback_commit(instant)
        progress.done()
    emit({"instant": done, "rolled_back": instant}, lambda d: f"rollback {d['instant']}")


@click.command("restore")
@click.argument("path")
@click.argument("instant")
@option_flag
@json_option(
    "an object {restored_to: INSTANT, rollback_instants: [one rollback per later write, newest first]}"
)
@progress_option
@handle_errors
def restore_cmd(path: str, instant: str, options: tuple[str, ...]) -> None:
    """Restore the table to its state right after INSTANT."""
    w = cli_writer(path, options)
    _check_write_instant(w, instant)
    with command_progress() as progress:
        progress.say(f"restoring {w.storage.uri()} to {instant}: rolling back every later write...")
        done = w.restore(instant)
        progress.done()
    emit(
        {"restored_to": instant, "rollback_instants": done},
        lambda d: f"restored to {d['restored_to']}: {len(d['rollback_instants'])} rollbacks",
    )
