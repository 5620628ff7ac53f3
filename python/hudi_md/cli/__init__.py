"""``hudi-md``: scriptable table, timeline and metadata-table commands (``--json`` for machines).

One module per command group: ``table`` (table show, timeline, read), ``commits``, ``metadata``, ``index``,
``services`` (clean, compaction, rollback, restore), ``metastore`` (the client side; the server's
commands come from ``hudi_md.metastore_server.cli``); ``common`` holds what they share.
"""

from __future__ import annotations

import click

from hudi_md.cli.commits import commits
from hudi_md.cli.index import index
from hudi_md.cli.metadata import metadata
from hudi_md.cli.metastore import metastore_group
from hudi_md.cli.services import clean_cmd, compaction_cmd, restore_cmd, rollback_cmd
from hudi_md.cli.table import read_cmd, table, timeline_cmd

__all__ = ["main"]


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("hudi-md")
    except PackageNotFoundError:
        # Run from a source tree that was never installed.
        import hudi_md

        return str(getattr(hudi_md, "__version__", "unknown"))


def _print_version(ctx: click.Context) -> None:
    click.echo(f"hudi-md {_version()}")
    ctx.exit(0)


@click.group()
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=lambda ctx, _param, wanted: _print_version(ctx) if wanted else None,
    help="print hudi-md's version and exit",
)
@click.pass_context
def main(ctx: click.Context, as_json: bool) -> None:
    """hudi-md: Apache Hudi tables and their metadata table, from Python."""
    ctx.ensure_object(dict)
    ctx.obj["json"] = as_json


for command in (table, timeline_cmd, read_cmd, commits, metadata, index):
    main.add_command(command)
for command in (clean_cmd, compaction_cmd, rollback_cmd, restore_cmd):
    main.add_command(command)
main.add_command(metastore_group, "metastore")
