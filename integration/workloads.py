"""The scripted workloads of the interoperability suite, the expected-rows model, and hudi-md's
view of a table in the same shapes as ``hudi_oracle.Hudi``'s."""

from __future__ import annotations

import datetime
import decimal
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from hudi_oracle import META_COLUMNS, Slice, Stat

UTC = datetime.timezone.utc
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=UTC)

# --- table layouts --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """A table shape: type × partitioning."""

    table_type: str  # COPY_ON_WRITE | MERGE_ON_READ
    partitioning: str  # nonpart | one | two

    @property
    def id(self) -> str:
        return f"{'cow' if self.table_type == 'COPY_ON_WRITE' else 'mor'}-{self.partitioning}"

    @property
    def is_mor(self) -> bool:
        return self.table_type == "MERGE_ON_READ"

    @property
    def partition_fields(self) -> list[str]:
        return {"nonpart": [], "one": ["city"], "two": ["region", "city"]}[self.partitioning]

    @property
    def keygen_class(self) -> str:
        return (
            "org.apache.hudi.keygen."
            + {
                "nonpart": "NonpartitionedKeyGenerator",
                "one": "SimpleKeyGenerator",
                "two": "ComplexKeyGenerator",
            }[self.partitioning]
        )

    def partition_of(self, row: dict[str, Any]) -> str:
        return "/".join(str(row[f]) for f in self.partition_fields)

    def options(self, name: str) -> dict[str, str]:
        """Hudi write options, shared by Apache Hudi and hudi-md (same keys, same meaning)."""
        opts = {
            "hoodie.table.name": name,
            "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.table.type": self.table_type,
            "hoodie.datasource.write.keygenerator.class": self.keygen_class,
            "hoodie.datasource.write.hive_style_partitioning": "false",
            "hoodie.metadata.enable": "true",
            "hoodie.metadata.index.column.stats.enable": "true",
            "hoodie.metadata.index.partition.stats.enable": "true",
            "hoodie.metadata.record.index.enable": "true",
            "hoodie.metadata.compact.max.delta.commits": "4",
        }
        if self.partition_fields:
            opts["hoodie.datasource.write.partitionpath.field"] = ",".join(self.partition_fields)
        else:
            opts["hoodie.datasource.write.partitionpath.field"] = ""
        return opts


LAYOUTS = [Layout(t, p) for t in ("COPY_ON_WRITE", "MERGE_ON_READ") for p in ("nonpart", "one", "two")]

# --- rows ------------------------------------------------------------------------------------------------

SPARK_SCHEMA = (
    "id string, ts long, fare double, qty int, flag boolean, d date, amount decimal(10,2), "
    "evt timestamp, note string, region string, city string"
)
ARROW_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("ts", pa.int64()),
        ("fare", pa.float64()),
        ("qty", pa.int32()),
        ("flag", pa.bool_()),
        ("d", pa.date32()),
        ("amount", pa.decimal128(10, 2)),
        ("evt", pa.timestamp("us", tz="UTC")),
        ("note", pa.string()),
        ("region", pa.string()),
        ("city", pa.string()),
    ]
)
DATA_COLUMNS = [f.name for f in ARROW_SCHEMA]
REGIONS = ("us", "eu")
CITIES = ("sf", "nyc", "la")


def row(i: int, version: int) -> dict[str, Any]:
    """Record ``k{i}`` at ``version``: partition columns are fixed per key, the rest vary."""
    v = version
    return {
        "id": f"k{i:03d}",
        "ts": 1000 * v + i,
        "fare": round(i * 1.25 + v * 100.5, 2),
        "qty": i * 10 + v,
        "flag": (i + v) % 2 == 0,
        "d": datetime.date(2024, 1, 1) + datetime.timedelta(days=i + 31 * v),
        "amount": decimal.Decimal(i * 100 + v).scaleb(-2),
        "evt": datetime.datetime(2024, 1, 1, tzinfo=UTC) + datetime.timedelta(hours=i, minutes=v),
        "note": None if (i + v) % 7 == 0 else f"note-{i}-{v}",
        "region": REGIONS[i % 2],
        "city": CITIES[i % 3],
    }


