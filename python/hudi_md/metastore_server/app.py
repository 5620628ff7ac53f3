"""The HTTP server: FastAPI routes of :mod:`hudi_md.metastore.protocol` over the services of this
package (OpenAPI at ``/openapi.json``).

Security: requests that change anything need ``Authorization: Bearer <token>`` (tokens from
``hudi-md metastore token create``, stored hashed); reads too when ``read_token_required``. Names
and instant times are checked against the protocol's patterns, table locations against the
allowed schemes (no ``..``), bodies are limited in size (413), and every error is
``{"error": {"code", "message"}}`` with its 4xx/5xx status. Every SQL statement is built by
SQLAlchemy with bound parameters.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, MutableMapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import Annotated, Any, TypeVar

import sqlalchemy as sa
from fastapi import BackgroundTasks, Depends, FastAPI, Path, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from sqlalchemy.engine import Connection, Engine
from starlette.exceptions import HTTPException as StarletteHTTPException

from hudi_md.metastore import protocol as P
from hudi_md.metastore_server import catalog, partitions, snapshot, timeline
from hudi_md.metastore_server.auth import verify_token
from hudi_md.metastore_server.catalog import TableRow, find_table
from hudi_md.metastore_server.db import make_engine, migrate, read_tx, refresh_statistics, write_tx
from hudi_md.metastore_server.errors import ApiError, unauthorized
from hudi_md.metastore_server.validation import (
    DEFAULT_SCHEMES,
    check_instant_time,
    check_keys,
    request_problem,
    text_problem,
)

log = logging.getLogger(__name__)

DEFAULT_MAX_BODY = 16 * 1024 * 1024
T = TypeVar("T")

Name = Annotated[str, Path(pattern=P.NAME_PATTERN, max_length=128)]
Ts = Annotated[str, Path(pattern=r"^\d{14,17}$")]


@dataclass(frozen=True)
class ServerSettings:
    db_url: str
    read_token_required: bool = False
    max_body_bytes: int = DEFAULT_MAX_BODY
    allowed_schemes: tuple[str, ...] = DEFAULT_SCHEMES
    # The background sync: after each completion, at start, and every sync_poll_s seconds
    # (off: syncs happen only when a read finds work pending; the fault tests queue a backlog so).
    background_sync: bool = True
    sync_poll_s: float = 2.0


# --- errors -------------------------------------------------------------------------------------------


MAX_MESSAGE = 1000  # characters of an error message (a message may quote a huge input)


def _error(
    status: int, code: P.ErrorCode, message: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    if len(message) > MAX_MESSAGE:
        message = message[: MAX_MESSAGE - 1] + "…"
    # a message may quote input that is not Unicode text (a lone surrogate): escaped, not a 500
    message = message.encode("utf-8", "backslashreplace").decode("utf-8")
    body = P.ErrorResponse(error=P.ErrorBody(code=code, message=message))
    return JSONResponse(body.model_dump(mode="json"), status_code=status, headers=headers)


_STATUS_CODES = {
    400: P.ErrorCode.invalid,
    401: P.ErrorCode.unauthorized,
    404: P.ErrorCode.not_found,
    405: P.ErrorCode.invalid,
    409: P.ErrorCode.conflict,
    413: P.ErrorCode.too_large,
    422: P.ErrorCode.invalid,
}


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def api_error(_request: Request, exc: ApiError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        return _error(exc.status, exc.code, exc.message, headers)

    @app.exception_handler(RequestValidationError)
    async def validation_error(_request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = []
        for e in exc.errors()[:5]:
            where = ".".join(str(x) for x in e.get("loc", ()))
            problems.append(f"{where}: {e.get('msg')}")
        return _error(422, P.ErrorCode.invalid, "; ".join(problems) or "invalid request")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _STATUS_CODES.get(exc.status_code, P.ErrorCode.internal)
        return _error(exc.status_code, code, str(exc.detail))

    @app.exception_handler(sa.exc.IntegrityError)
    async def changed_meanwhile(_request: Request, exc: sa.exc.IntegrityError) -> JSONResponse:
        # A unique key another request took between our read and our write.
        log.info("integrity error (a concurrent change): %s", exc)
        return _error(409, P.ErrorCode.conflict, "the object changed concurrently; read it again and retry")

    @app.exception_handler(sa.exc.DataError)
    async def data_error(_request: Request, exc: sa.exc.DataError) -> JSONResponse:
        # A value the database refuses (too long for its column, out of its type's range): the
        # statement's transaction is rolled back.
        log.info("data error: %s", exc)
        return _error(400, P.ErrorCode.invalid, f"a value does not fit the metastore's database: {exc.orig}")

    @app.exception_handler(UnicodeError)
    async def not_text(_request: Request, exc: UnicodeError) -> JSONResponse:
        return _error(400, P.ErrorCode.invalid, f"the request holds text that is not Unicode: {exc}")

    @app.exception_handler(sa.exc.OperationalError)
    async def database_busy(_request: Request, exc: sa.exc.OperationalError) -> JSONResponse:
        log.warning("database error: %s", exc)
        return _error(503, P.ErrorCode.internal, "the metastore's database is unavailable or busy; retry")

    @app.exception_handler(Exception)
    async def internal(_request: Request, exc: Exception) -> JSONResponse:
        log.exception("internal error")
        return _error(500, P.ErrorCode.internal, f"internal error: {type(exc).__name__}")


class BodyLimit:
    """Refuses request bodies over ``limit`` bytes with 413: by ``Content-Length`` before reading,
    and by counting what arrives (chunked bodies): the body is read here, up to the limit, and
    handed to the app whole (a failure raised inside the app's own read would become its 400).
    Then a request whose text the metastore cannot hold is refused with 400
    (:func:`~hudi_md.metastore_server.validation.request_problem`)."""

    def __init__(self, app: Any, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(
        self, scope: MutableMapping[str, Any], receive: Callable[[], Awaitable[Any]], send: Any
    ) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers") or ():
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = -1
                if declared > self.limit or declared < 0:
                    await self._refuse(send, *self._too_large())
                    return
        parts: list[bytes] = []
        seen = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > self.limit:
                await self._refuse(send, *self._too_large())
                return
            parts.append(chunk)
            if not message.get("more_body", False):
                break
        content_type = next(
            (v.decode("latin-1") for k, v in scope.get("headers") or () if k == b"content-type"), None
        )
        problem = request_problem(
            scope.get("path", ""), scope.get("query_string", b""), content_type, b"".join(parts)
        )
        if problem is not None:
            await self._refuse(send, 400, "invalid", problem)
            return
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(parts), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    def _too_large(self) -> tuple[int, str, str]:
        return 413, "too_large", f"request bodies are at most {self.limit} bytes (the server's --max-body-mb)"

    async def _refuse(self, send: Any, status: int, code: str, message: str) -> None:
        body = json.dumps({"error": {"code": code, "message": message}}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


# --- the background sync ------------------------------------------------------------------------------


class SyncPoller:
    """Runs the snapshot sync of every table with pending versions: at once (catching up after a
    restart), then every ``interval`` seconds (work a dead server left behind)."""

    def __init__(self, engine: Engine, interval: float) -> None:
        self.engine = engine
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="hudi-md-metastore-sync", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                snapshot.sync_all(self.engine)
            except Exception:
                log.exception("snapshot sync pass failed")
            self._stop.wait(self.interval)


def _check_completion(ts: str, action: str, meta: Mapping[str, Any]) -> None:
    """Raise when the snapshot sync could not apply a completion's metadata: shapes it cannot
    read, names no database stores (NUL, a lone surrogate)."""
    ch = snapshot.changes_of(action, meta, ts)
    names = [
        *ch.added,
        *ch.deleted,
        *ch.replaced,
        *ch.partitions_deleted,
        *ch.rolled_back,
        *(n for files in ch.added.values() for n in files),
        *(n for names in ch.deleted.values() for n in names),
        *(i for ids in ch.replaced.values() for i in ids),
        ch.schema or "",
    ]
    for name in names:
        problem = text_problem(str(name))
        if problem is not None:
            raise ValueError(f"a partition, file or schema {problem}")


def _sync_quietly(engine: Engine, tbl_id: int) -> None:
    try:
        snapshot.sync_table(engine, tbl_id)
    except Exception:
        log.exception("snapshot sync of table %s failed", tbl_id)


# --- the app ------------------------------------------------------------------------------------------


def create_app(settings: ServerSettings, *, engine: Engine | None = None) -> FastAPI:
    """The server's app; runs the database's migrations to head first."""
    engine = engine or make_engine(settings.db_url)
    migrate(engine)
    refresh_statistics(engine)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        poller = SyncPoller(engine, settings.sync_poll_s) if settings.background_sync else None
        if poller is not None:
            poller.start()
        try:
            yield
        finally:
            if poller is not None:
                poller.stop()

    app = FastAPI(
        title="hudi-md metastore",
        description=(P.__doc__ or "").split("\n\n")[0],
        version="1",
        lifespan=lifespan,
        # a path with a trailing slash ("/v1/databases/%2e%2e%2f" too) is a 404, not a redirect
        redirect_slashes=False,
        responses={
            401: {"model": P.ErrorResponse},
            404: {"model": P.ErrorResponse},
            409: {"model": P.ErrorResponse},
            413: {"model": P.ErrorResponse},
            422: {"model": P.ErrorResponse},
        },
    )
    app.state.engine = engine
    app.state.settings = settings
    _install_error_handlers(app)
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes)
    _routes(app, engine, settings)
    return app


def json_answer(answer: BaseModel) -> Response:
    """``answer`` as JSON, as it is: the two routes of every plan skip FastAPI's validation of an
    answer the server built from its own model (a third of their time)."""
    return Response(answer.model_dump_json(), media_type="application/json")


def _bearer(request: Request) -> str | None:
    header = request.headers.get("authorization")
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def _routes(app: FastAPI, engine: Engine, settings: ServerSettings) -> None:
    schemes = settings.allowed_schemes

    def check_token(request: Request) -> None:
        token = _bearer(request)
        if token is None:
            raise unauthorized(
                "this request needs 'Authorization: Bearer <token>' (hudi-md metastore token create)"
            )
        with read_tx(engine) as conn:
            if not verify_token(conn, token):
                raise unauthorized("the bearer token is not valid")

    def writer(request: Request) -> None:
        check_token(request)

    def reader(request: Request) -> None:
        if settings.read_token_required:
            check_token(request)

    Write = Depends(writer)
    Read = Depends(reader)
    prefix = P.API_PREFIX
    table_route = prefix + "/databases/{db}/tables/{table}"

    def read(fn: Callable[[Connection], T]) -> T:
        with read_tx(engine) as conn:
            return fn(conn)

    def write(fn: Callable[[Connection], T]) -> T:
        with write_tx(engine) as conn:
            return fn(conn)

    def synced(db: str, table: str, fn: Callable[[Connection, TableRow], T], version: int | None = None) -> T:
        """Answer from a snapshot that applied every completed instant (RFC-36: reads wait for
        the sync): pending work is synced here first. A read as of a table version (a plan's pin)
        waits only for the versions up to it."""
        with read_tx(engine) as conn:
            row = find_table(conn, db, table)
            if not row.unsynced or (version is not None and row.synced_version >= version):
                return fn(conn, row)
        snapshot.sync_table(engine, row.tbl_id)
        with read_tx(engine) as conn:
            return fn(conn, find_table(conn, db, table))

    # --- table service ------------------------------------------------------------------------------

    @app.post(prefix + "/databases", status_code=201, response_model=P.Database, dependencies=[Write])
    def create_database(body: P.DatabaseIn) -> P.Database:
        check_keys("parameter names", body.params)
        return write(lambda c: catalog.create_database(c, body, schemes))

    @app.get(prefix + "/databases", response_model=list[P.Database], dependencies=[Read])
    def list_databases() -> list[P.Database]:
        return read(catalog.list_databases)

    @app.get(prefix + "/databases/{db}", response_model=P.Database, dependencies=[Read])
    def get_database(db: Name) -> P.Database:
        return read(lambda c: catalog.get_database(c, db))

    @app.delete(prefix + "/databases/{db}", status_code=204, dependencies=[Write])
    def drop_database(db: Name) -> Response:
        write(lambda c: catalog.drop_database(c, db))
        return Response(status_code=204)

    @app.post(
        prefix + "/databases/{db}/tables", status_code=201, response_model=P.Table, dependencies=[Write]
    )
    def create_table(db: Name, body: P.TableIn) -> P.Table:
        check_keys("parameter names", body.params)
        check_keys("column names", [*(f.name for f in body.partition_fields), *body.record_key_fields])
        return write(lambda c: catalog.create_table(c, db, body, schemes))

    @app.get(prefix + "/databases/{db}/tables", response_model=list[P.Table], dependencies=[Read])
    def list_tables(db: Name) -> list[P.Table]:
        return read(lambda c: catalog.list_tables(c, db))

    @app.get(table_route, response_model=P.Table, dependencies=[Read])
    def get_table(db: Name, table: Name) -> P.Table:
        return read(lambda c: catalog.get_table(c, db, table))

    @app.patch(table_route, response_model=P.Table, dependencies=[Write])
    def update_table(db: Name, table: Name, body: P.TableUpdate) -> P.Table:
        def run(c: Connection) -> P.Table:
            row = partitions.retype_partitions(c, find_table(c, db, table), body.partition_fields)
            return row.model(catalog.table_params(c, row.tbl_id))

        return write(run)

    @app.delete(table_route, status_code=204, dependencies=[Write])
    def drop_table(db: Name, table: Name) -> Response:
        write(lambda c: catalog.drop_table(c, db, table))
        return Response(status_code=204)

    @app.get(prefix + "/tables", response_model=list[P.Table], dependencies=[Read])
    def tables_at(location: Annotated[str, Query(max_length=4096)]) -> list[P.Table]:
        return read(lambda c: catalog.tables_at(c, location, schemes))

    @app.post(prefix + "/tables/open", response_model=P.OpenAnswer, dependencies=[Read])
    def open_table(body: P.OpenQuery) -> Response:
        def answer(c: Connection, row: TableRow) -> Response:
            return json_answer(
                P.OpenAnswer(
                    db=row.db, table=row.name, location=row.location, timeline=snapshot.table_timeline(c, row)
                )
            )

        with read_tx(engine) as conn:
            row = catalog.resolve_table(conn, body.table, schemes)
            if not row.unsynced:
                return answer(conn, row)
        # a reader plans as of the version it is given: apply the completed instants first
        snapshot.sync_table(engine, row.tbl_id)
        return read(lambda c: answer(c, catalog.table_by_id(c, row.tbl_id)))

    # --- timeline service ---------------------------------------------------------------------------

    @app.post(table_route + "/instant-times", response_model=P.InstantTime, dependencies=[Write])
    def new_instant_time(db: Name, table: Name, body: P.NewInstantTime | None = None) -> P.InstantTime:
        after = body.after if body is not None else None
        return P.InstantTime(instant_time=timeline.new_instant_time(engine, db, table, after))

    @app.post(table_route + "/instants", status_code=201, response_model=P.Instant, dependencies=[Write])
    def create_instant(db: Name, table: Name, body: P.InstantIn) -> P.Instant:
        return write(lambda c: timeline.create_instant(c, find_table(c, db, table), body))

    @app.get(table_route + "/instants", response_model=list[P.Instant], dependencies=[Read])
    def list_instants(db: Name, table: Name) -> list[P.Instant]:
        return read(lambda c: [i.model() for i in timeline.instant_rows(c, find_table(c, db, table).tbl_id)])

    @app.get(table_route + "/timeline", response_model=P.TableTimeline, dependencies=[Read])
    def table_timeline(db: Name, table: Name) -> P.TableTimeline:
        return read(lambda c: snapshot.table_timeline(c, find_table(c, db, table)))

    @app.post(table_route + "/instants/{ts}/transition", response_model=P.Instant, dependencies=[Write])
    def transition(
        db: Name, table: Name, ts: Ts, body: P.Transition, background: BackgroundTasks
    ) -> P.Instant:
        def run(c: Connection) -> tuple[P.Instant, bool, int]:
            row = find_table(c, db, table)
            instant, completed = timeline.transition(c, row, ts, body, partial(_check_completion, ts))
            return instant, completed, row.tbl_id

        instant, completed, tbl_id = write(run)
        if completed and settings.background_sync:
            background.add_task(_sync_quietly, engine, tbl_id)
        return instant

    @app.post(table_route + "/instants/{ts}/heartbeat", response_model=P.Instant, dependencies=[Write])
    def heartbeat(db: Name, table: Name, ts: Ts) -> P.Instant:
        return write(lambda c: timeline.heartbeat(c, find_table(c, db, table), ts))

    @app.delete(table_route + "/instants/{ts}", status_code=204, dependencies=[Write])
    def delete_instant(db: Name, table: Name, ts: Ts) -> Response:
        write(lambda c: timeline.delete_instant(c, find_table(c, db, table), ts))
        return Response(status_code=204)

    @app.get(
        table_route + "/instants/{ts}/metadata",
        response_class=Response,
        responses={200: {"content": {"application/octet-stream": {}}}},
        dependencies=[Read],
    )
    def instant_metadata(
        db: Name, table: Name, ts: Ts, state: Annotated[str | None, Query(max_length=16)] = None
    ) -> Response:
        data = read(lambda c: timeline.instant_metadata(c, find_table(c, db, table), ts, state))
        return Response(content=data, media_type="application/octet-stream")

    # --- partition service --------------------------------------------------------------------------

    @app.post(table_route + "/partitions/query", response_model=list[P.Partition], dependencies=[Read])
    def query_partitions(db: Name, table: Name, body: P.PartitionQuery) -> list[P.Partition]:
        return synced(db, table, lambda c, row: partitions.prune(c, row, body), body.version)

    @app.get(table_route + "/partitions/{partition:path}", response_model=P.Partition, dependencies=[Read])
    def get_partition(db: Name, table: Name, partition: str) -> P.Partition:
        path = P.partition_of_segment(partition)
        return synced(db, table, lambda c, row: partitions.get_partition(c, row, path))

    @app.delete(
        table_route + "/partitions/{partition:path}", response_model=P.Partition, dependencies=[Write]
    )
    def drop_partition(db: Name, table: Name, partition: str) -> P.Partition:
        path = P.partition_of_segment(partition)
        return write(lambda c: partitions.drop_partition(c, find_table(c, db, table), path))

    # --- snapshot service ---------------------------------------------------------------------------

    @app.post(table_route + "/snapshot/slices", response_model=list[P.FileSliceOut], dependencies=[Read])
    def slices(db: Name, table: Name, body: P.SliceQuery) -> list[P.FileSliceOut]:
        if body.as_of is not None:
            check_instant_time("as_of", body.as_of)
        return synced(db, table, lambda c, row: snapshot.latest_slices(c, row, body), body.version)

    @app.post(table_route + "/plan", response_model=P.PlanAnswer, dependencies=[Read])
    def plan(db: Name, table: Name, body: P.PlanQuery) -> Response:
        return json_answer(synced(db, table, lambda c, row: snapshot.plan(c, row, body), body.version))

    @app.get(table_route + "/snapshot/files", response_model=list[P.FileOut], dependencies=[Read])
    def files(
        db: Name,
        table: Name,
        partition: Annotated[str | None, Query(max_length=4096)] = None,
        after: Annotated[str | None, Query(pattern=r"^\d{14,17}$")] = None,
    ) -> list[P.FileOut]:
        part = None if partition is None else P.partition_of_segment(partition)
        return synced(db, table, lambda c, row: snapshot.files(c, row, part, after))

    @app.get(table_route + "/snapshot/all-files", response_model=list[P.FileOut], dependencies=[Read])
    def all_files(
        db: Name, table: Name, partition: Annotated[str | None, Query(max_length=4096)] = None
    ) -> list[P.FileOut]:
        part = None if partition is None else P.partition_of_segment(partition)
        return synced(db, table, lambda c, row: snapshot.files(c, row, part, None))

    @app.get(table_route + "/snapshot/status", response_model=P.SnapshotStatus, dependencies=[Read])
    def snapshot_status(db: Name, table: Name) -> P.SnapshotStatus:
        return read(lambda c: snapshot.status(c, find_table(c, db, table)))
