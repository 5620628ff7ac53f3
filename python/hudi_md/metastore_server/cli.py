"""``hudi-md metastore``: the metastore's commands (``serve``, ``token create``; the client's
``register``, ``sync`` and ``ls`` join this group).

Only click is imported here: the server's dependencies (FastAPI, SQLAlchemy, ...) load when a
command runs, so ``hudi-md`` starts as fast without them.
"""

from __future__ import annotations

import logging

import click

DB_HELP = (
    "the metastore's database: sqlite:///path or postgresql+psycopg://user:pw@host/db "
    "(default: $HUDI_MD_METASTORE_DB, else ~/.hudi-md/metastore.db)"
)


@click.group("metastore")
def metastore() -> None:
    """The metastore server (RFC-36): tables, partitions, timeline and file snapshots in a database."""


@metastore.command("serve")
@click.option("--db", "db_url", default=None, help=DB_HELP)
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=9090, show_default=True, type=int)
@click.option("--read-token-required", is_flag=True, help="reads need a bearer token too (writes always do)")
@click.option("--max-body-mb", default=16.0, show_default=True, type=float, help="request body limit")
@click.option(
    "--allowed-schemes",
    default="file,s3,s3a,gs,abfs,abfss,hdfs",
    show_default=True,
    help="URI schemes a table location may have",
)
@click.option(
    "--sync-interval", default=2.0, show_default=True, type=float, help="seconds between sync passes"
)
@click.option(
    "--thrift-port",
    default=None,
    type=int,
    help="also serve the Hive metastore API (Thrift) on this port, e.g. 9083 (needs the hms extra)",
)
@click.option(
    "--advertised-url",
    default=None,
    help="this server's HTTP URL as Spark should reach it, put in the tables the Hive metastore API "
    "returns as hoodie.metaserver.uris (default: http://<host>:<port>, the host name for 0.0.0.0)",
)
@click.option("--log-level", default="info", show_default=True)
def serve(
    db_url: str | None,
    host: str,
    port: int,
    read_token_required: bool,
    max_body_mb: float,
    allowed_schemes: str,
    sync_interval: float,
    thrift_port: int | None,
    advertised_url: str | None,
    log_level: str,
) -> None:
    """Serve the metastore over HTTP (migrating the database to the current schema first), and
    with --thrift-port the Hive metastore API beside it, in the same process: one database engine,
    and the HTTP app's background snapshot sync keeps what both answer current."""
    import uvicorn

    from hudi_md.metastore_server.app import ServerSettings, create_app
    from hudi_md.metastore_server.db import default_url

    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings = ServerSettings(
        db_url=db_url or default_url(),
        read_token_required=read_token_required,
        max_body_bytes=int(max_body_mb * 1024 * 1024),
        allowed_schemes=tuple(s.strip().lower() for s in allowed_schemes.split(",") if s.strip()),
        sync_poll_s=sync_interval,
    )
    if thrift_port is not None and read_token_required:
        # The Hive metastore API carries no bearer token: it could only answer reads anonymously.
        raise click.UsageError(
            "--thrift-port serves anonymous reads; it cannot be combined with --read-token-required"
        )
    app = create_app(settings)
    hms = None
    if thrift_port is not None:
        try:
            from hudi_md.metastore_server.hms.server import HmsServer
        except ImportError as e:
            raise click.ClickException(
                f"--thrift-port needs the hms extra (pip install 'hudi-md[metastore,hms]'): {e}"
            ) from e
        url = advertised_url or f"http://{_reachable(host)}:{port}"
        hms = HmsServer(app.state.engine, host, thrift_port, url, settings.max_body_bytes).start()
        click.echo(f"hudi-md metastore: Hive metastore API on thrift://{host}:{hms.port}", err=True)
    click.echo(f"hudi-md metastore on http://{host}:{port} ({_safe(settings.db_url)})", err=True)
    try:
        uvicorn.run(app, host=host, port=port, log_level=log_level.lower())
    finally:
        if hms is not None:
            hms.stop()


@metastore.group("token")
def token() -> None:
    """API tokens (writes need one; reads too with --read-token-required)."""


@token.command("create")
@click.option("--db", "db_url", default=None, help=DB_HELP)
@click.option("--name", default="", help="a label for the token")
def token_create(db_url: str | None, name: str) -> None:
    """Create a token and print it (the only time it is shown: the database keeps a salted hash)."""
    from hudi_md.metastore_server.auth import create_token
    from hudi_md.metastore_server.db import default_url, make_engine, migrate

    engine = make_engine(db_url or default_url())
    migrate(engine)
    click.echo(create_token(engine, name))
    engine.dispose()


def _reachable(host: str) -> str:
    """``host`` as clients reach it: the machine's name for a wildcard address."""
    import socket

    return socket.getfqdn() if host in ("0.0.0.0", "::", "") else host


def _safe(url: str) -> str:
    """The database URL without its password, for logs."""
    from sqlalchemy import make_url

    return make_url(url).render_as_string(hide_password=True)
