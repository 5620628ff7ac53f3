"""``hudi-md``: scriptable table, timeline and metadata-table commands.

One module per command group: ``table`` (table show, timeline, read), ``commits``, ``metadata``, ``index``,
``services`` (clean, compaction, clustering, rollback, restore), ``metastore`` (the client side; the server's
commands come from ``hudi_md.metastore_server.cli``); ``common`` holds what they share.

The conventions every command keeps:

- **Output.** The result goes to stdout: text, or with ``--json`` (on the command, or
  ``hudi-md --json COMMAND``) one JSON document whose shape the command's ``--help`` names: a
  list of objects for listings, an object for a single result; keys are snake_case, numbers are
  numbers, an absent value is null. Nothing else is written to stdout.
- **Progress.** A long command (clean, compaction, rollback, restore, metadata validate / create
  / repair / init, index run, metastore register / sync) reports its steps on stderr; ``--quiet``
  (or ``--no-progress``) and ``--json`` silence it.
- **Errors.** A failure is one line on stderr, ``hudi-md: <what is at fault> (hint: <what to try>)``,
  never a traceback (``--debug`` or ``HUDI_MD_DEBUG=1`` print it too, and hudi-md's DEBUG log
  records). Exit codes:

  - 0: done (``metadata validate``: no difference found);
  - 1: the command ran and failed, or found problems: ``metadata validate``'s differences, a write
    conflict, a lock or indexing timeout, a corrupt file, a storage or metastore failure, a bug
    (``internal error``);
  - 2: the command refused what it was given: usage (unknown option, missing argument), a bad
    ``-o`` item or value, a path that is not a Hudi table (missing, a regular file), a
    filesystem package not installed for the path's scheme, an unknown partition, instant or
    index, a table the command cannot work on (no metadata table where one is needed, a
    feature hudi-md does not support).
"""

from __future__ import annotations

import click

from hudi_md.cli.commits import commits
from hudi_md.cli.common import HudiMdGroup, debug_option, json_option
from hudi_md.cli.index import index
from hudi_md.cli.metadata import metadata
from hudi_md.cli.metastore import metastore_group
from hudi_md.cli.services import clean_cmd, clustering_group, compaction_cmd, restore_cmd, rollback_cmd
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


@click.group(cls=HudiMdGroup)
@json_option("", help_text="print the command's result as JSON (as the command's --json does)")
@debug_option
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=lambda ctx, _param, wanted: _print_version(ctx) if wanted else None,
    help="print hudi-md's version and exit",
)
def main() -> None:
    """hudi-md: Apache Hudi tables and their metadata table, from Python.

    Results on stdout (--json: JSON), progress on stderr (--quiet: none), a failure as one line
    on stderr with exit code 1 (the command failed) or 2 (what it was given is wrong)."""


for command in (table, timeline_cmd, read_cmd, commits, metadata, index):
    main.add_command(command)
for command in (clean_cmd, compaction_cmd, rollback_cmd, restore_cmd):
    main.add_command(command)
main.add_command(clustering_group, "clustering")
main.add_command(metastore_group, "metastore")
