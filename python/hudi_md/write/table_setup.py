"""Setting a table up for a write: creating it (``hoodie.properties``, version 9), checking that
hudi-md may write it, the writer's Avro schema, and bringing the MDT's partitions in line with the
options (created from the table as it is, or the MDT dropped when it is turned off).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import pyarrow as pa

from hudi_md.errors import InvalidOptionError
from hudi_md.metadata import keys as K
from hudi_md.metadata.indexing import indexing_state, planned_partitions
from hudi_md.metadata.lifecycle import (
    Progress,
    delete_metadata_table,
    drop_index_defs,
    drop_indexes,
    index_definitions,
    initialize_partitions,
)
from hudi_md.storage import Storage
from hudi_md.table import config as C
from hudi_md.table.config import TableConfig, write_table_config
from hudi_md.table.layout import (
    MetadataRequiredError,
    check_layout_options,
    is_federated_table,
    layout_properties,
    new_table_layout,
)
from hudi_md.table.timeline import INDEXING
from hudi_md.write.config import WriteConfig, with_indexed_columns
from hudi_md.write.file_groups import OP_COLUMN
from hudi_md.write.indexing import abandon_pending_indexing
from hudi_md.write.recovery import rollback_failed_writes
from hudi_md.write.schema import arrow_to_avro_schema, with_meta_fields
from hudi_md.write.transaction import MDT_FOLDER, TEMP, TIMELINE, WritableTable

INDEX_DEFS = ".hoodie/.index_defs/index.json"
META_FIELDS = frozenset(
    {
        "_hoodie_commit_time",
        "_hoodie_commit_seqno",
        "_hoodie_record_key",
        "_hoodie_partition_path",
        "_hoodie_file_name",
    }
)


def create_table(
    storage: Storage, cfg: WriteConfig, avro_schema_json: str, layout: Mapping[str, str] | None = None
) -> TableConfig:
    """``hoodie.properties`` of a new version-9 table, and its timeline folders. ``layout``: its
    storage layout keys (:func:`hudi_md.table.layout.new_table_layout`), fixed from now on."""
    props = {
        C.TABLE_NAME: cfg.table_name,
        C.DATABASE_NAME: cfg.database_name,
        C.TABLE_TYPE: cfg.table_type,
        C.TABLE_VERSION: "9",
        C.INITIAL_VERSION: "9",
        C.PARTITION_FIELDS: ",".join(cfg.partition_fields),
        C.KEYGEN_TYPE: cfg.keygen,
        C.HIVE_STYLE_PARTITIONING: str(cfg.hive_style).lower(),
        C.URL_ENCODE_PARTITIONING: str(cfg.url_encode).lower(),
        C.DROP_PARTITION_COLUMNS: "false",
        C.TIMELINE_LAYOUT_VERSION: "2",
        C.TIMELINE_PATH: "timeline",
        C.TIMELINE_HISTORY_PATH: "history",
        C.ARCHIVELOG_FOLDER: "archived",
        C.RECORD_MERGE_MODE: cfg.merge_mode,
        C.TABLE_FORMAT: "native",
        C.INDEX_DEFS_PATH: INDEX_DEFS,
        C.METADATA_PARTITIONS_INFLIGHT: "",
        C.CREATE_SCHEMA: without_meta(avro_schema_json),
    }
    if cfg.record_key_fields:  # none: keys generated (Apache Hudi writes no such property then)
        props[C.RECORD_KEY_FIELDS] = ",".join(cfg.record_key_fields)
    if cfg.ordering_fields:
        props[C.ORDERING_FIELDS] = ",".join(cfg.ordering_fields)
    if not cfg.partition_fields:
        props.pop(C.PARTITION_FIELDS)
    props.update(layout or {})
    storage.makedirs(f"{TIMELINE}/history")
    storage.makedirs(TEMP)
    return write_table_config(storage, props)


def check_version(storage: Storage, existing: TableConfig | None) -> None:
    if existing is not None and existing.table_version != 9:
        raise InvalidOptionError(
            f"{storage.uri()} is table version {existing.table_version}; hudi-md writes version 9"
        )


def check_layout(
    storage: Storage, existing: TableConfig | None, options: Mapping[str, str], cfg: WriteConfig
) -> dict[str, str]:
    """The storage layout a write may use: an existing table's (options naming another are refused:
    StorageLayoutError), or, for a new table, the one the options name (returned, for its
    ``hoodie.properties``). A federated layout needs the MDT (its only listing)."""
    if existing is not None:
        check_layout_options(existing.to_dict(), options, storage.uri())
        federated = is_federated_table(existing.to_dict())
        layout: dict[str, str] = {}
    else:
        layout = new_table_layout(options, cfg.table_name)
        federated = bool(layout) and is_federated_table({**layout, C.TABLE_NAME: cfg.table_name})
    if federated and not cfg.metadata_enabled:
        raise MetadataRequiredError(
            f"{storage.uri()}: hoodie.metadata.enable=false with a federated storage layout "
            f"({layout_of_text(existing, layout)}): the metadata table is the only listing of its data "
            "files, so it cannot be turned off"
        )
    return layout


def layout_of_text(existing: TableConfig | None, layout: Mapping[str, str]) -> str:
    props = existing.to_dict() if existing is not None else dict(layout)
    return ", ".join(f"{k}={v}" for k, v in layout_properties(props).items())


def writer_avro_schema(cfg: WriteConfig, schema: pa.Schema) -> str:
    """The writer schema of the table's records (Avro JSON, meta fields first)."""
    cols = [f for f in schema if f.name not in META_FIELDS and f.name != OP_COLUMN]
    avro = arrow_to_avro_schema(pa.schema(cols), f"{cfg.table_name}_record", f"hoodie.{cfg.table_name}")
    return json.dumps(with_meta_fields(avro), separators=(",", ":"))


