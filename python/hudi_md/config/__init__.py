"""hudi-md's configuration: every key it reads, declared once (:class:`ConfigOption`: its type,
hudi-md's default, Apache Hudi 1.2's default, where it applies, what it does).

Modules read options only through the registry (``METADATA_ENABLE.get(options)``), so a value that
does not parse raises :class:`~hudi_md.errors.InvalidOptionError` naming the key and the value, and
a key no one reads warns (:func:`check_options`). ``all_options()`` lists every key (the docs
generate the configuration reference from it).

The keys live by subject: :mod:`.table` (``hoodie.properties``), :mod:`.write`, :mod:`.services`
(clean, compaction, archival), :mod:`.metadata` (the metadata table and its indexes), :mod:`.read`,
:mod:`.storage`, :mod:`.metastore` and :mod:`.spark` (the Spark shim's ``spark.hudi_md.*``).
"""

from __future__ import annotations

from typing import Any

# Each module declares its options on import: importing them all completes the registry.
from hudi_md.config import metadata, metastore, read, services, spark, storage, table, write
from hudi_md.config.option import NOT_IN_HUDI, ConfigOption, option_for, registered
from hudi_md.config.unknown import check_options
from hudi_md.errors import UnknownOptionWarning

__all__ = [
    "NOT_IN_HUDI",
    "ConfigOption",
    "UnknownOptionWarning",
    "all_options",
    "check_options",
    "metadata",
    "metastore",
    "option_for",
    "read",
    "services",
    "spark",
    "storage",
    "table",
    "write",
]


def all_options() -> list[ConfigOption[Any]]:
    """Every option hudi-md reads, sorted by key."""
    return registered()
