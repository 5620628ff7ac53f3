"""The read path's connection to a metastore server: the two requests a plan makes (open a table,
plan it) and instant metadata, over the standard library's HTTP client with JSON answers as plain
data.

A plan through the server must cost less than one through the table's own MDT, from a new process
on: the full client (:mod:`hudi_md.metastore.client`: httpx and pydantic models, for writers and
administration) takes ~150 ms to import, more than a whole plan through the MDT. This one takes
~3 ms. Errors are :class:`~hudi_md.errors.MetastoreError`, worded as the full client's.
"""

from __future__ import annotations

import atexit
import http.client
import json
import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlsplit

from hudi_md.config.metastore import METASERVER_TIMEOUT
from hudi_md.errors import InvalidOptionError, MetastoreError
from hudi_md.metastore.options import (
    METASERVER_TOKEN,
    METASERVER_URIS,
    shared_client,
    shared_clients,
)
from hudi_md.metastore.routes import API_PREFIX, table_route


class PlanClient:
    """One metastore server, for reading. Connections are kept alive, one per thread."""

    def __init__(
        self, uri: str, token: str | None = None, *, timeout_s: float = METASERVER_TIMEOUT.default
    ) -> None:
        self.uri = uri.rstrip("/")
        try:
            parts = urlsplit(self.uri)
            port = parts.port
        except ValueError as e:
            raise InvalidOptionError(f"{METASERVER_URIS}: {uri!r} is not a URL ({e})") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InvalidOptionError(f"{METASERVER_URIS}: {uri!r} is not an http(s) URL")
        if token and not (token.isascii() and token.isprintable() and " " not in token):
            # never quoted: it is a secret
            raise InvalidOptionError(f"{METASERVER_TOKEN}: a bearer token is printable ASCII without spaces")
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = port
        self._base = parts.path.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._timeout = timeout_s
        self._local = threading.local()
        self._open: list[http.client.HTTPConnection] = []  # every thread's, to close at exit
        self._lock = threading.Lock()
        self.requests = 0  # how many requests this client sent (planning counts them)

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> PlanClient | None:
        """The process's read client of the server the options name (None: the metastore is off)."""
        return shared_client(cls, options, lambda uri, token, timeout: cls(uri, token, timeout_s=timeout))

    # --- the routes -----------------------------------------------------------------------------

    def open(self, table: str) -> dict[str, Any]:
        """``OpenAnswer``: the table named ``db.table`` or registered at a location, with its
        timeline and the table version it is as of."""
        return self._json("POST", f"{API_PREFIX}/tables/open", {"table": table})

    def plan(self, db: str, table: str, query: Mapping[str, Any]) -> dict[str, Any]:
        """``PlanAnswer``: the partitions and latest slices of a ``PlanQuery``."""
        return self._json("POST", f"{table_route(db, table)}/plan", query)

    def instant_metadata(self, db: str, table: str, requested_time: str, state: str) -> bytes:
        route = f"{table_route(db, table)}/instants/{quote(requested_time, safe='')}/metadata"
        return self._send("GET", f"{route}?state={quote(state, safe='')}", None)

    # --- transport ------------------------------------------------------------------------------

    def _json(self, method: str, path: str, body: Any) -> dict[str, Any]:
        content = self._send(method, path, body)
        try:
            answer = json.loads(content)
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            raise MetastoreError(
                f"metastore {self.uri}: {method} {path}: the answer is not the metastore protocol's "
                f"({content[:80]!r}...)",
                "internal",
            )
        return answer

    def _connection(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            kind = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
            conn = self._local.conn = kind(self._host, self._port, timeout=self._timeout)
            with self._lock:
                self._open.append(conn)
        return conn

    def close(self) -> None:
        with self._lock:
            conns, self._open = self._open, []
        for conn in conns:
            conn.close()

    def _send(self, method: str, path: str, body: Any) -> bytes:
        self.requests += 1
        try:
            payload = json.dumps(body).encode("utf-8") if body is not None else None
        except (TypeError, ValueError, UnicodeError) as e:  # a lone surrogate cannot be sent
            raise MetastoreError(f"metastore {self.uri}: {method} {path}: not sent: {e}", "invalid") from e
        headers = dict(self._headers)
        if payload is not None:
            headers["Content-Type"] = "application/json"
        for attempt in (1, 2):
            conn = self._connection()
            try:
                conn.request(method, self._base + path, body=payload, headers=headers)
                response = conn.getresponse()
                content = response.read()
                break
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as e:
                # the server closed a kept-alive connection: one new connection, then it counts
                conn.close()
                self._local.conn = None
                if attempt == 2:
                    raise self._unreachable(method, path, e) from e
            except (OSError, http.client.HTTPException) as e:  # (a timeout is an OSError)
                conn.close()
                self._local.conn = None
                raise self._unreachable(method, path, e) from e
        status = response.status
        if 300 <= status < 400:
            raise MetastoreError(
                f"metastore {self.uri}: {method} {path}: {status} (a redirect to "
                f"{response.getheader('location')!r}: is {METASERVER_URIS} the metastore's address?)",
                "internal",
                status,
            )
        if status >= 400:
            code, message = "internal", content[:500].decode("utf-8", "replace")
            try:
                err = json.loads(content)["error"]
                code, message = str(err["code"]), str(err["message"])
            except (ValueError, KeyError, TypeError):
                pass
            raise MetastoreError(
                f"metastore {self.uri}: {method} {path}: {status} {code}: {message}", code, status
            )
        return content

    def _unreachable(self, method: str, path: str, e: BaseException) -> MetastoreError:
        return MetastoreError(
            f"metastore {self.uri}: {method} {path} got no answer: {type(e).__name__}: {e}", "unreachable"
        )


@atexit.register
def _close_shared() -> None:
    for client in shared_clients(PlanClient):
        client.close()