def without_meta(avro_schema_json: str) -> str:
    schema = json.loads(avro_schema_json)
    schema["fields"] = [f for f in schema["fields"] if f["name"] not in META_FIELDS]
    return json.dumps(schema, separators=(",", ":"))


def wanted_mdt_partitions(cfg: WriteConfig) -> list[str]:
    """The MDT partitions the options ask for (none when the MDT is off)."""
    if not cfg.metadata_enabled:
        return []
    wanted = [K.FILES]
    if cfg.column_stats_enabled:
        wanted.append(K.COLUMN_STATS)
    if cfg.partition_stats_enabled:
        wanted.append(K.PARTITION_STATS)
    if cfg.record_index_enabled:
        wanted.append(K.RECORD_INDEX)
    if cfg.bloom_index_enabled:
        wanted.append(K.BLOOM_FILTERS)
    return wanted


def sync_metadata_table_state(table: WritableTable, cfg: WriteConfig, config: TableConfig) -> TableConfig:
    """Create missing MDT partitions (from the table's current state), or drop the MDT when
    ``hoodie.metadata.enable=false`` so no reader ever sees a stale one. The caller holds the lock."""
    wanted = wanted_mdt_partitions(cfg)
    if not wanted:
        if config.metadata_partitions or table.storage.exists(MDT_FOLDER):
            return delete_metadata_table(table.storage)
        return config
    # An index an indexer is building (inflight, or planned by a pending indexing instant)
    # becomes available when it completes: building it here too would race it.
    building = set(config.metadata_partitions_inflight) | _planned(table, config)
    missing = [p for p in wanted if p not in config.metadata_partitions and p not in building]
    if missing:
        config = initialize_partitions(table.storage, config, missing, cfg, table.options)
    return config


def _planned(table: WritableTable, config: TableConfig) -> set[str]:
    if not any(i.action == INDEXING for i in table.timeline().pending()):
        return set()
    return planned_partitions(indexing_state(table.storage, config, table.timeline()).pending)


# --- the MDT's lifecycle as the CLI drives it: each under the lock, after recovery ------------------


def create_metadata_partitions(
    table: WritableTable, partitions: Sequence[str], *, progress: Progress | None = None
) -> tuple[list[str], TableConfig]:
    """Build the named MDT partitions that do not exist yet (``hudi-md metadata create``);
    returns the partitions built and the table configuration after."""
    with table.lock():
        rollback_failed_writes(table, TableConfig.load(table.storage))
        config = TableConfig.load(table.storage)
        building = sorted(
            (set(config.metadata_partitions_inflight) | _planned(table, config)) & set(partitions)
        )
        if building:
            raise InvalidOptionError(
                f"{', '.join(building)} of {table.storage.uri()} is being built by an indexer (hudi-md "
                "index show): run it (hudi-md index run) or drop it (hudi-md index drop) first"
            )
        missing = [p for p in partitions if p not in config.metadata_partitions]
        if missing:
            cfg = with_indexed_columns(WriteConfig.from_options(table.options, config), table.storage)
            config = initialize_partitions(
                table.storage, config, missing, cfg, table.options, progress=progress
            )
        return missing, config


