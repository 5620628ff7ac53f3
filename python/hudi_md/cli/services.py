"""``hudi-md clean | compaction | rollback | restore``: table services run by hand."""

from __future__ import annotations

import click

from hudi_md.cli.common import cli_writer, handle_errors, option_flag


@click.command("clean")
@click.argument("path")
@option_flag
@handle_errors
def clean_cmd(path: str, options: tuple[str, ...]) -> None:
    """Delete file slices outside the retained commits (hoodie.cleaner.* options)."""
    from hudi_md.table.config import TableConfig
    from hudi_md.write import services
    from hudi_md.write.config import WriteConfig

    w = cli_writer(path, options)
    instant = services.clean(w, WriteConfig.from_options(w.options, TableConfig.load(w.storage)))
    click.echo(f"clean {instant}" if instant else "nothing to clean")


@click.command("compaction")
@click.argument("path")
@option_flag
@handle_errors
def compaction_cmd(path: str, options: tuple[str, ...]) -> None:
    """Schedule and run a MOR compaction of every slice with log files."""
    from hudi_md.write import services

    instant = services.compact(cli_writer(path, options))
    click.echo(f"compaction {instant}" if instant else "nothing to compact")


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
