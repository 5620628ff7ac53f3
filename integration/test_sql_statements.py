"""Spark SQL statement by statement: Apache Hudi 1.2 (``USING hudi``) against hudi-md (``USING hudi-md``).

Every case runs the same statements on a fresh table of each side, COW and MOR (a few also
non-partitioned), and compares what a ``SELECT`` then returns (the data columns, not Hudi's
``_hoodie_*`` meta columns; rows sorted) or, when a statement fails, at which step it failed (the
error's class and message are recorded, not compared). hudi-md's outcome must equal Apache
Hudi's. Cases hudi-md does not pass yet are ``xfail(strict=True)`` (issue 38), so a case that
starts passing fails the suite until its mark is taken off. Where Apache Hudi 1.2's own outcome is
a finding (an ``INSERT INTO`` of an existing key keeps both rows; a ``MERGE`` source row with a
lower ordering value leaves the stored row; ...), the case also pins it (``HudiChanged`` if Hudi's
outcome changes, never taken for hudi-md's expected failure). ``HUDI_SQL_STATEMENTS_REPORT=<file>``
appends each case's two outcomes to ``<file>`` as a JSON line.

Sessions: two SparkSessions on one SparkContext (one JVM), not one session with both extensions.
A session with Hudi's extension and ``HoodieCatalog`` plus ``hudi.md.spark.HudiMdExtensions`` in
``spark.sql.extensions`` (tried with every case of this module, the Hudi side run there instead)
gives the same Apache Hudi outcomes as a Hudi-only session (the shim's ``hudi_table_changes``,
registered last, hands a table of another provider to Hudi's function). The other way round, Hudi's
parser and rules act on hudi-md's statements in such a session: ``CALL`` parses only
because of Hudi (and answers "is not a Hudi table" for a hudi-md table), ``TIMESTAMP AS OF`` on a
hudi-md table fails on Hudi's time-travel node (``UNRESOLVED_COLUMN``) instead of Spark's or
hudi-md's handling, and its tables are looked up through ``HoodieCatalog``. hudi-md's users run it
without Hudi's bundle (``hudi_md.spark.configure``), so hudi-md's side must not borrow from Hudi's
extension either. And the suite's session (conftest ``spark``: Hudi's extension and catalog, the
shim jar on the classpath but not its extension) cannot take another extension once its
SparkContext runs. So each side has its own session on the suite's SparkContext and one
``SharedState`` (one catalog, each side's tables named apart): ``spark`` itself for Apache Hudi,
and for hudi-md a sibling session built with hudi-md's extension only (a
``SparkSessionExtensions`` that only ``HudiMdExtensions`` has been applied to, passed to Spark's
``SparkSession`` constructor as PySpark's builder calls it) and Spark's built-in session catalog
(``spark.sql.catalog.spark_catalog`` unset in it): a hudi-md session as
``hudi_md.spark.configure`` makes one, with Hudi's classes on the classpath but not in play.
Managed tables go to the ``sql_statements`` database, whose location is under ``tables_root``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import hudi_md

DB = "sql_statements"
COLUMNS = "id string, name string, price double, ts bigint, p string"
DATA_COLUMNS = ("id", "name", "price", "ts", "p")
# (id, name, price, ts, p): partitions x, y, z
SEED = [
    ("k1", "a", 1.0, 10, "x"),
    ("k2", "b", 2.0, 10, "x"),
    ("k3", "c", 3.0, 10, "y"),
    ("k4", "d", 4.0, 10, "y"),
    ("k5", "e", 5.0, 10, "z"),
]
META_PREFIX = "_hoodie_"


class HudiChanged(Exception):
    """Apache Hudi 1.2's own outcome is no longer the one this module pins (not an
    ``AssertionError``: the xfail marks, ``raises=AssertionError``, never take it)."""


# --- the two sides ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def md_spark(spark: Any) -> Any:
    """A hudi-md session on the suite's SparkContext: hudi-md's session extension only, Spark's
    built-in session catalog, the suite session's ``SharedState`` (see the module docstring)."""
    from pyspark.sql import SparkSession

    jvm = spark._jvm
    extensions = jvm.org.apache.spark.sql.SparkSessionExtensions()
    jvm.hudi.md.spark.HudiMdExtensions().apply(extensions)
    options = jvm.org.apache.spark.api.python.PythonUtils.toScalaMap(jvm.java.util.HashMap())
    jsession = jvm.org.apache.spark.sql.SparkSession(
        spark._jsc.sc(),
        jvm.scala.Option.apply(spark._jsparkSession.sharedState()),
        jvm.scala.Option.apply(None),
        extensions,
        options,
    )
    session = SparkSession(spark.sparkContext, jsession)
    session.conf.unset("spark.sql.catalog.spark_catalog")  # Spark's own V2SessionCatalog
    return session


