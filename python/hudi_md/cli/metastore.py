"""The metastore's client commands (``hudi-md metastore register | sync | ls``), added to the
server's command group (``hudi_md.metastore_server.cli``: ``serve``, ``token create``)."""

from __future__ import annotations

import click

from hudi_md.cli.common import emit, handle_errors, json_flag, option_flag, progress_bars, set_json
from hudi_md.metastore_server.cli import metastore as metastore_group

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


def metastore_options(options: tuple[str, ...], uri: str | None, token: str | None) -> dict[str, str]:
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
@option_flag
@click.option("--progress/--no-progress", default=True, help="show a progress bar")
@handle_errors
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

    with progress_bars(progress) as report:
        ref, done = register(
            path,
            db,
            table,
            metastore_options(options, uri, token),
            progress=lambda n, t: report("timeline", n, t),
        )
    click.echo(f"registered {ref.location} as {ref.db}.{ref.table}: {done['created']} instants recorded")


@metastore_group.command("sync")
@click.argument("target")
@_server
@_token
@option_flag
@click.option("--progress/--no-progress", default=True, help="show a progress bar")
@handle_errors
def metastore_sync(
    target: str, uri: str | None, token: str | None, options: tuple[str, ...], progress: bool
) -> None:
    """Bring the metastore's timeline of a registered table (TARGET: its path or DB.TABLE) up to the
    table's own timeline."""
    from hudi_md.write.metastore_admin import sync

    with progress_bars(progress) as report:
        ref, done = sync(
            target, metastore_options(options, uri, token), progress=lambda n, t: report("timeline", n, t)
        )
    retyped = done.get("partition_types_corrected", 0)
    click.echo(
        f"{ref.db}.{ref.table}: {done['created']} instants recorded, {done['transitioned']} transitions, "
        f"{done['removed']} removed" + (f", {retyped} partition column types corrected" if retyped else "")
    )


@metastore_group.command("ls")
@click.argument("db", required=False)
@_server
@_token
@option_flag
@json_flag
@click.pass_context
@handle_errors
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

    set_json(ctx, as_json)
    rows = listing(metastore_options(options, uri, token), db)
    emit(ctx, rows, lambda rs: "\n".join("  ".join(f"{k}={v}" for k, v in r.items()) for r in rs) or "(none)")
