"""Helpers of the metastore server tests: the server in-process (:class:`Api`, FastAPI's
TestClient with a write token), real ``hudi-md metastore serve`` processes (:class:`ServerProcess`),
commit metadata, and the PostgreSQL test databases."""

from __future__ import annotations

import base64
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import sqlalchemy as sa
from fastapi.testclient import TestClient

from hudi_md.metastore_server.app import ServerSettings, create_app
from hudi_md.metastore_server.auth import create_token

REPO = Path(__file__).resolve().parents[2]
POSTGRES = REPO / "scripts" / "postgres"
HUDI_MD = Path(sys.executable).with_name("hudi-md")


@dataclass
class Postgres:
    url: str | None  # the test cluster's maintenance database; None when it could not start
    reason: str = ""


@dataclass
class PgDatabases:
    admin_url: str
    made: list[str] = field(default_factory=list)

    def create(self) -> str:
        name = f"hudi_md_test_{os.getpid()}_{secrets.token_hex(4)}"
        engine = sa.create_engine(self.admin_url, isolation_level="AUTOCOMMIT")
        with engine.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
        engine.dispose()
        self.made.append(name)
        return str(sa.make_url(self.admin_url).set(database=name).render_as_string(hide_password=False))

    def drop(self, url: str) -> None:
        name = sa.make_url(url).database
        engine = sa.create_engine(self.admin_url, isolation_level="AUTOCOMMIT")
        with engine.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        engine.dispose()
        if name in self.made:
            self.made.remove(name)

    def drop_all(self) -> None:
        engine = sa.create_engine(self.admin_url, isolation_level="AUTOCOMMIT")
        with engine.connect() as conn:
            for name in self.made:
                conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        engine.dispose()
        self.made.clear()


def engine_of(url: str) -> sa.Engine:
    from hudi_md.metastore_server.db import make_engine

    return make_engine(url)


# --- the server in-process ----------------------------------------------------------------------------


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


@dataclass
class Api:
    """The server through FastAPI's TestClient, with a write token."""

    client: TestClient
    token: str
    app: Any

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    @property
    def engine(self) -> sa.Engine:
        return self.app.state.engine

    def post(self, path: str, body: Any = None, **kw: Any) -> httpx.Response:
        return self.client.post(path, json=body, headers=self.auth, **kw)

    def delete(self, path: str) -> httpx.Response:
        return self.client.delete(path, headers=self.auth)

    def get(self, path: str, **kw: Any) -> httpx.Response:
        return self.client.get(path, **kw)

    def ok(self, response: httpx.Response, status: int = 200) -> Any:
        assert response.status_code == status, response.text
        return response.json() if response.content else None

    # --- set-up helpers ----------------------------------------------------------------------------

    def table(
        self,
        db: str = "db1",
        name: str = "t1",
        location: str = "/data/t1",
        partition_fields: list[dict[str, str]] | None = None,
        params: dict[str, str] | None = None,
        table_type: str = "COPY_ON_WRITE",
    ) -> str:
        """Create the database (if new) and the table; returns the table's route."""
        r = self.post("/v1/databases", {"name": db})
        assert r.status_code in (201, 409), r.text
        body = {
            "name": name,
            "location": location,
            "table_type": table_type,
            "partition_fields": partition_fields
            if partition_fields is not None
            else [{"name": "city", "type": "string"}],
            "params": params
            if params is not None
            else {"hoodie.datasource.write.hive_style_partitioning": "true"},
        }
        self.ok(self.post(f"/v1/databases/{db}/tables", body), 201)
        return f"/v1/databases/{db}/tables/{name}"

    def instant_time(self, route: str) -> str:
        return self.ok(self.post(f"{route}/instant-times", {}))["instant_time"]

    def commit(
        self,
        route: str,
        ts: str,
        meta: dict[str, Any] | bytes,
        action: str = "commit",
        *,
        completion_time: str | None = None,
        plan: bytes = b"",
    ) -> httpx.Response:
        """Create ``ts`` and take it to completed; the completion's response."""
        self.ok(
            self.post(
                f"{route}/instants", {"requested_time": ts, "action": action, "metadata_b64": b64(plan)}
            ),
            201,
        )
        self.ok(
            self.post(
                f"{route}/instants/{ts}/transition",
                {"action": action, "from_state": "requested", "to_state": "inflight"},
            )
        )
        return self.commit_transition(route, ts, action, meta, completion_time=completion_time)

    def commit_transition(
        self,
        route: str,
        ts: str,
        action: str,
        meta: dict[str, Any] | bytes,
        *,
        completion_time: str | None = None,
    ) -> httpx.Response:
        """inflight → completed with ``meta``; the response."""
        data = meta if isinstance(meta, bytes) else json.dumps(meta).encode()
        body: dict[str, Any] = {
            "action": action,
            "from_state": "inflight",
            "to_state": "completed",
            "metadata_b64": b64(data),
        }
        if completion_time is not None:
            body["completion_time"] = completion_time
        return self.post(f"{route}/instants/{ts}/transition", body)


