"""Fixtures of the metastore server tests: every test that takes ``db_url`` runs on SQLite and on
PostgreSQL (a throwaway cluster from ``scripts/postgres``, one fresh database per test); ``api`` is
the server in-process with a write token; ``servers`` collects the server processes a test starts
(each stopped at its end)."""

from __future__ import annotations

import fcntl
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from server_helpers import POSTGRES, REPO, Api, PgDatabases, Postgres, ServerProcess, make_api

# Pytest sessions of several Spark lines run side by side (scripts/test) and share the cluster: each
# registers its pid here while it uses it, and the last one leaving stops a cluster a session
# started (one running before any session is left running). A lock makes start + register and
# unregister + stop atomic, so no session stops the cluster between another's start and its use.
_USERS = REPO / "build" / "postgres-users"
_STARTED_BY_TESTS = _USERS / ".started"


@contextmanager
def _cluster_lock() -> Iterator[None]:
    _USERS.mkdir(parents=True, exist_ok=True)
    with open(_USERS / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _other_live_users() -> bool:
    alive = False
    for f in _USERS.iterdir():
        if not f.name.isdigit() or int(f.name) == os.getpid():
            continue
        try:
            os.kill(int(f.name), 0)
        except ProcessLookupError:
            f.unlink(missing_ok=True)  # a session that died without leaving
            continue
        except PermissionError:
            pass
        alive = True
    return alive


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Postgres]:
    """The test cluster (``scripts/postgres start``), shared with the sessions running beside this
    one; the last of them stops it if a test session started it."""
    me = _USERS / str(os.getpid())
    with _cluster_lock():
        was_running = subprocess.run([str(POSTGRES), "status"], capture_output=True).returncode == 0
        started = subprocess.run([str(POSTGRES), "start"], capture_output=True, text=True, timeout=300)
        if started.returncode == 0:
            me.touch()
            if not was_running:
                _STARTED_BY_TESTS.touch()
    if started.returncode != 0:
        yield Postgres(None, f"scripts/postgres start failed: {started.stderr.strip()[-500:]}")
        return
    try:
        yield Postgres(started.stdout.strip().splitlines()[-1])
    finally:
        with _cluster_lock():
            me.unlink(missing_ok=True)
            if _STARTED_BY_TESTS.exists() and not _other_live_users():
                subprocess.run([str(POSTGRES), "stop"], capture_output=True, timeout=120)
                _STARTED_BY_TESTS.unlink(missing_ok=True)


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
