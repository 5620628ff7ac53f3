"""Write options: Hudi's own keys with Hudi's defaults, resolved once per write."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hudi_md.config import metadata as M
from hudi_md.config import services as S
from hudi_md.config import table as T
from hudi_md.config import write as W
from hudi_md.config.option import ConfigOption
from hudi_md.errors import InvalidOptionError, UnsupportedFeatureError
from hudi_md.metadata import keys as K
from hudi_md.metadata.lifecycle import indexed_columns
from hudi_md.read.merge import MergeSpec
from hudi_md.storage import Storage
from hudi_md.table.config import TableConfig
from hudi_md.write.evolution import SchemaOptions
from hudi_md.write.small_files import FileSizing

# The keys (hudi_md.config declares them, with their types and defaults), by the names the rest
# of the package and its users know them by.
TABLE_NAME = T.TABLE_NAME.key
DATABASE_NAME = T.DATABASE_NAME.key
RECORD_KEY = W.RECORD_KEY.key
PARTITION_PATH = W.PARTITION_PATH.key
PRECOMBINE = W.PRECOMBINE.key
ORDERING = T.ORDERING_FIELDS.key
TABLE_TYPE = W.TABLE_TYPE.key
HIVE_STYLE = T.HIVE_STYLE_PARTITIONING.key
URL_ENCODE = T.URL_ENCODE_PARTITIONING.key
KEYGEN_TYPE = W.KEYGEN_TYPE.key
KEYGEN_CLASS = W.KEYGEN_CLASS.key
MERGE_MODE = T.RECORD_MERGE_MODE.key  # the table's key (hoodie.properties)
WRITE_MERGE_MODE = W.WRITE_MERGE_MODE.key  # the writer's key (Hudi 1.x), which wins
OPERATION = W.OPERATION.key
METADATA_ENABLE = M.METADATA_ENABLE.key
COLUMN_STATS_ENABLE = M.COLUMN_STATS_ENABLE.key
COLUMN_STATS_COLUMNS = M.COLUMN_STATS_COLUMNS.key
COLUMN_STATS_MAX_COLUMNS = M.COLUMN_STATS_MAX_COLUMNS.key
PARTITION_STATS_ENABLE = M.PARTITION_STATS_ENABLE.key
# Hudi 1.2's key; hoodie.metadata.record.index.enable, its older name, is read too
RECORD_INDEX_ENABLE = GLOBAL_RECORD_INDEX_ENABLE = M.RECORD_INDEX_ENABLE.key
BLOOM_INDEX_ENABLE = M.BLOOM_INDEX_ENABLE.key
MAX_FILE_SIZE = W.MAX_FILE_SIZE.key
LOG_BLOCK_FORMAT = W.LOG_BLOCK_FORMAT.key
PARQUET_BLOOM_FILTER = W.PARQUET_BLOOM_FILTER.key
COMBINE_BEFORE_INSERT = W.COMBINE_BEFORE_INSERT.key
CLEAN_AUTOMATIC = S.CLEAN_AUTOMATIC.key
CLEANER_POLICY = S.CLEANER_POLICY.key
CLEANER_COMMITS_RETAINED = S.CLEANER_COMMITS_RETAINED.key
CLEANER_FILE_VERSIONS_RETAINED = S.CLEANER_FILE_VERSIONS_RETAINED.key
COMPACT_INLINE = S.COMPACT_INLINE.key
COMPACT_INLINE_MAX_DELTA_COMMITS = S.COMPACT_INLINE_MAX_DELTA_COMMITS.key
ARCHIVE_AUTOMATIC = S.ARCHIVE_AUTOMATIC.key
KEEP_MIN_COMMITS = S.KEEP_MIN_COMMITS.key
KEEP_MAX_COMMITS = S.KEEP_MAX_COMMITS.key
CONCURRENCY_MODE = W.CONCURRENCY_MODE.key
LOCK_PROVIDER = W.LOCK_PROVIDER.key
LOCK_WAIT_TIME_MS = W.LOCK_WAIT_TIME_MS.key
FS_LOCK_PATH = W.FS_LOCK_PATH.key
FS_LOCK_EXPIRE = W.FS_LOCK_EXPIRE.key

SINGLE_WRITER = "SINGLE_WRITER"
OCC = "OPTIMISTIC_CONCURRENCY_CONTROL"
_LOCK_PACKAGE = "org.apache.hudi.client.transaction.lock."
FILE_SYSTEM_LOCK_PROVIDER = _LOCK_PACKAGE + "FileSystemBasedLockProvider"
IN_PROCESS_LOCK_PROVIDER = _LOCK_PACKAGE + "InProcessLockProvider"
HONOURED_LOCK_PROVIDERS = (FILE_SYSTEM_LOCK_PROVIDER, IN_PROCESS_LOCK_PROVIDER)

OPERATIONS = W.OPERATIONS
PARTITIONS_TO_DELETE = W.PARTITIONS_TO_DELETE.key
STATIC_OVERWRITE_PARTITIONS = W.STATIC_OVERWRITE_PARTITIONS.key
COMMIT_METADATA_KEY_PREFIX = W.COMMIT_METADATA_KEY_PREFIX.key


def commit_extra_metadata(options: Mapping[str, Any]) -> dict[str, str]:
    """The options a commit records in its ``extraMetadata``, as Apache Hudi's data source does:
    those whose keys start with ``hoodie.datasource.write.commitmeta.key.prefix`` (``_``)."""
    prefix = W.COMMIT_METADATA_KEY_PREFIX.get(options)
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
    wait_s: float = W.LOCK_WAIT_TIME_MS.default / 1000.0
    foreign_expiry_s: float | None = None

    @property
    def optimistic(self) -> bool:
        return self.mode == OCC


def concurrency_settings(opts: Mapping[str, Any]) -> Concurrency:
    """Resolve (or refuse) the concurrency options; every refusal names the option and value."""
    mode = W.CONCURRENCY_MODE.get(opts)
    raw_mode = W.CONCURRENCY_MODE.raw(opts) or mode
    if mode not in (SINGLE_WRITER, OCC):
        raise InvalidOptionError(
            f"{CONCURRENCY_MODE}={raw_mode} is not supported by hudi-md's writer: use "
            f"{SINGLE_WRITER} (the default) or {OCC.lower()} with a {LOCK_PROVIDER} "
            f"({FILE_SYSTEM_LOCK_PROVIDER} or {IN_PROCESS_LOCK_PROVIDER}); "
            "NON_BLOCKING_CONCURRENCY_CONTROL is not implemented"
        )
    provider = (W.LOCK_PROVIDER.get(opts) or "").strip() or None
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
    wait_ms = W.LOCK_WAIT_TIME_MS.get(opts)
    if wait_ms < 0:
        raise W.LOCK_WAIT_TIME_MS.invalid(wait_ms, "must be >= 0")
    lock_path = None
    foreign_expiry = None
    if provider == FILE_SYSTEM_LOCK_PROVIDER:
        lock_path = ".hoodie/lock"
        directory = (W.FS_LOCK_PATH.get(opts) or "").strip().rstrip("/")
        if directory:
            lock_path = _relative_lock_dir(directory, opts) + "/lock"
        expire = W.FS_LOCK_EXPIRE.get(opts)
        if expire < 0:
            raise W.FS_LOCK_EXPIRE.invalid(expire, "must be >= 0 minutes")
        foreign_expiry = expire * 60.0 if expire else None
    return Concurrency(mode, provider, lock_path, wait_ms / 1000.0, foreign_expiry)


def _relative_lock_dir(directory: str, opts: Mapping[str, Any]) -> str:
    """``hoodie.write.lock.filesystem.path`` as a path inside the table (relative, or an absolute
    path under ``hoodie.base.path``, which the writer sets); a lock outside the table is refused."""
    base = (W.BASE_PATH.get(opts) or "").rstrip("/")
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


def _merge_mode(opts: Mapping[str, str]) -> str | None:
    """The merge mode the options name: Hudi's write key, else the table key; None if neither."""
    for option in (W.WRITE_MERGE_MODE, T.RECORD_MERGE_MODE):
        mode = option.get(opts)
        if mode is None:
            continue
        if mode not in ("EVENT_TIME_ORDERING", "COMMIT_TIME_ORDERING"):
            raise option.invalid(
                option.raw(opts),
                "not supported by hudi-md's writer: use EVENT_TIME_ORDERING or COMMIT_TIME_ORDERING "
                "(CUSTOM mergers run Java code hudi-md cannot run)",
            )
        return mode
    return None


