"""What a write through Spark's API means (``hudi_md.spark.write_request.resolve``), without Spark:
the operation of each DataFrameWriter save mode and of each SQL write form (Apache Hudi's rules),
the options each one writes with, and the refusals, against tables written here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import hudi_md
from hudi_md.errors import InvalidOptionError, TableExistsError, TableNotFoundError
from hudi_md.spark import protocol as P
from hudi_md.spark.write_request import (
    OPERATION,
    STATIC_OVERWRITE_PARTITIONS,
    WriteRequest,
    resolve,
)
from table_model import rows

COMBINE_BEFORE_INSERT = "hoodie.combine.before.insert"

OPTS = {
    "hoodie.table.name": "wr",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "city",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.hive_style_partitioning": "true",
}


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory):
    """A table with partitions city=sf, city=nyc, city=sao_paulo."""
    path = str(tmp_path_factory.mktemp("wr") / "t")
    hudi_md.write(rows(range(9), 1, seed=1), path, operation="insert", options=OPTS)
    return hudi_md.open_table(path).state  # what resolve() takes


def request(mode: str = "append", options: dict | None = None, sql: dict | None = None, **kw) -> WriteRequest:
    doc = {P.PATH: "/t", P.WRITE_SAVE_MODE: mode, P.OPTIONS: options or {}, **kw}
    if sql is not None:
        doc[P.WRITE_SQL] = sql
    return WriteRequest.from_json(json.dumps(doc))


def sql(
    command: str = "insert", overwrite: bool = False, spec: dict | None = None, mode: str = "static", **kw
):
    return {
        P.SQL_COMMAND: command,
        P.SQL_OVERWRITE: overwrite,
        P.SQL_PARTITION_SPEC: spec or {},
        P.SQL_OVERWRITE_MODE: mode,
        P.SQL_TABLE: "t",
        P.SQL_DATABASE: "db",
        P.WRITE_PARTITION_COLUMNS: ["city"],
        **kw,
    }


@pytest.mark.parametrize(
    ("mode", "configured", "exists", "expected"),
    [
        ("append", None, True, "upsert"),
        ("append", "insert", True, "insert"),
        ("append", "BULK_INSERT", False, "bulk_insert"),
        ("append", "delete", True, "delete"),
        ("overwrite", None, True, "insert_overwrite_table"),
        ("overwrite", "upsert", True, "insert_overwrite_table"),
        ("overwrite", "insert_overwrite", True, "insert_overwrite_table"),
        ("overwrite", None, False, "upsert"),
        ("overwrite", "insert", False, "insert"),
        ("errorifexists", None, False, "upsert"),
        ("ignore", "insert", False, "insert"),
        ("ignore", None, True, None),
    ],
)
def test_save_modes(table, mode: str, configured: str | None, exists: bool, expected: str | None) -> None:
    options = {OPERATION: configured} if configured else {}
    got = resolve(request(mode, options), table if exists else None)
    assert got.operation == expected


def test_save_mode_refusals(table) -> None:
    with pytest.raises(TableExistsError):
        resolve(request("errorifexists"), table)
    for mode in ("overwrite", "errorifexists", "ignore"):
        with pytest.raises(InvalidOptionError, match="append only"):
            resolve(request(mode, {OPERATION: "delete_partition"}), table)
    with pytest.raises(TableNotFoundError):
        resolve(request("append", {OPERATION: "delete"}), None)
    with pytest.raises(InvalidOptionError, match=r"hoodie\.datasource\.write\.operation.*'merge'"):
        resolve(request("append", {OPERATION: "merge"}), table)
    with pytest.raises(InvalidOptionError, match="save mode"):
        resolve(request("truncate"), table)


def test_dataframe_writer_options() -> None:
    got = resolve(
        request(
            "append",
            {"hoodie.datasource.write.table.name": "named"},
            **{P.WRITE_PARTITION_COLUMNS: ["a", "b"]},
        ),
        None,
    )
    assert got.options["hoodie.table.name"] == "named"
    assert got.options["hoodie.datasource.write.partitionpath.field"] == "a,b"
    # partitionBy does not override the option
    got = resolve(
        request(
            "append",
            {"hoodie.datasource.write.partitionpath.field": "c"},
            **{P.WRITE_PARTITION_COLUMNS: ["a"]},
        ),
        None,
    )
    assert got.options["hoodie.datasource.write.partitionpath.field"] == "c"


def test_sql_insert_into(table) -> None:
    # Apache Hudi 1.x's default: insert; as Hudi 1.2, neither a stored key nor a key twice in the
    # statement is merged (hoodie.combine.before.insert stays false)
    got = resolve(request(sql=sql()), table)
    assert got.operation == "insert" and COMBINE_BEFORE_INSERT not in got.options
    # Hudi's SQL operation key, then hoodie.datasource.write.operation above it
    got = resolve(
        request(sql=sql(session_options={"hoodie.spark.sql.insert.into.operation": "bulk_insert"})), table
    )
    assert got.operation == "bulk_insert"
    got = resolve(
        request(
            options={OPERATION: "insert"},
            sql=sql(session_options={"hoodie.spark.sql.insert.into.operation": "bulk_insert"}),
        ),
        table,
    )
    assert got.operation == "insert"
    # no ordering field anywhere: insert
    new = sql(table_properties={"hoodie.datasource.write.recordkey.field": "id"})
    got = resolve(request(sql=new), None)
    assert got.operation == "insert" and COMBINE_BEFORE_INSERT not in got.options


def test_sql_option_priorities_and_new_table_defaults() -> None:
    """TBLPROPERTIES < OPTIONS < the session's SET hoodie.*; a new table gets the catalog's name,
    database and PARTITIONED BY, hive-style; TBLPROPERTIES that are not Hudi's are left out."""
    s = sql(
        table_properties={
            "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.metadata.enable": "false",
            "transient_lastDdlTime": "1",
        },
        session_options={"hoodie.metadata.enable": "true"},
    )
    got = resolve(
        request(options={"hoodie.datasource.write.precombine.field": "fare", "key": "v"}, sql=s), None
    )
    o = got.options
    assert o["hoodie.datasource.write.precombine.field"] == "fare"
    assert o["hoodie.metadata.enable"] == "true"
    assert o["key"] == "v" and "transient_lastDdlTime" not in o
    assert (o["hoodie.table.name"], o["hoodie.database.name"]) == ("t", "db")
    assert o["hoodie.datasource.write.partitionpath.field"] == "city"
    assert o["hoodie.datasource.write.hive_style_partitioning"] == "true"
    assert got.operation == "insert"
    with pytest.raises(InvalidOptionError, match="primaryKey"):
        resolve(request(sql=sql()), None)


