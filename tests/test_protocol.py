"""The planner protocol's names are defined once per language: ``hudi_md.spark.protocol`` (slice
rows: ``hudi_md.table.slice_rows``) and the shim's ``Protocol.scala``. These tests parse the Scala
object and check it spells every name as Python does, and that the slice-row conversion is one
round trip for both Spark paths (plan rows with URIs, slice descriptions as JSON)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
import pytest

from hudi_md.errors import InvalidOptionError
from hudi_md.spark import protocol
from hudi_md.table import slice_rows
from hudi_md.table.fs_view import BaseFile, FileSlice, LogFile

REPO = Path(__file__).resolve().parents[1]
PROTOCOL_SCALA = REPO / "jvm-shim" / "src" / "main" / "scala" / "hudi" / "md" / "spark" / "Protocol.scala"
SHIM_SOURCES = PROTOCOL_SCALA.parent


def scala_constants() -> dict[str, str]:
    text = PROTOCOL_SCALA.read_text()
    return dict(re.findall(r'^\s*val (\w+)(?:: String)? = "((?:[^"\\]|\\.)*)"\s*$', text, re.MULTILINE))


def python_name(scala_name: str) -> str:
    """``OpReadSlice`` → ``OP_READ_SLICE``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", scala_name).upper()


def test_protocol_scala_constants_equal_python():
    constants = scala_constants()
    assert len(constants) > 30, "Protocol.scala was not parsed"
    for scala_name, value in constants.items():
        name = python_name(scala_name)
        assert hasattr(protocol, name), f"Protocol.{scala_name} has no hudi_md.spark.protocol.{name}"
        assert getattr(protocol, name) == value, f"Protocol.{scala_name} = {value!r}, Python {name} differs"


def test_every_python_name_is_in_protocol_scala():
    scala_names = {python_name(n) for n in scala_constants()}
    python_names = {n for n in protocol.__all__ if isinstance(getattr(protocol, n), str)}
    assert python_names - scala_names == set()


def test_slice_columns_are_the_protocol_names():
    assert protocol.SLICE_COLUMNS == slice_rows.SLICE_COLUMNS
    constants = scala_constants()
    scala_slice = {
        constants[n] for n in constants if python_name(n) in {c.upper() for c in slice_rows.SLICE_COLUMNS}
    }
    assert scala_slice == set(slice_rows.SLICE_COLUMNS)
    assert protocol.OPS == (
        protocol.OP_PING,
        protocol.OP_SCHEMA,
        protocol.OP_PLAN,
        protocol.OP_READ_SLICE,
        protocol.OP_INCREMENTAL_RANGE,
        protocol.OP_CREATE_TABLE,
        protocol.OP_PARTITIONS,
        protocol.OP_PROCEDURE_SCHEMA,
        protocol.OP_CALL,
    )


def test_scala_sources_spell_no_protocol_name_but_in_protocol_scala():
    """Request/response keys and slice columns appear as string literals only in Protocol.scala.
    (``"op"`` is also the node key of filter expressions, FilterTranslator's own format.)"""
    names = {
        v
        for k, v in scala_constants().items()
        if not k.startswith(("Query", "Counter")) and k not in ("Op", "Path", "PlannerModule")
    }
    for source in SHIM_SOURCES.glob("*.scala"):
        if source == PROTOCOL_SCALA:
            continue
        code = re.sub(r"/\*.*?\*/", "", source.read_text(), flags=re.DOTALL)
        code = re.sub(r"^\s*//.*$", "", code, flags=re.MULTILINE)
        literals = set(re.findall(r'(?<![s\w])"((?:[^"\\\n]|\\.)*)"', code))
        assert not names & literals, f"{source.name} spells {sorted(names & literals)}; use Protocol"


def _slices() -> list[FileSlice]:
    base = BaseFile("city=sf", "fg-1_1-0-1_20240101000000000.parquet", 100, "fg-1", "20240101000000000")
    log = LogFile(
        "city=sf", ".fg-1_20240102000000000.log.1_0-1-0", 7, "fg-1", "20240102000000000", 1, "0-1-0"
    )
    with_logs = FileSlice("city=sf", "fg-1", "20240101000000000", base, (log,))
    log_only = FileSlice(
        "city=la",
        "fg-2",
        "20240103000000000",
        None,
        (
            LogFile(
                "city=la", ".fg-2_20240103000000000.log.1_0-1-0", 9, "fg-2", "20240103000000000", 1, "0-1-0"
            ),
        ),
    )
    base_only = FileSlice(
        "",
        "fg-0",
        "20240101000000000",
        BaseFile("", "fg-0_1-0-1_20240101000000000.parquet", 5, "fg-0", "20240101000000000"),
    )
    return [with_logs, log_only, base_only]


def test_slice_rows_round_trip():
    slices = _slices()
    rows = slice_rows.slices_to_arrow(slices)
    assert rows.schema == slice_rows.SLICE_SCHEMA
    ordered = sorted(slices, key=lambda s: (s.partition_path, s.file_id))
    assert slice_rows.slices_from_arrow(rows) == ordered
    # One slice as a JSON object (read_slice's `slice`, spark.reader's descriptions).
    for row, s in zip(rows.to_pylist(), ordered, strict=True):
        assert slice_rows.slice_from_row(json.loads(json.dumps(row))) == s


def test_slice_rows_with_uris_and_partition_values():
    root = "file:/tmp/table"
    slices = _slices()
    pschema = pa.schema([pa.field("city", pa.string())])
    rows = slice_rows.slices_to_arrow(
        slices,
        uri=lambda p: f"{root}/{p}",
        partition_schema=pschema,
        partition_values=lambda path: {"city": path.partition("=")[2] or None},
    )
    assert rows.column_names == [*slice_rows.SLICE_COLUMNS, "p:city"]
    assert rows.column("p:city").to_pylist() == [None, "la", "sf"]
    assert rows.column("base_file").to_pylist()[0] == f"{root}/fg-0_1-0-1_20240101000000000.parquet"
    ordered = sorted(slices, key=lambda s: (s.partition_path, s.file_id))
    assert slice_rows.slices_from_arrow(rows, uri_of=lambda p: f"{root}/{p}") == ordered
    with pytest.raises(InvalidOptionError, match="is not the table's file"):
        slice_rows.slices_from_arrow(rows, uri_of=lambda p: f"file:/tmp/other/{p}")
