"""Which record wins, and what a write does to the schema: hudi-md's writers against Apache Hudi 1.2
on the same batches (issue 36).

A seeded generator (:func:`scenario`) draws a table (COW or MOR, event or commit time ordering,
one or two ordering fields, with or without the record index) and a sequence of batches: upserts
whose keys repeat within and across batches with higher, lower, equal and (for new keys) null
ordering values, records flagged ``_hoodie_is_deleted``, deletes by keys-only frames and by
full rows, inserts of new keys, and schema changes: a column added, a column left out, a type
promoted (``int`` → ``long``, ``double`` → ``string``), a type Hudi converts to the table's
(``int`` values into a ``double`` column) and one it refuses (``boolean`` into ``double``).

Apache Hudi 1.2 writes the batches through ``format("hudi")`` into one table; each hudi-md writer
(``hudi_md.write`` of a ``pyarrow.Table``, of the PySpark DataFrame, and ``format("hudi-md")``)
into its own. After every batch the outcome (written or refused) must be Hudi's, and where Hudi
refuses, the hudi-md table must be unchanged byte for byte (a listing with sizes and hashes).
The rows (every column) of Hudi's table are compared with the pyarrow writer's table after
every batch, and at the end with every writer's table, read by hudi-md, by Apache Hudi and by
hudi-rs.

Where Hudi 1.2's own outcome is a defect the generator does not go (docs/guide/writes.md, "Which record
wins", says what hudi-md does instead): a MOR table where Hudi accepts a null ordering value
against a stored row and then cannot read its table (hudi-md refuses the batch; the scenario ends
there), and a MOR re-insert after a delete by key with an ordering value below the deleted base
row (Hudi's reader brings the deleted row back).

``scripts/integration -k write_semantics`` runs every seed (``HUDI_MD_SEMANTICS_SEEDS``, default
24); the CI slice runs the first two.
"""

from __future__ import annotations

import math
import os
import random
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import hudi_md

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "write"))

from merge_cases import listing

SEEDS = int(os.environ.get("HUDI_MD_SEMANTICS_SEEDS", "24"))
CI_SEEDS = 2
KEYS = [f"k{i}" for i in range(6)]
PARTS = ["p0", "p1"]
WRITERS = ("arrow", "spark_df", "spark_api")


@dataclass
class Column:
    name: str
    spark: str  # Spark DDL type of the values a batch carries

    @property
    def arrow(self) -> pa.DataType:
        return {
            "string": pa.string(),
            "bigint": pa.int64(),
            "int": pa.int32(),
            "double": pa.float64(),
            "boolean": pa.bool_(),
        }[self.spark]


@dataclass
class Batch:
    op: str
    columns: list[Column]
    rows: list[dict[str, Any]]
    note: str

    def ddl(self) -> str:
        return ", ".join(f"{c.name} {c.spark}" for c in self.columns)

    def arrow(self) -> pa.Table:
        return pa.table({c.name: pa.array([r.get(c.name) for r in self.rows], c.arrow) for c in self.columns})


@dataclass
class Scenario:
    seed: int
    table_type: str
    commit_time: bool
    ordering: list[str]
    record_index: bool
    batches: list[Batch] = field(default_factory=list)

    @property
    def id(self) -> str:
        return (
            f"s{self.seed}-{'mor' if self.table_type == 'MERGE_ON_READ' else 'cow'}-"
            f"{'ct' if self.commit_time else 'et'}-{len(self.ordering)}o{'-rli' if self.record_index else ''}"
        )

    def options(self) -> dict[str, str]:
        o = {
            "hoodie.table.name": "t",
            "hoodie.datasource.write.recordkey.field": "k",
            "hoodie.datasource.write.partitionpath.field": "p",
            "hoodie.datasource.write.precombine.field": ",".join(self.ordering),
            "hoodie.datasource.write.table.type": self.table_type,
            "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.SimpleKeyGenerator",
            "hoodie.metadata.enable": "true",
            "hoodie.metadata.record.index.enable": str(self.record_index).lower(),
        }
        if self.record_index:
            o["hoodie.index.type"] = "RECORD_INDEX"
        if self.commit_time:
            o["hoodie.write.record.merge.mode"] = "COMMIT_TIME_ORDERING"
        return o