@pytest.fixture(scope="module")
def database(spark: Any, tables_root: Path) -> Path:
    """The ``sql_statements`` database (shared catalog), located under ``tables_root``: managed
    tables of both sides go there."""
    location = tables_root / "warehouse"
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {DB} LOCATION '{location}'")
    return location


@dataclass
class Side:
    """One side of a case: its session, provider, table and where it is."""

    label: str  # "hudi" | "hudi-md"
    spark: Any
    provider: str
    short_name: str
    table_type: str  # "cow" | "mor"
    location: Path
    warehouse: Path
    step: str = "setup"
    managed: bool = False
    notes: dict[str, Any] = field(default_factory=dict)  # facts a case records beside its rows

    @property
    def name(self) -> str:
        return f"{DB}.{self.short_name}"

    @property
    def path(self) -> Path:
        return self.warehouse / self.short_name if self.managed else self.location

    @property
    def is_hudi(self) -> bool:
        return self.label == "hudi"

    def sql(self, step: str, statement: str) -> list[Any]:
        self.step = step
        return self.spark.sql(statement).collect()


@dataclass(frozen=True)
class Outcome:
    """Rows (data columns, sorted) or the step that failed; ``detail`` (the error) is recorded,
    not compared."""

    result: tuple[Any, ...]
    detail: str = field(default="", compare=False)
    notes: dict[str, Any] = field(default_factory=dict, compare=False)

    def summary(self) -> str:
        notes = "".join(f"; {k}: {v}" for k, v in self.notes.items())
        if self.result[0] == "error":
            return f"error at {self.result[1]}: {self.detail}{notes}"
        rows = self.result[1]
        if not rows:
            return f"0 rows{notes}"
        columns = ",".join(k for k, _ in rows[0])
        listed = " ".join("(" + ",".join(str(v) for _, v in r) + ")" for r in rows)
        return f"{len(rows)} rows ({columns}): {listed}{notes}"


def describe_error(e: BaseException) -> str:
    """The JVM exception's class and message (first line) for Spark errors, else Python's."""
    origin = getattr(e, "_origin", None) or getattr(e, "java_exception", None)
    name, message = type(e).__name__, str(e)
    if origin is not None:
        with contextlib.suppress(Exception):  # py4j gone or an odd object: Python's own
            name, message = str(origin.getClass().getName()), str(origin.getMessage())
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    return f"{name}: {lines[0] if lines else ''}"[:400]


def normalised(rows: list[Any]) -> tuple[tuple[tuple[str, Any], ...], ...]:
    out = []
    for r in rows:
        d = r.asDict() if hasattr(r, "asDict") else dict(r)
        out.append(tuple((k, v) for k, v in d.items() if not k.startswith(META_PREFIX)))
    return tuple(sorted(out, key=repr))


# --- statements shared by the cases ------------------------------------------------------------------


def literal(v: Any) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    if isinstance(v, float):
        return f"{v!r}D"
    if isinstance(v, int):
        return f"{v}L"
    return str(v)


def values(rows: list[tuple[Any, ...]]) -> str:
    return ", ".join("(" + ", ".join(literal(v) for v in r) + ")" for r in rows)


def create(
    side: Side,
    *,
    partitioned: bool = True,
    keyed: bool = True,
    managed: bool = False,
) -> None:
    side.managed = managed
    props = [f"type = '{side.table_type}'"]
    if keyed:
        props = ["primaryKey = 'id'", "preCombineField = 'ts'", *props]
    side.sql(
        "create",
        f"CREATE TABLE {side.name} ({COLUMNS}) USING {side.provider} "
        f"{'PARTITIONED BY (p)' if partitioned else ''} TBLPROPERTIES ({', '.join(props)})"
        + ("" if managed else f" LOCATION '{side.location}'"),
    )


def insert(side: Side, rows: list[tuple[Any, ...]], step: str = "insert") -> None:
    side.sql(step, f"INSERT INTO {side.name} VALUES {values(rows)}")