def rows(keys: Sequence[int], version: int) -> list[dict[str, Any]]:
    return [row(i, version) for i in keys]


def to_arrow(data: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(data, schema=ARROW_SCHEMA)


def to_spark(spark: Any, data: list[dict[str, Any]]) -> Any:
    return spark.createDataFrame([tuple(r[c] for c in DATA_COLUMNS) for r in data], SPARK_SCHEMA)


# --- steps -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    name: str
    operation: str
    data: Callable[[Layout], list[dict[str, Any]]]
    options: dict[str, str] = field(default_factory=dict)
    only: str | None = None  # "mor" / "cow": the step runs on that table type only

    def applies(self, layout: Layout) -> bool:
        return self.only is None or (self.only == "mor") == layout.is_mor


def _overwrite_rows(layout: Layout) -> list[dict[str, Any]]:
    """New keys 100.. in the ``sf`` partitions (all of a non-partitioned table)."""
    return [r for r in rows(range(100, 118), 1) if layout.partitioning == "nonpart" or r["city"] == "sf"]


INSERT = Step("insert", "insert", lambda lay: rows(range(0, 60), 1))
UPSERT = Step("upsert", "upsert", lambda lay: rows(range(0, 20), 2) + rows(range(60, 75), 1))
DELETE = Step("delete", "delete", lambda lay: rows(range(20, 30), 2))
OVERWRITE = Step("insert_overwrite", "insert_overwrite", _overwrite_rows)
COMPACT = Step(
    "compaction",
    "upsert",
    lambda lay: rows(range(30, 40), 3),
    {"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "1"},
    only="mor",
)
CLUSTER = Step(
    "clustering",
    "upsert",
    lambda lay: rows(range(40, 50), 3),
    {
        "hoodie.clustering.inline": "true",
        "hoodie.clustering.inline.max.commits": "1",
        "hoodie.clustering.plan.strategy.small.file.limit": str(600 * 1024 * 1024),
        "hoodie.clustering.plan.strategy.target.file.max.bytes": str(1024 * 1024 * 1024),
    },
)
CLEAN = Step(
    "clean",
    "upsert",
    lambda lay: rows(range(0, 10), 4) + rows(range(100, 104), 2),
    {
        "hoodie.clean.automatic": "true",
        "hoodie.clean.commits.retained": "1",
        "hoodie.cleaner.commits.retained": "1",
    },
)
# What Apache Hudi runs and what hudi-md runs: the same steps (inline clustering too, issue 40).
HUDI_STEPS = [INSERT, UPSERT, DELETE, OVERWRITE, COMPACT, CLUSTER, CLEAN]
HUDI_MD_STEPS = [INSERT, UPSERT, DELETE, OVERWRITE, COMPACT, CLUSTER, CLEAN]


class Model:
    """The rows a table must hold after a sequence of steps: key → row."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.rows: dict[str, dict[str, Any]] = {}

    def apply(self, step: Step) -> None:
        data = step.data(self.layout)
        if step.operation == "delete":
            for r in data:
                self.rows.pop(r["id"], None)
        elif step.operation == "insert_overwrite":
            touched = {self.layout.partition_of(r) for r in data}
            self.rows = {k: r for k, r in self.rows.items() if self.layout.partition_of(r) not in touched}
            self.rows.update({r["id"]: r for r in data})
        elif step.operation == "insert_overwrite_table":
            self.rows = {r["id"]: r for r in data}
        else:
            for r in data:
                cur = self.rows.get(r["id"])
                if step.operation == "upsert" and cur is not None and cur["ts"] > r["ts"]:
                    continue
                self.rows[r["id"]] = r


# --- comparing rows ---------------------------------------------------------------------------------------


def norm(v: Any) -> Any:
    """One canonical form for a value from Spark, Arrow or the model."""
    if isinstance(v, datetime.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=UTC)
        d = v - EPOCH
        return (d.days * 86400 + d.seconds) * 1_000_000 + d.microseconds
    if isinstance(v, decimal.Decimal):
        return v.normalize()
    return v


def normalize_rows(data: list[dict[str, Any]], columns: Sequence[str]) -> list[tuple]:
    return sorted(tuple(norm(r.get(c)) for c in columns) for r in data)


def diff_rows(
    a: list[dict[str, Any]], b: list[dict[str, Any]], columns: Sequence[str], key: str = "id"
) -> str:
    """Empty when equal; else a short description of the differences keyed by ``key``."""
    na = {norm(r.get(key)): tuple(norm(r.get(c)) for c in columns) for r in a}
    nb = {norm(r.get(key)): tuple(norm(r.get(c)) for c in columns) for r in b}
    problems = []
    if len(na) != len(a):
        problems.append(f"left has {len(a) - len(na)} duplicate {key}s")
    if len(nb) != len(b):
        problems.append(f"right has {len(b) - len(nb)} duplicate {key}s")
    only_a = sorted(set(na) - set(nb))
    only_b = sorted(set(nb) - set(na))
    if only_a:
        problems.append(f"only left: {only_a[:8]}{'...' if len(only_a) > 8 else ''}")
    if only_b:
        problems.append(f"only right: {only_b[:8]}{'...' if len(only_b) > 8 else ''}")
    changed = []
    for k in sorted(set(na) & set(nb)):
        if na[k] != nb[k]:
            cols = [f"{c}: {x!r} != {y!r}" for c, x, y in zip(columns, na[k], nb[k], strict=True) if x != y]
            changed.append(f"{k} ({'; '.join(cols)})")
    if changed:
        problems.append(f"{len(changed)} rows differ, e.g. {changed[:5]}")
    return " | ".join(problems)


# --- hudi-md's view, in the oracle's shapes ---------------------------------------------------------------


def md_table(path: str, metadata: bool = True) -> Any:
    import hudi_md

    return hudi_md.open_table(str(path), {"hoodie.metadata.enable": "true" if metadata else "false"})


def md_slices(table: Any) -> list[Slice]:
    out = []
    for s in table.file_slices().to_pylist():
        base = os.path.basename(s["base_file"]) if s["base_file"] else None
        out.append(
            Slice(
                s["partition_path"],
                s["file_id"],
                s["base_instant"],
                base,
                s["base_file_size"] if base else None,
                tuple(sorted(os.path.basename(lf) for lf in s["log_files"])),
            )
        )
    return sorted(out)


def md_column_stats(
    table: Any, columns: list[str], partitions: list[str]
) -> dict[tuple[str, str, str], Stat]:
    out = {}
    for s in table.metadata_table.stats.column_stats(columns, partitions):
        st = _md_stat(s, s.file_name)
        out[st.key()] = st
    return out


def md_partition_stats(table: Any, columns: list[str]) -> dict[tuple[str, str], Stat]:
    # partition_stats entries name their partition where column_stats name a file
    return {
        (s.partition_path, s.column_name): _md_stat(s, s.partition_path)
        for s in table.metadata_table.stats.partition_stats(columns)
    }


def _md_stat(s: Any, file_name: str) -> Stat:
    return Stat(
        s.partition_path,
        file_name,
        s.column_name,
        s.min_value,
        s.max_value,
        s.null_count,
        s.value_count,
        s.total_size,
        s.total_uncompressed_size,
    )


def md_rows(table: Any, **kwargs: Any) -> list[dict[str, Any]]:
    return table.read(**kwargs).to_pylist()


def stats_diff(a: dict, b: dict, label_a: str, label_b: str) -> list[str]:
    out = []
    for k in sorted(set(a) | set(b), key=str):
        x, y = a.get(k), b.get(k)
        if x is None or y is None or not same_stat(x, y):
            out.append(f"{k}: {label_a} {x} != {label_b} {y}")
    return out


def same_stat(a: Stat, b: Stat) -> bool:
    return (
        (
            a.partition,
            a.file_name,
            a.column,
            a.null_count,
            a.value_count,
            a.total_size,
            a.total_uncompressed_size,
        )
        == (
            b.partition,
            b.file_name,
            b.column,
            b.null_count,
            b.value_count,
            b.total_size,
            b.total_uncompressed_size,
        )
        and norm(a.min_value) == norm(b.min_value)
        and norm(a.max_value) == norm(b.max_value)
    )


ALL_COLUMNS = [*META_COLUMNS, *DATA_COLUMNS]