def test_sql_insert_overwrite(table) -> None:
    # static mode: no partition values → the whole table; with values → the partitions holding them
    got = resolve(request(sql=sql(overwrite=True, spec={"city": None})), table)
    assert got.operation == "insert_overwrite_table"
    got = resolve(request(sql=sql(overwrite=True, spec={"city": "sf"})), table)
    assert got.operation == "insert_overwrite"
    assert got.options[STATIC_OVERWRITE_PARTITIONS] == "city=sf"
    got = resolve(request(sql=sql(overwrite=True, spec={"city": "atlantis"})), table)
    assert got.options[STATIC_OVERWRITE_PARTITIONS] == ""
    # dynamic: the partitions written (no static list), also by Hudi's own key
    got = resolve(request(sql=sql(overwrite=True, spec={"city": None}, mode="dynamic")), table)
    assert got.operation == "insert_overwrite" and STATIC_OVERWRITE_PARTITIONS not in got.options
    dyn = sql(
        overwrite=True, spec={"city": "sf"}, session_options={"hoodie.datasource.overwrite.mode": "DYNAMIC"}
    )
    got = resolve(request(sql=dyn), table)
    assert got.operation == "insert_overwrite" and STATIC_OVERWRITE_PARTITIONS not in got.options
    # an unpartitioned table: always the whole table
    got = resolve(request(sql=sql(overwrite=True, mode="dynamic", **{P.WRITE_PARTITION_COLUMNS: []})), table)
    assert got.operation == "insert_overwrite_table"
    # an overwrite operation in the options is taken; another one does not turn it into an append
    got = resolve(request(options={OPERATION: "insert_overwrite"}, sql=sql(overwrite=True)), table)
    assert got.operation == "insert_overwrite"
    got = resolve(request(options={OPERATION: "upsert"}, sql=sql(overwrite=True)), table)
    assert got.operation == "insert_overwrite_table"
    with pytest.raises(InvalidOptionError, match="partitionOverwriteMode"):
        resolve(request(sql=sql(overwrite=True, mode="sometimes")), table)
    with pytest.raises(InvalidOptionError, match="PARTITION"):
        resolve(request(sql=sql(overwrite=True, spec={"nope": "x"})), table)