def commit_meta(
    ts: str, files: dict[str, list[tuple[str, int]]], replaced: dict[str, list[str]] | None = None
) -> dict[str, Any]:
    """Commit metadata (Hudi's JSON) writing base files ``(file id, size)`` per partition."""
    stats = {
        p: [
            {
                "fileId": fid,
                "path": f"{p}/{fid}_0-1-0_{ts}.parquet" if p else f"{fid}_0-1-0_{ts}.parquet",
                "fileSizeInBytes": size,
                "partitionPath": p,
                "prevCommit": "null",
            }
            for fid, size in entries
        ]
        for p, entries in files.items()
    }
    meta: dict[str, Any] = {"partitionToWriteStats": stats, "operationType": "UPSERT", "extraMetadata": {}}
    if replaced is not None:
        meta["partitionToReplaceFileIds"] = replaced
    return meta


def make_api(db_url: str, **settings: Any) -> Iterator[Api]:
    app = create_app(ServerSettings(db_url=db_url, **settings))
    token = create_token(app.state.engine, "tests")
    with TestClient(app) as client:
        yield Api(client, token, app)
    app.state.engine.dispose()


# --- real server processes ----------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServerProcess:
    """``hudi-md metastore serve`` in a child process (its own session, so a SIGKILL takes only
    it); stderr goes to a file the test can read."""

    def __init__(self, db_url: str, log_dir: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_dir / f"server-{self.port}.log"
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        cmd = [str(HUDI_MD), "metastore", "serve", "--db", db_url, "--port", str(self.port), *args]
        self.proc = subprocess.Popen(
            cmd,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
            start_new_session=True,
        )

    def wait_ready(self, timeout: float = 60.0) -> ServerProcess:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited {self.proc.returncode}:\n{self.log()}")
            try:
                if httpx.get(f"{self.url}/openapi.json", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"server not ready after {timeout}s:\n{self.log()}")

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()
        self._log.close()


def token_for(db_url: str) -> str:
    out = subprocess.run(
        [str(HUDI_MD), "metastore", "token", "create", "--db", db_url, "--name", "tests"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return out.stdout.strip()


# --- a hudi-md table's timeline, fed to the server ------------------------------------------------------


def timeline_files(table_path: str) -> dict[str, dict[str, str]]:
    """``requested time -> {"requested" | "inflight" | "completed": file name}`` of a table's
    layout-2 timeline on storage."""
    from hudi_md.storage import Storage

    out: dict[str, dict[str, str]] = {}
    for e in Storage(table_path).list(".hoodie/timeline"):
        if e.is_dir or e.name.startswith("."):
            continue
        head, _, _rest = e.name.partition(".")
        ts, _, completion = head.partition("_")
        if not ts.isdigit():
            continue
        kind = "completed" if completion else e.name.rsplit(".", 1)[-1]
        if kind in ("requested", "inflight", "completed"):
            out.setdefault(ts, {})[kind] = e.name
    return out


def feed_timeline(api: Api, route: str, table_path: str, fed: set[str]) -> list[str]:
    """Tell the server every completed instant of the table it has not been told yet, in
    completion order (each created, made inflight and completed with its files' bytes), then
    remove those storage no longer has (rolled back), as hudi-md's timeline mirror does. Returns
    the instants fed."""
    from hudi_md.storage import Storage

    storage = Storage(table_path)
    files = timeline_files(table_path)
    done = []
    completed = [
        (names["completed"].split(".")[0].split("_")[1], ts)
        for ts, names in files.items()
        if "completed" in names
    ]
    for completion, ts in sorted(completed):
        if ts in fed:
            continue
        names = files[ts]
        requested = names.get("requested")
        action = requested.split(".")[1] if requested else names["completed"].split(".")[1]

        def read(kind: str, names: dict[str, str] = names) -> bytes:
            name = names.get(kind)
            return storage.read_bytes(f".hoodie/timeline/{name}") if name else b""

        api.ok(
            api.post(
                f"{route}/instants",
                {"requested_time": ts, "action": action, "metadata_b64": b64(read("requested"))},
            ),
            201,
        )
        api.ok(
            api.post(
                f"{route}/instants/{ts}/transition",
                {
                    "action": action,
                    "from_state": "requested",
                    "to_state": "inflight",
                    "metadata_b64": b64(read("inflight")),
                },
            )
        )
        api.ok(
            api.post(
                f"{route}/instants/{ts}/transition",
                {
                    "action": action,
                    "from_state": "inflight",
                    "to_state": "completed",
                    "metadata_b64": b64(read("completed")),
                    "completion_time": completion,
                },
            )
        )
        fed.add(ts)
        done.append(ts)
    for ts in sorted(fed - set(files)):
        assert api.delete(f"{route}/instants/{ts}").status_code == 204
        fed.discard(ts)
    return done
