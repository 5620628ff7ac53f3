"""A table's storage layout (RFC-60): which storage strategy places its data files, and the
storage that resolves them.

The layout is part of the table: ``hoodie.storage.strategy.class``, ``hoodie.storage.path`` and
``hoodie.storage.strategy.prefix.count`` are written to ``hoodie.properties`` when the table is
created and never change (:func:`check_layout_options`). With a federated strategy every reader
and writer goes through :func:`table_storage`, whose :class:`~hudi_md.storage.federated.FederatedStorage`
maps each data file's logical path (``<partition path>/<file name>``, as the MDT and the commit
metadata name it) to its physical one, and the MDT is the only listing (:class:`FederatedListing`
walks the storage path for the repair tool and for MDT builds).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hudi_md.config import storage as S
from hudi_md.config import table as T
from hudi_md.errors import InvalidOptionError

# defined with every other error; named here too, where they were first
from hudi_md.errors import MetadataRequiredError as MetadataRequiredError
from hudi_md.errors import StorageLayoutError as StorageLayoutError
from hudi_md.storage import Storage
from hudi_md.storage.federated import FederatedStorage, Locator
from hudi_md.storage.strategy import (
    DEFAULT_STRATEGY,
    PREFIX_COUNT,
    STORAGE_PATH,
    STRATEGY_CLASS,
    StorageStrategy,
    is_federated,
    load_strategy,
    strategy_class_name,
)
from hudi_md.table.config import TableConfig
from hudi_md.table.filenames import parse_data_file
from hudi_md.table.listing import PARTITION_METAFILE_PREFIX, FileEntry, StorageListing

TABLE_NAME = T.TABLE_NAME.key
_LAYOUT_OPTIONS = (S.STORAGE_PATH, S.STRATEGY_CLASS, S.PREFIX_COUNT)
# Where the request counters put a federated table's data files (beside the table path's paths).
STORAGE_PATH_COUNTER = "@storage-path"


def layout_properties(props: Mapping[str, str]) -> dict[str, str]:
    """The layout keys among ``props`` (with the strategy's import path)."""
    out = {o.key: str(o.raw(props)) for o in _LAYOUT_OPTIONS if o.is_set(props)}
    strategy = S.STRATEGY_CLASS.get(props)
    if strategy:
        out[STRATEGY_CLASS] = strategy_class_name(strategy)
    return out


def layout_of(config: TableConfig) -> dict[str, str]:
    """What :func:`table_storage` needs of a table's properties (empty for the default layout)."""
    props = layout_properties(config.to_dict())
    return {**props, TABLE_NAME: config.table_name} if props else {}


def strategy_of(props: Mapping[str, str]) -> StorageStrategy:
    return load_strategy(S.STRATEGY_CLASS.get(props), T.TABLE_NAME.get(props) or "", props)


def is_federated_table(props: Mapping[str, str]) -> bool:
    return strategy_class_name(S.STRATEGY_CLASS.get(props)) != DEFAULT_STRATEGY and is_federated(
        strategy_of(props)
    )


def new_table_layout(options: Mapping[str, str], table_name: str) -> dict[str, str]:
    """The layout keys a new table's ``hoodie.properties`` gets from the writer's options (checked:
    the strategy loads, and a federated one has a storage path)."""
    props = layout_properties(options)
    if not props:
        return {}
    strategy_class = S.STRATEGY_CLASS.get(props)
    strategy = load_strategy(strategy_class, table_name, {**props, TABLE_NAME: table_name})
    if is_federated(strategy) and not S.STORAGE_PATH.get(props):
        raise InvalidOptionError(
            f"{STRATEGY_CLASS}={strategy_class} spreads data files under a storage path: set "
            f"{STORAGE_PATH} (e.g. s3://bucket/prefix)"
        )
    return props


def check_layout_options(table_props: Mapping[str, str], options: Mapping[str, str], uri: str) -> None:
    """Refuse writer options that name another layout than the table's (set at its creation)."""
    asked = layout_properties(options)
    have = layout_properties(table_props)
    for key, value in asked.items():
        current = have.get(key, DEFAULT_STRATEGY if key == STRATEGY_CLASS else None)
        if key == PREFIX_COUNT and current is None and value == "0":
            continue
        if current != value:
            raise StorageLayoutError(
                f"{uri} was created with {key}={current or '(unset)'}; a table cannot switch its storage "
                f"layout (asked: {key}={value}). Its files are where its layout put them: rewrite the rows "
                "into a new table to change it"
            )


def data_file_locator(strategy: StorageStrategy) -> Locator:
    """``<partition>/<data file name>`` → its path under the storage path; None for anything else."""

    def locate(path: str) -> str | None:
        if path.startswith(".hoodie"):
            return None
        partition, _, name = path.rpartition("/")
        parsed = parse_data_file(name)
        if parsed is None:
            return None
        location = strategy.storage_location(partition, parsed.file_id).strip("/")
        return f"{location}/{name}" if location else name

    return locate


def table_storage(storage: Storage, props: Mapping[str, str]) -> Storage:
    """``storage`` (the table path's) as the table's layout has it: itself for the default layout,
    else a :class:`FederatedStorage` over the table path and the storage path."""
    if isinstance(storage, FederatedStorage) or not S.STRATEGY_CLASS.get(props):
        return storage
    strategy = strategy_of(props)
    if not is_federated(strategy):
        return storage
    root = S.STORAGE_PATH.get(props)
    if not root:
        raise InvalidOptionError(f"{storage.uri()}: {STRATEGY_CLASS} is set but {STORAGE_PATH} is not")
    data = Storage(
        _in_scheme_of(storage.root_uri, root),
        storage.options,
        stats=storage.stats,
        retry=storage.retry,
        counter_prefix=STORAGE_PATH_COUNTER + "/",
    )
    return FederatedStorage(storage, data, data_file_locator(strategy))


# URL schemes that name one file system (Hadoop's S3A and the plain S3 scheme, GCS's two names)
_SCHEME_FAMILIES = ({"s3", "s3a", "s3n"}, {"gs", "gcs"})


def _in_scheme_of(table_uri: str, storage_path: str) -> str:
    """``storage_path`` in the table path's scheme when both name the same file system: a table
    opened through ``s3a://`` (Spark) gets ``s3a://`` URIs of its data files, which Spark's readers
    can open, though ``hoodie.properties`` says ``s3://``."""
    table_scheme, sep, _ = table_uri.partition("://")
    scheme, sep2, rest = storage_path.partition("://")
    if not (sep and sep2) or table_scheme == scheme:
        return storage_path
    if any({table_scheme.lower(), scheme.lower()} <= family for family in _SCHEME_FAMILIES):
        return f"{table_scheme}://{rest}"
    return storage_path


class FederatedListing(StorageListing):
    """The physical listing of a federated table: partitions from the table path (their partition
    metadata), data files from one walk of the storage path, each file kept where the strategy
    would put it (files of other tables sharing the storage path are not). The repair tool's and
    MDT builds' listing: readers use the MDT."""

    name = "storage-path"

    def __init__(self, storage: FederatedStorage, strategy: StorageStrategy) -> None:
        super().__init__(storage)
        self.federated = storage
        self.strategy = strategy
        self._by_partition: dict[str, list[FileEntry]] | None = None

    def files_in_partitions(self, partitions: Sequence[str]) -> dict[str, list[FileEntry]]:
        found = self._scan()
        return {p: list(found.get(p, [])) for p in partitions}

    def _scan(self) -> dict[str, list[FileEntry]]:
        if self._by_partition is None:
            known = self.all_partitions()
            out: dict[str, list[FileEntry]] = {p: [] for p in known}
            for f in self.federated.data_files():
                folder, _, name = f.path.rpartition("/")
                parsed = parse_data_file(name)
                if parsed is None or name.startswith(PARTITION_METAFILE_PREFIX):
                    continue
                for p in known:
                    if self.strategy.storage_location(p, parsed.file_id).strip("/") == folder:
                        out[p].append(FileEntry(name, f.size, f.modification_time))
                        break
            self._by_partition = out
        return self._by_partition


def storage_listing(storage: Storage, props: Mapping[str, str]) -> StorageListing:
    """The listing of what is on storage (the oracle the MDT must agree with): the table path's,
    or, for a federated table, the storage path's."""
    if isinstance(storage, FederatedStorage):
        return FederatedListing(storage, strategy_of(props))
    return StorageListing(storage)


def require_metadata_table(storage: Storage, reason: str) -> MetadataRequiredError:
    return MetadataRequiredError(
        f"{storage.uri()} spreads its data files over {getattr(storage, 'data', storage).uri()} "
        f"(a federated storage layout): only its metadata table lists them, and {reason}. Read it with "
        "hoodie.metadata.enable=true; if its MDT is lost, rebuild it with 'hudi-md metadata repair'"
    )
