"""Partition paths ↔ partition column values, as Hudi's key generators lay them out."""

from __future__ import annotations

import datetime
import decimal
from typing import Any
from urllib.parse import unquote

import pyarrow as pa

from hudi_md.table.config import TableConfig

HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
DEFAULT_PARTITION_PATH = "default"

# Key generators whose partition path holds the column's own value, one level per field.
_IDENTITY_KEYGENS = frozenset({"SIMPLE", "COMPLEX", "CUSTOM", "GLOBAL_DELETE"})


class PartitionScheme:
    """How a table's partition paths map to values of its partition columns.

    ``parse`` returns ``None`` when the path does not carry the column values in a form we can
    trust (e.g. the timestamp key generator's formatted dates): callers must then not prune.
    """

    def __init__(self, config: TableConfig) -> None:
        self.fields = config.partition_fields
        self.hive_style = config.hive_style_partitioning
        self.url_encoded = config.url_encode_partitioning
        self.keygen = config.keygen.upper()
        self.is_identity = bool(self.fields) and self.keygen in _IDENTITY_KEYGENS

    def parse(self, partition_path: str) -> dict[str, str | None] | None:
        """Raw (string) values of the partition columns for a path, or None if not derivable."""
        if not self.fields:
            return {}
        if not self.is_identity:
            return None
        parts = partition_path.split("/") if partition_path else []
        if len(parts) != len(self.fields):
            return None
        out: dict[str, str | None] = {}
        for field, part in zip(self.fields, parts, strict=True):
            if self.hive_style:
                prefix = field + "="
                if not part.startswith(prefix):
                    return None
                part = part[len(prefix) :]
            if self.url_encoded:
                part = unquote(part)
            out[field] = None if part in (HIVE_DEFAULT_PARTITION, DEFAULT_PARTITION_PATH) else part
        return out

    def typed_values(self, partition_path: str, schema: pa.Schema) -> dict[str, Any] | None:
        """Partition values typed as the table's columns; None when any cannot be derived exactly."""
        raw = self.parse(partition_path)
        if raw is None:
            return None
        out: dict[str, Any] = {}
        for name, value in raw.items():
            idx = schema.get_field_index(name)
            if idx < 0:
                return None
            try:
                out[name] = coerce(value, schema.field(idx).type)
            except ValueError:
                return None
        return out


def coerce(value: str | None, arrow_type: pa.DataType) -> Any:
    """A raw partition value as a Python value of the column's type; ValueError if it does not fit."""
    if value is None:
        return None
    t = arrow_type
    try:
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            return value
        if pa.types.is_integer(t):
            return int(value)
        if pa.types.is_floating(t):
            return float(value)
        if pa.types.is_boolean(t):
            if value.lower() not in ("true", "false"):
                raise ValueError(value)
            return value.lower() == "true"
        if pa.types.is_date(t):
            return datetime.date.fromisoformat(value)
        if pa.types.is_decimal(t):
            return decimal.Decimal(value)
    except decimal.InvalidOperation as e:
        raise ValueError(value) from e
    raise ValueError(f"partition values of type {t} are not parsed from paths")
