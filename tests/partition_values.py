"""Seeded tables of odd partition values: the value classes of issue 9 (space, ``+``, ``%``, ``=``,
``/``, ``#``, ``?``, ``:``, non-ASCII Latin/CJK/emoji, empty, null, the literals ``default`` and
``__HIVE_DEFAULT_PARTITION__``, an integer level), shared by the Spark tests and the Apache Hudi
interoperability suite (``integration/test_partition_values.py``)."""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

HIVE_DEFAULT = "__HIVE_DEFAULT_PARTITION__"

VALUE_CLASSES: dict[str, tuple[str | None, ...]] = {
    "plain": ("sf", "nyc"),
    "space": ("san jose", "a b"),
    "plus": ("x+y",),
    "percent": ("50%", "a%2Bb"),
    "equals": ("k=v",),
    "slash": ("a/b",),
    "hash": ("#h",),
    "question": ("q?",),
    "colon": ("c:d",),
    "latin": ("san josé", "Zürich"),
    "cjk": ("東京",),
    "emoji": ("😀",),
    "hive_special": ("[x]", "{c}", "^", "'q'", '"d"', "*", "back\\slash", "tab\there"),
    "empty": ("",),
    "null": (None,),
    "default": ("default",),
    "hive_default": (HIVE_DEFAULT,),
}
# Without URL encoding a `/` adds a directory level (Hudi then cannot read the values back from the
# path, nor can anyone), and a `:` makes a path Hadoop cannot parse (Hudi's own writer fails on
# it, and hudi-md refuses it): those classes are only generated with encoding on.
NEEDS_URL_ENCODING = frozenset({"slash", "colon"})
STRING_LEVELS = ("country", "zone")
INT_LEVEL = "n"


@dataclass(frozen=True)
class PartitionLayout:
    table_type: str  # COPY_ON_WRITE | MERGE_ON_READ
    levels: int  # 1..3; the third level is an integer column
    hive_style: bool
    url_encode: bool

    @property
    def id(self) -> str:
        kind = "cow" if self.table_type == "COPY_ON_WRITE" else "mor"
        style = "hive" if self.hive_style else "plain"
        return f"{kind}-{self.levels}l-{style}-{'url' if self.url_encode else 'raw'}"

    @property
    def fields(self) -> list[str]:
        return [*STRING_LEVELS, INT_LEVEL][: self.levels]

    @property
    def keygen_class(self) -> str:
        name = "SimpleKeyGenerator" if self.levels == 1 else "ComplexKeyGenerator"
        return f"org.apache.hudi.keygen.{name}"

    def options(self, name: str) -> dict[str, str]:
        return {
            "hoodie.table.name": name,
            "hoodie.datasource.write.recordkey.field": "uid",
            "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.table.type": self.table_type,
            "hoodie.datasource.write.keygenerator.class": self.keygen_class,
            "hoodie.datasource.write.partitionpath.field": ",".join(self.fields),
            "hoodie.datasource.write.hive_style_partitioning": str(self.hive_style).lower(),
            "hoodie.datasource.write.partitionpath.urlencode": str(self.url_encode).lower(),
            "hoodie.metadata.enable": "true",
            "hoodie.metadata.index.column.stats.enable": "true",
            "hoodie.metadata.index.partition.stats.enable": "true",
            "hoodie.metadata.record.index.enable": "true",
        }

    def classes(self) -> list[str]:
        return [c for c in VALUE_CLASSES if self.url_encode or c not in NEEDS_URL_ENCODING]


SCHEMA = pa.schema(
    [
        ("uid", pa.string()),
        ("ts", pa.int64()),
        ("fare", pa.float64()),
        ("country", pa.string()),
        ("zone", pa.string()),
        ("n", pa.int32()),
    ]
)
SPARK_SCHEMA = "uid string, ts long, fare double, country string, zone string, n int"
COLUMNS = [f.name for f in SCHEMA]


def generate_rows(layout: PartitionLayout, count: int, seed: int) -> list[dict[str, Any]]:
    """``count`` rows whose partition values cover every value class of the layout (each class at
    least once per string level), then random ones; keys ``u000``..."""
    rnd = random.Random(seed)
    classes = layout.classes()
    rows = []
    for i in range(count):
        values: dict[str, Any] = {}
        for level, name in enumerate(STRING_LEVELS):
            cls = classes[(i + level) % len(classes)] if i < len(classes) else rnd.choice(classes)
            values[name] = rnd.choice(VALUE_CLASSES[cls])
        values[INT_LEVEL] = None if rnd.random() < 0.15 else rnd.choice((0, 7, -3, 42))
        rows.append({"uid": f"u{i:03d}", "ts": 1000 + i, "fare": round(rnd.uniform(1, 100), 2), **values})
    return rows


