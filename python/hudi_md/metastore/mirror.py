"""A table's timeline, recorded in the metastore as it is written.

The storage timeline stays the truth (Apache Hudi engines only ever read storage): every state is
written there first, then told to the metastore (:class:`MetastoreMirror`, a timeline writer's
observer). A requested or inflight state the server refuses fails the write before any data file is
written; a completion it refuses or misses leaves the commit standing on storage, with a warning,
and ``hudi-md metastore sync`` (:func:`sync_table`) brings the server up to date from storage, as it
does for a table registered with history (:func:`register_table`).
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Mapping

import pyarrow as pa

from hudi_md.errors import HudiMdError, MetastoreError, TableConfigError
from hudi_md.metastore import protocol as P
from hudi_md.metastore.client import MetastoreClient
from hudi_md.metastore.resolve import TableRef
from hudi_md.storage import Storage
from hudi_md.table.config import TableConfig
from hudi_md.table.schema import parse_embedded_schema
from hudi_md.table.timeline import Instant, State, Timeline

log = logging.getLogger(__name__)

_EXISTS = P.ErrorCode.exists.value
_NOT_FOUND = P.ErrorCode.not_found.value


class MetastoreMirror:
    """An :class:`~hudi_md.table.timeline_writer.InstantObserver` recording one table's instants
    in the metastore."""

    def __init__(self, client: MetastoreClient, ref: TableRef) -> None:
        self.client = client
        self.ref = ref
        self._actions: dict[str, str] = {}  # requested time -> action as first told

    def requested(self, instant_time: str, action: str, content: bytes) -> None:
        self._actions[instant_time] = action
        try:
            self.client.create_instant(self.ref.db, self.ref.table, instant_time, action, metadata=content)
        except MetastoreError as e:
            if e.code != _EXISTS:
                raise

    def inflight(self, instant_time: str, action: str, content: bytes) -> None:
        self._transition(instant_time, action, "requested", "inflight", content, None)

    def completed(self, instant: Instant, content: bytes) -> None:
        t = instant.requested_time
        action = self._actions.get(t) or instant.action
        try:
            self._transition(t, action, "inflight", "completed", content, instant.completion_time)
        except MetastoreError as e:
            warnings.warn(
                f"hudi-md: instant {t} of {self.ref.db}.{self.ref.table} completed on storage, but the "
                f"metastore did not record it ({e}); run 'hudi-md metastore sync {self.ref.location}'",
                RuntimeWarning,
                stacklevel=4,
            )

    def removed(self, instant_time: str) -> None:
        try:
            self.client.delete_instant(self.ref.db, self.ref.table, instant_time)
        except MetastoreError as e:
            if e.code != _NOT_FOUND:
                log.warning("metastore: could not remove instant %s: %s", instant_time, e)

    def _transition(
        self, t: str, action: str, from_state: str, to_state: str, content: bytes, completion: str | None
    ) -> None:
        try:
            self.client.transition(
                self.ref.db, self.ref.table, t, action, from_state, to_state,
                metadata=content, completion_time=completion,
            )  # fmt: skip
        except MetastoreError as e:
            if e.code == _NOT_FOUND and from_state == "inflight":
                # not mirrored from its start (the mirror began meanwhile): record it whole
                self.requested(t, action, b"")
                self.client.transition(self.ref.db, self.ref.table, t, action, "requested", "inflight")
                self.client.transition(
                    self.ref.db, self.ref.table, t, action, "inflight", to_state,
                    metadata=content, completion_time=completion,
                )  # fmt: skip
                return
            raise


def partition_field_schemas(config: TableConfig, schema: pa.Schema | None) -> list[P.FieldSchema]:
    """The table's partition columns with their Arrow types in ``schema`` (None: the schema of
    ``hoodie.table.create.schema``); ``string`` for a column the schema lacks (e.g. dropped
    partition columns, which read back as strings)."""
    if schema is None and config.create_schema:
        try:
            schema = parse_embedded_schema(config.create_schema, TableConfigError, "hoodie.properties")
        except HudiMdError as e:
            log.warning("metastore: partition columns of %s registered as strings: %s", config.table_name, e)
    fields = []
    for f in config.partition_fields:
        typ = str(schema.field(f).type) if schema is not None and schema.get_field_index(f) >= 0 else "string"
        fields.append(P.FieldSchema(name=f, type=typ))
    return fields


def register_table(
    client: MetastoreClient,
    storage: Storage,
    config: TableConfig,
    db: str,
    name: str,
    schema: pa.Schema | None,
) -> TableRef:
    """Register the table at ``storage`` (its ``hoodie.properties``, partition fields and schema)
    as ``db.name``, creating the database if needed; an existing registration of the same
    location is kept. ``schema``: the table's (None: ``hoodie.table.create.schema``'s), which
    types the partition columns."""
    location = storage.uri()
    client.ensure_database(db)
    fields = partition_field_schemas(config, schema)
    body = P.TableIn(
        name=name,
        location=location,
        table_type=config.table_type,  # type: ignore[arg-type]  # a str: pydantic checks the Literal
        partition_fields=fields,
        record_key_fields=config.record_key_fields,
        params=config.to_dict(),
        schema_json=config.create_schema,
    )
    try:
        t = client.create_table(db, body)
    except MetastoreError as e:
        if e.code != _EXISTS:
            raise
        t = client.table(db, name)
        if t.location.rstrip("/") != location.rstrip("/"):
            raise MetastoreError(
                f"{db}.{name} is registered at {t.location}, not {location}", P.ErrorCode.exists.value
            ) from e
    return TableRef(t.db, t.name, t.location)


def sync_table(
    client: MetastoreClient,
    ref: TableRef,
    timeline: Timeline,
    read: Callable[[Instant, str], bytes],
    requested_actions: Mapping[str, str],
    *,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, int]:
    """Bring the metastore's timeline of a table up to its storage timeline: completed instants in
    completion order (each with its metadata), then pending ones; instants the server has that
    storage no longer has (rolled back) are removed. ``read(instant, state)``: an instant file's
    bytes; ``requested_actions``: the action each instant was requested as (a completed compaction
    is a ``commit`` on storage). Idempotent. Returns counts of what it did."""
    have: Mapping[str, P.Instant] = {i.requested_time: i for i in client.instants(ref.db, ref.table)}
    on_storage = {i.requested_time for i in timeline}
    done = {"created": 0, "transitioned": 0, "removed": 0}
    completed = sorted(timeline.completed(), key=lambda i: i.completion_time or i.requested_time)
    pending = [i for i in timeline if not i.is_completed]
    todo = [*completed, *pending]
    for n, instant in enumerate(todo):
        if progress is not None:
            progress(n, len(todo))
        t = instant.requested_time
        server = have.get(t)
        action = requested_actions.get(t, instant.action)
        state = {State.REQUESTED: "requested", State.INFLIGHT: "inflight", State.COMPLETED: "completed"}
        target = state[instant.state]
        current = server.state if server is not None else None
        if current == target or (current == "completed"):
            continue
        if current is None:
            client.create_instant(ref.db, ref.table, t, action, metadata=read(instant, "requested"))
            done["created"] += 1
            current = "requested"
        if current == "requested" and target in ("inflight", "completed"):
            client.transition(ref.db, ref.table, t, action, "requested", "inflight")
            current = "inflight"
            done["transitioned"] += 1
        if current == "inflight" and target == "completed":
            client.transition(
                ref.db, ref.table, t, action, "inflight", "completed",
                metadata=read(instant, "completed"), completion_time=instant.completion_time,
            )  # fmt: skip
            done["transitioned"] += 1
    for t, server in have.items():
        if t not in on_storage and server.state != "completed":
            client.delete_instant(ref.db, ref.table, t)
            done["removed"] += 1
    if progress is not None:
        progress(len(todo), len(todo))
    return done
