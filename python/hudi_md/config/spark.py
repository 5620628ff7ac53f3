"""Spark options: Apache Hudi's Spark SQL keys hudi-md honours, and the Spark configuration the
hudi-md Spark shim reads (``spark.hudi_md.*``, set with ``--conf`` or the session builder; listed
here for the reference, the shim reads them itself)."""

from __future__ import annotations

from hudi_md.config.option import NOT_IN_HUDI, enum, integer, string

SPARK = ("spark",)

SQL_INSERT_INTO_OPERATION = enum(
    "hoodie.spark.sql.insert.into.operation",
    "insert",
    ("bulk_insert", "insert", "upsert"),
    hudi="insert",
    scopes=("spark", "write"),
    doc="The write operation of SQL INSERT INTO (hoodie.datasource.write.operation wins when set).",
)
OVERWRITE_MODE = enum(
    "hoodie.datasource.overwrite.mode",
    None,
    ("STATIC", "DYNAMIC"),
    hudi=None,
    scopes=("spark", "write"),
    doc="INSERT OVERWRITE: STATIC replaces the partitions the statement names (all without a PARTITION "
    "clause), DYNAMIC those the rows go to. Unset: spark.sql.sources.partitionOverwriteMode.",
)
DATASOURCE_TABLE_NAME = string(
    "hoodie.datasource.write.table.name",
    None,
    hudi=None,
    scopes=("spark", "write"),
    doc="The table's name for a DataFrame write (read when hoodie.table.name is not set).",
)
READ_CONNECTOR = enum(
    "spark.hudi_md.read.connector",
    "v2",
    ("v1", "v2"),
    hudi=NOT_IN_HUDI,
    scopes=SPARK,
    doc="v2 reads hudi-md tables through the DataSource V2 scan (runtime filtering, vectorized Parquet); "
    "v1 keeps every read on the V1 scan.",
)
PLANNER_PYTHON = string(
    "spark.hudi_md.planner.python",
    None,
    hudi=NOT_IN_HUDI,
    scopes=SPARK,
    doc="The Python (with hudi_md installed) the shim runs its planner with. Unset: spark.pyspark.python, "
    "else $PYSPARK_PYTHON, else python3; hudi_md.spark.session.configure sets the driver's.",
)
PLANNER_TIMEOUT_SECONDS = integer(
    "spark.hudi_md.planner.timeoutSeconds",
    600,
    hudi=NOT_IN_HUDI,
    scopes=SPARK,
    long=True,
    doc="How long one planner request (a schema, a plan, a slice read) may take, in seconds.",
)