def updated(rows: Sequence[dict[str, Any]], version: int) -> list[dict[str, Any]]:
    """The same keys (same partition values) with a newer ordering value and another fare."""
    return [{**r, "ts": r["ts"] + 1000 * version, "fare": round(r["fare"] + version, 2)} for r in rows]


def to_arrow(rows: Sequence[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(list(rows), schema=SCHEMA)


def to_spark(spark: Any, rows: Sequence[dict[str, Any]]) -> Any:
    return spark.createDataFrame([tuple(r[c] for c in COLUMNS) for r in rows], SPARK_SCHEMA)


def as_read(layout: PartitionLayout, row: dict[str, Any]) -> dict[str, Any]:
    """A row as Apache Hudi (and hudi-md) read it back: partition columns of a
    ``__HIVE_DEFAULT_PARTITION__`` level are null, whatever the stored value was."""
    out = dict(row)
    for f in layout.fields:
        if out[f] in (None, "", HIVE_DEFAULT):
            out[f] = None
    return out


def hudi_reads_value(layout: PartitionLayout, value: str | None) -> str | None:
    """What Apache Hudi 1.2's Spark reader returns for a partition column whose stored value is
    ``value`` (it takes the value from the path). Where that differs from :func:`as_read` it is a
    Hudi reader bug, kept here so the suite notices when Hudi changes: without URL encoding Hudi
    still unescapes ``%XX`` (``a%2Bb`` reads ``a+b``), and a value holding ``=`` in a non-hive path
    reads as the text after the last ``=`` (``k=v`` reads ``v``)."""
    if value in (None, "", HIVE_DEFAULT):
        return None
    if layout.url_encode:
        return value
    if not layout.hive_style and "=" in value:
        value = value.rsplit("=", 1)[1]
    return re.sub("%([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), value)


def as_hudi_reads(layout: PartitionLayout, row: dict[str, Any]) -> dict[str, Any]:
    out = dict(row)
    for f in layout.fields:
        if f != INT_LEVEL:
            out[f] = hudi_reads_value(layout, out[f])
    return out


def filter_cases(layout: PartitionLayout, rows: Sequence[dict[str, Any]], seed: int) -> list[list[tuple]]:
    """pyarrow-style filters over every partition column: ``=``, ``!=``, ``in``, a range, and the
    literals that used to be mistaken for nulls."""
    rnd = random.Random(seed)
    cases: list[list[tuple]] = []
    for f in layout.fields:
        present = sorted({r[f] for r in rows if r[f] is not None}, key=str)
        if f == INT_LEVEL:
            cases += [[(f, "=", 7)], [(f, "!=", 7)], [(f, "in", [0, 42])], [(f, ">", 0)], [(f, "<=", -3)]]
            continue
        picks = rnd.sample(present, min(3, len(present)))
        for v in picks:
            cases += [[(f, "=", v)], [(f, "!=", v)]]
        cases += [
            [(f, "=", "default")],
            [(f, "=", HIVE_DEFAULT)],
            [(f, "=", "")],
            [(f, "in", [*picks[:2], "default", "x+y"])],
            [(f, ">", "m")],
            [(f, "<", "san josé")],
        ]
    if len(layout.fields) > 1:
        a, b = layout.fields[:2]
        cases.append([(a, "!=", "sf"), (b, ">=", "a")])
    return cases


def spark_predicate(filters: Sequence[tuple]) -> Any:
    """The same filter as a PySpark Column (AND of the tuples)."""
    from functools import reduce

    from pyspark.sql import functions as F

    def one(col: str, op: str, value: Any) -> Any:
        c = F.col(col)
        if op == "in":
            return c.isin(list(value))
        return {
            "=": c == value,
            "!=": c != value,
            ">": c > value,
            ">=": c >= value,
            "<": c < value,
            "<=": c <= value,
        }[op]

    return reduce(lambda x, y: x & y, (one(*t) for t in filters))


def matches(row: dict[str, Any], filters: Sequence[tuple]) -> bool:
    """SQL semantics of the filter on one row as read (null compares unknown: no match)."""
    import operator

    ops = {
        "=": operator.eq,
        "!=": operator.ne,
        ">": operator.gt,
        ">=": operator.ge,
        "<": operator.lt,
        "<=": operator.le,
    }
    for col, op, value in filters:
        v = row[col]
        if v is None:
            return False
        if op == "in":
            if v not in value:
                return False
        elif not ops[op](v, value):
            return False
    return True
