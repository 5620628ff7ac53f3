"""The metastore's HTTP API (RFC-36's table, partition, timeline and snapshot services): routes and
the JSON bodies both sides use. The server (``hudi_md.metastore_server``, FastAPI) and the client
(:mod:`hudi_md.metastore.client`) are written against this module; its names are the contract.

All routes are under ``/v1``; ``{db}`` and ``{table}`` are names (``[A-Za-z0-9_]{1,128}``),
``{ts}`` an instant time, ``{partition}`` a partition path (URL-encoded; ``""`` for a
non-partitioned table is spelled ``__NONE__``). Requests that change anything need
``Authorization: Bearer <token>``; reads need it when the server is started so. Errors are 4xx/5xx
with ``{"error": {"code": <ErrorCode>, "message": str}}``.

Table service
    POST   /v1/databases                                  DatabaseIn -> Database (201; 409 exists)
    GET    /v1/databases                                  -> list[Database]
    GET    /v1/databases/{db}                             -> Database
    DELETE /v1/databases/{db}                             (409 while it has tables)
    POST   /v1/databases/{db}/tables                      TableIn -> Table (201; 409 exists)
    GET    /v1/databases/{db}/tables                      -> list[Table]
    GET    /v1/databases/{db}/tables/{table}              -> Table
    PATCH  /v1/databases/{db}/tables/{table}              TableUpdate -> Table (the partition
                                                          columns' types; their values re-typed)
    DELETE /v1/databases/{db}/tables/{table}
    GET    /v1/tables?location=<uri>                      -> list[Table] (the tables at a location)
    POST   /v1/tables/open                                OpenQuery -> OpenAnswer (a table by name or
                                                          location, with its TableTimeline: what a
                                                          reader opens the table with, one request)

Timeline service (instants of one table; ``T`` below is ``/v1/databases/{db}/tables/{table}``)
    POST   T/instant-times                                NewInstantTime -> InstantTime (strictly
                                                          increasing per table, after ``after``)
    POST   T/instants                                     InstantIn -> Instant (201; 409 exists)
    GET    T/instants                                     -> list[Instant] (every state, by time)
    GET    T/timeline                                     -> TableTimeline (the instants, the table
                                                          version they are as of and the snapshot
                                                          status, read at once: a plan's pin)
    POST   T/instants/{ts}/transition                     Transition -> Instant (409 conflict: the
                                                          instant is not in ``from_state``, or a
                                                          write completing would overlap one that
                                                          completed after it started)
    POST   T/instants/{ts}/heartbeat                      -> Instant (404 when gone)
    DELETE T/instants/{ts}                                (a pending instant: rolled back)
    GET    T/instants/{ts}/metadata?state=...             -> the metadata bytes (octet-stream)

Partition service
    POST   T/partitions/query                             PartitionQuery -> list[Partition]
                                                          (pruning in SQL over partition_key_val;
                                                          as of ``version`` when given)
    GET    T/partitions/{partition}                       -> Partition (404 when absent or dropped)
    DELETE T/partitions/{partition}                       -> Partition (marked dropped, clean scheduled)

Snapshot service (kept in step with completed instants by the server's snapshot sync)
    POST   T/snapshot/slices                              SliceQuery -> list[FileSliceOut] (as of
                                                          ``version`` when given; 409 conflict when
                                                          the snapshot cannot answer as of it)
    GET    T/snapshot/files?partition=&after=             -> list[FileOut] (files of instants after)
    GET    T/snapshot/all-files?partition=                -> list[FileOut] (every live file version)
    GET    T/snapshot/status                              -> SnapshotStatus
Planning (one request per plan: partitions pruned in SQL and their latest slices, as of a version)
    POST   T/plan                                         PlanQuery -> PlanAnswer (409 conflict when
                                                          the snapshot cannot answer as of it)
"""

from __future__ import annotations

import warnings
from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, Field