def select(side: Side, step: str = "select") -> list[Any]:
    return side.sql(step, f"SELECT * FROM {side.name}")


def seeded(side: Side, **create_args: Any) -> None:
    create(side, **create_args)
    insert(side, SEED, step="insert seed")


def timeline(side: Side) -> list[str]:
    """Requested times of the table's completed instants (hudi-md's timeline reader, both sides)."""
    return [i.requested_time for i in hudi_md.open_table(str(side.path)).timeline.completed()]


def first_commit(side: Side) -> str:
    first = hudi_md.open_table(str(side.path)).timeline.write_timeline().first()
    assert first is not None, f"{side.label}: no commit in {side.path}"
    return first.requested_time


def source(rows: list[tuple[Any, ...]], columns: str = "id, name, price, ts, p") -> str:
    return f"(SELECT * FROM VALUES {values(rows)} AS s({columns}))"


# --- the cases ------------------------------------------------------------------------------------------


def create_external(side: Side) -> list[Any]:
    """CREATE TABLE ... LOCATION, INSERT INTO new rows twice."""
    seeded(side)
    insert(side, [("k6", "f", 6.0, 10, "x"), ("k7", "g", 7.0, 10, "w")], step="insert new keys")
    return select(side)


def create_managed(side: Side) -> list[Any]:
    """CREATE TABLE without LOCATION (a managed table in the database's location)."""
    seeded(side, managed=True)
    insert(side, [("k6", "f", 6.0, 10, "x")], step="insert new keys")
    return select(side)


def insert_existing(side: Side, partitioned: bool = True) -> list[Any]:
    """INSERT INTO keys the table holds, one with a higher and one with a lower ordering value
    (``hoodie.spark.sql.insert.into.operation`` left at its default)."""
    seeded(side, partitioned=partitioned)
    insert(side, [("k1", "a2", 1.5, 20, "x"), ("k3", "c2", 3.5, 5, "y")], step="insert existing keys")
    return select(side)


def update(side: Side, partitioned: bool = True) -> list[Any]:
    seeded(side, partitioned=partitioned)
    side.sql(
        "update",
        f"UPDATE {side.name} SET price = price * 10, name = concat(name, '!') WHERE p = 'y' OR id = 'k1'",
    )
    return select(side)


def delete(side: Side, partitioned: bool = True) -> list[Any]:
    seeded(side, partitioned=partitioned)
    side.sql("delete", f"DELETE FROM {side.name} WHERE price > 3.5 OR id = 'k1'")
    return select(side)


def merge_clauses(side: Side, partitioned: bool = True) -> list[Any]:
    """MERGE with a conditional update, a conditional delete, a matched row neither condition
    takes, and an insert of an explicit column list."""
    seeded(side, partitioned=partitioned)
    rows = [
        ("k1", "a2", 100.0, 20, "x", "u"),
        ("k2", "b2", 200.0, 20, "x", "d"),
        ("k3", "c2", 300.0, 20, "y", "-"),
        ("k8", "h", 8.0, 20, "z", "u"),
    ]
    side.sql(
        "merge",
        f"MERGE INTO {side.name} t USING {source(rows, 'id, name, price, ts, p, op')} s ON t.id = s.id "
        "WHEN MATCHED AND s.op = 'u' THEN UPDATE SET t.name = s.name, t.price = s.price, t.ts = s.ts "
        "WHEN MATCHED AND s.op = 'd' THEN DELETE "
        "WHEN NOT MATCHED THEN INSERT (id, name, price, ts, p) VALUES (s.id, s.name, s.price, s.ts, s.p)",
    )
    return select(side)


def _merge_star(side: Side, rows: list[tuple[Any, ...]]) -> list[Any]:
    """The seeded table, MERGE ... UPDATE SET * / INSERT * of ``rows``, then its rows."""
    seeded(side)
    side.sql(
        "merge",
        f"MERGE INTO {side.name} t USING {source(rows)} s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
    )
    return select(side)


def merge_star(side: Side) -> list[Any]:
    return _merge_star(side, [("k2", "b2", 20.0, 20, "x"), ("k9", "i", 9.0, 20, "z")])


def merge_lower_ordering(side: Side) -> list[Any]:
    """MERGE ... UPDATE SET * whose source rows have a lower (k2) and an equal (k4) ordering value
    than the stored rows (10)."""
    return _merge_star(side, [("k2", "b-lower", 20.0, 5, "x"), ("k4", "d-equal", 40.0, 10, "y")])


