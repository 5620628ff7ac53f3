"""The database under the metastore: engines for SQLite (the embedded default) and PostgreSQL,
transactions, and the Alembic migrations the server runs at start.

Every piece of state is in the database, so any number of server processes can share one. What
must not interleave is serialized by the database itself:

* PostgreSQL: row locks (``SELECT ... FOR UPDATE`` on the table's ``tbl`` row) around instant
  completion and snapshot sync, compare-and-set updates for instant times;
* SQLite: write transactions start with ``BEGIN IMMEDIATE`` (one writer at a time, others wait
  up to the busy timeout instead of failing when a read transaction upgrades), in WAL mode so
  readers never wait for the writer.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

DB_ENV = "HUDI_MD_METASTORE_DB"
# Write transactions ask SQLite for the write lock up front (see the module docstring).
_WRITE = "hudi_md_write"
SQLITE_BUSY_TIMEOUT_MS = 30_000
# Serializes concurrent migrations on PostgreSQL (two servers starting at once).
_MIGRATION_LOCK_KEY = 0x4D455441  # "META"
# Alembic's `context` is one module-level proxy: one migration per process at a time.
_migrating = threading.Lock()


def default_url() -> str:
    """``$HUDI_MD_METASTORE_DB``, else a SQLite file in ``~/.hudi-md/``."""
    env = os.environ.get(DB_ENV)
    if env:
        return env
    path = Path.home() / ".hudi-md" / "metastore.db"
    return f"sqlite:///{path}"


def make_engine(url: str) -> Engine:
    """An engine for ``url`` (``sqlite:///path`` or ``postgresql+psycopg://...``), set up for
    several processes sharing the database."""
    parsed = sa.make_url(url)
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database or ""
        if database in ("", ":memory:"):
            raise ValueError("the metastore needs a SQLite file (sqlite:///path), not an in-memory database")
        Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        engine = sa.create_engine(
            parsed.set(database=str(Path(database).expanduser())),
            connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000},
        )
        _sqlite_events(engine)
        return engine
    return sa.create_engine(parsed, pool_pre_ping=True, pool_size=5, max_overflow=10)


def _sqlite_events(engine: Engine) -> None:
    @sa.event.listens_for(engine, "connect")
    def _connect(dbapi_conn: Any, _record: Any) -> None:
        # The driver's own transaction handling would BEGIN lazily (DEFERRED) behind our back;
        # with it off, the "begin" event below decides how each transaction starts.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        # the timeout first: switching a new database to WAL takes its lock, which another process
        # starting at once (both migrating) may hold; without a timeout that fails at once
        cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()

    @sa.event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get(_WRITE) else "BEGIN")


def is_postgres(conn: Connection | Engine) -> bool:
    return conn.dialect.name == "postgresql"


@contextmanager
def read_tx(engine: Engine) -> Iterator[Connection]:
    """A read transaction: one consistent snapshot on both databases (SQLite's WAL read
    transaction; PostgreSQL's ``REPEATABLE READ``, where its default, ``READ COMMITTED``, would
    let each statement see other commits)."""
    if is_postgres(engine):
        engine = engine.execution_options(isolation_level="REPEATABLE READ")
    with engine.begin() as conn:
        yield conn


@contextmanager
def write_tx(engine: Engine) -> Iterator[Connection]:
    """A write transaction: committed when the block ends, rolled back on an exception."""
    with engine.execution_options(**{_WRITE: True}).begin() as conn:
        yield conn


# SQLite database -> the partition count its statistics were gathered at
_ANALYZED: dict[str, int] = {}
_ANALYZED_LOCK = threading.Lock()
# statistics are gathered when a database first has this many partitions, then at every doubling
ANALYZE_MIN_PARTITIONS = 256


def refresh_statistics(engine: Engine) -> bool:
    """Gather the query planner's statistics (``ANALYZE``) when the partitions have doubled since
    they were last gathered by this process; whether it ran. Without them SQLite tests every
    partition of a table against a pruning filter (8 ms at 10k partitions) instead of looking the
    matching values up by index (2 ms). PostgreSQL's autovacuum gathers its own, but up to a
    minute after a bulk registration: the plans in between ran at the MDT's speed."""
    key = str(engine.url)
    with engine.connect() as conn:
        count = int(conn.exec_driver_sql("SELECT count(*) FROM partitions").scalar() or 0)
    with _ANALYZED_LOCK:
        if count < max(ANALYZE_MIN_PARTITIONS, 2 * _ANALYZED.get(key, 0)):
            return False
        _ANALYZED[key] = count
    if is_postgres(engine):
        from hudi_md.metastore_server.schema import metadata

        # only the metastore's own tables: the database may hold others
        with engine.connect() as conn:
            conn.exec_driver_sql("ANALYZE " + ", ".join(t.name for t in metadata.sorted_tables))
            conn.commit()
        return True
    with write_tx(engine) as conn:
        conn.exec_driver_sql("ANALYZE")
    return True


def migrate(engine: Engine) -> None:
    """``alembic upgrade head`` on ``engine``'s database (safe to run from several processes at
    once: the migration's transaction holds the database's write lock / an advisory lock)."""
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(Path(__file__).parent / "migrations"))
    with _migrating, engine.execution_options(**{_WRITE: True}).connect() as conn:
        cfg.attributes["connection"] = conn
        cfg.attributes["lock_key"] = _MIGRATION_LOCK_KEY
        command.upgrade(cfg, "head")
