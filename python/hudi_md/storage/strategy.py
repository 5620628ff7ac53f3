"""Storage strategies (RFC-60): where a file group's data files live.

A strategy maps a file group (its partition path and file id) to the directory its base and log
files are written to, relative to the table's *storage path*. Apache Hudi 1.2 ships none of this
(``../shared/reference/hudi-rfcs-45-36-60.md`` §3); hudi-md follows the RFC and the hash its
unmerged implementation PRs coded:

* :class:`DefaultStorageStrategy`: the Hive layout, ``<partition path>/`` under the table path.
* :class:`ObjectStoreStorageStrategy`: ``<hash prefix>/<table name>/<partition path>/`` under the
  storage path, the prefix the XXH32 (seed ``0x0e43cd7a``) of ``partition path + file id`` as 8
  lowercase hex digits, or, with ``hoodie.storage.strategy.prefix.count`` = N, that hash modulo N in
  as many hex digits as N - 1 needs (a bounded number of prefixes). A base file and its log files
  share their file group's prefix.

A user's own strategy is a class named by its import path in ``hoodie.storage.strategy.class``,
constructed with the table name and the table's properties, with the method
``storage_location(partition_path, file_id) -> str``.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Protocol, runtime_checkable

import xxhash

from hudi_md.config import storage as S
from hudi_md.errors import InvalidOptionError

STORAGE_PATH = S.STORAGE_PATH.key
STRATEGY_CLASS = S.STRATEGY_CLASS.key
PREFIX_COUNT = S.PREFIX_COUNT.key
# The keys a table's layout is made of, persisted in hoodie.properties at creation.
LAYOUT_KEYS = (STORAGE_PATH, STRATEGY_CLASS, PREFIX_COUNT)

DEFAULT_STRATEGY = "hudi_md.storage.strategy.DefaultStorageStrategy"
OBJECT_STORE_STRATEGY = "hudi_md.storage.strategy.ObjectStoreStorageStrategy"
# The names RFC-60's drafts and PRs gave them.
_ALIASES = {
    "HoodieDefaultStorageStrategy": DEFAULT_STRATEGY,
    "org.apache.hudi.common.storage.HoodieDefaultStorageStrategy": DEFAULT_STRATEGY,
    "HoodieObjectStorageStrategy": OBJECT_STORE_STRATEGY,
    "org.apache.hudi.common.storage.HoodieObjectStoreStorageStrategy": OBJECT_STORE_STRATEGY,
    "org.apache.hudi.storage.strategy.ObjectStoreStorageStrategy": OBJECT_STORE_STRATEGY,
}
HASH_SEED = 0x0E43CD7A


@runtime_checkable
class StorageStrategy(Protocol):
    """Where a file group's base and log files live: a directory relative to the storage path
    (the table path for the default strategy), ``/``-separated, without a trailing slash."""

    def storage_location(self, partition_path: str, file_id: str) -> str: ...


class DefaultStorageStrategy:
    """Hive-style: every file of a partition in its directory under the table path."""

    federated = False

    def __init__(self, table_name: str = "", properties: Mapping[str, str] | None = None) -> None:
        self.table_name = table_name

    def storage_location(self, partition_path: str, file_id: str) -> str:
        return partition_path.strip("/")


class ObjectStoreStorageStrategy:
    """``<hash prefix>/<table name>/<partition path>`` under the storage path."""

    federated = True

    def __init__(self, table_name: str, properties: Mapping[str, str] | None = None) -> None:
        if not table_name:
            raise InvalidOptionError("the object-store storage strategy needs hoodie.table.name")
        self.table_name = table_name
        self.prefix_count = S.PREFIX_COUNT.get(properties or {})
        if self.prefix_count < 0 or self.prefix_count == 1 or self.prefix_count > 1 << 32:
            raise S.PREFIX_COUNT.invalid(
                self.prefix_count, f"must be 0 (every 32-bit hash its own prefix) or 2..{1 << 32}"
            )
        self._width = len(f"{self.prefix_count - 1:x}") if self.prefix_count else 8

    def prefix(self, partition_path: str, file_id: str) -> str:
        partition = partition_path.strip("/")
        key = file_id if partition in ("", ".") else partition + file_id
        h = xxhash.xxh32_intdigest(key.encode("utf-8"), seed=HASH_SEED)
        if self.prefix_count:
            h %= self.prefix_count
        return f"{h:0{self._width}x}"

    def storage_location(self, partition_path: str, file_id: str) -> str:
        partition = partition_path.strip("/")
        base = f"{self.prefix(partition, file_id)}/{self.table_name}"
        return f"{base}/{partition}" if partition else base


def strategy_class_name(name: str | None) -> str:
    """The import path a strategy name stands for (RFC-60's names are accepted as aliases)."""
    if not name:
        return DEFAULT_STRATEGY
    return _ALIASES.get(name, name)


def load_strategy(name: str | None, table_name: str, properties: Mapping[str, str]) -> StorageStrategy:
    """The strategy named ``name`` (an import path ``package.module.Class``), constructed with the
    table name and the table's properties."""
    path = strategy_class_name(name)
    module_name, _, class_name = path.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError, ValueError) as e:
        raise InvalidOptionError(
            f"{STRATEGY_CLASS}={name!r}: cannot load the storage strategy class {path!r} ({e})"
        ) from e
    strategy = cls(table_name, dict(properties))
    if not isinstance(strategy, StorageStrategy):
        raise InvalidOptionError(
            f"{STRATEGY_CLASS}={name!r}: {path} has no storage_location(partition_path, file_id) method"
        )
    return strategy


def is_federated(strategy: StorageStrategy) -> bool:
    """Whether the strategy puts data files outside their partition directory (then the MDT is
    the only listing). A user's strategy is federated unless it says otherwise."""
    return bool(getattr(strategy, "federated", True))