def scenario(seed: int) -> Scenario:
    """The seed's table and batches (see the module docstring)."""
    rnd = random.Random(seed)
    s = Scenario(
        seed,
        rnd.choice(["COPY_ON_WRITE", "MERGE_ON_READ"]),
        commit_time=rnd.random() < 0.3,
        ordering=["ts"] if rnd.random() < 0.6 else ["ts", "t2"],
        record_index=rnd.random() < 0.3,
    )
    mor_et = s.table_type == "MERGE_ON_READ" and not s.commit_time
    columns = [Column("k", "string"), Column("p", "string"), Column("ts", "bigint")]
    if "t2" in s.ordering:
        columns.append(Column("t2", "bigint"))
    columns += [Column("a", "double"), Column("b", "string"), Column("_hoodie_is_deleted", "boolean")]
    written: dict[str, int] = {}  # key -> the highest first ordering value it had (MOR rule below)
    null_keys: set[str] = set()  # keys stored with a null ordering value
    deleted_by_key: set[str] = set()
    partition = {k: rnd.choice(PARTS) for k in KEYS}
    version = 0

    def record(key: str, *, fresh: bool, cols: list[Column]) -> dict[str, Any]:
        nonlocal version
        version += 1
        ts: int | None = rnd.randint(0, 4)
        if fresh and not s.commit_time and rnd.random() < 0.15:
            ts = None  # Hudi accepts a null ordering value for a key it never saw
        if mor_et and key in deleted_by_key and ts is not None:
            ts = max(ts, written.get(key, 0))  # see the module docstring (Hudi's MOR defect)
        r: dict[str, Any] = {"k": key, "p": partition[key], "ts": ts}
        for c in cols:
            if c.name == "t2":
                r["t2"] = rnd.randint(0, 2)
            elif c.name == "a":
                r["a"] = {"double": float(version), "int": version, "string": f"{version}.5"}[c.spark]
            elif c.name == "b":
                r["b"] = f"v{version}"
            elif c.name == "_hoodie_is_deleted":
                r[c.name] = rnd.random() < 0.15
            elif c.name.startswith("c"):
                r[c.name] = f"{c.name}-{version}"
        return r

    def remember(batch: Batch) -> None:
        if batch.op == "delete":
            deleted_by_key.update(r["k"] for r in batch.rows)
            return
        for r in batch.rows:
            if r["ts"] is None:
                null_keys.add(r["k"])
            else:
                written[r["k"]] = max(written.get(r["k"], 0), r["ts"])

    extra = 0
    for i in range(rnd.randint(4, 7)):
        kind = (
            "upsert"
            if i == 0
            else rnd.choices(
                [
                    "upsert",
                    "insert",
                    "delete_keys",
                    "delete_rows",
                    "add_column",
                    "drop_column",
                    "promote",
                    "convert",
                    "refused_type",
                ],
                weights=[8, 2, 2, 1, 1, 1, 1, 1, 1],
            )[0]
        )
        cols = list(columns)
        op = "upsert"
        if kind == "insert":
            fresh = [k for k in KEYS if k not in written and k not in null_keys]
            if not fresh:
                kind = "upsert"
            else:
                op = "insert"
                keys = rnd.sample(fresh, k=min(len(fresh), rnd.randint(1, 2)))
        if kind in ("upsert", "add_column", "drop_column", "promote", "convert", "refused_type"):
            keys = [rnd.choice(KEYS) for _ in range(rnd.randint(1, 4))]
            # a key stored with a null ordering value is left alone (where Hudi fails, or its MOR
            # table becomes unreadable, the scenario would end)
            keys = [k for k in keys if k not in null_keys] or [k for k in KEYS if k not in null_keys][:1]
        if kind == "add_column":
            extra += 1
            cols.append(Column(f"c{extra}", "string"))
        elif kind == "drop_column":
            cols = [c for c in cols if c.name != rnd.choice(["a", "b"])]
        elif kind == "promote":
            cols = [Column("a", "string") if c.name == "a" else c for c in cols]
        elif kind == "convert":
            cols = [Column("a", "int") if c.name == "a" and c.spark == "double" else c for c in cols]
        elif kind == "refused_type":
            cols = [Column("b", "boolean") if c.name == "b" else c for c in cols]
        if kind in ("delete_keys", "delete_rows"):
            present = sorted(written)
            if not present:
                continue
            keys = rnd.sample(present, k=min(len(present), rnd.randint(1, 2)))
            op = "delete"
            if kind == "delete_keys":
                cols = [c for c in cols if c.name in ("k", "p")]
            rows = [record(k, fresh=False, cols=cols) for k in keys]
            batch = Batch(op, cols, rows, kind)
        else:
            rows = []
            for k in keys:
                r = record(k, fresh=k not in written and k not in null_keys, cols=cols)
                if kind == "refused_type":
                    r["b"] = True
                rows.append(r)
            if any(r["ts"] is None for r in rows) and len({r["k"] for r in rows}) < len(rows):
                for r in rows:  # a null meeting its own key in the batch: both refuse, fine, once
                    if r["ts"] is None and rnd.random() < 0.7:
                        r["ts"] = rnd.randint(0, 4)
            batch = Batch(op, cols, rows, kind)
        s.batches.append(batch)
        accepted = kind not in ("drop_column", "refused_type") and not (
            any(r.get("ts") is None for r in batch.rows)
            and len({r["k"] for r in batch.rows}) < len(batch.rows)
        )
        if accepted:
            if kind in ("add_column", "promote"):
                columns[:] = cols  # the table's columns from now on
            remember(batch)
    return s