def time_travel(side: Side) -> list[Any]:
    """``TIMESTAMP AS OF`` the first commit's instant (its requested time), after a delete."""
    seeded(side)
    first = first_commit(side)
    side.sql("delete", f"DELETE FROM {side.name} WHERE id = 'k1'")
    return side.sql("select as of", f"SELECT * FROM {side.name} TIMESTAMP AS OF '{first}'")


def show_partitions(side: Side) -> list[Any]:
    seeded(side)
    return side.sql("show partitions", f"SHOW PARTITIONS {side.name}")


def add_columns(side: Side) -> list[Any]:
    seeded(side)
    side.sql("add columns", f"ALTER TABLE {side.name} ADD COLUMNS (c string)")
    side.sql(
        "insert with the new column",
        f"INSERT INTO {side.name} (id, name, price, ts, c, p) VALUES ('k6', 'f', 6.0D, 10L, 'new', 'x')",
    )
    return select(side)


def drop_partition(side: Side) -> list[Any]:
    seeded(side)
    side.sql("drop partition", f"ALTER TABLE {side.name} DROP PARTITION (p = 'y')")
    return select(side)


def truncate(side: Side) -> list[Any]:
    seeded(side)
    side.sql("truncate", f"TRUNCATE TABLE {side.name}")
    return select(side)


def show_commits(side: Side) -> list[Any]:
    """``CALL show_commits``: the commit instants only, each as its position in the table's own
    completed timeline (the two tables' instants are different times)."""
    seeded(side)
    insert(side, [("k6", "f", 6.0, 10, "x")], step="insert new keys")
    got = side.sql("call show_commits", f"CALL show_commits(table => '{side.name}')")
    completed = timeline(side)
    return [
        {"instant": f"#{completed.index(r.commit_time)}" if r.commit_time in completed else r.commit_time}
        for r in got
    ]


def table_changes(side: Side) -> list[Any]:
    """``hudi_table_changes(t, 'latest_state', <first commit's requested time>)`` after an insert
    of a new key: whether the first commit's rows are in the range tells its start's meaning."""
    seeded(side)
    first = first_commit(side)
    insert(side, [("k6", "f", 6.0, 10, "x")], step="insert new keys")
    return side.sql(
        "hudi_table_changes",
        f"SELECT * FROM hudi_table_changes('{side.name}', 'latest_state', '{first}')",
    )


def keyless(side: Side) -> list[Any]:
    """A table without primaryKey (and without ordering field); the same rows inserted twice."""
    create(side, keyed=False)
    insert(side, SEED[:3], step="insert")
    insert(side, SEED[:3], step="insert the same rows again")
    return select(side)


def python_write(side: Side) -> list[Any]:
    """New rows appended to the table's path from Python in the same session (Hudi:
    ``df.write.format("hudi")``; hudi-md: ``hudi_md.write`` of a pyarrow table on COW,
    ``df.write.format("hudi-md")`` on MOR) after the table was read once: whether a plain
    ``SELECT`` (no ``REFRESH TABLE``) shows them is a note (pinned on each side: the two differ);
    the rows compared are those after ``REFRESH TABLE``."""
    seeded(side)
    select(side, step="select before")
    rows = [("k6", "f", 6.0, 10, "x"), ("k7", "g", 7.0, 10, "w")]
    options = {
        "hoodie.table.name": side.short_name,
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "p",
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.datasource.write.table.type": "COPY_ON_WRITE"
        if side.table_type == "cow"
        else "MERGE_ON_READ",
        "hoodie.datasource.write.operation": "upsert",
    }
    side.step = "python write"
    if side.is_hudi or side.table_type == "mor":
        df = side.spark.createDataFrame(rows, COLUMNS)
        df.write.format("hudi" if side.is_hudi else "hudi-md").options(**options).mode("append").save(
            str(side.path)
        )
    else:
        data = pa.Table.from_pylist([dict(zip(DATA_COLUMNS, r, strict=True)) for r in rows])
        hudi_md.write(data, str(side.path), operation="upsert", options=options)
    plain = select(side, step="select after the write")
    side.notes[NEW_ROWS_BEFORE_REFRESH] = sorted(r.id for r in plain if r.id in ("k6", "k7"))
    side.sql("refresh table", f"REFRESH TABLE {side.name}")
    return select(side, step="select after REFRESH TABLE")


