"""Partition filters as MDT ``files`` keys (planning/partition_keys.py).

The keys are checked two ways: what a filter turns into (exact paths, path prefixes, or nothing),
and, on real tables of odd partition values (tests/partition_values.py), that planning by key
lookups selects what planning over the whole partition list selects (the oracle: a storage listing
of the table, pruned path by path), with the same rows read."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import hudi_md
from hudi_md.planning import Expression, and_, from_filters, starts_with
from hudi_md.planning.partition_keys import MAX_PARTITION_KEYS, PartitionKeys, partition_keys
from hudi_md.table.config import TableConfig
from hudi_md.table.partitions import PartitionScheme

from partition_values import HIVE_DEFAULT, PartitionLayout, filter_cases, generate_rows, to_arrow


def scheme(fields: str, *, hive: bool = True, url: bool = False, keygen: str = "COMPLEX") -> PartitionScheme:
    return PartitionScheme(
        TableConfig(
            {
                "hoodie.table.name": "t",
                "hoodie.table.partition.fields": fields,
                "hoodie.datasource.write.hive_style_partitioning": str(hive).lower(),
                "hoodie.datasource.write.partitionpath.urlencode": str(url).lower(),
                "hoodie.table.keygenerator.type": keygen,
            }
        )
    )


SCHEMA = pa.schema([("region", pa.string()), ("day", pa.string()), ("n", pa.int32()), ("f", pa.float64())])


def keys(filters: list, s: PartitionScheme, schema: pa.Schema = SCHEMA) -> PartitionKeys | None:
    names = s.fields
    pschema = pa.schema([schema.field(n) for n in names])
    return partition_keys(from_filters(filters), s, pschema)


def test_equality_on_every_partition_column_names_the_paths() -> None:
    s = scheme("region,day")
    assert keys([("region", "=", "eu"), ("day", "=", "d1")], s) == PartitionKeys(("region=eu/day=d1",), ())
    got = keys([("region", "in", ["eu", "us"]), ("day", "=", "d1"), ("f", ">", 1.0)], s)
    assert got == PartitionKeys(("region=eu/day=d1", "region=us/day=d1"), ())
    plain = scheme("region,day", hive=False)
    assert keys([("day", "=", "d1"), ("region", "=", "eu")], plain) == PartitionKeys(("eu/d1",), ())


def test_leading_columns_and_string_ranges_name_prefixes() -> None:
    s = scheme("region,day")
    assert keys([("region", "=", "eu")], s) == PartitionKeys((), ("region=eu/",))
    assert keys([("region", "=", "eu"), ("day", ">=", "2024-01-01"), ("day", "<", "2024-02-01")], s) == (
        PartitionKeys((), ("region=eu/day=2024-0",))
    )
    got = keys([("region", ">=", "p00040"), ("region", "<=", "p00049")], s)
    assert got == PartitionKeys((), ("region=p0004",))
    expr = starts_with("region", "eu-")
    assert partition_keys(expr, s, pa.schema([SCHEMA.field("region"), SCHEMA.field("day")])) == (
        PartitionKeys((), ("region=eu-",))
    )
    # a range open on one side, or bounds without a common prefix, does not narrow the keys
    assert keys([("region", ">=", "p1")], s) is None
    assert keys([("region", ">=", "a"), ("region", "<", "b")], s) is None
    # a filter on a later column only, or none on partition columns
    assert keys([("day", "=", "d1")], s) is None
    assert keys([("f", "=", 1.0)], s) is None


def test_or_of_keys_is_their_union_and_subsumed_paths_go() -> None:
    s = scheme("region,day")
    expr = from_filters([("region", "=", "eu")]) | from_filters([("region", "=", "us"), ("day", "=", "d2")])
    got = partition_keys(expr, s, pa.schema([SCHEMA.field("region"), SCHEMA.field("day")]))
    assert got == PartitionKeys(("region=us/day=d2",), ("region=eu/",))
    expr = from_filters([("region", "=", "eu")]) | from_filters([("region", "=", "eu"), ("day", "=", "d2")])
    assert partition_keys(expr, s, pa.schema([SCHEMA.field("region"), SCHEMA.field("day")])) == PartitionKeys(
        (), ("region=eu/",)
    )
    # one branch without keys: the whole filter needs the list
    expr = from_filters([("region", "=", "eu")]) | from_filters([("f", ">", 1.0)])
    assert partition_keys(expr, s, pa.schema([SCHEMA.field("region"), SCHEMA.field("day")])) is None


def test_contradictions_select_nothing() -> None:
    s = scheme("region")
    assert keys([("region", "=", "eu"), ("region", "=", "us")], s) == PartitionKeys((), ())
    assert keys([("region", "in", ["a", "b"]), ("region", "in", ["c"])], s) == PartitionKeys((), ())


def test_values_are_keys_only_where_the_path_rule_is_exact() -> None:
    ints = scheme("n")
    assert keys([("n", "=", 7)], ints) == PartitionKeys(("n=7",), ())
    assert keys([("n", "in", [-3, 42])], ints) == PartitionKeys(("n=-3", "n=42"), ())
    assert keys([("n", ">", 3), ("n", "<", 9)], ints) is None  # numbers do not sort as strings
    floats = scheme("f")
    assert keys([("f", "=", 1.5)], floats) is None  # Hudi writes Java's double string
    url = scheme("region", url=True)
    assert keys([("region", "=", "a b")], url) == PartitionKeys(("region=a b",), ())
    assert keys([("region", "=", "a/b")], url) is None  # escaped: older writers escaped otherwise
    assert keys([("region", "=", "Zürich")], url) is None
    assert keys([("region", "=", "a/b")], scheme("region")) == PartitionKeys(("region=a/b",), ())
    assert keys([("region", "=", HIVE_DEFAULT)], scheme("region")) is None
    timestamp = scheme("region", keygen="TIMESTAMP")
    assert keys([("region", "=", "eu")], timestamp) is None
    many = [f"v{i}" for i in range(MAX_PARTITION_KEYS // 10 + 1)]
    two = scheme("region,day")
    got = keys([("region", "in", many), ("day", "in", [f"d{i}" for i in range(10)])], two)
    assert got is not None and not got.paths and len(got.prefixes) == len(many)  # capped: prefixes


# --- against the whole partition list, on tables of odd partition values ----------------------

LAYOUTS = [
    PartitionLayout("COPY_ON_WRITE", levels, hive, url)
    for levels in (1, 3)
    for hive in (True, False)
    for url in (True, False)
]


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[PartitionLayout, Path, list]]:
    out = {}
    for layout in LAYOUTS:
        path = tmp_path_factory.mktemp(layout.id) / "t"
        rows = generate_rows(layout, 60, seed=len(out))
        hudi_md.write(to_arrow(rows), str(path), operation="upsert", options=layout.options("pk"))
        out[layout.id] = (layout, path, rows)
    return out


def extra_cases(layout: PartitionLayout, rows: list) -> list[list[tuple] | Expression]:
    """Filters that pin every level, the leading levels, or a prefix of the first."""
    cases: list[list[tuple] | Expression] = []
    for r in rows[:12]:
        pinned = [(f, "=", r[f]) for f in layout.fields if r[f] is not None]
        cases.append(pinned)
        cases.append(pinned[:1])
        first = r[layout.fields[0]]
        if isinstance(first, str) and first:
            cases.append(and_(starts_with(layout.fields[0], first[:1]), from_filters(pinned[1:2] or [])))
            cases.append([(layout.fields[0], ">=", first), (layout.fields[0], "<=", first + "~")])
    return [c for c in cases if c]


def slice_set(table: hudi_md.Table, filters: list | Expression) -> set[tuple[str, str]]:
    return {(s.partition_path, s.file_id) for s in table.plan(filters).slices}


@pytest.mark.parametrize("layout_id", [layout.id for layout in LAYOUTS])
def test_key_lookups_select_what_the_partition_list_selects(tables, layout_id: str) -> None:
    layout, path, rows = tables[layout_id]
    listed = hudi_md.open_table(str(path), {"hoodie.metadata.enable": "false"})
    scheme_ = listed.state.partition_scheme
    pschema = pa.schema([listed.schema.field(f) for f in layout.fields])
    used_keys = 0
    for filters in filter_cases(layout, rows, seed=1) + extra_cases(layout, rows):
        by_keys = hudi_md.open_table(str(path))
        plan = by_keys.plan(filters)
        used_keys += "partitions_from_keys" in plan.counters
        got = {(s.partition_path, s.file_id) for s in plan.slices}
        want = slice_set(listed, filters)
        assert got <= want, filters
        # the list keeps partitions whose paths do not give their values (pruning cannot tell);
        # a key lookup finds a partition by its value, so their rows are the only difference
        for partition, _ in want - got:
            values = scheme_.pruning_values(partition, pschema)
            assert len(values) < len(layout.fields), (filters, partition)
        assert by_keys.read(filters).sort_by("uid") == listed.read(filters).sort_by("uid"), filters
    assert used_keys >= 10