from hudi_md.metastore.options import METASERVER_ENABLED as METASERVER_ENABLED
from hudi_md.metastore.options import METASERVER_TOKEN as METASERVER_TOKEN
from hudi_md.metastore.options import METASERVER_URIS as METASERVER_URIS
from hudi_md.metastore.routes import API_PREFIX as API_PREFIX
from hudi_md.metastore.routes import INSTANT_TIME_PATTERN
from hudi_md.metastore.routes import NAME_PATTERN as NAME_PATTERN
from hudi_md.metastore.routes import NAME_RE as NAME_RE
from hudi_md.metastore.routes import NON_PARTITIONED as NON_PARTITIONED
from hudi_md.metastore.routes import partition_of_segment as partition_of_segment
from hudi_md.metastore.routes import partition_segment as partition_segment
from hudi_md.metastore.routes import table_route as table_route

# pydantic warns that BaseModel once had a schema_json method; the field is the table's schema
warnings.filterwarnings("ignore", message='Field name "schema_json"', category=UserWarning)


class ErrorCode(str, Enum):
    invalid = "invalid"  # 400/422: a malformed name, location, filter or body
    unauthorized = "unauthorized"  # 401: no or a wrong token
    not_found = "not_found"  # 404
    exists = "exists"  # 409: creating what exists
    conflict = "conflict"  # 409: an instant transition that lost a race
    too_large = "too_large"  # 413
    internal = "internal"  # 500


class ErrorBody(BaseModel):
    code: ErrorCode
    message: str


class ErrorResponse(BaseModel):
    error: ErrorBody


# --- table service ------------------------------------------------------------------------------------


class DatabaseIn(BaseModel):
    name: str = Field(pattern=NAME_PATTERN)
    description: str | None = None
    location: str | None = None
    params: dict[str, str] = {}


class Database(DatabaseIn):
    created: str  # ISO 8601


class FieldSchema(BaseModel):
    name: str
    # Arrow's type name ("string", "int64", "date32[day]", "timestamp[us, tz=UTC]", ...); Avro's
    # and Spark SQL's are understood too. Integer, date and timestamp partition columns prune as
    # their type; others as numbers (numeric types) or text.
    type: str


class TableUpdate(BaseModel):
    """A registered table's partition columns with their types: the same names in the same order
    (``hudi-md metastore sync`` sends the types of the table's recorded schema)."""

    partition_fields: list[FieldSchema]


class TableIn(BaseModel):
    name: str = Field(pattern=NAME_PATTERN)
    location: str  # the table path (a URI with an allowed scheme, no ".." segment)
    table_type: Literal["COPY_ON_WRITE", "MERGE_ON_READ"]
    partition_fields: list[FieldSchema] = []
    record_key_fields: list[str] = []
    params: dict[str, str] = {}  # hoodie.properties, as registered
    # the table's Avro schema; the wire name shadows pydantic's deprecated BaseModel.schema_json()
    # classmethod, which this model never uses
    schema_json: str | None = None  # type: ignore[assignment]


class Table(TableIn):
    db: str
    created: str
    version: int  # increases with every completed instant the snapshot sync applied


# --- timeline service ---------------------------------------------------------------------------------

InstantState = Literal["requested", "inflight", "completed"]


class NewInstantTime(BaseModel):
    after: str | None = None  # the new time is later than this one too


class InstantTime(BaseModel):
    instant_time: str


class InstantIn(BaseModel):
    requested_time: str = Field(pattern=r"^\d{14,17}$")
    action: str
    state: Literal["requested", "inflight"] = "requested"
    metadata_b64: str | None = None  # the requested (plan) file's bytes
    heartbeat_s: float | None = None  # the writer's heartbeat allowance; None: no heartbeat


class Instant(BaseModel):
    requested_time: str
    action: str
    state: InstantState
    completion_time: str | None = None
    heartbeat_expires: float | None = None  # epoch seconds; a pending instant past it is released


class Transition(BaseModel):
    action: str
    from_state: InstantState
    to_state: InstantState
    metadata_b64: str | None = None  # the new state's file bytes (commit metadata on completion)
    completion_time: str | None = None  # default: the server's next instant time