NEW_ROWS_BEFORE_REFRESH = "new rows a plain SELECT shows before REFRESH TABLE"


def dropped(side: Side, managed: bool) -> list[Any]:
    seeded(side, managed=managed)
    side.sql("drop table", f"DROP TABLE {side.name}")
    side.step = "inspect"
    files = [
        p
        for p in (side.path.rglob("*") if side.path.exists() else [])
        if p.is_file() and ".hoodie" not in p.parts and not p.name.startswith(".")
    ]
    return [
        {"check": "in catalog", "value": side.spark.catalog.tableExists(side.name)},
        {"check": "hoodie.properties", "value": (side.path / ".hoodie" / "hoodie.properties").exists()},
        {"check": "data files", "value": len(files) > 0},
    ]


def drop_external(side: Side) -> list[Any]:
    return dropped(side, managed=False)


def drop_managed(side: Side) -> list[Any]:
    return dropped(side, managed=True)


# --- Apache Hudi 1.2's outcomes this module pins ---------------------------------------------------------


def _rows_of(outcome: Outcome) -> list[dict[str, Any]]:
    if outcome.result[0] != "rows":
        raise HudiChanged(f"Apache Hudi 1.2 failed: {outcome.summary()}")
    return [dict(r) for r in outcome.result[1]]


def _ids(outcome: Outcome) -> list[str]:
    return sorted(r["id"] for r in _rows_of(outcome))


def pin_insert_existing(o: Outcome) -> None:
    # INSERT INTO (operation `insert`): both versions of k1 and k3 stay, whatever their ts
    if _ids(o) != ["k1", "k1", "k2", "k3", "k3", "k4", "k5"]:
        raise HudiChanged(f"INSERT INTO of existing keys: {o.summary()}")


def pin_merge_lower_ordering(o: Outcome) -> None:
    rows = {r["id"]: r for r in _rows_of(o)}
    got = (rows["k2"]["name"], rows["k4"]["name"])
    if got != ("b", "d-equal"):  # the stored row stays against a lower ts; an equal ts takes the source's
        raise HudiChanged(f"MERGE with a lower/equal ordering value kept {got}: {o.summary()}")


def pin_table_changes(o: Outcome) -> None:
    # the range is by completion time (start < completion <= end): the first commit, requested at
    # the start given but completed after it, is in the range
    if _ids(o) != ["k1", "k2", "k3", "k4", "k5", "k6"]:
        raise HudiChanged(f"hudi_table_changes from the first commit: {o.summary()}")


def pin_keyless(o: Outcome) -> None:
    if _ids(o) != ["k1", "k1", "k2", "k2", "k3", "k3"]:
        raise HudiChanged(f"keyless table, the same rows inserted twice: {o.summary()}")


def pin_python_write(o: Outcome) -> None:
    # the catalog table keeps serving the listing it had before the write, until REFRESH TABLE
    if o.notes.get(NEW_ROWS_BEFORE_REFRESH) != [] or _ids(o) != ["k1", "k2", "k3", "k4", "k5", "k6", "k7"]:
        raise HudiChanged(f"SELECT after a write from Python: {o.summary()}")


def md_sees_python_write(o: Outcome) -> None:
    """hudi-md plans every query from the timeline: the new rows show without REFRESH TABLE (a
    deliberate difference from Apache Hudi 1.2, which this case records rather than compares)."""
    assert o.notes.get(NEW_ROWS_BEFORE_REFRESH) == ["k6", "k7"], f"hudi-md: {o.summary()}"


def pin_drop(managed: bool) -> Callable[[Outcome], None]:
    def pin(o: Outcome) -> None:
        checks = {r["check"]: r["value"] for r in _rows_of(o)}
        kept = not managed
        if checks != {"in catalog": False, "hoodie.properties": kept, "data files": kept}:
            raise HudiChanged(f"DROP TABLE ({'managed' if managed else 'external'}): {checks}")

    return pin


# --- parameters -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    name: str
    body: Callable[..., list[Any]]
    kwargs: tuple[tuple[str, Any], ...] = ()
    pin: Callable[[Outcome], None] | None = None  # Apache Hudi 1.2's outcome (HudiChanged)
    md_check: Callable[[Outcome], None] | None = None  # hudi-md's, where it differs on purpose


