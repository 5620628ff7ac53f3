"""Partition paths ↔ partition column values, exactly as Apache Hudi 1.2's key generators write
them and its readers read them back (docs/reference/format-notes.md, "Partition paths").

The rules, each checked against Hudi's own ``SimpleKeyGenerator`` / ``ComplexKeyGenerator`` and
its Spark reader (``integration/test_partition_values.py``):

* a null or empty value is written as ``__HIVE_DEFAULT_PARTITION__``, and that partition's
  column reads back as null (so do the rows whose value was ``""`` or the literal string);
* with ``hoodie.datasource.write.partitionpath.urlencode=true`` a value is escaped as Hive's
  ``FileUtils.escapePathName`` does: ``%XX`` (upper-case hex) for the control characters, ``"``,
  ``#``, ``%``, ``'``, ``*``, ``/``, ``:``, ``=``, ``?``, ``[``, ``\\``, ``]``, ``^``, ``{`` and
  DEL; everything else, space, ``+`` and non-ASCII included, is written as it is;
* hive-style paths are ``field=value`` per level; the literal ``default`` is an ordinary value.
"""

from __future__ import annotations

import datetime
import decimal
import re
from typing import Any
from urllib.parse import unquote_to_bytes

import pyarrow as pa
import pyarrow.compute as pc

from hudi_md.errors import UnsupportedFeatureError
from hudi_md.table.config import TableConfig

HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
# Hudi before 0.12 wrote null partition values to `default`; Hudi 1.2 reads `default` as the
# string, so a `default` path part may hold either: pruning treats it as unknown.
LEGACY_DEFAULT_PARTITION = "default"

# Key generators whose partition path holds the column's own value, one level per field.
_IDENTITY_KEYGENS = frozenset({"SIMPLE", "COMPLEX", "CUSTOM", "GLOBAL_DELETE"})

# Hive's FileUtils.escapePathName (Hudi's PartitionPathEncodeUtils): the characters it escapes.
_ESCAPED_CHARS = frozenset([*range(0x20), *b"\"#%'*/:=?[\\]^{", 0x7F])
_ESCAPE_TABLE = {c: f"%{c:02X}" for c in _ESCAPED_CHARS}
# The same characters as a regex class (RE2 and Python syntax), to find values that need escaping.
ESCAPED_CHARS_PATTERN = "[" + "".join(f"\\x{c:02x}" for c in sorted(_ESCAPED_CHARS)) + "]"


def escape_path_value(value: str) -> str:
    """A partition value as Hudi writes it with URL encoding on."""
    return value.translate(_ESCAPE_TABLE)


def unescape_path_value(part: str) -> str | None:
    """The value behind an escaped path part; None when its bytes are not UTF-8.

    Hudi's own unescaping maps each ``%XX`` to one character (Latin-1), which is the inverse of its
    escaping because that only escapes ASCII. Other writers (hudi-md before 0.2) percent-encoded
    UTF-8 bytes, so the bytes are decoded as UTF-8 here: the value the writer meant, never a
    mis-decoded one that partition pruning would compare against.
    """
    if "%" not in part:
        return part
    try:
        return unquote_to_bytes(part).decode("utf-8")
    except UnicodeDecodeError:
        return None


