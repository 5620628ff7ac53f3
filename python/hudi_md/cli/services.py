"""``hudi-md clean | compaction | rollback | restore``: table services run by hand."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import click

from hudi_md.cli.common import cli_writer, handle_errors, option_flag

if TYPE_CHECKING:
    from hudi_md.write.writer import HudiWriter

quiet_flag = click.option("--quiet", "-q", is_flag=True, help="no progress lines on stderr")


class _Steps:
    """One progress line per step on stderr (stdout keeps only the result, for scripts)."""

    def __init__(self, quiet: bool) -> None:
        self._quiet = quiet
        self._started = time.monotonic()

    def say(self, line: str) -> None:
        if not self._quiet:
            click.echo(line, err=True)

    def done(self, what: str) -> None:
        self.say(f"{what} in {time.monotonic() - self._started:.1f} s")


def _instant_summary(writer: HudiWriter, instant: str, action: str) -> dict[str, object]:
    """The completed instant's metadata, for the closing progress line; empty if unreadable (the
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
@quiet_flag
@handle_errors
def clean_cmd(path: str, options: tuple[str, ...], quiet: bool) -> None:
    """Delete file slices outside the retained commits (hoodie.cleaner.* options)."""
    from hudi_md.table.config import TableConfig
    from hudi_md.write import services
    from hudi_md.write.config import WriteConfig

    steps = _Steps(quiet)
    w = cli_writer(path, options)
    cfg = WriteConfig.from_options(w.options, TableConfig.load(w.storage))
    steps.say(
        f"cleaning {w.storage.uri()}: planning which file slices the retained commits no longer need..."
    )
    instant = services.clean(w, cfg)
    if instant:
        deleted = _instant_summary(w, instant, "clean").get("totalFilesDeleted")
        steps.say(
            f"clean {instant} completed" + (f": {deleted} files deleted" if deleted is not None else "")
        )
    steps.done("done")
    click.echo(f"clean {instant}" if instant else "nothing to clean")


@click.command("compaction")
@click.argument("path")
@option_flag
@quiet_flag
@handle_errors
def compaction_cmd(path: str, options: tuple[str, ...], quiet: bool) -> None:
    """Schedule and run a MOR compaction of every slice with log files."""
    from hudi_md.write import services

    steps = _Steps(quiet)
    w = cli_writer(path, options)
    steps.say(f"compacting {w.storage.uri()}: scheduling every file slice with log files...")
    instant = services.compact(w)
    if instant:
        groups = sum(len(s or ()) for s in _partition_stats(_instant_summary(w, instant, "commit")))
        steps.say(f"compaction {instant} completed: {groups} file groups compacted")
    steps.done("done")
    click.echo(f"compaction {instant}" if instant else "nothing to compact")


def _partition_stats(metadata: dict[str, object]) -> list[list[object]]:
    stats = metadata.get("partitionToWriteStats")
    return [list(v) for v in stats.values() if isinstance(v, list)] if isinstance(stats, dict) else []


@click.command("rollback")
@click.argument("path")
@click.argument("instant")
@option_flag
@handle_errors
def rollback_cmd(path: str, instant: str, options: tuple[str, ...]) -> None:
    """Roll back the latest completed write INSTANT."""
    click.echo(f"rollback {cli_writer(path, options).rollback_commit(instant)}")


@click.command("restore")
@click.argument("path")
@click.argument("instant")
@option_flag
@handle_errors
def restore_cmd(path: str, instant: str, options: tuple[str, ...]) -> None:
    """Restore the table to its state right after INSTANT."""
    done = cli_writer(path, options).restore(instant)
    click.echo(f"restored to {instant}: {len(done)} rollbacks")