def xfail(what: str) -> pytest.MarkDecorator:
    return pytest.mark.xfail(strict=True, raises=AssertionError, reason=f"issue 38: {what}")


NONPART = (("partitioned", False),)
BOTH = ("cow", "mor")

# (case, table types, the types CI runs, what hudi-md lacks today: the xfail reason, or None)
CASES: list[tuple[Case, tuple[str, ...], tuple[str, ...], str | None]] = [
    (Case("create_external", create_external), BOTH, ("cow",), None),
    (Case("create_managed", create_managed), BOTH, ("mor",), None),
    (Case("insert_existing", insert_existing, pin=pin_insert_existing), BOTH, (), None),
    (
        Case("insert_existing-nonpart", insert_existing, NONPART, pin_insert_existing),
        ("mor",),
        ("mor",),
        None,
    ),
    (Case("update", update), BOTH, ("mor",), None),
    (Case("update-nonpart", update, NONPART), ("cow",), (), None),
    (Case("delete", delete), BOTH, ("cow",), None),
    (Case("merge_clauses", merge_clauses), BOTH, (), None),
    (Case("merge_clauses-nonpart", merge_clauses, NONPART), ("cow",), (), None),
    (Case("merge_star", merge_star), BOTH, (), None),
    (Case("merge_lower_ordering", merge_lower_ordering, pin=pin_merge_lower_ordering), BOTH, ("mor",), None),
    (Case("time_travel", time_travel), BOTH, ("cow",), None),
    (Case("show_partitions", show_partitions), BOTH, (), None),
    (Case("add_columns", add_columns), BOTH, (), None),
    (Case("drop_partition", drop_partition), BOTH, (), None),
    (Case("truncate", truncate), BOTH, (), None),
    (Case("show_commits", show_commits), BOTH, ("cow",), None),
    (Case("table_changes", table_changes, pin=pin_table_changes), BOTH, ("mor",), None),
    (Case("keyless", keyless, pin=pin_keyless), BOTH, ("mor",), None),
    (Case("python_write", python_write, pin=pin_python_write, md_check=md_sees_python_write), BOTH, (), None),
    (Case("drop_external", drop_external, pin=pin_drop(False)), BOTH, ("mor",), None),
    (Case("drop_managed", drop_managed, pin=pin_drop(True)), BOTH, ("cow",), None),
]

PARAMS = [
    pytest.param(
        case,
        table_type,
        id=f"{case.name}-{table_type}",
        marks=[
            *([pytest.mark.ci] if table_type in ci else []),
            *([xfail(missing)] if missing else []),
        ],
    )
    for case, types, ci, missing in CASES
    for table_type in types
]


def run(side: Side, case: Case) -> Outcome:
    try:
        rows = case.body(side, **dict(case.kwargs))
    except Exception as e:
        return Outcome(("error", side.step), describe_error(e), side.notes)
    return Outcome(("rows", normalised(rows)), notes=side.notes)


def report(test_id: str, hudi: Outcome, md: Outcome) -> None:
    target = os.environ.get("HUDI_SQL_STATEMENTS_REPORT")
    if not target:
        return
    entry = {"case": test_id, "agree": hudi == md, "hudi": hudi.summary(), "hudi-md": md.summary()}
    with open(target, "a") as f:
        f.write(json.dumps(entry, default=str) + "\n")


@pytest.mark.parametrize(("case", "table_type"), PARAMS)
def test_statement(
    spark: Any,
    md_spark: Any,
    database: Path,
    tables_root: Path,
    request: pytest.FixtureRequest,
    case: Case,
    table_type: str,
) -> None:
    suffix = request.node.callspec.id.replace("-", "_")
    root = tables_root / "sql-statements" / request.node.callspec.id
    shutil.rmtree(root, ignore_errors=True)
    sides = [
        Side("hudi", spark, "hudi", f"h_{suffix}", table_type, root / "hudi", database),
        Side("hudi-md", md_spark, "`hudi-md`", f"m_{suffix}", table_type, root / "hudi-md", database),
    ]
    hudi, md = (run(side, case) for side in sides)
    report(request.node.callspec.id, hudi, md)
    if case.pin is not None:
        case.pin(hudi)
    if case.md_check is not None:
        case.md_check(md)
    assert md == hudi, f"\nApache Hudi 1.2: {hudi.summary()}\nhudi-md:         {md.summary()}"
