"""SQL writes on ``hudi-md`` tables: ``CREATE TABLE ... USING hudi-md`` (Apache Hudi's table made at
once), ``INSERT INTO``, ``INSERT OVERWRITE`` (static and dynamic partitions, the whole table),
``DELETE FROM``, ``UPDATE`` and ``MERGE INTO``, planned by the shim's session extension into
``hudi_md.write``'s Spark writer; CTAS and ``saveAsTable``; ``SHOW PARTITIONS``; reads that see
other writers' commits. Where the outcome is Apache Hudi 1.2's choice (INSERT INTO keeps a stored
key twice; MERGE INTO's DELETE by key on COW, ordered on MOR) the expected rows are what Hudi 1.2's
bundle gave on the same statements (``integration/test_sql_statements.py`` compares them live).

Seeded sequences over COW and MOR tables, partitioned and not, equal an in-memory model after
every statement (hudi-md's reader; the commit's operation is the one Hudi's SQL picks), and at the
end through ``SELECT`` on the table, hudi-md by listing, hudi-rs and the MDT validator.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import hudi_md
from hudi_md.metadata.validate import validate_metadata_table
from table_model import CITIES, Model, assert_readers, hudi_rs_table, pending_instants, read_hudi_md, rows

# statement kinds (each seed runs four, covering all of them together) and their commit's operation
KINDS = {
    "insert_select": "INSERT",  # Apache Hudi 1.x's hoodie.spark.sql.insert.into.operation
    "insert_values": "INSERT",
    "update": "UPSERT",
    "merge": "UPSERT",
    "overwrite_static_partition": "INSERT_OVERWRITE",
    "overwrite_dynamic": "INSERT_OVERWRITE",
    "overwrite_table": "INSERT_OVERWRITE_TABLE",
    "delete": "DELETE",
}
CASES = [
    pytest.param(
        1,
        "cow",
        True,
        ["insert_values", "merge", "overwrite_static_partition", "update", "delete", "overwrite_dynamic"],
        id="s1-cow",
    ),
    pytest.param(
        2,
        "mor",
        True,
        ["overwrite_dynamic", "update", "merge", "insert_select", "overwrite_static_partition", "delete"],
        id="s2-mor",
    ),
    pytest.param(
        3,
        "mor",
        False,
        ["insert_select", "merge", "delete", "update", "overwrite_table", "insert_values"],
        id="s3-mor-nopart",
    ),
]


@pytest.fixture
def sql(hudi_spark):
    """``sql(statement)``; tables the test created are dropped after it."""
    from hudi_md.spark.session import EXTENSIONS_CLASS

    loaded = hudi_spark.sparkContext.getConf().get("spark.sql.extensions", "")
    if EXTENSIONS_CLASS not in loaded.split(","):
        # `hudi_spark` reused a SparkContext started without the shim (another module's session):
        # the SQL writes would silently take Spark's own path; run this module before such tests
        pytest.fail(
            f"the Spark session lacks {EXTENSIONS_CLASS} (spark.sql.extensions = {loaded!r}): a "
            "SparkContext started by earlier tests was reused; run tests/spark/test_sql_writes.py first",
            pytrace=False,
        )
    created: list[str] = []

    def run(statement: str) -> Any:
        words = statement.split()
        if words[:2] == ["CREATE", "TABLE"]:
            created.append(words[2])
        return hudi_spark.sql(statement)

    yield run
    hudi_spark.conf.unset("spark.sql.sources.partitionOverwriteMode")
    for name in created:
        hudi_spark.sql(f"DROP TABLE IF EXISTS {name}")


def view(spark: Any, name: str, data: pa.Table) -> str:
    cols = data.select(["id", "ts", "fare", "city"]).to_pylist()
    spark.createDataFrame(cols, "id string, ts long, fare double, city string").createOrReplaceTempView(name)
    return name


def values(data: pa.Table) -> str:
    return ", ".join(f"('{r['id']}', {r['ts']}, {r['fare']}, '{r['city']}')" for r in data.to_pylist())


def last_operation(path: str) -> str:
    timeline = hudi_md.open_table(path).timeline
    return timeline.metadata(timeline.write_timeline().last())["operationType"]


@pytest.mark.parametrize(("seed", "kind", "partitioned", "statements"), CASES)
def test_sql_sequences_equal_the_model(
    hudi_spark, sql, tmp_path: Path, seed: int, kind: str, partitioned: bool, statements: list[str]
) -> None:
    rng = random.Random(seed)
    path = str(tmp_path / "t")
    name = f"sqlw{seed}"
    sql(
        f"CREATE TABLE {name} (id string, ts long, fare double, city string) USING "
        f"{'`hudi-md`' if seed % 2 else 'hudi_md'} {'PARTITIONED BY (city)' if partitioned else ''} "
        f"TBLPROPERTIES (primaryKey = 'id', preCombineField = 'ts', type = '{kind}') LOCATION '{path}'"
    )
    table = hudi_md.open_table(path)
    assert (table.table_type, table.state.config.record_key_fields, table.partition_fields) == (
        "COPY_ON_WRITE" if kind == "cow" else "MERGE_ON_READ",
        ["id"],
        ["city"] if partitioned else [],
    )
    assert table.state.config.hive_style_partitioning == partitioned and table.state.config.table_name == name
    model = Model(["city"] if partitioned else [])
    first = rows(range(24), 1, seed=seed)
    sql(f"INSERT INTO {name} SELECT id, ts, fare, city FROM {view(hudi_spark, 'src', first)}")
    model.upsert(first)
    assert read_hudi_md(path) == model.expected()
    next_id = 24
    for step, what in enumerate(statements, start=2):
        existing = sorted(int(r["id"][3:]) for r in model.rows.values())
        fresh = list(range(next_id, next_id + rng.randint(4, 10)))
        next_id += 20
        changed = rng.sample(existing, min(len(existing), rng.randint(2, 6)))
        data = rows(sorted(set(changed + fresh)), step, seed=seed * 10 + step)
        src = view(hudi_spark, f"src{step}", data)
        new_rows = rows(fresh, step, seed=seed * 10 + step)
        if what == "insert_select":  # new keys (a stored key would be inserted twice: below)
            sql(
                f"INSERT INTO {name} SELECT id, ts, fare, city "
                f"FROM {view(hudi_spark, f'new{step}', new_rows)}"
            )
            model.insert(new_rows)
        elif what == "insert_values":
            sql(f"INSERT INTO {name} (id, ts, fare, city) VALUES {values(new_rows)}")
            model.insert(new_rows)
        elif what == "update":
            keys = ", ".join(f"'id-{i:04d}'" for i in changed)
            sql(f"UPDATE {name} SET fare = fare + 1, ts = ts + 1 WHERE id IN ({keys})")
            model.upsert(
                [
                    {**r, "fare": r["fare"] + 1, "ts": r["ts"] + 1}
                    for r in model.rows.values()
                    if int(r["id"][3:]) in changed
                ]
            )
        elif what == "merge":
            # source rows newer than the table's: matched ones below 30 deleted, the others
            # updated, new keys inserted
            sql(
                f"MERGE INTO {name} t USING {src} s ON t.id = s.id "
                "WHEN MATCHED AND s.fare < 30 THEN DELETE WHEN MATCHED THEN UPDATE SET * "
                "WHEN NOT MATCHED THEN INSERT *"
            )
            for r in data.to_pylist():
                stored = model.pkey(r) in model.rows
                if stored and r["fare"] < 30:
                    model.delete([r])
                elif stored:
                    model.upsert([r])
                else:
                    model.insert([r])
        elif what == "overwrite_static_partition":
            city = rng.choice(CITIES)
            sql(
                f"INSERT OVERWRITE {name} PARTITION (city = '{city}') "
                f"SELECT id, ts, fare FROM {src} WHERE city = '{city}'"
            )
            model.rows = {k: r for k, r in model.rows.items() if k[0] != city}
            model.insert([r for r in data.to_pylist() if r["city"] == city])
        elif what == "overwrite_dynamic":
            hudi_spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
            sql(f"INSERT OVERWRITE {name} SELECT id, ts, fare, city FROM {src}")
            hudi_spark.conf.set("spark.sql.sources.partitionOverwriteMode", "static")
            model.overwrite(data, whole_table=False)
        elif what == "overwrite_table":
            sql(f"INSERT OVERWRITE TABLE {name} SELECT id, ts, fare, city FROM {src}")
            model.overwrite(data, whole_table=True)
        else:
            gone = ", ".join(f"'id-{i:04d}'" for i in changed)
            sql(f"DELETE FROM {name} WHERE id IN ({gone})")
            model.delete([r for r in data.to_pylist() if int(r["id"][3:]) in changed])
        assert read_hudi_md(path) == model.expected(), f"step {step}: {what}"
        assert last_operation(path) == KINDS[what], f"step {step}: {what}"
    got = hudi_spark.table(name).select("id", "ts", "fare").collect()
    assert sorted((r.id, r.ts, r.fare) for r in got) == model.expected()
    table, _ = assert_readers(path, model.expected())
    assert validate_metadata_table(table) == []
    assert pending_instants(path) == []


def test_inserts_into_a_table_over_hudi_md_data(hudi_spark, sql, tmp_path: Path) -> None:
    """A catalog table over a table hudi_md.write wrote reads Hudi's meta columns first; inserts
    need not give them (VALUES, a column list, BY NAME), or give them from another Hudi table (the
    writer ignores their values); an insert into a view of ``spark.read.format("hudi-md")`` writes
    the table too; a static INSERT OVERWRITE of a partition with no rows empties it."""
    path, other = str(tmp_path / "t"), str(tmp_path / "other")
    opts = {
        "hoodie.table.name": "over",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.hive_style_partitioning": "true",
    }
    model = Model(["city"])
    for p, ids in ((path, range(6)), (other, range(100, 103))):
        hudi_md.write(
            rows(ids, 1, seed=1), p, operation="insert", options={**opts, "hoodie.table.name": Path(p).name}
        )
    model.insert(rows(range(6), 1, seed=1))
    sql(f"CREATE TABLE over_t USING `hudi-md` LOCATION '{path}'")
    sql(f"CREATE TABLE over_o USING hudi_md LOCATION '{other}'")
    assert hudi_spark.table("over_t").columns[:2] == ["_hoodie_commit_time", "_hoodie_commit_seqno"]
    # new keys (INSERT INTO inserts a stored key again: test_insert_into_keeps_keys_twice_as_hudi)
    a, b, c = rows([10], 2, seed=2), rows([11], 2, seed=3), rows([14, 12], 2, seed=4)
    sql(f"INSERT INTO over_t VALUES ('id-0010', 2, {a['fare'][0]}, '{a['city'][0]}')")
    sql(f"INSERT INTO over_t (city, fare, ts, id) VALUES ('{b['city'][0]}', {b['fare'][0]}, 2, 'id-0011')")
    view(hudi_spark, "by_name_src", c)
    sql("INSERT INTO over_t BY NAME SELECT fare, id, city, ts FROM by_name_src")
    sql("INSERT INTO over_t SELECT * FROM over_o")
    for data in (a, b, c, rows(range(100, 103), 1, seed=1)):
        model.upsert(data)
    assert read_hudi_md(path) == model.expected()
    hudi_spark.read.format("hudi-md").load(path).createOrReplaceTempView("over_view")
    d = rows([13], 3, seed=5)
    sql(f"INSERT INTO over_view SELECT id, ts, fare, city FROM {view(hudi_spark, 'd', d)}")
    model.upsert(d)
    assert read_hudi_md(path) == model.expected()
    sql("INSERT OVERWRITE over_t PARTITION (city = 'nyc') SELECT id, ts, fare FROM d WHERE false")
    model.rows = {k: r for k, r in model.rows.items() if k[0] != "nyc"}
    assert read_hudi_md(path) == model.expected()
    assert sorted(r.id for r in hudi_spark.table("over_t").collect()) == sorted(k[1] for k in model.rows)
    table, _ = assert_readers(path, model.expected())
    assert validate_metadata_table(table) == []


@pytest.mark.spark_smoke  # SQL writes on every Spark line
def test_ctas_and_save_as_table(hudi_spark, sql, tmp_path: Path) -> None:
    """CTAS takes TBLPROPERTIES, PARTITIONED BY and the table's name into the new Hudi table;
    ``saveAsTable`` appends (upserts) to it; the catalog reads what was written."""
    data = rows(range(9), 1, seed=1)
    view(hudi_spark, "ctas_src", data)
    location = tmp_path / "ctas"
    sql(
        "CREATE TABLE ctas_t USING hudi_md PARTITIONED BY (city) "
        "TBLPROPERTIES (primaryKey = 'id', preCombineField = 'ts', type = 'mor') "
        f"LOCATION '{location}' AS SELECT id, ts, fare, city FROM ctas_src"
    )
    table = hudi_md.open_table(str(location))
    assert (
        table.table_type,
        table.state.config.record_key_fields,
        table.partition_fields,
        table.state.config.table_name,
    ) == (
        "MERGE_ON_READ",
        ["id"],
        ["city"],
        "ctas_t",
    )
    assert table.state.config.ordering_fields == ["ts"] and table.state.config.hive_style_partitioning
    model = Model(["city"])
    model.upsert(data)
    more = rows(range(5, 12), 2, seed=2)
    cols = more.select(["id", "ts", "fare", "city"]).to_pylist()
    hudi_spark.createDataFrame(cols, "id string, ts long, fare double, city string").write.format(
        "hudi_md"
    ).mode("append").partitionBy("city").saveAsTable("ctas_t")  # Spark wants the table's partitioning
    model.upsert(more)
    assert read_hudi_md(str(location)) == model.expected()
    got = hudi_spark.table("ctas_t").select("id", "ts", "fare").collect()
    assert sorted((r.id, r.ts, r.fare) for r in got) == model.expected()
    # overwrite: the table's rows replaced (insert_overwrite_table), its timeline kept
    last = rows(range(30, 33), 3, seed=3)
    cols = last.select(["id", "ts", "fare", "city"]).to_pylist()
    hudi_spark.createDataFrame(cols, "id string, ts long, fare double, city string").write.format(
        "hudi_md"
    ).mode("overwrite").option("path", str(location)).partitionBy("city").saveAsTable("ctas_t")
    model.overwrite(last, whole_table=True)
    assert read_hudi_md(str(location)) == model.expected()
    assert last_operation(str(location)) == "INSERT_OVERWRITE_TABLE"
    got = hudi_spark.table("ctas_t").select("id", "ts", "fare").collect()
    assert sorted((r.id, r.ts, r.fare) for r in got) == model.expected()


def test_sql_errors_write_nothing(hudi_spark, sql, tmp_path: Path) -> None:
    """TBLPROPERTIES naming another record key than the table's, and the UPDATE / MERGE INTO forms
    Apache Hudi 1.2 refuses (or ignores): refused with the option or what to do named, nothing
    written. (A new table without a record key is a keyless one: ``test_keyless_table``.)"""
    from pyspark.errors import AnalysisException, IllegalArgumentException

    path = tmp_path / "t"
    sql(
        "CREATE TABLE err_t (id string, ts long, fare double, city string) USING hudi_md "
        f"PARTITIONED BY (city) TBLPROPERTIES (primaryKey = 'id', preCombineField = 'ts') LOCATION '{path}'"
    )
    sql("INSERT INTO err_t VALUES ('a', 1, 1.0, 'sf')")
    sql(
        "CREATE TABLE err_other (id string, ts long, fare double, city string) USING hudi_md "
        f"PARTITIONED BY (city) TBLPROPERTIES (primaryKey = 'fare') LOCATION '{path}'"
    )
    before = sorted(p.relative_to(path).as_posix() for p in path.rglob("*"))
    with pytest.raises(IllegalArgumentException, match=r"recordkey\.field=fare \(the table has id\)"):
        sql("INSERT INTO err_other VALUES ('b', 1, 1.0, 'sf')")
    source = "(SELECT 'a' AS id, 2L AS ts, 5.0 AS fare, 'sf' AS city)"
    for statement, what in [
        # as Hudi 1.2: "Detected disallowed assignment clause in UPDATE statement for ... field"
        ("UPDATE err_t SET id = 'z' WHERE id = 'a'", "the record key field `id`"),
        ("UPDATE err_t SET city = 'nyc' WHERE id = 'a'", "the partition field `city`"),
        # as Hudi 1.2: "No matching assignment found for target table ordering field `ts`"
        (
            f"MERGE INTO err_t USING {source} s ON err_t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET fare = s.fare",
            "does not set the ordering field `ts`",
        ),
        (
            f"MERGE INTO err_t USING {source} s ON err_t.id = s.id "
            "WHEN NOT MATCHED THEN INSERT (id, fare, city) VALUES (s.id, s.fare, s.city)",
            "does not set the ordering field `ts`",
        ),
        # Hudi 1.2 ignores it silently
        (
            f"MERGE INTO err_t USING {source} s ON err_t.id = s.id WHEN NOT MATCHED BY SOURCE THEN DELETE",
            "WHEN NOT MATCHED BY SOURCE",
        ),
    ]:
        with pytest.raises(AnalysisException) as e:
            sql(statement)
        assert "hudi-md does not support" in str(e.value) and what in str(e.value), str(e.value)
        assert "Nothing was written" in str(e.value)
    assert sorted(p.relative_to(path).as_posix() for p in path.rglob("*")) == before
    assert pending_instants(str(path)) == []


def test_insert_into_keeps_keys_twice_as_hudi(hudi_spark, sql, tmp_path: Path) -> None:
    """Apache Hudi 1.2's INSERT INTO (hoodie.spark.sql.insert.into.operation=insert): a key the
    table holds, or twice in one statement, makes two rows (Hudi 1.2's bundle gave exactly these
    rows, COW and MOR); ``SET hoodie.spark.sql.insert.into.operation=upsert`` updates instead."""
    for kind in ("cow", "mor"):
        name = f"ins_{kind}"
        sql(
            f"CREATE TABLE {name} (id string, ts long, fare double, city string) USING hudi_md "
            "PARTITIONED BY (city) "
            f"TBLPROPERTIES (primaryKey = 'id', preCombineField = 'ts', type = '{kind}') "
            f"LOCATION '{tmp_path / name}'"
        )
        sql(f"INSERT INTO {name} VALUES ('x', 1, 1.0, 'sf'), ('x', 2, 2.0, 'sf'), ('y', 1, 3.0, 'sf')")
        sql(f"INSERT INTO {name} VALUES ('x', 0, 4.0, 'sf')")
        expected = [("x", 0, 4.0), ("x", 1, 1.0), ("x", 2, 2.0), ("y", 1, 3.0)]
        got = sorted((r.id, r.ts, r.fare) for r in sql(f"SELECT id, ts, fare FROM {name}").collect())
        assert got == expected
        assert read_hudi_md(str(tmp_path / name)) == expected
        assert last_operation(str(tmp_path / name)) == "INSERT"
        hudi_spark.conf.set("hoodie.spark.sql.insert.into.operation", "upsert")
        try:
            sql(f"INSERT INTO {name} VALUES ('y', 5, 9.0, 'sf')")
        finally:
            hudi_spark.conf.unset("hoodie.spark.sql.insert.into.operation")
        assert read_hudi_md(str(tmp_path / name)) == [*expected[:3], ("y", 5, 9.0)]


def test_merge_deletes_as_hudi_per_table_type(hudi_spark, sql, tmp_path: Path) -> None:
    """MERGE INTO's DELETE, as Apache Hudi 1.2 ran the same statements: on COW a delete by key
    (a source row older than the stored one deletes it too), on MOR ordered by the source's
    ordering value (an older one leaves the stored row); an UPDATE clause's older rows lose on both.
    One instant per statement."""
    hudi_spark.createDataFrame(
        [("b", 1, "del-low", "p2"), ("c", 9, "del-high", "p1"), ("d", 1, "upd-low", "p2"),
         ("f", 9, "upd-high", "p1"), ("e", 1, "new", "p1")],
        "id string, ts long, v string, dt string",
    ).createOrReplaceTempView("merge_src")  # fmt: skip
    expected = {
        "cow": [("d", 5, "w"), ("e", 1, "new"), ("f", 9, "upd-high")],
        "mor": [("b", 5, "y"), ("d", 5, "w"), ("e", 1, "new"), ("f", 9, "upd-high")],
    }
    for kind in ("cow", "mor"):
        name, path = f"merge_{kind}", str(tmp_path / f"merge_{kind}")
        sql(
            f"CREATE TABLE {name} (id string, ts long, v string, dt string) USING hudi_md "
            "PARTITIONED BY (dt) "
            f"TBLPROPERTIES (primaryKey = 'id', preCombineField = 'ts', type = '{kind}') LOCATION '{path}'"
        )
        sql(
            f"INSERT INTO {name} VALUES ('b', 5, 'y', 'p2'), ('c', 5, 'z', 'p1'), "
            "('d', 5, 'w', 'p2'), ('f', 5, 'q', 'p1')"
        )
        instants = len(hudi_md.open_table(path).timeline.write_timeline())
        sql(
            f"MERGE INTO {name} t USING merge_src s ON t.id = s.id "
            "WHEN MATCHED AND s.v LIKE 'del%' THEN DELETE "
            "WHEN MATCHED THEN UPDATE SET ts = s.ts, v = s.v "
            "WHEN NOT MATCHED THEN INSERT *"
        )
        got = sorted((r.id, r.ts, r.v) for r in sql(f"SELECT id, ts, v FROM {name}").collect())
        assert got == expected[kind], kind
        table = hudi_md.open_table(path)
        assert len(table.timeline.write_timeline()) == instants + 1
        assert table.schema.names[-4:] == ["id", "ts", "v", "dt"]  # no delete flag column
        hudi_rows = hudi_rs_table(path)
        assert sorted(zip(*(hudi_rows.column(c).to_pylist() for c in ("id", "ts", "v")), strict=True)) == got
        assert validate_metadata_table(table) == []


@pytest.mark.spark_smoke  # UPDATE, MERGE INTO, SHOW PARTITIONS and fresh reads on every Spark line
def test_show_partitions_update_and_reads_after_other_writers(hudi_spark, sql, tmp_path: Path) -> None:
    """SHOW PARTITIONS lists the MDT's partitions (Spark's own command reads none from the
    catalog); a catalog table's queries see commits made by hudi_md.write in the same process
    without REFRESH TABLE; UPDATE and MERGE INTO with ``*`` write."""
    path = str(tmp_path / "fresh")
    sql(
        "CREATE TABLE fresh_t (id string, ts long, fare double, city string) USING hudi_md "
        "PARTITIONED BY (city) "
        f"TBLPROPERTIES (primaryKey = 'id', preCombineField = 'ts') LOCATION '{path}'"
    )
    sql("INSERT INTO fresh_t VALUES ('a', 1, 1.0, 'sf'), ('b', 1, 2.0, 'nyc')")
    assert [r[0] for r in sql("SHOW PARTITIONS fresh_t").collect()] == ["city=nyc", "city=sf"]
    assert [r[0] for r in sql("SHOW PARTITIONS fresh_t PARTITION (city = 'sf')").collect()] == ["city=sf"]
    assert sql("SELECT count(*) FROM fresh_t").collect()[0][0] == 2
    hudi_md.write(
        pa.table({"id": ["c"], "ts": [1], "fare": [3.0], "city": ["sao_paulo"]}), path, operation="upsert"
    )
    assert sorted(r.id for r in sql("SELECT id FROM fresh_t").collect()) == ["a", "b", "c"]
    assert [r[0] for r in sql("SHOW PARTITIONS fresh_t").collect()] == [
        "city=nyc",
        "city=sao_paulo",
        "city=sf",
    ]
    sql("UPDATE fresh_t SET fare = fare * 10 WHERE city = 'sf'")
    hudi_spark.createDataFrame(
        [("b", 2, 20.0, "nyc"), ("d", 2, 4.0, "sf")], "id string, ts long, fare double, city string"
    ).createOrReplaceTempView("fresh_src")
    sql(
        "MERGE INTO fresh_t t USING fresh_src s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    expected = [("a", 1, 10.0), ("b", 2, 20.0), ("c", 1, 3.0), ("d", 2, 4.0)]
    assert sorted((r.id, r.ts, r.fare) for r in sql("SELECT id, ts, fare FROM fresh_t").collect()) == expected
    assert read_hudi_md(path) == expected


def test_drop_partition_and_truncate(hudi_spark, sql, tmp_path: Path) -> None:
    """As Apache Hudi 1.2 ran the same statements: ALTER TABLE ... DROP PARTITION is a
    delete_partition (SHOW PARTITIONS stops showing it; the MDT lists it until its clean, as
    Hudi's); dropping a missing one writes nothing, with or without IF EXISTS; TRUNCATE TABLE ...
    PARTITION drops that one, TRUNCATE TABLE every row (an insert_overwrite_table of none: hudi-md
    keeps the timeline Hudi deletes)."""
    path = str(tmp_path / "drop")
    sql(
        "CREATE TABLE drop_t (id string, ts long, fare double, city string) USING hudi_md "
        f"PARTITIONED BY (city) TBLPROPERTIES (primaryKey = 'id', preCombineField = 'ts') LOCATION '{path}'"
    )
    sql("INSERT INTO drop_t VALUES ('a', 1, 1.0, 'sf'), ('b', 1, 2.0, 'nyc'), ('c', 1, 3.0, 'la')")
    sql("ALTER TABLE drop_t DROP PARTITION (city = 'sf')")
    assert last_operation(path) == "DELETE_PARTITION"
    assert [r[0] for r in sql("SHOW PARTITIONS drop_t").collect()] == ["city=la", "city=nyc"]
    assert read_hudi_md(path) == [("b", 1, 2.0), ("c", 1, 3.0)]
    instants = len(hudi_md.open_table(path).timeline.write_timeline())
    sql("ALTER TABLE drop_t DROP IF EXISTS PARTITION (city = 'sf')")
    sql("ALTER TABLE drop_t DROP PARTITION (city = 'sf')")
    assert len(hudi_md.open_table(path).timeline.write_timeline()) == instants
    sql("TRUNCATE TABLE drop_t PARTITION (city = 'la')")
    assert read_hudi_md(path) == [("b", 1, 2.0)]
    assert [r[0] for r in sql("SHOW PARTITIONS drop_t").collect()] == ["city=nyc"]
    sql("TRUNCATE TABLE drop_t")
    assert read_hudi_md(path) == [] and sql("SELECT * FROM drop_t").count() == 0
    assert sql("SHOW PARTITIONS drop_t").collect() == []
    assert last_operation(path) == "INSERT_OVERWRITE_TABLE"
    assert validate_metadata_table(hudi_md.open_table(path)) == []
    assert pending_instants(path) == []


def test_add_columns(hudi_spark, sql, tmp_path: Path) -> None:
    """ALTER TABLE ... ADD COLUMNS, as Apache Hudi's SQL: a commit of no rows with the evolved
    schema (rows written before read the column as NULL, new rows carry it), the catalog's columns
    too; hudi-rs reads the table the same; an existing name is refused, nothing written."""
    from pyspark.errors import AnalysisException

    path = str(tmp_path / "cols")
    sql(
        "CREATE TABLE cols_t (id string, ts long, fare double, city string) USING hudi_md "
        f"PARTITIONED BY (city) TBLPROPERTIES (primaryKey = 'id', preCombineField = 'ts') LOCATION '{path}'"
    )
    sql("INSERT INTO cols_t VALUES ('a', 1, 1.0, 'sf')")
    sql("ALTER TABLE cols_t ADD COLUMNS (note string, qty int)")
    assert [f.name for f in sql("SELECT * FROM cols_t").schema.fields][-3:] == ["note", "qty", "city"]
    sql("INSERT INTO cols_t (id, ts, fare, city, note, qty) VALUES ('b', 1, 2.0, 'nyc', 'hi', 3)")
    got = sorted(tuple(r) for r in sql("SELECT id, note, qty FROM cols_t").collect())
    assert got == [("a", None, None), ("b", "hi", 3)]
    table = hudi_md.open_table(path)
    assert table.schema.field("qty").type == pa.int32()
    hudi_rows = hudi_rs_table(path)
    assert sorted(zip(*(hudi_rows.column(c).to_pylist() for c in ("id", "note", "qty")), strict=True)) == got
    instants = len(table.timeline.write_timeline())
    with pytest.raises(AnalysisException, match="has a column fare already"):
        sql("ALTER TABLE cols_t ADD COLUMNS (fare double)")
    assert len(hudi_md.open_table(path).timeline.write_timeline()) == instants
    assert pending_instants(path) == []


def _hudi_rs_as_of(path: str, instant: str) -> list[tuple]:
    import hudi

    options = hudi.HudiReadOptions().with_as_of_timestamp(instant)
    rows = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(path).build().read(options))
    return sorted(zip(*(rows.column(c).to_pylist() for c in ("id", "fare")), strict=True))


@pytest.mark.spark_smoke
@pytest.mark.parametrize("kind", ["cow", "mor"])
def test_time_travel_in_sql(hudi_spark, sql, tmp_path: Path, kind: str) -> None:
    """``TIMESTAMP AS OF`` / ``VERSION AS OF`` on a hudi-md table: an instant string (Apache Hudi's
    ``yyyyMMddHHmmssSSS``, or ``yyyy-MM-dd HH:mm:ss.SSS``) or a timestamp reads the table as of it,
    as hudi-rs reads it (commits requested at or before it); in a join and a subquery, with an alias
    and a qualified column; a numbered version is refused naming the form to use; another provider's
    table keeps Spark's own time travel (its error)."""
    from pyspark.errors import AnalysisException, IllegalArgumentException

    name = f"tt_{kind}"
    path = str(tmp_path / name)
    sql(
        f"CREATE TABLE {name} (id string, ts long, fare double, city string) USING hudi_md "
        f"PARTITIONED BY (city) TBLPROPERTIES (primaryKey = 'id', preCombineField = 'ts', type = '{kind}') "
        f"LOCATION '{path}'"
    )
    sql(f"INSERT INTO {name} VALUES ('a', 1, 1.0, 'sf'), ('b', 1, 2.0, 'nyc')")
    sql(f"UPDATE {name} SET fare = 10.0 WHERE id = 'a'")
    sql(f"DELETE FROM {name} WHERE id = 'b'")
    c1, c2, c3 = (i.requested_time for i in hudi_md.open_table(path).timeline.write_timeline())

    def as_of(clause: str) -> list[tuple]:
        return sorted(tuple(r) for r in sql(f"SELECT id, fare FROM {name} {clause}").collect())

    assert as_of(f"TIMESTAMP AS OF '{c1}'") == _hudi_rs_as_of(path, c1) == [("a", 1.0), ("b", 2.0)]
    assert as_of(f"TIMESTAMP AS OF '{c2}'") == _hudi_rs_as_of(path, c2) == [("a", 10.0), ("b", 2.0)]
    assert as_of(f"VERSION AS OF '{c1}'") == [("a", 1.0), ("b", 2.0)]
    assert as_of("") == _hudi_rs_as_of(path, c3) == [("a", 10.0)]
    dashed = f"{c2[:4]}-{c2[4:6]}-{c2[6:8]} {c2[8:10]}:{c2[10:12]}:{c2[12:14]}.{c2[14:]}"
    assert as_of(f"TIMESTAMP AS OF '{dashed}'") == [("a", 10.0), ("b", 2.0)]
    # the session zone is UTC; the instants are the JVM's local time, UTC here as in CI
    assert as_of(f"TIMESTAMP AS OF TIMESTAMP '{dashed}'") == [("a", 10.0), ("b", 2.0)]
    # the table of then beside the table of now, by alias and qualified name
    joined = sql(
        f"SELECT old.id, old.fare, {name}.fare AS now FROM {name} TIMESTAMP AS OF '{c1}' AS old "
        f"LEFT JOIN {name} ON old.id = {name}.id"
    )
    assert sorted(tuple(r) for r in joined.collect()) == [("a", 1.0, 10.0), ("b", 2.0, None)]
    gone = sql(f"SELECT id FROM {name} WHERE id NOT IN (SELECT id FROM {name} TIMESTAMP AS OF '{c3}')")
    assert gone.collect() == []
    with pytest.raises(IllegalArgumentException, match="VERSION AS OF takes an instant time"):
        sql(f"SELECT * FROM {name} VERSION AS OF 1").collect()
    sql(f"CREATE TABLE plain_{kind} (id string) USING parquet LOCATION '{tmp_path / 'plain'}'")
    with pytest.raises(AnalysisException, match="TIME_TRAVEL"):
        sql(f"SELECT * FROM plain_{kind} TIMESTAMP AS OF '2024-01-01 00:00:00'").collect()


def test_managed_table(hudi_spark, sql) -> None:
    """``CREATE TABLE`` without ``LOCATION``: the table goes to the database's location (Apache
    Hudi's table at once, as with a location), reads and writes as any; hudi-rs reads it;
    ``DROP TABLE`` removes its files (a managed table's data is the catalog's). A managed location
    already holding other files is refused before anything is written, as Spark refuses it."""
    from urllib.parse import urlparse

    sql(
        "CREATE TABLE managed_t (id string, ts long, fare double, city string) USING hudi_md "
        "PARTITIONED BY (city) TBLPROPERTIES (primaryKey = 'id', preCombineField = 'ts', type = 'mor')"
    )
    info = {r["col_name"]: r["data_type"] for r in sql("DESCRIBE TABLE EXTENDED managed_t").collect()}
    assert info["Type"] == "MANAGED"
    location = Path(urlparse(info["Location"]).path)
    assert (location / ".hoodie" / "hoodie.properties").is_file()
    sql("INSERT INTO managed_t VALUES ('a', 1, 1.0, 'sf'), ('b', 1, 2.0, 'nyc')")
    sql("UPDATE managed_t SET fare = 3.0 WHERE id = 'b'")
    got = sorted(tuple(r) for r in sql("SELECT id, fare FROM managed_t").collect())
    assert got == [("a", 1.0), ("b", 3.0)]
    rs = hudi_rs_table(str(location))
    assert sorted(zip(rs.column("id").to_pylist(), rs.column("fare").to_pylist(), strict=True)) == got
    sql("DROP TABLE managed_t")
    assert not location.exists()
    # a managed location holding files that are not a table
    location.mkdir(parents=True)
    (location / "stray.txt").write_text("not a table")
    with pytest.raises(Exception, match="holds files that are not a Hudi table"):
        sql(
            "CREATE TABLE managed_t (id string, ts long) USING hudi_md "
            "TBLPROPERTIES (primaryKey = 'id', preCombineField = 'ts')"
        )
    assert sorted(p.name for p in location.iterdir()) == ["stray.txt"]
    assert not hudi_spark.catalog.tableExists("managed_t")


@pytest.mark.parametrize("kind", ["cow", "mor"])
def test_keyless_table(hudi_spark, sql, tmp_path: Path, kind: str) -> None:
    """A table without ``primaryKey``: keys generated as Apache Hudi 1.2 generates them
    (``<instant>_<task>_<row>``, no record key in ``hoodie.properties``), the same rows inserted
    twice kept twice; ``UPDATE``, ``DELETE`` and ``MERGE INTO`` find rows by the keys they have
    (as in Hudi 1.2 on the same statements); hudi-rs reads the same rows."""
    name = f"keyless_{kind}"
    path = str(tmp_path / name)
    sql(
        f"CREATE TABLE {name} (id string, name string, ts long, p string) USING hudi_md "
        f"PARTITIONED BY (p) TBLPROPERTIES (type = '{kind}') LOCATION '{path}'"
    )
    assert "recordkey" not in (Path(path) / ".hoodie" / "hoodie.properties").read_text()
    sql(f"INSERT INTO {name} VALUES ('k1', 'a', 1, 'x'), ('k2', 'b', 1, 'y'), ('k3', 'c', 1, 'x')")
    sql(f"INSERT INTO {name} VALUES ('k1', 'a', 1, 'x')")
    first, second = (i.requested_time for i in hudi_md.open_table(path).timeline.write_timeline())
    keys = set(hudi_md.open_table(path).read(columns=["_hoodie_record_key"]).column(0).to_pylist())
    assert len(keys) == 4 and all(k.startswith((f"{first}_", f"{second}_")) for k in keys)
    assert all(len(k.split("_")) == 3 and k.split("_")[2].isdigit() for k in keys)

    def rows() -> list[tuple]:
        return sorted(tuple(r) for r in sql(f"SELECT id, name FROM {name}").collect())

    assert rows() == [("k1", "a"), ("k1", "a"), ("k2", "b"), ("k3", "c")]
    sql(f"UPDATE {name} SET name = 'z' WHERE id = 'k2'")
    sql(f"DELETE FROM {name} WHERE id = 'k3'")
    assert rows() == [("k1", "a"), ("k1", "a"), ("k2", "z")]
    sql(
        f"MERGE INTO {name} t USING (SELECT 'k2' id, 'm' name, 2L ts, 'y' p UNION ALL "
        "SELECT 'k4', 'n', 2L, 'x') s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    assert rows() == [("k1", "a"), ("k1", "a"), ("k2", "m"), ("k4", "n")]
    after = set(hudi_md.open_table(path).read(columns=["_hoodie_record_key"]).column(0).to_pylist())
    assert len(after) == 4 and len(after & keys) == 3  # the kept rows kept their keys
    rs = hudi_rs_table(path)
    assert sorted(zip(rs.column("id").to_pylist(), rs.column("name").to_pylist(), strict=True)) == rows()
    assert validate_metadata_table(hudi_md.open_table(path)) == []


@pytest.mark.spark_smoke
def test_call_procedures(hudi_spark, sql, tmp_path: Path) -> None:
    """``CALL`` of Apache Hudi's procedures on a hudi-md table, by name and by position, by table
    name and by path: ``show_commits`` lists the table's commits (newest first, as the timeline
    has them), ``run_compaction`` compacts a MOR table (the rows stay, hudi-rs reads them, its
    slices lose their log files), ``run_clustering`` clusters it, ``rollback_to_instant`` undoes
    the last commit, ``validate_metadata`` finds the MDT in step; a bad call names what is wrong,
    writing nothing."""
    from pyspark.errors import IllegalArgumentException

    path = str(tmp_path / "calls")
    sql(
        "CREATE TABLE calls_t (id string, ts long, fare double, city string) USING hudi_md "
        f"PARTITIONED BY (city) TBLPROPERTIES (primaryKey = 'id', preCombineField = 'ts', type = 'mor') "
        f"LOCATION '{path}'"
    )
    sql("INSERT INTO calls_t VALUES ('a', 1, 1.0, 'sf'), ('b', 1, 2.0, 'nyc')")
    sql("UPDATE calls_t SET fare = 3.0 WHERE id = 'b'")
    sql("UPDATE calls_t SET fare = 4.0 WHERE id = 'a'")
    commits = [i.requested_time for i in hudi_md.open_table(path).timeline.write_timeline()]
    shown = sql("CALL show_commits(table => 'calls_t')")
    assert shown.columns[0] == "commit_time"
    assert [r.commit_time for r in shown.collect()] == commits[::-1]
    assert [r[0] for r in sql(f"CALL show_commits(path => '{path}', limit => 2)").collect()] == commits[:0:-1]
    assert [r[0] for r in sql("call default.show_commits('calls_t', 1)").collect()] == commits[-1:]
    assert sql("CALL validate_metadata(table => 'calls_t')").collect()[0].ok is True

    before = sorted(tuple(r) for r in sql("SELECT id, fare FROM calls_t").collect())
    compacted = sql(
        "CALL run_compaction(op => 'run', table => 'calls_t', "
        "options => 'hoodie.compact.inline.max.delta.commits=1')"
    ).collect()
    assert len(compacted) == 1 and compacted[0].state == "COMPLETED"
    table = hudi_md.open_table(path)
    assert not any(table.file_slices().column("log_files").to_pylist())
    assert sorted(tuple(r) for r in sql("SELECT id, fare FROM calls_t").collect()) == before
    rs = hudi_rs_table(path)
    assert sorted(zip(rs.column("id").to_pylist(), rs.column("fare").to_pylist(), strict=True)) == before

    clustered = sql("CALL run_clustering(table => 'calls_t', order => 'fare')").collect()
    assert [(r.state, r.input_group_size) for r in clustered] == [("COMPLETED", 2)]
    assert hudi_md.open_table(path).timeline.write_timeline().last().action == "replacecommit"
    assert sorted(tuple(r) for r in sql("SELECT id, fare FROM calls_t").collect()) == before
    assert sql("CALL show_clustering(table => 'calls_t')").collect() == []

    sql("UPDATE calls_t SET fare = 9.0 WHERE id = 'a'")
    last = hudi_md.open_table(path).timeline.write_timeline().last().requested_time
    rolled = sql(f"CALL rollback_to_instant(table => 'calls_t', instant_time => '{last}')").collect()
    assert rolled[0].rollback_result is True
    assert sorted(tuple(r) for r in sql("SELECT id, fare FROM calls_t").collect()) == before

    instants = len(hudi_md.open_table(path).timeline)
    with pytest.raises(IllegalArgumentException, match=r"show_commits: unknown argument 'no_such'"):
        sql("CALL show_commits(table => 'calls_t', no_such => 1)").collect()
    with pytest.raises(IllegalArgumentException, match=r"'no_such_procedure'; hudi-md supports: .*show_"):
        sql("CALL no_such_procedure(table => 'calls_t')")
    with pytest.raises(IllegalArgumentException, match="name the table"):
        sql("CALL show_commits(limit => 1)")
    with pytest.raises(IllegalArgumentException, match="expected"):
        sql("CALL show_commits(table => 'calls_t'")
    assert len(hudi_md.open_table(path).timeline) == instants
