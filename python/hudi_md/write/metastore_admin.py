"""What ``hudi-md metastore register|sync|ls`` do on the client side: register a table path under a
name (with its history), bring the metastore's timeline of a table up to its storage timeline, and
list what the metastore holds. In the write layer: it reads a table's timeline as a writer does."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from hudi_md.errors import MetastoreError
from hudi_md.metastore import protocol as P
from hudi_md.metastore.client import MetastoreClient
from hudi_md.metastore.mirror import partition_field_schemas, register_table, sync_table
from hudi_md.metastore.resolve import TableRef, resolve_table
from hudi_md.table.config import TableConfig
from hudi_md.table.schema import recorded_schema
from hudi_md.write import services
from hudi_md.write.config import WriteConfig
from hudi_md.write.transaction import WritableTable
from hudi_md.write.writer import HudiWriter


def _client(options: Mapping[str, Any]) -> MetastoreClient:
    client = MetastoreClient.from_options(options)
    if client is None:
        raise MetastoreError(
            "no metastore: set hoodie.metaserver.enabled=true and hoodie.metaserver.uris", "invalid"
        )
    return client


def register(
    path: str,
    db: str,
    name: str,
    options: Mapping[str, Any],
    *,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[TableRef, dict[str, int]]:
    """Register the Hudi table at ``path`` as ``db.name`` and record its timeline."""
    client = _client(options)
    table = WritableTable(path, {k: v for k, v in options.items()})
    state = table.state({"hoodie.metadata.enable": "false"})
    config = TableConfig.load(table.storage)
    ref = register_table(client, table.storage, config, db, name, state.schema)
    done = sync_table(
        client,
        ref,
        table.timeline(),
        table.instant_file_reader(),
        table.requested_actions(),
        progress=progress,
    )
    return ref, done


def sync(
    path_or_name: str, options: Mapping[str, Any], *, progress: Callable[[int, int], None] | None = None
) -> tuple[TableRef, dict[str, int]]:
    """Bring the metastore's timeline of a registered table (by path or ``db.table``) up to its
    storage timeline, its partition column types to the table's recorded schema
    (``partition_types_corrected``), then carry out the partition drops it scheduled: a ``delete_partition``
    replacecommit of each dropped partition that still has live files (recorded on the server as
    any commit), and a clean."""
    client = _client(options)
    ref = resolve_table(client, path_or_name)
    if ref is None:
        raise MetastoreError(f"{path_or_name} is not registered (hudi-md metastore register)", "not_found")
    table = WritableTable(ref.location, {k: v for k, v in options.items()})
    done = _sync_timeline(client, ref, table, progress)
    done["partition_types_corrected"] = _sync_partition_types(client, ref, table)
    dropped = [
        p.path
        for p in client.partitions(ref.db, ref.table, include_dropped=True)
        if p.dropped and p.clean_pending
    ]
    done["partitions_deleted"] = 0
    if dropped:
        live = set(table.state().partitions())
        todo = [p for p in dropped if p in live]
        writer = HudiWriter(ref.location, {**options, "hoodie.metaserver.enabled": "true"})
        if todo:
            writer.delete_partitions(todo)
            done["partitions_deleted"] = len(todo)
        services.clean(writer, WriteConfig.from_options(writer.options, writer.config()))
    return ref, done


def _sync_timeline(
    client: MetastoreClient,
    ref: TableRef,
    table: WritableTable,
    progress: Callable[[int, int], None] | None,
) -> dict[str, int]:
    return sync_table(
        client,
        ref,
        table.timeline(),
        table.instant_file_reader(),
        table.requested_actions(),
        progress=progress,
    )


def _sync_partition_types(client: MetastoreClient, ref: TableRef, table: WritableTable) -> int:
    """Give the registered partition columns the types of the table's recorded schema (a table
    registered by its first write before hudi-md typed them has every one as ``string``); the
    server stores the partitions' values as those types (and types values stored before its
    ``part_key_int`` column existed). Returns how many column types changed."""
    config = TableConfig.load(table.storage)
    fields = partition_field_schemas(config, recorded_schema(table.storage, config, table.timeline()))
    registered = client.table(ref.db, ref.table).partition_fields
    if [f.name for f in registered] != [f.name for f in fields]:
        return 0  # registered otherwise than hoodie.properties says: left as it is
    client.update_table(ref.db, ref.table, P.TableUpdate(partition_fields=fields))
    return sum(a.type != b.type for a, b in zip(registered, fields, strict=True))


def listing(options: Mapping[str, Any], db: str | None = None) -> list[dict[str, Any]]:
    """The databases, or a database's tables with their snapshot status."""
    client = _client(options)
    if db is None:
        return [{"database": d.name, "location": d.location} for d in client.databases()]
    out = []
    for t in client.tables(db):
        status = client.snapshot_status(db, t.name)
        out.append(
            {
                "table": f"{t.db}.{t.name}",
                "location": t.location,
                "type": t.table_type,
                "synced_instant": status.synced_instant,
                "snapshot": status.status,
                "pending": len(status.pending),
            }
        )
    return out