# --- partition service --------------------------------------------------------------------------------


class Filter(BaseModel):
    """A predicate on partition columns: ``op`` one of ``and or not`` (``args``), ``eq ne lt le gt
    ge`` (``column``, ``value``), ``in`` (``column``, ``values``), ``is_null`` / ``not_null``
    (``column``). Values compare as the column's type (numbers as numbers); a partition whose
    value is absent or null fails every comparison but ``is_null``."""

    op: Literal["and", "or", "not", "eq", "ne", "lt", "le", "gt", "ge", "in", "is_null", "not_null"]
    args: list[Filter] = []
    column: str | None = None
    value: Any = None
    values: list[Any] = []


class PartitionQuery(BaseModel):
    filter: Filter | None = None
    include_dropped: bool = False
    # a table version (TableTimeline.version): the partitions as of it (None: the latest)
    version: int | None = Field(default=None, ge=0)


class Partition(BaseModel):
    path: str  # "" for a non-partitioned table
    values: dict[str, str | None]  # partition column -> value as written in the path (None: null)
    created_instant: str
    updated_instant: str
    dropped: bool = False
    # dropped, and its files not yet deleted from storage: run a delete_partition replacecommit
    # and a clean (the snapshot sync clears this once no live file is left)
    clean_pending: bool = False


# --- snapshot service ---------------------------------------------------------------------------------


class SliceQuery(BaseModel):
    partitions: list[str] | None = None  # None: every partition
    as_of: str | None = None  # an instant time: the slices as of it (completed instants up to it)
    # a table version (TableTimeline.version): the slices of the instants completed up to it, as
    # the snapshot had them then (None: the latest)
    version: int | None = Field(default=None, ge=0)


class FileOut(BaseModel):
    partition: str
    name: str  # base or log file name
    size: int
    file_id: str
    instant: str  # the instant that wrote it


class FileSliceOut(BaseModel):
    partition: str
    file_id: str
    base_instant: str
    base_file: FileOut | None = None
    log_files: list[FileOut] = []


class SnapshotStatus(BaseModel):
    synced_instant: str | None  # the last completed instant the snapshot applied (completion order)
    synced_completion_time: str | None
    pending: list[str]  # completed instants not applied yet
    status: Literal["synced", "syncing", "failed"]
    message: str | None = None
    synced_version: int = 0  # the table version the snapshot applied every instant up to


class TableTimeline(BaseModel):
    """A table's timeline and the table version it is as of, read at once: a plan pins the
    partition and slice queries it makes to ``version``, so every answer is of that one state."""

    version: int  # completed instants the server recorded (each a table version)
    instants: list[Instant]  # every state, by requested time
    snapshot: SnapshotStatus


class OpenQuery(BaseModel):
    """A table to open: ``db.table``, or the location it is registered at."""

    table: str = Field(min_length=1, max_length=4096)


class OpenAnswer(BaseModel):
    """The registered table and its timeline, read at once (the snapshot synced up to
    ``timeline.version`` first when it can be): a reader compares it with the table's own
    timeline, then plans as of that version."""

    db: str
    table: str
    location: str
    timeline: TableTimeline


class PlanQuery(BaseModel):
    """One plan: the partitions ``filter`` may hold (or exactly ``partitions``; neither: every
    partition) and their latest slices, as of ``as_of`` (time travel) at table version
    ``version`` (the plan's pin, from :class:`OpenAnswer`)."""

    version: int = Field(ge=0)
    filter: Filter | None = None
    partitions: list[str] | None = None
    as_of: str | None = Field(default=None, pattern=INSTANT_TIME_PATTERN)
    # the latest base file of each file group (a read-optimized query of a merge-on-read table)
    read_optimized: bool = False


class PlanAnswer(BaseModel):
    partitions: list[str]  # the partitions the plan covers, sorted
    slices: list[FileSliceOut]  # their latest slices, by partition then file id


Filter.model_rebuild()
