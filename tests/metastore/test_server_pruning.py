"""Partition pruning in SQL: 10k partitions over two levels (``region=rNN/bucket=N``, bucket an
int64 column) plus null, odd and hostile values; each filter (eq, ranges on the numeric level, in,
and/or/not, nulls, strings compared as text) returns exactly the partitions a reference pruning in
Python picks from the same values, in one SQL statement over partition_key_val (and one table
look-up), however many partitions there are."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from server_helpers import Api, make_api

from hudi_md.metastore import protocol as P

INJECTION = "x'; DROP TABLE partitions; --"
TAUTOLOGY = "' OR '1'='1"
NULL = "__HIVE_DEFAULT_PARTITION__"


def partition_paths() -> list[str]:
    paths = [f"region=r{r:02d}/bucket={b}" for r in range(100) for b in range(100)]
    paths += [
        f"region={NULL}/bucket=5",
        f"region=r01/bucket={NULL}",
        f"region={NULL}/bucket={NULL}",
        "region=r00/bucket=007",  # the number 7, written otherwise
        "region=r02/bucket=abc",  # not a number in a numeric column
        "region=r03/bucket=-2.5",
        f"region={INJECTION}/bucket=1",
        f"region={TAUTOLOGY}/bucket=2",
        "region=R10/bucket=3",  # upper case sorts before lower case, by code point
        "region=r100/bucket=4",
    ]
    return paths


def values_of(path: str) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for level in path.split("/"):
        name, _, value = level.partition("=")
        out[name] = None if value == NULL else value
    return out


# --- the reference: the filter semantics of metastore/protocol.py, in Python ------------------------------

NUMERIC = {"region": False, "bucket": True}


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        n = float(value)
    except (TypeError, ValueError):
        return None
    return n if math.isfinite(n) else None


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else repr(value)


_OPS = {
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
}


def matches(f: dict[str, Any], values: dict[str, str | None]) -> bool:
    op = f["op"]
    if op == "and":
        return all(matches(a, values) for a in f.get("args", []))
    if op == "or":
        return any(matches(a, values) for a in f.get("args", []))
    if op == "not":
        return not matches(f["args"][0], values)
    v = values.get(f["column"])
    if op == "is_null":
        return v is None
    if op == "not_null":
        return v is not None
    if v is None:
        return False
    numeric = NUMERIC[f["column"]]
    if op == "in":
        for x in f.get("values", []):
            if x is None:
                continue
            n = _number(x) if numeric else None
            if n is not None:
                if _number(v) == n:
                    return True
            elif v == _text(x):
                return True
        return False
    n = _number(f["value"]) if numeric else None
    if n is not None:
        mine = _number(v)
        return mine is not None and _OPS[op](mine, n)
    return _OPS[op](v, _text(f["value"]))


FILTERS: list[dict[str, Any]] = [
    {"op": "eq", "column": "region", "value": "r07"},
    {"op": "and", "args": [
        {"op": "eq", "column": "region", "value": "r07"},
        {"op": "ge", "column": "bucket", "value": 10},
        {"op": "lt", "column": "bucket", "value": 20},
    ]},
    {"op": "le", "column": "bucket", "value": "9"},  # a numeric string on a numeric column
    {"op": "gt", "column": "bucket", "value": 97.5},
    {"op": "eq", "column": "bucket", "value": 7},  # "7" and "007"
    {"op": "ne", "column": "bucket", "value": 5},  # not nulls, not "abc"
    {"op": "eq", "column": "bucket", "value": "abc"},  # text, as it is no number
    {"op": "in", "column": "region", "values": ["r01", "r02", "r99", "nope", None]},
    {"op": "and", "args": [
        {"op": "in", "column": "region", "values": ["r01", "r02"]},
        {"op": "in", "column": "bucket", "values": [1, 2.0, "3", "abc", None]},
    ]},
    {"op": "or", "args": [
        {"op": "eq", "column": "region", "value": "r00"},
        {"op": "and", "args": [
            {"op": "gt", "column": "bucket", "value": 95},
            {"op": "not", "args": [{"op": "eq", "column": "region", "value": "r50"}]},
        ]},
    ]},
    {"op": "not", "args": [{"op": "in", "column": "region", "values": [f"r{r:02d}" for r in range(1, 100)]}]},
    {"op": "is_null", "column": "region"},
    {"op": "and", "args": [{"op": "not_null", "column": "region"}, {"op": "is_null", "column": "bucket"}]},
    {"op": "not", "args": [{"op": "not_null", "column": "bucket"}]},
    {"op": "lt", "column": "region", "value": "r03"},  # text by code point: R10 and quoted ones too
    {"op": "and", "args": [
        {"op": "ge", "column": "region", "value": "r98"},
        {"op": "le", "column": "bucket", "value": 4},
    ]},
    {"op": "eq", "column": "region", "value": INJECTION},
    {"op": "eq", "column": "region", "value": TAUTOLOGY},
    {"op": "in", "column": "region", "values": [TAUTOLOGY, "r00' --", "r00\"; --"]},
    {"op": "lt", "column": "bucket", "value": -1},
    {"op": "and", "args": []},
    {"op": "or", "args": []},
    {"op": "eq", "column": "region", "value": True},
]  # fmt: skip


@pytest.fixture
def big_table(db_url: str) -> Iterator[tuple[Api, str]]:
    for api in make_api(db_url):
        route = api.table(
            partition_fields=[{"name": "region", "type": "string"}, {"name": "bucket", "type": "int64"}],
            params={"hoodie.datasource.write.hive_style_partitioning": "true"},
        )
        ts = api.instant_time(route)
        stats = {
            p: [
                {
                    "fileId": f"f{i}",
                    "path": f"{p}/f{i}_0-1-0_{ts}.parquet",
                    "fileSizeInBytes": 1,
                    "partitionPath": p,
                }
            ]
            for i, p in enumerate(partition_paths())
        }
        start = time.monotonic()
        api.ok(api.commit(route, ts, {"partitionToWriteStats": stats}))
        # the first read waits for the sync of the 10k partitions
        assert len(api.ok(api.post(f"{route}/partitions/query", {}))) == len(stats)
        print(f"10k partitions committed and synced in {time.monotonic() - start:.1f}s")
        yield api, route


class StatementLog:
    def __init__(self, engine: sa.Engine) -> None:
        self.engine = engine
        self.statements: list[str] = []

    def __enter__(self) -> StatementLog:
        sa.event.listen(self.engine, "before_cursor_execute", self._record)
        return self

    def __exit__(self, *exc: object) -> None:
        sa.event.remove(self.engine, "before_cursor_execute", self._record)

    def _record(self, _conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if threading.current_thread().name == "hudi-md-metastore-sync":
            return  # the server's background sync pass, not the request
        if statement.strip().upper() not in ("BEGIN", "COMMIT", "ROLLBACK"):
            self.statements.append(statement)


def test_pruning_in_one_statement(big_table: tuple[Api, str]) -> None:
    api, route = big_table
    paths = partition_paths()
    reference_values = {p: values_of(p) for p in paths}
    for f in FILTERS:
        expected = sorted(p for p in paths if matches(f, reference_values[p]))
        with StatementLog(api.engine) as log:
            r = api.post(f"{route}/partitions/query", {"filter": f})
        got = [P.Partition.model_validate(p) for p in api.ok(r)]
        assert sorted(p.path for p in got) == expected, f
        assert all(p.values == reference_values[p.path] for p in got)
        over_partitions = [s for s in log.statements if "partition_key_val" in s]
        assert len(over_partitions) == 1, (f, log.statements)
        assert len(log.statements) == 2, (f, log.statements)  # the table's look-up, the pruning
        # values are bound parameters: no filter value appears in the SQL text
        assert INJECTION not in over_partitions[0] and "r07" not in over_partitions[0]
    # the hostile values are stored as they are; the tables are all there
    one = api.ok(api.get(f"{route}/partitions/region={INJECTION}/bucket=1"))
    assert one["values"] == {"region": INJECTION, "bucket": "1"}
    assert len(api.ok(api.post(f"{route}/partitions/query", {}))) == len(paths)


def test_statistics_are_gathered_after_a_large_sync(big_table: tuple[Api, str]) -> None:
    """The sync that brought 10k partitions gathered the query planner's statistics: PostgreSQL's
    autovacuum would, up to a minute later, and SQLite never does on its own (a pruning plan
    without them reads every partition)."""
    api, _ = big_table
    with api.engine.connect() as conn:
        if conn.dialect.name == "sqlite":
            analyzed = set(conn.exec_driver_sql("SELECT tbl FROM sqlite_stat1").scalars())
        else:
            analyzed = set(
                conn.exec_driver_sql(
                    "SELECT relname FROM pg_stat_user_tables WHERE last_analyze IS NOT NULL"
                ).scalars()
            )
    assert {"partitions", "partition_key_val", "files"} <= analyzed
