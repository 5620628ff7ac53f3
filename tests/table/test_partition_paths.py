"""Partition paths as Apache Hudi 1.2 writes and reads them (issue 9). The expected paths are what
Hudi's own key generators returned for these values (``integration/test_partition_values.py``
checks the same rules against the Hudi bundle on generated values)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import hudi_md
from hudi_md.errors import InvalidOptionError
from hudi_md.metadata.validate import validate_metadata_table
from hudi_md.planning.expressions import is_null
from hudi_md.table.partitions import escape_path_value, unescape_path_value
from hudi_md.write import keygen

# (value, path with URL encoding off, path with it on) — from Hudi 1.2's SimpleKeyGenerator.
HUDI_PATHS = [
    ("san josé", "san josé", "san josé"),
    ("x+y", "x+y", "x+y"),
    ("a b", "a b", "a b"),
    ("50%", "50%", "50%25"),
    ("k=v", "k=v", "k%3Dv"),
    ("a/b", "a/b", "a%2Fb"),
    ("#h", "#h", "%23h"),
    ("q?", "q?", "q%3F"),
    ("東京", "東京", "東京"),
    ("😀", "😀", "😀"),
    ("", "__HIVE_DEFAULT_PARTITION__", "__HIVE_DEFAULT_PARTITION__"),
    (None, "__HIVE_DEFAULT_PARTITION__", "__HIVE_DEFAULT_PARTITION__"),
    ("default", "default", "default"),
    ("__HIVE_DEFAULT_PARTITION__", "__HIVE_DEFAULT_PARTITION__", "__HIVE_DEFAULT_PARTITION__"),
    ("a%2Bb", "a%2Bb", "a%252Bb"),
    ("tab\there", "tab\there", "tab%09here"),
    ("back\\slash", "back\\slash", "back%5Cslash"),
    ("star*", "star*", "star%2A"),
    ("[br]", "[br]", "%5Bbr%5D"),
    ("{c}", "{c}", "%7Bc}"),
    ("^", "^", "%5E"),
    ("'q'", "'q'", "%27q%27"),
    ('"dq"', '"dq"', "%22dq%22"),
    ("\x7f", "\x7f", "%7F"),
    ("~tilde", "~tilde", "~tilde"),
    ("A,B", "A,B", "A,B"),
]


@pytest.mark.parametrize("hive", [False, True])
@pytest.mark.parametrize("url", [False, True])
def test_paths_are_hudis(hive: bool, url: bool) -> None:
    values = [v for v, _, _ in HUDI_PATHS if url or v is None or "/" not in v]
    table = pa.table({"zone": pa.array(values, pa.string()), "n": pa.array(range(len(values)), pa.int64())})
    expected = {v: (enc if url else raw) for v, raw, enc in HUDI_PATHS}
    for fields in (["zone"], ["zone", "n"]):
        got = keygen.partition_paths(table, fields, hive_style=hive, url_encode=url).to_pylist()
        want = []
        for i, v in enumerate(values):
            parts = [("zone=" if hive else "") + expected[v]]
            if len(fields) == 2:
                parts.append(("n=" if hive else "") + str(i))
            want.append("/".join(parts))
        assert got == want


def test_escape_round_trip_and_legacy_utf8_paths() -> None:
    for value, _, encoded in HUDI_PATHS:
        if value:
            assert escape_path_value(value) == encoded
            assert unescape_path_value(encoded) == value
    # Paths of hudi-md before this fix percent-encoded UTF-8: read as the value meant.
    assert unescape_path_value("san%20jos%C3%A9") == "san josé"
    assert unescape_path_value("x%2By") == "x+y"
    assert unescape_path_value("%FF%FE") is None  # not UTF-8: not trusted for pruning


def test_typed_values_and_floats_stringified_as_java() -> None:
    table = pa.table(
        {
            "d": pa.array([0.5, 1e7, 0.0001, None, 100.0], pa.float64()),
            "f": pa.array([0.1, 2.5, None, 1e10, 3.0], pa.float32()),
        }
    )
    got = keygen.partition_paths(table, ["d", "f"], hive_style=False, url_encode=False).to_pylist()
    assert got == [
        "0.5/0.1",
        "1.0E7/2.5",
        "1.0E-4/__HIVE_DEFAULT_PARTITION__",
        "__HIVE_DEFAULT_PARTITION__/1.0E10",
        "100.0/3.0",
    ]


def test_colon_without_url_encoding_is_refused() -> None:
    table = pa.table({"zone": ["ok", "10:30"]})
    with pytest.raises(InvalidOptionError, match=r"'zone'.*'10:30'.*partitionpath.urlencode"):
        keygen.partition_paths(table, ["zone"], hive_style=True, url_encode=False)
    assert keygen.partition_paths(table, ["zone"], hive_style=True, url_encode=True).to_pylist() == [
        "zone=ok",
        "zone=10%3A30",
    ]


def _opts(**extra: str) -> dict[str, str]:
    return {
        "hoodie.table.name": "t",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "zone",
        "hoodie.metadata.record.index.enable": "true",
        **extra,
    }


ROWS = pa.table(
    {
        "id": ["a", "b", "c", "d", "e", "f"],
        "ts": [1, 2, 3, 4, 5, 6],
        "zone": ["x", None, "", "default", "__HIVE_DEFAULT_PARTITION__", "san josé"],
    }
)


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_null_and_empty_values_go_to_the_default_partition(tmp_path: Path, table_type: str) -> None:
    path = str(tmp_path / "t")
    opts = _opts(**{"hoodie.datasource.write.table.type": table_type})
    hudi_md.write(ROWS, path, operation="upsert", options=opts)  # crashed with a TypeError before
    hudi_md.write(ROWS.slice(1, 2), path, operation="upsert", options=opts)
    t = hudi_md.open_table(path)
    assert sorted(t.partitions()) == ["__HIVE_DEFAULT_PARTITION__", "default", "san josé", "x"]
    rows = {r["id"]: r for r in t.read().to_pylist()}
    assert {k: r["zone"] for k, r in rows.items()} == {
        "a": "x",
        "b": None,
        "c": None,  # read from the path, as Hudi reads it: the default partition is null
        "d": "default",
        "e": None,
        "f": "san josé",
    }
    assert rows["c"]["_hoodie_partition_path"] == "__HIVE_DEFAULT_PARTITION__"
    assert validate_metadata_table(t) == []


@pytest.mark.parametrize("metadata", ["true", "false"])
def test_filters_on_default_and_literal_values(tmp_path: Path, metadata: str) -> None:
    path = str(tmp_path / "t")
    hudi_md.write(
        ROWS,
        path,
        operation="insert",
        options=_opts(**{"hoodie.datasource.write.hive_style_partitioning": "true"}),
    )
    t = hudi_md.open_table(path, {"hoodie.metadata.enable": metadata})

    def ids(filters: list) -> list[str]:
        return sorted(t.read(filters=filters, columns=["id"]).column("id").to_pylist())

    assert ids([("zone", "=", "default")]) == ["d"]  # was pruned as if `default` were null
    assert ids([("zone", "in", ["default", "x"])]) == ["a", "d"]
    assert ids([("zone", "!=", "x")]) == ["d", "f"]
    assert ids([("zone", "=", "")]) == []
    assert ids([("zone", "=", "__HIVE_DEFAULT_PARTITION__")]) == []
    assert sorted(t.read(filters=is_null("zone"), columns=["id"]).column("id").to_pylist()) == ["b", "c", "e"]
    assert ids([("zone", ">", "d")]) == ["a", "d", "f"]


def test_validate_names_paths_written_by_the_old_rule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from urllib.parse import quote

    path = str(tmp_path / "t")
    opts = _opts(**{"hoodie.datasource.write.partitionpath.urlencode": "true"})
    # hudi-md before 0.2: every value percent-encoded as UTF-8 (space, `+`, non-ASCII too)
    monkeypatch.setattr(keygen, "ESCAPED_CHARS_PATTERN", ".")
    monkeypatch.setattr(keygen, "escape_path_value", lambda v: quote(v, safe=""))
    hudi_md.write(ROWS, path, operation="insert", options=opts)
    monkeypatch.undo()
    t = hudi_md.open_table(path)
    assert "san%20jos%C3%A9" in t.partitions()
    diffs = [d for d in validate_metadata_table(t) if d.kind == "partition_path_encoding"]
    assert [d.partition_path for d in diffs] == ["san%20jos%C3%A9"]
    assert (
        "'san josé'" in diffs[0].describe()
        and "escapes only Hive's special characters" in diffs[0].describe()
    )
    # Reads stay right meanwhile: the old path decodes to the value the writer meant.
    assert t.read(filters=[("zone", "=", "san josé")], columns=["id"]).column("id").to_pylist() == ["f"]

    # The rewrite of docs/reference/format-notes.md: the table's rows written again with
    # insert_overwrite_table.
    hudi_md.write(
        t.read(columns=["id", "ts", "zone"]), path, operation="insert_overwrite_table", options=opts
    )
    t = hudi_md.open_table(path)
    assert validate_metadata_table(t) == []
    assert t.read(filters=[("zone", "=", "san josé")], columns=["_hoodie_partition_path"]).to_pylist() == [
        {"_hoodie_partition_path": "san josé"}
    ]


@pytest.mark.parametrize(
    "extra",
    [
        {
            "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.CustomKeyGenerator",
            "hoodie.datasource.write.partitionpath.field": "zone:timestamp",
        },
        {"hoodie.datasource.write.keygenerator.type": "TIMESTAMP"},
    ],
)
def test_timestamp_partitioning_is_refused(tmp_path: Path, extra: dict[str, str]) -> None:
    path = tmp_path / "t"
    with pytest.raises(InvalidOptionError, match="TIMESTAMP"):
        hudi_md.write(ROWS, str(path), operation="insert", options={**_opts(), **extra})
    assert not path.exists() or not any(p.is_file() for p in path.rglob("*.parquet"))


@pytest.mark.parametrize("hive", [True, False])
@pytest.mark.parametrize("fields", ["c", "c,n-x", "a.b,c,d"])
@pytest.mark.parametrize("url", [True, False])
def test_all_parse_is_parse_on_every_path(hive: bool, fields: str, url: bool) -> None:
    """The vectorised check the Spark planner runs over a million partition paths says what
    parse() says of each (odd values, extra and missing levels, a level without its field)."""
    from hudi_md.table.config import TableConfig
    from hudi_md.table.partitions import PartitionScheme

    scheme = PartitionScheme(
        TableConfig(
            {
                "hoodie.table.name": "t",
                "hoodie.table.partition.fields": fields,
                "hoodie.datasource.write.hive_style_partitioning": str(hive).lower(),
                "hoodie.datasource.write.partitionpath.urlencode": str(url).lower(),
                "hoodie.table.keygenerator.type": "COMPLEX",
            }
        )
    )
    names = scheme.fields
    values = [v for v, _, _ in HUDI_PATHS] + ["x", "=", "a=b"]
    paths = []
    for i, v in enumerate(values):
        row = {f: values[(i + k) % len(values)] for k, f in enumerate(names)}
        paths.append(scheme.path_of(row))
        paths.append(scheme.path_of(row) + "/extra")
        paths.append("/".join(scheme.path_of(row).split("/")[1:]))
        paths.append(scheme.path_of({**row, names[0]: v}).replace(f"{names[0]}=", "", 1))
    for p in paths:
        assert scheme.all_parse([p]) == (scheme.parse(p) is not None), p
    good = [p for p in paths if scheme.parse(p) is not None]
    assert good and scheme.all_parse(good)
    assert scheme.all_parse(good + [p for p in paths if p not in good]) is (len(good) == len(paths))
    assert scheme.all_parse([])


@pytest.mark.parametrize("hive", [True, False])
@pytest.mark.parametrize("fields", ["c", "c,n", "a.b,c,n"])
@pytest.mark.parametrize("url", [True, False])
def test_typed_value_columns_are_typed_values(hive: bool, fields: str, url: bool) -> None:
    """The column-wise partition values the Spark planner sends for a large plan equal
    typed_values() path by path, or are refused (None) so that the caller asks path by path."""
    from hudi_md.table.config import TableConfig
    from hudi_md.table.partitions import PartitionScheme

    scheme = PartitionScheme(
        TableConfig(
            {
                "hoodie.table.name": "t",
                "hoodie.table.partition.fields": fields,
                "hoodie.datasource.write.hive_style_partitioning": str(hive).lower(),
                "hoodie.datasource.write.partitionpath.urlencode": str(url).lower(),
                "hoodie.table.keygenerator.type": "COMPLEX",
            }
        )
    )
    schema = pa.schema([(f, pa.int32() if f == "n" else pa.string()) for f in scheme.fields])
    strings = [v for v, _, _ in HUDI_PATHS] + ["x", "=", "a=b", ""]
    numbers = ["0", "7", "-12", "007", "2147483647", "2147483648", "+5", "5_0", " 5", "", "x"]
    tried = accepted = 0
    for sample in range(len(strings) * len(numbers)):
        paths = []
        for i in range(4):
            row = {
                f: (numbers if f == "n" else strings)[
                    (sample + i * (k + 1)) % len(numbers if f == "n" else strings)
                ]
                for k, f in enumerate(scheme.fields)
            }
            paths.append(scheme.path_of(row))
        columns = scheme.typed_value_columns(pa.array(paths), schema)
        tried += 1
        if columns is None:
            continue
        accepted += 1
        for i, p in enumerate(paths):
            want = scheme.typed_values(p, schema)
            assert want is not None, p
            assert {f: columns[f][i].as_py() for f in scheme.fields} == want, p
    assert accepted < tried  # odd values are left to typed_values
    # the common case is answered column-wise
    plain = [scheme.path_of({f: (str(i) if f == "n" else f"v{i}") for f in scheme.fields}) for i in range(50)]
    columns = scheme.typed_value_columns(pa.array(plain), schema)
    assert columns is not None
    assert [{f: columns[f][i].as_py() for f in scheme.fields} for i in range(50)] == [
        scheme.typed_values(p, schema) for p in plain
    ]
