"""Fixtures of the metastore server tests: every test that takes ``db_url`` runs on SQLite and on
PostgreSQL (a throwaway cluster from ``scripts/postgres``, one fresh database per test); ``api`` is
the server in-process with a write token; ``servers`` collects the server processes a test starts
(each stopped at its end)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from server_helpers import POSTGRES, Api, PgDatabases, Postgres, ServerProcess, make_api


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Postgres]:
    """The test cluster (``scripts/postgres start``); a cluster this session started is stopped at
    its end."""
    was_running = subprocess.run([str(POSTGRES), "status"], capture_output=True).returncode == 0
    started = subprocess.run([str(POSTGRES), "start"], capture_output=True, text=True, timeout=300)
    if started.returncode != 0:
        yield Postgres(None, f"scripts/postgres start failed: {started.stderr.strip()[-500:]}")
        return
    yield Postgres(started.stdout.strip().splitlines()[-1])
    if not was_running:
        subprocess.run([str(POSTGRES), "stop"], capture_output=True, timeout=120)


@pytest.fixture(scope="session")
def pg_databases(postgres_server: Postgres) -> Iterator[PgDatabases | None]:
    if postgres_server.url is None:
        yield None
        return
    dbs = PgDatabases(postgres_server.url)
    yield dbs
    dbs.drop_all()


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty metastore database: a SQLite file, or a new PostgreSQL database, dropped
    after the test (the cluster is started only when a PostgreSQL case runs)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'metastore.db'}"
        return
    databases: PgDatabases | None = request.getfixturevalue("pg_databases")
    if databases is None:
        pytest.skip(f"PostgreSQL is not available: {request.getfixturevalue('postgres_server').reason}")
    url = databases.create()
    yield url
    databases.drop(url)


@pytest.fixture
def api(db_url: str) -> Iterator[Api]:
    yield from make_api(db_url)


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[list[ServerProcess]]:
    """Started server processes of the test; each is stopped at its end."""
    started: list[ServerProcess] = []
    yield started
    for s in started:
        s.stop()
