"""The metastore server's client: one method per route of :mod:`hudi_md.metastore.protocol`.

Every error is a :class:`~hudi_md.errors.MetastoreError` naming the request and carrying the
server's error code (``unreachable`` when no answer came). The bearer token, when set, goes with
every request; it never appears in a message.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar
from urllib.parse import quote

from pydantic import BaseModel, TypeAdapter

from hudi_md.errors import InvalidOptionError, MetastoreError
from hudi_md.metastore import protocol as P
from hudi_md.metastore.options import (
    DEFAULT_TIMEOUT_S,
    METASERVER_TOKEN,
    METASERVER_URIS,
    shared_client,
)

M = TypeVar("M", bound=BaseModel)
A = TypeVar("A")
_TOKEN_RE = re.compile(r"[\x21-\x7e]+")


class MetastoreClient:
    """A connection to one metastore server (``transport``: an httpx transport, e.g. the ASGI
    app in tests)."""

    def __init__(
        self,
        uri: str,
        token: str | None = None,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        transport: Any = None,
    ) -> None:
        import httpx

        self.uri = uri.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        try:
            httpx.URL(self.uri)
        except (httpx.InvalidURL, ValueError) as e:
            raise InvalidOptionError(f"{METASERVER_URIS}: {uri!r} is not a URL ({e})") from None
        if token and not _TOKEN_RE.fullmatch(token):
            # never quoted: it is a secret
            raise InvalidOptionError(f"{METASERVER_TOKEN}: a bearer token is printable ASCII without spaces")
        self._http = httpx.Client(base_url=self.uri, headers=headers, timeout=timeout_s, transport=transport)
        self.requests = 0  # how many requests this client sent (planning counts them)

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> MetastoreClient | None:
        """The process's client of the server the options name (one connection pool per server and
        token), None when the metastore is not on."""
        return shared_client(cls, options, lambda uri, token, timeout: cls(uri, token, timeout_s=timeout))

    def close(self) -> None:
        self._http.close()

    # --- transport -----------------------------------------------------------------------------------

    def _send(
        self,
        method: str,
        path: str,
        *,
        body: BaseModel | None = None,
        params: Mapping[str, str] | None = None,
    ) -> Any:
        import httpx

        self.requests += 1
        try:
            content = body.model_dump_json(exclude_none=True) if body is not None else None
        except ValueError as e:  # text that is not Unicode (a lone surrogate) cannot be sent
            raise MetastoreError(f"metastore {self.uri}: {method} {path}: not sent: {e}", "invalid") from e
        headers = {"Content-Type": "application/json"} if content is not None else None
        try:
            response = self._http.request(method, path, content=content, params=params, headers=headers)
        except httpx.HTTPError as e:
            raise MetastoreError(
                f"metastore {self.uri}: {method} {path} got no answer: {type(e).__name__}: {e}", "unreachable"
            ) from e
        except (httpx.InvalidURL, UnicodeError, ValueError) as e:  # a path or parameter httpx refuses
            raise MetastoreError(f"metastore {self.uri}: {method} {path}: not sent: {e}", "invalid") from e
        if 300 <= response.status_code < 400:
            raise MetastoreError(
                f"metastore {self.uri}: {method} {path}: {response.status_code} (a redirect to "
                f"{response.headers.get('location')!r}: is {METASERVER_URIS} the metastore's address?)",
                "internal",
                response.status_code,
            )
        if response.status_code >= 400:
            code, message = "internal", response.text[:500]
            try:
                err = P.ErrorResponse.model_validate_json(response.content).error
                code, message = err.code.value, err.message
            except ValueError:
                pass
            raise MetastoreError(
                f"metastore {self.uri}: {method} {path}: {response.status_code} {code}: {message}",
                code,
                response.status_code,
            )
        return response

    def _json(self, model: type[M], method: str, path: str, **kwargs: Any) -> M:
        return _answer(self, method, path, lambda b: model.model_validate_json(b), **kwargs)

    def _list(self, model: type[M], method: str, path: str, **kwargs: Any) -> list[M]:
        adapter = TypeAdapter(list[model])  # type: ignore[valid-type]  # a type variable's value as a type
        return _answer(self, method, path, adapter.validate_json, **kwargs)

    # --- table service -------------------------------------------------------------------------------

    def create_database(self, name: str, **fields: Any) -> P.Database:
        return self._json(
            P.Database, "POST", f"{P.API_PREFIX}/databases", body=P.DatabaseIn(name=_name(name), **fields)
        )

    def database(self, name: str) -> P.Database:
        return self._json(P.Database, "GET", f"{P.API_PREFIX}/databases/{_name(name)}")

    def databases(self) -> list[P.Database]:
        return self._list(P.Database, "GET", f"{P.API_PREFIX}/databases")

    def ensure_database(self, name: str) -> None:
        try:
            self.create_database(name)
        except MetastoreError as e:
            if e.code != P.ErrorCode.exists.value:
                raise

    def create_table(self, db: str, table: P.TableIn) -> P.Table:
        return self._json(P.Table, "POST", f"{P.API_PREFIX}/databases/{_name(db)}/tables", body=table)

    def table(self, db: str, name: str) -> P.Table:
        return self._json(P.Table, "GET", P.table_route(_name(db), _name(name)))

    def update_table(self, db: str, name: str, update: P.TableUpdate) -> P.Table:
        return self._json(P.Table, "PATCH", P.table_route(_name(db), _name(name)), body=update)

    def tables(self, db: str) -> list[P.Table]:
        return self._list(P.Table, "GET", f"{P.API_PREFIX}/databases/{_name(db)}/tables")

    def tables_at(self, location: str) -> list[P.Table]:
        return self._list(P.Table, "GET", f"{P.API_PREFIX}/tables", params={"location": location})

    def drop_table(self, db: str, name: str) -> None:
        self._send("DELETE", P.table_route(_name(db), _name(name)))

    # --- timeline service ----------------------------------------------------------------------------

    def new_instant_time(self, db: str, table: str, after: str | None = None) -> str:
        route = f"{P.table_route(db, table)}/instant-times"
        return self._json(P.InstantTime, "POST", route, body=P.NewInstantTime(after=after)).instant_time

    def create_instant(
        self,
        db: str,
        table: str,
        requested_time: str,
        action: str,
        *,
        state: str = "requested",
        metadata: bytes | None = None,
        heartbeat_s: float | None = None,
    ) -> P.Instant:
        body = P.InstantIn(
            requested_time=requested_time,
            action=action,
            state=state,  # type: ignore[arg-type]  # a str: pydantic checks the Literal
            metadata_b64=_b64(metadata),
            heartbeat_s=heartbeat_s,
        )
        return self._json(P.Instant, "POST", f"{P.table_route(db, table)}/instants", body=body)

    def transition(
        self,
        db: str,
        table: str,
        requested_time: str,
        action: str,
        from_state: str,
        to_state: str,
        *,
        metadata: bytes | None = None,
        completion_time: str | None = None,
    ) -> P.Instant:
        body = P.Transition(
            action=action,
            from_state=from_state,  # type: ignore[arg-type]  # a str: pydantic checks the Literal
            to_state=to_state,  # type: ignore[arg-type]  # a str: pydantic checks the Literal
            metadata_b64=_b64(metadata),
            completion_time=completion_time,
        )
        route = f"{P.table_route(db, table)}/instants/{requested_time}/transition"
        return self._json(P.Instant, "POST", route, body=body)

    def heartbeat(self, db: str, table: str, requested_time: str) -> P.Instant:
        return self._json(
            P.Instant, "POST", f"{P.table_route(db, table)}/instants/{requested_time}/heartbeat"
        )

    def delete_instant(self, db: str, table: str, requested_time: str) -> None:
        self._send("DELETE", f"{P.table_route(db, table)}/instants/{requested_time}")

    def instants(self, db: str, table: str) -> list[P.Instant]:
        return self._list(P.Instant, "GET", f"{P.table_route(db, table)}/instants")

    def timeline(self, db: str, table: str) -> P.TableTimeline:
        """The instants, the table version they are as of and the snapshot status, in one request."""
        return self._json(P.TableTimeline, "GET", f"{P.table_route(db, table)}/timeline")

    def instant_metadata(self, db: str, table: str, requested_time: str, state: str) -> bytes:
        route = f"{P.table_route(db, table)}/instants/{requested_time}/metadata"
        return bytes(self._send("GET", route, params={"state": state}).content)

    # --- partition service ---------------------------------------------------------------------------

    def partitions(
        self,
        db: str,
        table: str,
        where: P.Filter | None = None,
        *,
        include_dropped: bool = False,
        version: int | None = None,
    ) -> list[P.Partition]:
        body = P.PartitionQuery(filter=where, include_dropped=include_dropped, version=version)
        return self._list(P.Partition, "POST", f"{P.table_route(db, table)}/partitions/query", body=body)

    def drop_partition(self, db: str, table: str, path: str) -> P.Partition:
        route = f"{P.table_route(db, table)}/partitions/{quote(P.partition_segment(path), safe='')}"
        return self._json(P.Partition, "DELETE", route)

    # --- snapshot service ----------------------------------------------------------------------------

    def slices(
        self,
        db: str,
        table: str,
        partitions: Sequence[str] | None = None,
        as_of: str | None = None,
        *,
        version: int | None = None,
    ) -> list[P.FileSliceOut]:
        body = P.SliceQuery(
            partitions=list(partitions) if partitions is not None else None, as_of=as_of, version=version
        )
        return self._list(P.FileSliceOut, "POST", f"{P.table_route(db, table)}/snapshot/slices", body=body)

    def snapshot_status(self, db: str, table: str) -> P.SnapshotStatus:
        return self._json(P.SnapshotStatus, "GET", f"{P.table_route(db, table)}/snapshot/status")


def _answer(client: MetastoreClient, method: str, path: str, parse: Callable[[bytes], A], **kwargs: Any) -> A:
    """The answer to a request, parsed; an answer that is not the protocol's (another server at
    the address, a proxy's page) is a :class:`MetastoreError`."""
    content = client._send(method, path, **kwargs).content
    try:
        return parse(content)
    except ValueError as e:
        raise MetastoreError(
            f"metastore {client.uri}: {method} {path}: the answer is not the metastore protocol's "
            f"({content[:80]!r}...)",
            "internal",
        ) from e


def _name(name: str) -> str:
    if not P.NAME_RE.fullmatch(name):
        raise InvalidOptionError(f"metastore names are {P.NAME_PATTERN}; got {name!r}")
    return name


def _b64(data: bytes | None) -> str | None:
    return base64.b64encode(data).decode("ascii") if data is not None else None