def test_sql_delete(table) -> None:
    got = resolve(request(sql=sql(command="delete")), table)
    assert got.operation == "delete"
    with pytest.raises(TableNotFoundError):
        resolve(request(sql=sql(command="delete")), None)


def test_options_conflicting_with_the_table_are_refused(tmp_path: Path) -> None:
    """Apache Hudi's validateTableConfig: options naming another record key, ordering field,
    partition fields, key generator, type or name than hoodie.properties fail before anything is
    written; options equal to the table's, or unset, pass."""
    path = str(tmp_path / "t")
    hudi_md.write(rows(range(3), 1, seed=1), path, operation="insert", options=OPTS)
    before = sorted(p.relative_to(path).as_posix() for p in Path(path).rglob("*"))
    for key, value in [
        ("hoodie.datasource.write.recordkey.field", "fare"),
        ("hoodie.datasource.write.precombine.field", "fare"),
        ("hoodie.datasource.write.partitionpath.field", "id"),
        ("hoodie.datasource.write.keygenerator.class", "org.apache.hudi.keygen.ComplexKeyGenerator"),
        ("hoodie.datasource.write.table.type", "MERGE_ON_READ"),
        ("hoodie.table.name", "other"),
    ]:
        with pytest.raises(InvalidOptionError, match=key.replace(".", r"\.")):
            hudi_md.write(rows([5], 2, seed=2), path, options={**OPTS, key: value})
    assert sorted(p.relative_to(path).as_posix() for p in Path(path).rglob("*")) == before
    same = {**OPTS, "hoodie.table.name": "WR", "hoodie.datasource.write.table.type": "copy_on_write"}
    hudi_md.write(rows([5], 2, seed=2), path, options=same)
    hudi_md.write(rows([6], 2, seed=2), path, options={"hoodie.table.name": "wr"})
    assert len(hudi_md.open_table(path).read(columns=["id"])) == 5


def test_commit_metadata_options_and_streaming_batches(tmp_path: Path) -> None:
    """Options whose keys start with ``_`` (``hoodie.datasource.write.commitmeta.key.prefix``) go into
    the commit's ``extraMetadata`` (not to storage), as in Apache Hudi's data source; a streaming
    sink's batch (``_hudi_streaming_sink_checkpoint``) that the newest checkpointed commit holds
    already, or an earlier one, is not written again."""
    path = str(tmp_path / "t")
    key = "_hudi_streaming_sink_checkpoint"
    sink_options = {**OPTS, key: '{"4": "app-q"}', "_note": "n"}
    hudi_md.write(rows(range(3), 1, seed=1), path, operation="insert", options=sink_options)
    # a write without a checkpoint (not the sink's) after it
    hudi_md.write(rows(range(3), 2, seed=2), path, operation="upsert", options=OPTS)
    table = hudi_md.open_table(path)
    first, second = table.timeline.write_timeline()
    extra = table.timeline.metadata(first)["extraMetadata"]
    assert extra[key] == '{"4": "app-q"}' and extra["_note"] == "n" and "schema" in extra
    assert key not in table.timeline.metadata(second)["extraMetadata"]
    other_prefix = {
        **OPTS,
        "hoodie.datasource.write.commitmeta.key.prefix": "meta.",
        "meta.run": "7",
        "_x": "y",
    }
    hudi_md.write(rows(range(1), 3, seed=3), path, operation="upsert", options=other_prefix)
    table = hudi_md.open_table(path).state  # what resolve() takes
    extra = table.timeline.metadata(table.timeline.write_timeline().last())["extraMetadata"]
    assert extra["meta.run"] == "7" and "_x" not in extra

    def operation(batch: int) -> str | None:
        return resolve(request(options={**OPTS, key: json.dumps({str(batch): "app-q"})}), table).operation

    assert operation(3) is None and operation(4) is None  # held already: skipped
    assert operation(5) == "upsert"
    with pytest.raises(InvalidOptionError, match=key):
        resolve(request(options={**OPTS, key: "not json"}), table)
