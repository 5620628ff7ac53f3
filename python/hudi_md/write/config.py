"""Write options: Hudi's own keys with Hudi's defaults, resolved once per write."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hudi_md.errors import InvalidOptionError, UnsupportedFeatureError
from hudi_md.metadata import keys as K
from hudi_md.metadata.lifecycle import indexed_columns
from hudi_md.read.merge import MergeSpec
from hudi_md.storage import Storage
from hudi_md.table.config import PARTITION_FIELDS, TableConfig
from hudi_md.write.evolution import ALLOW_COLUMN_DROP, RECONCILE_SCHEMA, SET_NULL_FOR_MISSING, SchemaOptions

TABLE_NAME = "hoodie.table.name"
DATABASE_NAME = "hoodie.database.name"
RECORD_KEY = "hoodie.datasource.write.recordkey.field"
PARTITION_PATH = "hoodie.datasource.write.partitionpath.field"
PRECOMBINE = "hoodie.datasource.write.precombine.field"
ORDERING = "hoodie.table.ordering.fields"
TABLE_TYPE = "hoodie.datasource.write.table.type"
HIVE_STYLE = "hoodie.datasource.write.hive_style_partitioning"
URL_ENCODE = "hoodie.datasource.write.partitionpath.urlencode"
KEYGEN_TYPE = "hoodie.datasource.write.keygenerator.type"
KEYGEN_CLASS = "hoodie.datasource.write.keygenerator.class"
MERGE_MODE = "hoodie.record.merge.mode"  # the table's key (hoodie.properties)
WRITE_MERGE_MODE = "hoodie.write.record.merge.mode"  # the writer's key (Hudi 1.x), which wins
OPERATION = "hoodie.datasource.write.operation"
METADATA_ENABLE = "hoodie.metadata.enable"
COLUMN_STATS_ENABLE = "hoodie.metadata.index.column.stats.enable"
COLUMN_STATS_COLUMNS = "hoodie.metadata.index.column.stats.column.list"
COLUMN_STATS_MAX_COLUMNS = "hoodie.metadata.index.column.stats.max.columns.to.index"
PARTITION_STATS_ENABLE = "hoodie.metadata.index.partition.stats.enable"
RECORD_INDEX_ENABLE = "hoodie.metadata.record.index.enable"
GLOBAL_RECORD_INDEX_ENABLE = "hoodie.metadata.global.record.level.index.enable"
BLOOM_INDEX_ENABLE = "hoodie.metadata.index.bloom.filter.enable"
MAX_FILE_SIZE = "hoodie.parquet.max.file.size"
LOG_BLOCK_FORMAT = "hoodie.logfile.data.block.format"
PARQUET_BLOOM_FILTER = "hoodie.parquet.bloom.filter.enabled"
COMBINE_BEFORE_INSERT = "hoodie.combine.before.insert"
CLEAN_AUTOMATIC = "hoodie.clean.automatic"
CLEANER_POLICY = "hoodie.cleaner.policy"
CLEANER_COMMITS_RETAINED = "hoodie.cleaner.commits.retained"
CLEANER_FILE_VERSIONS_RETAINED = "hoodie.cleaner.fileversions.retained"
COMPACT_INLINE = "hoodie.compact.inline"
COMPACT_INLINE_MAX_DELTA_COMMITS = "hoodie.compact.inline.max.delta.commits"
ARCHIVE_AUTOMATIC = "hoodie.archive.automatic"
KEEP_MIN_COMMITS = "hoodie.keep.min.commits"
KEEP_MAX_COMMITS = "hoodie.keep.max.commits"
CONCURRENCY_MODE = "hoodie.write.concurrency.mode"
LOCK_PROVIDER = "hoodie.write.lock.provider"
LOCK_WAIT_TIME_MS = "hoodie.write.lock.wait_time_ms"  # Hudi's LockConfiguration, default 60 s
FS_LOCK_PATH = "hoodie.write.lock.filesystem.path"
FS_LOCK_EXPIRE = "hoodie.write.lock.filesystem.expire"  # minutes; 0: never

SINGLE_WRITER = "SINGLE_WRITER"
OCC = "OPTIMISTIC_CONCURRENCY_CONTROL"
_LOCK_PACKAGE = "org.apache.hudi.client.transaction.lock."
FILE_SYSTEM_LOCK_PROVIDER = _LOCK_PACKAGE + "FileSystemBasedLockProvider"
IN_PROCESS_LOCK_PROVIDER = _LOCK_PACKAGE + "InProcessLockProvider"
HONOURED_LOCK_PROVIDERS = (FILE_SYSTEM_LOCK_PROVIDER, IN_PROCESS_LOCK_PROVIDER)

OPERATIONS = (
    "insert",
    "bulk_insert",
    "upsert",
    "delete",
    "insert_overwrite",
    "insert_overwrite_table",
    "delete_partition",
)
# Hudi's key: the partition paths a delete_partition replaces (comma-separated)
PARTITIONS_TO_DELETE = "hoodie.datasource.write.partitions.to.delete"
# Hudi's (internal) key: the partition paths an insert_overwrite replaces whether or not rows go
# there (Spark SQL's static INSERT OVERWRITE ... PARTITION (...))
STATIC_OVERWRITE_PARTITIONS = "hoodie.static.overwrite.partition.paths"
# Options whose keys start with this prefix (Hudi's default: "_") go into the commit's extraMetadata.
COMMIT_METADATA_KEY_PREFIX = "hoodie.datasource.write.commitmeta.key.prefix"


def commit_extra_metadata(options: Mapping[str, Any]) -> dict[str, str]:
    """The options a commit records in its ``extraMetadata``, as Apache Hudi's data source does:
    those whose keys start with ``hoodie.datasource.write.commitmeta.key.prefix`` (``_``)."""
    prefix = str(options.get(COMMIT_METADATA_KEY_PREFIX, "_"))
    if not prefix:
        return {}
    return {str(k): str(v) for k, v in options.items() if str(k).startswith(prefix) and v is not None}


@dataclass(frozen=True)
class Concurrency:
    """``hoodie.write.concurrency.mode`` and the lock provider, resolved.

    ``lock_path`` is the lock file (relative to the table): hudi-md's own
    ``.hoodie/.locks/hudi-md.lock`` unless ``FileSystemBasedLockProvider`` names Hudi's
    (``<hoodie.write.lock.filesystem.path, default .hoodie>/lock``). ``foreign_expiry_s``: when a
    lock file that is not hudi-md's (an Apache Hudi writer's ``LockInfo``) may be broken, by its
    age (``hoodie.write.lock.filesystem.expire`` minutes; None: never, Hudi's default 0)."""

    mode: str = SINGLE_WRITER
    provider: str | None = None
    lock_path: str | None = None
    wait_s: float = 60.0
    foreign_expiry_s: float | None = None

    @property
    def optimistic(self) -> bool:
        return self.mode == OCC


def concurrency_settings(opts: Mapping[str, Any]) -> Concurrency:
    """Resolve (or refuse) the concurrency options; every refusal names the option and value."""
    raw_mode = str(opts.get(CONCURRENCY_MODE) or SINGLE_WRITER).strip()
    mode = raw_mode.upper()
    if mode not in (SINGLE_WRITER, OCC):
        raise InvalidOptionError(
            f"{CONCURRENCY_MODE}={raw_mode} is not supported by hudi-md's writer: use "
            f"{SINGLE_WRITER} (the default) or {OCC.lower()} with a {LOCK_PROVIDER} "
            f"({FILE_SYSTEM_LOCK_PROVIDER} or {IN_PROCESS_LOCK_PROVIDER}); "
            "NON_BLOCKING_CONCURRENCY_CONTROL is not implemented"
        )
    provider = str(opts.get(LOCK_PROVIDER) or "").strip() or None
    if provider is not None and provider not in HONOURED_LOCK_PROVIDERS:
        raise InvalidOptionError(
            f"{LOCK_PROVIDER}={provider} is not supported by hudi-md's writer: it honours "
            f"{FILE_SYSTEM_LOCK_PROVIDER} (Hudi's lock file <table>/.hoodie/lock, shared with "
            f"Apache Hudi writers) and {IN_PROCESS_LOCK_PROVIDER} (hudi-md's own lock file); "
            "ZooKeeper, DynamoDB, Hive metastore and other lock services are not implemented"
        )
    if mode == OCC and provider is None:
        raise InvalidOptionError(
            f"{CONCURRENCY_MODE}={raw_mode} needs a {LOCK_PROVIDER} (as in Apache Hudi): "
            f"{FILE_SYSTEM_LOCK_PROVIDER} or {IN_PROCESS_LOCK_PROVIDER}"
        )
    wait_ms = _int(opts, LOCK_WAIT_TIME_MS, 60_000)
    if wait_ms < 0:
        raise InvalidOptionError(f"{LOCK_WAIT_TIME_MS} must be >= 0, got {wait_ms}")
    lock_path = None
    foreign_expiry = None
    if provider == FILE_SYSTEM_LOCK_PROVIDER:
        lock_path = ".hoodie/lock"
        directory = str(opts.get(FS_LOCK_PATH) or "").strip().rstrip("/")
        if directory:
            lock_path = _relative_lock_dir(directory, opts) + "/lock"
        expire = _int(opts, FS_LOCK_EXPIRE, 0)
        if expire < 0:
            raise InvalidOptionError(f"{FS_LOCK_EXPIRE} must be >= 0 minutes, got {expire}")
        foreign_expiry = expire * 60.0 if expire else None
    return Concurrency(mode, provider, lock_path, wait_ms / 1000.0, foreign_expiry)


def _relative_lock_dir(directory: str, opts: Mapping[str, Any]) -> str:
    """``hoodie.write.lock.filesystem.path`` as a path inside the table (relative, or an absolute
    path under ``hoodie.base.path``, which the writer sets); a lock outside the table is refused."""
    base = str(opts.get("hoodie.base.path") or "").rstrip("/")
    if base and (directory == base or directory.startswith(base + "/")):
        rel = directory[len(base) :].lstrip("/")
    elif "://" in directory or directory.startswith("/"):
        raise InvalidOptionError(
            f"{FS_LOCK_PATH}={directory} is outside the table; hudi-md keeps the lock file under "
            "the table's base path (a path relative to it, or absolute under it)"
        )
    else:
        rel = directory
    if not rel or ".." in rel.split("/"):
        raise InvalidOptionError(f"{FS_LOCK_PATH}={directory} must name a folder inside the table")
    return rel


def _bool(options: Mapping[str, str], key: str, default: bool) -> bool:
    value = options.get(key)
    if value is None or value == "":
        return default
    v = str(value).strip().lower()
    if v not in ("true", "false"):
        raise InvalidOptionError(f"{key} must be true or false, got {value!r}")
    return v == "true"


def _int(options: Mapping[str, str], key: str, default: int) -> int:
    value = options.get(key)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError as e:
        raise InvalidOptionError(f"{key} must be an integer, got {value!r}") from e


def _merge_mode(opts: Mapping[str, str]) -> str | None:
    """The merge mode the options name: Hudi's write key, else the table key; None if neither."""
    for key in (WRITE_MERGE_MODE, MERGE_MODE):
        raw = (opts.get(key) or "").strip()
        if not raw:
            continue
        mode = raw.upper()
        if mode not in ("EVENT_TIME_ORDERING", "COMMIT_TIME_ORDERING"):
            raise InvalidOptionError(
                f"{key}={raw} is not supported by hudi-md's writer: use EVENT_TIME_ORDERING or "
                "COMMIT_TIME_ORDERING (CUSTOM mergers run Java code hudi-md cannot run)"
            )
        return mode
    return None


def _list(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


@dataclass(frozen=True)
class WriteConfig:
    table_name: str
    database_name: str
    record_key_fields: list[str]
    partition_fields: list[str]
    ordering_fields: list[str]
    table_type: str
    hive_style: bool
    url_encode: bool
    keygen: str
    merge_mode: str
    metadata_enabled: bool
    column_stats_enabled: bool
    column_stats_columns: list[str] | None
    column_stats_max_columns: int
    partition_stats_enabled: bool
    record_index_enabled: bool
    bloom_index_enabled: bool
    max_file_size: int
    log_block_format: str
    parquet_bloom_filter: bool
    combine_before_insert: bool
    clean_automatic: bool
    cleaner_policy: str
    commits_retained: int
    file_versions_retained: int
    compact_inline: bool
    compact_inline_max_delta_commits: int
    archive_automatic: bool
    keep_min_commits: int
    keep_max_commits: int
    options: Mapping[str, str]
    concurrency: Concurrency = field(default_factory=Concurrency)
    # column_stats_columns came from the table's index.json, not the options: a name the writer's
    # schema lacks (a dropped column) is skipped, not refused
    column_list_from_table: bool = False
    partitions_to_delete: tuple[str, ...] = ()
    static_overwrite_partitions: tuple[str, ...] = ()
    schema_options: SchemaOptions = field(default_factory=SchemaOptions)
    # how records merge (the table's rules: hudi_md.read.merge), None only in hand-built configs
    merge: MergeSpec | None = None

    def merge_spec(self) -> MergeSpec:
        """The table's record merger rules (:mod:`hudi_md.read.merge`)."""
        if self.merge is not None:
            return self.merge
        return MergeSpec(
            record_key_fields=list(self.record_key_fields),
            ordering_fields=list(self.ordering_fields),
            merge_mode=self.merge_mode if self.ordering_fields else "COMMIT_TIME_ORDERING",
            use_meta_key=True,
        )

    @property
    def is_mor(self) -> bool:
        return self.table_type == "MERGE_ON_READ"

    @classmethod
    def from_options(cls, options: Mapping[str, Any], existing: Any = None) -> WriteConfig:
        """Resolve options; for an existing table its ``hoodie.properties`` wins over options."""
        opts = {str(k): str(v) for k, v in options.items() if v is not None}
        if existing is not None:
            table_name = existing.table_name
            record_keys = existing.record_key_fields
            partitions = existing.partition_fields
            ordering = existing.ordering_fields
            table_type = existing.table_type
            hive = existing.hive_style_partitioning
            url = existing.url_encode_partitioning
            keygen = existing.keygen
            partition_specs = existing.get_list(PARTITION_FIELDS)
            merge_mode = existing.record_merge_mode
            database = existing.database_name
        else:
            table_name = opts.get(TABLE_NAME, "")
            if not table_name:
                raise InvalidOptionError(f"{TABLE_NAME} is required to create a table")
            # none given: a table without record keys, its keys generated (Apache Hudi 1.x)
            record_keys = _list(opts.get(RECORD_KEY))
            partition_specs = _list(opts.get(PARTITION_PATH))
            partitions = [p.split(":", 1)[0] for p in partition_specs]
            ordering = _list(
                opts.get(ORDERING)
                or opts.get("hoodie.datasource.write.ordering.fields")
                or opts.get(PRECOMBINE)
            )
            table_type = opts.get(TABLE_TYPE, "COPY_ON_WRITE").upper()
            if table_type not in ("COPY_ON_WRITE", "MERGE_ON_READ"):
                raise InvalidOptionError(
                    f"{TABLE_TYPE} must be COPY_ON_WRITE or MERGE_ON_READ, got {table_type!r}"
                )
            hive = _bool(opts, HIVE_STYLE, False)
            url = _bool(opts, URL_ENCODE, False)
            keygen = _keygen(opts, record_keys, partitions)
            merge_mode = _merge_mode(opts) or ("EVENT_TIME_ORDERING" if ordering else "COMMIT_TIME_ORDERING")
            database = opts.get(DATABASE_NAME, "default")
        _check_partition_specs(keygen, partition_specs)
        if existing is not None:
            check_options_match_table(opts, existing)
            _check_table_features(existing, metadata_enabled=_bool(opts, METADATA_ENABLE, True))
        concurrency = concurrency_settings(opts)
        keep_min, keep_max = _int(opts, KEEP_MIN_COMMITS, 20), _int(opts, KEEP_MAX_COMMITS, 30)
        if not 0 < keep_min < keep_max:
            raise InvalidOptionError(
                f"need 0 < {KEEP_MIN_COMMITS} ({keep_min}) < {KEEP_MAX_COMMITS} ({keep_max})"
            )
        col_stats = _bool(opts, COLUMN_STATS_ENABLE, True)  # Spark writers default to true
        if existing is not None:
            merge = MergeSpec.from_config(existing)
        else:
            merge = MergeSpec(
                record_key_fields=list(record_keys),
                ordering_fields=list(ordering),
                merge_mode=merge_mode if ordering else "COMMIT_TIME_ORDERING",
                use_meta_key=True,
            )
        return cls(
            table_name=table_name,
            database_name=database,
            record_key_fields=record_keys,
            partition_fields=partitions,
            ordering_fields=ordering,
            table_type=table_type,
            hive_style=hive,
            url_encode=url,
            keygen=keygen,
            merge_mode=merge_mode,
            metadata_enabled=_bool(opts, METADATA_ENABLE, True),
            column_stats_enabled=col_stats,
            column_stats_columns=_list(opts.get(COLUMN_STATS_COLUMNS)) or None,
            column_stats_max_columns=_int(opts, COLUMN_STATS_MAX_COLUMNS, 32),
            partition_stats_enabled=_bool(opts, PARTITION_STATS_ENABLE, col_stats) and bool(partitions),
            record_index_enabled=_bool(opts, RECORD_INDEX_ENABLE, False)
            or _bool(opts, GLOBAL_RECORD_INDEX_ENABLE, False),
            bloom_index_enabled=_bool(opts, BLOOM_INDEX_ENABLE, False),
            max_file_size=_int(opts, MAX_FILE_SIZE, 120 * 1024 * 1024),
            log_block_format=opts.get(LOG_BLOCK_FORMAT, "avro").lower(),
            parquet_bloom_filter=_bool(opts, PARQUET_BLOOM_FILTER, True),
            combine_before_insert=_bool(opts, COMBINE_BEFORE_INSERT, False),
            schema_options=SchemaOptions(
                set_null_for_missing=_bool(opts, SET_NULL_FOR_MISSING, False),
                reconcile=_bool(opts, RECONCILE_SCHEMA, False),
                allow_column_drop=_bool(opts, ALLOW_COLUMN_DROP, False),
            ),
            partitions_to_delete=tuple(_list(opts.get(PARTITIONS_TO_DELETE))),
            static_overwrite_partitions=tuple(_list(opts.get(STATIC_OVERWRITE_PARTITIONS))),
            clean_automatic=_bool(opts, CLEAN_AUTOMATIC, True),
            cleaner_policy=opts.get(CLEANER_POLICY, "KEEP_LATEST_COMMITS").upper(),
            commits_retained=_int(opts, CLEANER_COMMITS_RETAINED, 10),
            file_versions_retained=_int(opts, CLEANER_FILE_VERSIONS_RETAINED, 3),
            compact_inline=_bool(opts, COMPACT_INLINE, False),
            compact_inline_max_delta_commits=_int(opts, COMPACT_INLINE_MAX_DELTA_COMMITS, 5),
            archive_automatic=_bool(opts, ARCHIVE_AUTOMATIC, True),
            keep_min_commits=_int(opts, KEEP_MIN_COMMITS, 20),
            keep_max_commits=_int(opts, KEEP_MAX_COMMITS, 30),
            options=opts,
            concurrency=concurrency,
            merge=merge,
        )


# MDT partitions hudi-md's writer keeps in step with every commit.
MAINTAINED_MDT_PARTITIONS = frozenset(K.MAINTAINED_PARTITIONS)


def check_options_match_table(opts: Mapping[str, str], existing: TableConfig) -> None:
    """Refuse options that name another table than ``existing`` (Apache Hudi's
    ``HoodieWriterUtils.validateTableConfig``): a record key, ordering (precombine) field,
    partition fields, key generator, table type or table name that differs from
    ``hoodie.properties``. Only options that are set are compared; the table's own values apply
    to whatever is left unset."""
    table = existing.source.removesuffix("/.hoodie/hoodie.properties") or existing.table_name
    conflicts = []

    def differs(key: str, given: object, has: object) -> None:
        conflicts.append(f"{key}={given} (the table has {has})")

    if opts.get(RECORD_KEY, "").strip() and _list(opts[RECORD_KEY]) != existing.record_key_fields:
        differs(RECORD_KEY, opts[RECORD_KEY], ",".join(existing.record_key_fields) or "none")
    for key in (PRECOMBINE, "hoodie.datasource.write.ordering.fields", ORDERING):
        given = _list(opts.get(key))
        if given and existing.ordering_fields and given != existing.ordering_fields:
            differs(key, opts[key], ",".join(existing.ordering_fields))
    if opts.get(PARTITION_PATH, "").strip():
        given_fields = [p.split(":", 1)[0] for p in _list(opts[PARTITION_PATH])]
        if given_fields != existing.partition_fields:
            differs(PARTITION_PATH, opts[PARTITION_PATH], ",".join(existing.partition_fields) or "none")
    if KEYGEN_TYPE in opts or opts.get(KEYGEN_CLASS):
        keygen = _keygen(opts, existing.record_key_fields, existing.partition_fields)
        if keygen != existing.keygen.upper():
            key = KEYGEN_TYPE if KEYGEN_TYPE in opts else KEYGEN_CLASS
            differs(key, opts[key], existing.keygen)
    mode = _merge_mode(opts)
    if mode is not None and mode != existing.record_merge_mode:
        key = WRITE_MERGE_MODE if opts.get(WRITE_MERGE_MODE, "").strip() else MERGE_MODE
        differs(key, opts[key], existing.record_merge_mode)
    if opts.get(TABLE_TYPE, "").strip() and opts[TABLE_TYPE].strip().upper() != existing.table_type:
        differs(TABLE_TYPE, opts[TABLE_TYPE], existing.table_type)
    name = opts.get(TABLE_NAME, "").strip()
    if name and name.lower() != existing.table_name.lower():
        differs(TABLE_NAME, name, existing.table_name)
    if conflicts:
        raise InvalidOptionError(
            f"{table}: the write options conflict with the table's hoodie.properties: "
            + "; ".join(conflicts)
            + ". Leave them unset to write with the table's own, or write to another path"
        )


def _check_table_features(existing: TableConfig, *, metadata_enabled: bool) -> None:
    """Refuse to write an existing table whose features hudi-md's writer would leave stale:
    Apache Hudi's readers would then answer wrongly (a secondary index not updated by a commit
    hides its rows from queries that use the index) or miss data (CDC logs not written)."""
    table = existing.source.removesuffix("/.hoodie/hoodie.properties") or existing.table_name
    refusals = []
    if existing.base_file_format != "PARQUET":
        refusals.append(f"its base files are {existing.base_file_format} (hudi-md writes Parquet)")
    if existing.cdc_enabled:
        refusals.append(
            "it has change data capture on (hoodie.table.cdc.enabled=true; hudi-md writes no CDC log files)"
        )
    if not existing.populate_meta_fields:
        refusals.append("it has no meta fields (hoodie.populate.meta.fields=false, virtual keys)")
    if existing.record_merge_mode not in ("EVENT_TIME_ORDERING", "COMMIT_TIME_ORDERING"):
        refusals.append(f"its record merge mode is {existing.record_merge_mode}")
    if existing.get("hoodie.table.partial.update.mode"):
        refusals.append("it uses partial updates (hoodie.table.partial.update.mode)")
    if metadata_enabled:
        unmaintained = sorted(
            p
            for p in {*existing.metadata_partitions, *existing.metadata_partitions_inflight}
            if p not in MAINTAINED_MDT_PARTITIONS
        )
        if unmaintained:
            refusals.append(
                f"its metadata table has indexes hudi-md does not maintain ({', '.join(unmaintained)}); "
                f"drop them (`hudi-md metadata drop-index <path> {' '.join(unmaintained)}`, or DROP "
                "INDEX in Apache Hudi) or write with hoodie.metadata.enable=false, which removes the "
                "metadata table"
            )
    if refusals:
        raise UnsupportedFeatureError(f"hudi-md cannot write {table}: " + "; ".join(refusals))


def _keygen(opts: Mapping[str, str], record_keys: list[str], partitions: list[str]) -> str:
    if KEYGEN_TYPE in opts:
        return opts[KEYGEN_TYPE].upper()
    cls_name = opts.get(KEYGEN_CLASS, "").rsplit(".", 1)[-1]
    by_class = {
        "SimpleKeyGenerator": "SIMPLE",
        "ComplexKeyGenerator": "COMPLEX",
        "NonpartitionedKeyGenerator": "NON_PARTITION",
        "CustomKeyGenerator": "CUSTOM",
    }
    if cls_name:
        if cls_name not in by_class:
            raise InvalidOptionError(
                f"{KEYGEN_CLASS}={opts[KEYGEN_CLASS]} is not supported by hudi-md's writer"
            )
        return by_class[cls_name]
    if not partitions:
        return "NON_PARTITION"
    return "COMPLEX" if len(record_keys) > 1 or len(partitions) > 1 else "SIMPLE"


def _check_partition_specs(keygen: str, specs: list[str]) -> None:
    """Only key generators whose partition path is the value itself are written: a timestamp
    partition (``TimestampBasedKeyGenerator``, ``field:TIMESTAMP`` of ``CustomKeyGenerator``)
    formats values by settings hudi-md does not apply, so its paths would differ from Hudi's."""
    if keygen not in ("SIMPLE", "COMPLEX", "NON_PARTITION", "CUSTOM"):
        raise InvalidOptionError(
            f"key generator {keygen} is not supported by hudi-md's writer (its partition paths would "
            "not be Apache Hudi's); supported: SimpleKeyGenerator, ComplexKeyGenerator, "
            "NonpartitionedKeyGenerator, CustomKeyGenerator with SIMPLE fields"
        )
    for spec in specs:
        kind = spec.partition(":")[2]
        if kind and kind.strip().upper() != "SIMPLE":
            raise InvalidOptionError(
                f"{PARTITION_PATH}: {spec!r} is a {kind.strip().upper()} partition field, which "
                "hudi-md's writer does not support (only field or field:SIMPLE)"
            )


def with_indexed_columns(cfg: WriteConfig, storage: Storage) -> WriteConfig:
    """``cfg`` with the columns ``index.json`` names for column_stats when its options name none:
    every writer of a table indexes the same columns (Apache Hudi reads them from there too)."""
    if cfg.column_stats_columns is not None:
        return cfg
    named = indexed_columns(storage)
    return dataclasses.replace(cfg, column_stats_columns=named, column_list_from_table=True) if named else cfg
