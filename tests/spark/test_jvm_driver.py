"""A JVM-only driver: the ``spark-sql`` command line of the PySpark wheel (no Python driver at all)
with the shim jar creates a ``hudi-md`` table and writes it with SQL; the shim starts the Python
writer itself (``spark.hudi_md.planner.python``, which also runs the executors' Python workers
when ``spark.pyspark.python`` is unset). hudi-md and hudi-rs read back what it wrote."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import hudi_md
from hudi_md.metadata.validate import validate_metadata_table
from table_model import assert_readers, pending_instants


def test_spark_sql_command_line_writes_a_table(shim_jar: str, tmp_path: Path) -> None:
    import pyspark

    home = Path(pyspark.__file__).resolve().parent
    path = tmp_path / "t"
    script = tmp_path / "writes.sql"
    script.write_text(
        f"""
CREATE TABLE cli_t (id STRING, ts BIGINT, fare DOUBLE, city STRING) USING hudi_md PARTITIONED BY (city)
  TBLPROPERTIES (primaryKey = 'id', preCombineField = 'ts', type = 'mor') LOCATION '{path}';
INSERT INTO cli_t VALUES ('a', 1, 1.5, 'sf'), ('b', 1, 2.5, 'nyc'), ('c', 1, 3.5, 'nyc'), ('d', 1, 4.5, 'la');
UPDATE cli_t SET ts = 2, fare = 10.5 WHERE id = 'a';
INSERT INTO cli_t VALUES ('e', 2, 5.5, 'sf');
INSERT OVERWRITE cli_t PARTITION (city = 'la') VALUES ('f', 3, 6.5);
DELETE FROM cli_t WHERE id = 'b';
SELECT concat('row:', id, ':', ts, ':', fare) FROM cli_t ORDER BY id;
"""
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    env["SPARK_HOME"] = str(home)
    proc = subprocess.run(
        [
            str(home / "bin" / "spark-sql"),
            "--master",
            "local[2]",
            "--jars",
            shim_jar,
            "--conf",
            f"spark.hudi_md.planner.python={sys.executable}",
            "--conf",
            "spark.ui.enabled=false",
            "--conf",
            "spark.sql.shuffle.partitions=2",
            "--conf",
            f"spark.sql.warehouse.dir={tmp_path / 'warehouse'}",
            "-f",
            str(script),
        ],
        cwd=tmp_path,  # Hive's Derby metastore goes here
        env=env,
        capture_output=True,
        text=True,
        timeout=1500,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    selected = [line for line in proc.stdout.splitlines() if line.startswith("row:")]
    expected = [("a", 2, 10.5), ("c", 1, 3.5), ("e", 2, 5.5), ("f", 3, 6.5)]
    assert selected == [f"row:{i}:{t}:{f}" for i, t, f in expected], proc.stdout[-2000:]
    table, _ = assert_readers(str(path), expected, columns=["id", "ts", "fare"])
    assert table.table_type == "MERGE_ON_READ"
    assert validate_metadata_table(hudi_md.open_table(str(path))) == []
    assert pending_instants(str(path)) == []