def path_part(field: str, value: str | None, *, hive_style: bool, url_encode: bool) -> str:
    """One level of a partition path for a value already stringified as Hudi does."""
    s = HIVE_DEFAULT_PARTITION if value is None or value == "" else value
    if url_encode:
        s = escape_path_value(s)
    return f"{field}={s}" if hive_style else s


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
        self.drop_partition_columns = config.drop_partition_columns

    def parse(self, partition_path: str) -> dict[str, str | None] | None:
        """Raw (string) values of the partition columns for a path, as Hudi reads them
        (``__HIVE_DEFAULT_PARTITION__`` is null), or None if not derivable."""
        if not self.fields:
            return {}
        if not self.is_identity:
            return None
        # A value holding `/` without URL encoding adds levels: the count no longer matches.
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
            if part == HIVE_DEFAULT_PARTITION:
                out[field] = None
                continue
            if self.url_encoded:
                decoded = unescape_path_value(part)
                if decoded is None:
                    return None
                part = decoded
            out[field] = part
        return out

    def all_parse(self, paths: list[str]) -> bool:
        """Whether :meth:`parse` gives values for every one of ``paths`` (one vectorised pass:
        a table may have a million partitions)."""
        if not self.fields:
            return True
        if not self.is_identity:
            return not paths
        if self.url_encoded:
            return all(self.parse(p) is not None for p in paths)
        # Without URL encoding parse() fails only on the number of levels or, hive-style, on a
        # level without its `field=`: one pattern says both.
        level = "[^/]*"
        pattern = "/".join(f"{re.escape(f)}={level}" if self.hive_style else level for f in self.fields)
        if not paths:
            return True
        array = pa.array(paths, pa.string())
        if pc.any(pc.equal(array, "")).as_py():
            return False  # "" has no level at all
        return bool(pc.all(pc.match_substring_regex(array, f"^{pattern}$")).as_py())

    def path_of(self, values: dict[str, str | None]) -> str:
        """The partition path Hudi 1.2 writes for these (stringified) values."""
        return "/".join(
            path_part(f, values.get(f), hive_style=self.hive_style, url_encode=self.url_encoded)
            for f in self.fields
        )

    def typed_values(self, partition_path: str, schema: pa.Schema) -> dict[str, Any] | None:
        """Values of the partition columns in ``schema``, typed as there; None when any cannot be
        derived exactly."""
        raw = self.parse(partition_path)
        if raw is None:
            return None
        out: dict[str, Any] = {}
        for name, value in raw.items():
            idx = schema.get_field_index(name)
            if idx < 0:
                continue
            try:
                out[name] = coerce(value, schema.field(idx).type)
            except ValueError:
                return None
        return out

    def typed_value_columns(self, paths: pa.Array, schema: pa.Schema) -> dict[str, pa.Array] | None:
        """:meth:`typed_values` of many paths at once, column-wise, for the common case (string
        and integer columns, values without escapes); None when a path or value needs the exact
        per-path rules (the caller then asks :meth:`typed_values` path by path)."""
        if not self.fields or not self.is_identity:
            return None
        types = {f: schema.field(f).type for f in self.fields if schema.get_field_index(f) >= 0}
        if not all(pa.types.is_string(t) or pa.types.is_integer(t) for t in types.values()):
            return None
        if self.url_encoded and pc.any(pc.match_substring(paths, "%")).as_py():
            return None
        levels = pc.split_pattern(paths, "/")
        if not pc.all(pc.equal(pc.list_value_length(levels), len(self.fields))).as_py():
            return None
        out: dict[str, pa.Array] = {}
        for i, field in enumerate(self.fields):
            part = pc.list_element(levels, i)
            if self.hive_style:
                prefix = field + "="
                if not pc.all(pc.starts_with(part, prefix)).as_py():
                    return None
                part = pc.utf8_slice_codeunits(part, len(prefix))
            if field not in types:
                continue
            value = pc.if_else(pc.equal(part, HIVE_DEFAULT_PARTITION), pa.scalar(None, pa.string()), part)
            t = types[field]
            if pa.types.is_integer(t):
                # what int() reads the same way as Arrow's cast; anything else goes path by path
                if not pc.all(pc.match_substring_regex(pc.drop_null(value), r"^-?[0-9]{1,18}$")).as_py():
                    return None
                try:
                    value = pc.cast(value, t)
                except pa.ArrowInvalid:
                    return None
            out[field] = value
        return out

    def pruning_values(self, partition_path: str, schema: pa.Schema) -> dict[str, Any]:
        """Typed values to prune this partition by; a column left out is unknown (kept).

        Unknown: values that do not parse into the column's type, and the path part ``default``
        (a null value to Hudi before 0.12, the string to Hudi 1.2).
        """
        raw = self.parse(partition_path)
        if raw is None:
            return {}
        out: dict[str, Any] = {}
        for name, value in raw.items():
            idx = schema.get_field_index(name)
            if idx < 0 or value == LEGACY_DEFAULT_PARTITION:
                continue
            try:
                out[name] = coerce(value, schema.field(idx).type)
            except ValueError:
                continue
        return out

    def read_overrides(self, partition_path: str, schema: pa.Schema) -> dict[str, Any]:
        """Column values a reader sets from the path rather than the files, as Hudi's reader does:
        every partition column when the files lack them (``drop.partition.columns``), else the
        columns of ``__HIVE_DEFAULT_PARTITION__`` levels, which read as null (even for rows whose
        stored value is ``""`` or that literal string). Raises UnsupportedFeatureError when the
        files lack the columns and the path does not carry them."""
        if self.drop_partition_columns and self.fields:
            values = self.typed_values(partition_path, schema)
            if values is None:
                raise UnsupportedFeatureError(
                    f"partition path {partition_path!r} does not carry the values of "
                    f"{', '.join(self.fields)} (hoodie.datasource.write.drop.partition.columns=true), "
                    "so those columns cannot be read"
                )
            return values
        raw = self.parse(partition_path)
        if not raw:
            return {}
        return {n: None for n, value in raw.items() if value is None and schema.get_field_index(n) >= 0}


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


def parses_from_path(arrow_type: pa.DataType) -> bool:
    """Whether values of this type are read back exactly from partition paths."""
    t = arrow_type
    return (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_boolean(t)
        or pa.types.is_date(t)
        or pa.types.is_decimal(t)
    )