# --- the writers -------------------------------------------------------------------------------------


def _spark_df(spark: Any, batch: Batch) -> Any:
    return spark.createDataFrame(
        [tuple(r.get(c.name) for c in batch.columns) for r in batch.rows], batch.ddl()
    ).coalesce(1)


def write_hudi(spark: Any, path: str, s: Scenario, batch: Batch) -> str | None:
    """Apache Hudi's write; None when it wrote, else its error (first line)."""
    try:
        _spark_df(spark, batch).write.format("hudi").options(**s.options()).option(
            "hoodie.datasource.write.operation", batch.op
        ).mode("append").save(path)
        return None
    except Exception as e:  # py4j: Hudi's exception as text
        return str(e).splitlines()[0][:300] + " " + _cause(str(e))


def _cause(text: str) -> str:
    for line in text.splitlines():
        if "Exception" in line and not line.strip().startswith("at ") and "py4j" not in line:
            return line.strip()[:300]
    return ""


def write_hudi_md(spark: Any, path: str, s: Scenario, batch: Batch, via: str) -> str | None:
    try:
        if via == "arrow":
            hudi_md.write(batch.arrow(), path, operation=batch.op, options=s.options())
        elif via == "spark_df":
            hudi_md.write(_spark_df(spark, batch), path, operation=batch.op, options=s.options())
        else:
            _spark_df(spark, batch).write.format("hudi-md").options(**s.options()).option(
                "hoodie.datasource.write.operation", batch.op
            ).mode("append").save(path)
        return None
    except Exception as e:
        return f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"


# --- reading and comparing ---------------------------------------------------------------------------


def _norm(v: Any) -> Any:
    if isinstance(v, float):
        return None if math.isnan(v) else round(v, 9)
    if isinstance(v, (bytes, bytearray)):
        return bytes(v)
    return v


def _rows(records: list[dict[str, Any]]) -> list[tuple]:
    out = []
    for r in records:
        out.append(
            tuple(
                sorted(
                    (k, _norm(v))
                    for k, v in r.items()
                    if not k.startswith("_hoodie_") or k == "_hoodie_is_deleted"
                )
            )
        )
    return sorted(out, key=repr)