def _list(option: ConfigOption[tuple[str, ...] | None], opts: Mapping[str, Any]) -> list[str]:
    return list(option.get(opts) or ())


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
    # where insert and upsert put new records (small-file handling, new file groups' size)
    sizing: FileSizing = field(default_factory=lambda: FileSizing.from_options({}))

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
            partition_specs = existing.partition_specs
            merge_mode = existing.record_merge_mode
            database = existing.database_name
        else:
            table_name = T.TABLE_NAME.get(opts)
            if not table_name:
                raise InvalidOptionError(f"{TABLE_NAME} is required to create a table")
            # none given: a table without record keys, its keys generated (Apache Hudi 1.x)
            record_keys = _list(W.RECORD_KEY, opts)
            partition_specs = _list(W.PARTITION_PATH, opts)
            partitions = [p.split(":", 1)[0] for p in partition_specs]
            ordering = _list(T.ORDERING_FIELDS, opts) or _list(W.PRECOMBINE, opts)
            table_type = W.TABLE_TYPE.get(opts)
            hive = T.HIVE_STYLE_PARTITIONING.get(opts)
            url = T.URL_ENCODE_PARTITIONING.get(opts)
            keygen = _keygen(opts, record_keys, partitions)
            merge_mode = _merge_mode(opts) or ("EVENT_TIME_ORDERING" if ordering else "COMMIT_TIME_ORDERING")
            database = T.DATABASE_NAME.get(opts)
        _check_partition_specs(keygen, partition_specs)
        metadata_enabled = M.METADATA_ENABLE.get(opts)
        if existing is not None:
            check_options_match_table(opts, existing)
            _check_table_features(existing, metadata_enabled=metadata_enabled)
        concurrency = concurrency_settings(opts)
        keep_min, keep_max = S.KEEP_MIN_COMMITS.get(opts), S.KEEP_MAX_COMMITS.get(opts)
        if not 0 < keep_min < keep_max:
            raise InvalidOptionError(
                f"need 0 < {KEEP_MIN_COMMITS} ({keep_min}) < {KEEP_MAX_COMMITS} ({keep_max})"
            )
        col_stats = M.COLUMN_STATS_ENABLE.get(opts)
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
            metadata_enabled=metadata_enabled,
            column_stats_enabled=col_stats,
            column_stats_columns=_list(M.COLUMN_STATS_COLUMNS, opts) or None,
            column_stats_max_columns=M.COLUMN_STATS_MAX_COLUMNS.get(opts),
            partition_stats_enabled=bool(M.PARTITION_STATS_ENABLE.get(opts, col_stats)) and bool(partitions),
            record_index_enabled=M.RECORD_INDEX_ENABLE.get(opts),
            bloom_index_enabled=M.BLOOM_INDEX_ENABLE.get(opts),
            max_file_size=W.MAX_FILE_SIZE.get(opts),
            log_block_format=W.LOG_BLOCK_FORMAT.get(opts),
            parquet_bloom_filter=W.PARQUET_BLOOM_FILTER.get(opts),
            combine_before_insert=W.COMBINE_BEFORE_INSERT.get(opts),
            schema_options=SchemaOptions(
                set_null_for_missing=W.SET_NULL_FOR_MISSING.get(opts),
                reconcile=W.RECONCILE_SCHEMA.get(opts),
                allow_column_drop=W.ALLOW_COLUMN_DROP.get(opts),
            ),
            partitions_to_delete=W.PARTITIONS_TO_DELETE.get(opts) or (),
            static_overwrite_partitions=W.STATIC_OVERWRITE_PARTITIONS.get(opts),
            clean_automatic=S.CLEAN_AUTOMATIC.get(opts),
            cleaner_policy=S.CLEANER_POLICY.get(opts),
            commits_retained=S.CLEANER_COMMITS_RETAINED.get(opts),
            file_versions_retained=S.CLEANER_FILE_VERSIONS_RETAINED.get(opts),
            compact_inline=S.COMPACT_INLINE.get(opts),
            compact_inline_max_delta_commits=S.COMPACT_INLINE_MAX_DELTA_COMMITS.get(opts),
            archive_automatic=S.ARCHIVE_AUTOMATIC.get(opts),
            keep_min_commits=keep_min,
            keep_max_commits=keep_max,
            options=opts,
            concurrency=concurrency,
            merge=merge,
            sizing=FileSizing.from_options(opts),
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

    def check(option: ConfigOption[Any], matches: bool, has: object) -> None:
        if not matches:
            conflicts.append(f"{option.given_key(opts)}={option.raw(opts)} (the table has {has})")

    if W.RECORD_KEY.is_set(opts):
        has = ",".join(existing.record_key_fields) or "none"
        check(W.RECORD_KEY, _list(W.RECORD_KEY, opts) == existing.record_key_fields, has)
    for ordering in (W.PRECOMBINE, T.ORDERING_FIELDS):
        given = _list(ordering, opts)
        if given and existing.ordering_fields:
            check(ordering, given == existing.ordering_fields, ",".join(existing.ordering_fields))
    if W.PARTITION_PATH.is_set(opts):
        given_fields = [p.split(":", 1)[0] for p in _list(W.PARTITION_PATH, opts)]
        has = ",".join(existing.partition_fields) or "none"
        check(W.PARTITION_PATH, given_fields == existing.partition_fields, has)
    if W.KEYGEN_TYPE.is_set(opts) or W.KEYGEN_CLASS.is_set(opts):
        keygen = _keygen(opts, existing.record_key_fields, existing.partition_fields)
        given_by = W.KEYGEN_TYPE if W.KEYGEN_TYPE.is_set(opts) else W.KEYGEN_CLASS
        check(given_by, keygen == existing.keygen.upper(), existing.keygen)
    mode = _merge_mode(opts)
    if mode is not None:
        given_by = W.WRITE_MERGE_MODE if W.WRITE_MERGE_MODE.is_set(opts) else T.RECORD_MERGE_MODE
        check(given_by, mode == existing.record_merge_mode, existing.record_merge_mode)
    if W.TABLE_TYPE.is_set(opts):
        check(W.TABLE_TYPE, W.TABLE_TYPE.get(opts) == existing.table_type, existing.table_type)
    name = (T.TABLE_NAME.get(opts) or "").strip()
    if name:
        check(T.TABLE_NAME, name.lower() == existing.table_name.lower(), existing.table_name)
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
    if existing.partial_update_mode:
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
    keygen_type = W.KEYGEN_TYPE.get(opts)
    if keygen_type:
        return keygen_type.upper()
    keygen_class = W.KEYGEN_CLASS.get(opts) or ""
    cls_name = keygen_class.rsplit(".", 1)[-1]
    by_class = {
        "SimpleKeyGenerator": "SIMPLE",
        "ComplexKeyGenerator": "COMPLEX",
        "NonpartitionedKeyGenerator": "NON_PARTITION",
        "CustomKeyGenerator": "CUSTOM",
    }
    if cls_name:
        if cls_name not in by_class:
            raise W.KEYGEN_CLASS.invalid(keygen_class, "not supported by hudi-md's writer")
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
