"""Storage options: retries of file-system requests (Apache Hudi's keys) and the table's storage
layout (RFC-60's keys, hudi-md's: Apache Hudi 1.2 has none)."""

from __future__ import annotations

from hudi_md.config.option import NOT_IN_HUDI, boolean, integer, string

RETRY_ENABLE = boolean(
    "hoodie.filesystem.operation.retry.enable",
    None,
    hudi=False,
    scopes=("storage",),
    differs_from_hudi=True,
    doc="Retry storage requests that fail transiently (throttling, 5xx, dropped connections). Unset: "
    "on for object stores and off for local disk (Apache Hudi: off everywhere), as object stores "
    "throttle under load.",
)
RETRY_MAX_NUMBERS = integer(
    "hoodie.filesystem.operation.retry.max_numbers",
    4,
    hudi=4,
    scopes=("storage",),
    doc="How many times a failed storage request is retried.",
)
RETRY_INITIAL_INTERVAL_MS = integer(
    "hoodie.filesystem.operation.retry.initial_interval_ms",
    100,
    hudi=100,
    scopes=("storage",),
    long=True,
    doc="The first retry's wait in milliseconds; it doubles with each retry (with jitter).",
)
RETRY_MAX_INTERVAL_MS = integer(
    "hoodie.filesystem.operation.retry.max_interval_ms",
    2000,
    hudi=2000,
    scopes=("storage",),
    long=True,
    doc="The longest wait between retries, in milliseconds.",
)
STORAGE_PATH = string(
    "hoodie.storage.path",
    None,
    hudi=NOT_IN_HUDI,
    scopes=("storage", "table", "write"),
    doc="Where a federated layout (RFC-60) puts the data files, e.g. s3://bucket/prefix; required with "
    "a federated hoodie.storage.strategy.class. Fixed when the table is created.",
)
STRATEGY_CLASS = string(
    "hoodie.storage.strategy.class",
    None,
    hudi=NOT_IN_HUDI,
    scopes=("storage", "table", "write"),
    doc="The storage strategy (RFC-60), by import path: hudi_md.storage.strategy.ObjectStoreStorageStrategy "
    "spreads data files over hash prefixes under hoodie.storage.path. Unset: the default layout (files "
    "in their partition folders). Fixed when the table is created.",
)
PREFIX_COUNT = integer(
    "hoodie.storage.strategy.prefix.count",
    0,
    hudi=NOT_IN_HUDI,
    scopes=("storage", "table", "write"),
    doc="The object-store strategy's number of hash prefixes: 0 (each 32-bit hash its own prefix) or "
    "2 and more. Fixed when the table is created.",
)

# The keys among a table's options that the storage layer reads (a Storage takes them with the
# fsspec options).
RETRY_KEYS = frozenset(
    name
    for option in (RETRY_ENABLE, RETRY_MAX_NUMBERS, RETRY_INITIAL_INTERVAL_MS, RETRY_MAX_INTERVAL_MS)
    for name in option.keys
)