def repair_metadata_table(
    table: WritableTable, partitions: Sequence[str] | None = None, *, progress: Progress | None = None
) -> TableConfig:
    """Rebuild the MDT from what is on storage (``hudi-md metadata repair``), under the lock: failed
    writes are rolled back first, then the MDT is deleted and its partitions (``partitions``, by
    default those it had, at least ``files``) are built from one listing of the table's files,
    keeping only files of completed instants (the file-system view's rule). For a table whose
    storage strategy spreads its data files over a storage path, that listing walks the storage
    path: its MDT is its only listing, and this is how a lost one comes back. Safe to run again."""
    with table.lock():
        rollback_failed_writes(table, TableConfig.load(table.storage))
        config = TableConfig.load(table.storage)
        wanted = list(partitions) if partitions else list(config.metadata_partitions)
        wanted = [K.FILES, *[p for p in wanted if p != K.FILES]]
        unknown = [p for p in wanted if p not in K.MAINTAINED_PARTITIONS]
        if unknown:
            raise InvalidOptionError(
                f"hudi-md cannot build MDT partition(s) {', '.join(unknown)} (it builds "
                f"{', '.join(K.MAINTAINED_PARTITIONS)}); drop them first (hudi-md index drop)"
            )
        cfg = with_indexed_columns(WriteConfig.from_options(table.options, config), table.storage)
        config = delete_metadata_table(table.storage, definitions=False)
        return initialize_partitions(table.storage, config, wanted, cfg, table.options, progress=progress)


def bring_metadata_up_to_date(table: WritableTable) -> tuple[list[str], TableConfig]:
    """Roll back failed writes and build the MDT partitions the options want (``hudi-md metadata
    init``); returns the instants rolled back and the table configuration after."""
    with table.lock():
        rolled = rollback_failed_writes(table, TableConfig.load(table.storage))
        config = TableConfig.load(table.storage)
        cfg = WriteConfig.from_options(table.options, config)
        return rolled, sync_metadata_table_state(table, cfg, config)


def delete_metadata(table: WritableTable) -> TableConfig:
    """Delete the MDT (``hoodie.properties`` first, then the files), under the lock."""
    with table.lock():
        return delete_metadata_table(table.storage)


def drop_metadata_indexes(table: WritableTable, names: Sequence[str]) -> TableConfig:
    """Drop MDT indexes (e.g. ``secondary_index_<name>``), as Hudi's ``DROP INDEX`` does, under
    the lock. A pending ``indexing`` instant that plans one of them is rolled back first (its plan,
    its MDT deltacommit, and the partitions it was building that are not available yet): unlike
    Hudi 1.2, which leaves such an instant pending, nothing of it stays behind."""
    with table.lock():
        config = TableConfig.load(table.storage)
        state = indexing_state(table.storage, config, table.timeline())
        known = set(config.metadata_partitions) | set(config.metadata_partitions_inflight)
        defined_only = set(index_definitions(table.storage)) - known  # dropped by a writer (validate)
        known |= planned_partitions(state.pending) | defined_only
        unknown = [n for n in names if n not in known]
        if unknown:
            raise InvalidOptionError(
                f"{table.storage.uri()} has no metadata-table index {', '.join(unknown)} "
                f"(it has {', '.join(sorted(known)) or 'none'})"
            )
        for item in state.pending:
            planned = set(item.plan.partition_names) if item.plan is not None else set()
            if planned & set(names):
                abandon_pending_indexing(table, item.instant.requested_time, item.plan)
        config = TableConfig.load(table.storage)
        present = set(config.metadata_partitions) | set(config.metadata_partitions_inflight)
        dropped = sorted(set(names) & present)
        if set(names) & defined_only:
            drop_index_defs(table.storage, sorted(set(names) & defined_only))
        for name in sorted(set(names) - present):
            folder = f"{MDT_FOLDER}/{name}"  # planned only: its file groups may exist already
            if table.storage.exists(folder):
                table.storage.delete(folder, recursive=True)
        return drop_indexes(table.storage, dropped) if dropped else TableConfig.load(table.storage)
