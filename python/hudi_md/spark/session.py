"""Wiring the ``hudi-md`` Spark data source (the JVM shim in ``hudi_md/jars/``) into a SparkSession.

>>> from pyspark.sql import SparkSession
>>> from hudi_md.spark import configure
>>> spark = configure(SparkSession.builder.master("local[2]")).getOrCreate()
>>> spark.read.format("hudi-md").load("/path/to/table")

The shim asks ``python -m hudi_md.spark.planner`` (run with ``spark.hudi_md.planner.python``,
else ``spark.pyspark.python``, else ``$PYSPARK_PYTHON``, else ``python3``) for the files to read;
Spark's Parquet reader reads them. The jar must be on the classpath when the JVM starts:
``configure`` has no effect on a session that is already running. Writes through Spark's API
(``df.write.format("hudi-md")``, SQL ``INSERT`` / ``DELETE FROM`` / CTAS) run ``hudi_md.write``'s
Spark writer in a Python process the shim attaches to the driver (:mod:`hudi_md.spark.bridge`);
the SQL forms need the shim's session extension, which ``configure`` adds.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hudi_md.config import spark as SP
from hudi_md.errors import UnsupportedSparkVersionError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


JARS_DIR = Path(__file__).resolve().parent.parent / "jars"

# (major, minor) of each Spark line a shim jar is built for (build.sbt: one project per line, each
# compiled against that line's Spark), and the jar's Scala line; scripts/spark-lines reads this.
# Spark 3.4 lacks classes the 3.5 build uses (FileStatusWithMetadata).
SCALA_FOR_SPARK_LINE = {(3, 5): "2.12", (4, 0): "2.13", (4, 1): "2.13", (4, 2): "2.13", (4, 3): "2.13"}
SUPPORTED_SPARK_LINES = tuple(f"{major}.{minor}.x" for major, minor in SCALA_FOR_SPARK_LINE)

# The interpreter the shim starts ``python -m hudi_md.spark.planner`` with (driver and executors).
PLANNER_PYTHON_CONF = SP.PLANNER_PYTHON.key

# The shim's session extension: plans SQL INSERT / DELETE FROM on hudi-md tables into hudi_md.write's
# Spark writer and refuses UPDATE / MERGE INTO at analysis. Spark 4 also finds it through the jar's
# META-INF/services; sessions PySpark 3.5 creates only apply `spark.sql.extensions`.
EXTENSIONS_CLASS = "hudi.md.spark.HudiMdExtensions"


def jar_name(spark_version: str | None = None) -> str:
    """File name of the shim jar for ``spark_version`` (default: the installed pyspark's):
    ``hudi-md-spark-<Spark line>_<Scala line>.jar``, e.g. ``hudi-md-spark-3.5_2.12.jar`` for any
    3.5.x, ``hudi-md-spark-4.1_2.13.jar`` for any 4.1.x.

    Raises :class:`~hudi_md.errors.UnsupportedSparkVersionError` (a ``ValueError``) naming the
    supported lines for a Spark version of any other line.
    """
    if spark_version is None:
        import pyspark

        spark_version = pyspark.__version__
    line = spark_line(spark_version)
    scala = SCALA_FOR_SPARK_LINE.get(line) if line is not None else None
    if line is None or scala is None:
        raise UnsupportedSparkVersionError(spark_version, SUPPORTED_SPARK_LINES)
    return f"hudi-md-spark-{line[0]}.{line[1]}_{scala}.jar"


def jar_path(spark_version: str | None = None) -> str:
    """Absolute path of the shim jar for ``spark_version`` (default: the installed pyspark's), in
    the package's ``jars/`` directory (:func:`jar_name`). Raises ``FileNotFoundError`` when the jar
    has not been built (``scripts/build-shim``) and
    :class:`~hudi_md.errors.UnsupportedSparkVersionError` for a Spark line without a jar.
    """
    jar = JARS_DIR / jar_name(spark_version)
    if not jar.is_file():
        raise FileNotFoundError(f"{jar} not found; build it with scripts/build-shim")
    return str(jar)


def spark_line(version: str) -> tuple[int, int] | None:
    """``(major, minor)`` of a version such as ``3.5.9``, ``4.0.0.dev1`` or ``4.1.0-preview``
    (``None`` when it has none)."""
    parts = version.strip().split(".")
    try:
        return int(parts[0]), int("".join(c for c in parts[1] if c.isdigit()) or "x")
    except (IndexError, ValueError):
        return None


def configure(builder: Any, spark_version: str | None = None) -> Any:
    """Prepares a ``SparkSession.builder`` for ``hudi-md``; returns ``builder``.

    - Adds the shim jar for this Spark line (:func:`jar_name`) to ``spark.jars`` (keeping any jars
      already set); an unsupported Spark version raises :class:`~hudi_md.errors.UnsupportedSparkVersionError`
      naming the supported lines.
    - Adds the shim's session extension to ``spark.sql.extensions``: SQL ``INSERT`` /
      ``INSERT OVERWRITE`` / ``DELETE FROM`` on a ``hudi-md`` table then write through
      ``hudi_md.write``'s Spark writer; ``UPDATE`` / ``MERGE INTO`` fail at analysis.
    - Sets ``spark.pyspark.python`` and ``spark.hudi_md.planner.python`` (the interpreter of the
      shim's planner process) to this interpreter unless already set.
    - Sets ``$PYSPARK_PYTHON`` in this process unless already set: PySpark starts its Python
      workers (``mapInArrow`` in ``hudi_md.write`` and ``read_table``) with that variable, not with
      ``spark.pyspark.python``, so without it a venv that is not activated is not found.
    """
    jar = jar_path(spark_version)
    options = getattr(builder, "_options", {})
    existing = [j for j in str(options.get("spark.jars", "")).split(",") if j.strip()]
    if jar not in existing:
        existing.append(jar)
    builder = builder.config("spark.jars", ",".join(existing))
    extensions = [e.strip() for e in str(options.get("spark.sql.extensions", "")).split(",") if e.strip()]
    if EXTENSIONS_CLASS not in extensions:
        builder = builder.config("spark.sql.extensions", ",".join([*extensions, EXTENSIONS_CLASS]))
    python = str(options.get("spark.pyspark.python") or "") or sys.executable
    if not options.get("spark.pyspark.python"):
        builder = builder.config("spark.pyspark.python", python)
    if not SP.PLANNER_PYTHON.is_set(options):
        builder = builder.config(PLANNER_PYTHON_CONF, python)
    if not os.environ.get("PYSPARK_PYTHON"):
        os.environ["PYSPARK_PYTHON"] = python
    return builder


def last_plan(spark: SparkSession) -> dict[str, Any]:
    """The last ``hudi-md`` plan made in this driver JVM: ``{"path", "latest_instant", "filters",
    "counters"}`` (``filters``: the expression JSON sent to the planner)
    (empty when nothing was planned yet)."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None  # set while a SparkContext exists (pyspark asserts the same)
    text = jvm.hudi.md.spark.HudiMdFileIndex.lastPlanJson()
    return json.loads(text)


def last_plan_counters(spark: SparkSession) -> dict[str, int]:
    """Counters of the last ``hudi-md`` plan: the planner's (``partitions``,
    ``partitions_after_partition_pruning``, ``file_slices``, ``file_slices_after_column_stats``,
    ...) plus ``jvm_partitions`` / ``jvm_files`` after the JVM's exact partition pruning."""
    return dict(last_plan(spark).get("counters", {}))
