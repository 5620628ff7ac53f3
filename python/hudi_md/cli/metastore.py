"""The metastore's client commands (``hudi-md metastore register | sync | ls``), added to the
server's command group (``hudi_md.metastore_server.cli``: ``serve``, ``token create``)."""

from __future__ import annotations

from typing import Any

import click

from hudi_md.cli.common import (
    check_table_path,
    command_progress,
    emit,
    handle_errors,
    json_option,
    option_flag,
    parse_options,
    progress_option,
)
from hudi_md.metastore_server.cli import metastore as metastore_group

# the server's group with the client commands added below: what `hudi-md metastore` mounts
__all__ = ["metastore_group"]

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
    opts = parse_options(options)
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
@json_option("an object {db, table, location, instants_recorded}")
@progress_option
@handle_errors
def metastore_register(
    path: str, db: str, table: str, uri: str | None, token: str | None, options: tuple[str, ...]
) -> None:
    """Register the Hudi table at PATH as DB.TABLE, with its timeline."""
    from hudi_md.write.metastore_admin import register

    check_table_path(path)
    opts = metastore_options(options, uri, token)
    with command_progress() as progress:
        progress.say(f"registering {path} as {db}.{table}: recording its timeline...")
        ref, done = register(path, db, table, opts, progress=lambda n, t: progress.bar("timeline", n, t))
        progress.done()
    emit(
        {"db": ref.db, "table": ref.table, "location": ref.location, "instants_recorded": done["created"]},
        lambda d: (
            f"registered {d['location']} as {d['db']}.{d['table']}: {d['instants_recorded']} instants "
            "recorded"
        ),
    )


@metastore_group.command("sync")
@click.argument("target")
@_server
@_token
@option_flag
@json_option("an object {db, table, instants_recorded, transitions, removed, partition_types_corrected}")
@progress_option
@handle_errors
def metastore_sync(target: str, uri: str | None, token: str | None, options: tuple[str, ...]) -> None:
    """Bring the metastore's timeline of a registered table (TARGET: its path or DB.TABLE) up to the
    table's own timeline."""
    from hudi_md.write.metastore_admin import sync

    opts = metastore_options(options, uri, token)
    with command_progress() as progress:
        progress.say(f"syncing the metastore's timeline of {target}...")
        ref, done = sync(target, opts, progress=lambda n, t: progress.bar("timeline", n, t))
        progress.done()
    data = {
        "db": ref.db,
        "table": ref.table,
        "instants_recorded": done["created"],
        "transitions": done["transitioned"],
        "removed": done["removed"],
        "partition_types_corrected": done.get("partition_types_corrected", 0),
    }

    def text(d: dict[str, Any]) -> str:
        retyped = d["partition_types_corrected"]
        return (
            f"{d['db']}.{d['table']}: {d['instants_recorded']} instants recorded, {d['transitions']} "
            f"transitions, {d['removed']} removed"
            + (f", {retyped} partition column types corrected" if retyped else "")
        )

    emit(data, text)


@metastore_group.command("ls")
@click.argument("db", required=False)
@_server
@_token
@option_flag
@json_option(
    "a list of {database, location}, or with DB of {table, location, type, synced_instant, snapshot, pending}"
)
@handle_errors
def metastore_ls(db: str | None, uri: str | None, token: str | None, options: tuple[str, ...]) -> None:
    """The metastore's databases, or the tables of DB with their snapshot status."""
    from hudi_md.write.metastore_admin import listing

    rows = listing(metastore_options(options, uri, token), db)
    emit(rows, lambda rs: "\n".join("  ".join(f"{k}={v}" for k, v in r.items()) for r in rs) or "(none)")