def read_hudi(spark: Any, path: str) -> list[tuple]:
    df = spark.read.format("hudi").load(path)
    return _rows([r.asDict() for r in df.collect()])


def read_md(path: str) -> list[tuple]:
    return _rows(hudi_md.open_table(path).read().to_pylist())


def read_rs(path: str) -> list[tuple] | None:
    import hudi

    try:
        batches = hudi.HudiTableBuilder.from_base_uri(path).build().read()
    except Exception:
        return None
    return _rows(pa.Table.from_batches(batches).to_pylist()) if batches else []


def run_scenario(spark: Any, root: Path, s: Scenario, writers: tuple[str, ...] = WRITERS) -> None:
    hudi_path = str(root / f"{s.id}-hudi")
    paths = {w: str(root / f"{s.id}-{w}") for w in writers}
    for p in [hudi_path, *paths.values()]:
        shutil.rmtree(p, ignore_errors=True)
    log = []
    for n, batch in enumerate(s.batches):
        hudi_error = write_hudi(spark, hudi_path, s, batch)
        hudi_readable = True
        try:
            hudi_rows = read_hudi(spark, hudi_path) if Path(hudi_path, ".hoodie").exists() else []
        except Exception as e:
            hudi_readable = False
            hudi_rows = [("unreadable", _cause(str(e)))]
        step = f"{s.id} batch {n} ({batch.note}, {batch.op}, {batch.ddl()}, {batch.rows})"
        log.append(f"{step}: hudi {'refused: ' + hudi_error if hudi_error else 'wrote'}")
        for via, path in paths.items():
            before = listing(path)
            error = write_hudi_md(spark, path, s, batch, via)
            history = "\n".join(log)
            if not hudi_readable:
                # Hudi wrote a table it cannot read (a null ordering value in MOR): hudi-md refuses
                assert error is not None and "RecordMergeError" in error, f"{via}: {error}\n{history}"
                assert listing(path) == before, f"{via}: refused, but the table changed\n{history}"
                continue
            if hudi_error is not None:
                assert error is not None, f"{via}: wrote what Hudi refused ({hudi_error})\n{history}"
                assert listing(path) == before, f"{via}: refused ({error}), but the table changed\n{history}"
                continue
            assert error is None, f"{via}: refused what Hudi wrote: {error}\n{history}"
            if via == "arrow":
                assert read_md(path) == hudi_rows, (
                    f"{via} after batch {n}: hudi-md {read_md(path)}\nHudi {hudi_rows}\n{history}"
                )
        if not hudi_readable:
            return
    hudi_rows = read_hudi(spark, hudi_path) if Path(hudi_path, ".hoodie").exists() else []
    rs_on_hudi = read_rs(hudi_path) if Path(hudi_path, ".hoodie").exists() else []
    history = "\n".join(log)
    for via, path in paths.items():
        if not Path(path, ".hoodie").exists():
            continue
        assert read_md(path) == hudi_rows, (
            f"{via}: hudi-md reads {read_md(path)}\nHudi {hudi_rows}\n{history}"
        )
        assert read_hudi(spark, path) == hudi_rows, (
            f"{via}: Apache Hudi reads hudi-md's table differently\n{history}"
        )
        if rs_on_hudi is not None:  # hudi-rs reads Hudi's own table: it must read ours the same
            assert read_rs(path) == hudi_rows, (
                f"{via}: hudi-rs reads {read_rs(path)}\nHudi {hudi_rows}\n{history}"
            )


@pytest.mark.parametrize(
    "seed",
    [pytest.param(i, marks=pytest.mark.ci) if i < CI_SEEDS else i for i in range(SEEDS)],
    ids=lambda i: scenario(i).id,
)
def test_writers_agree_with_apache_hudi(spark: Any, tables_root: Path, seed: int) -> None:
    run_scenario(spark, tables_root / "semantics", scenario(seed))
