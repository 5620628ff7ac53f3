"""Reading a table into a Spark DataFrame from Python: base-only slices through Spark's own
Parquet reader, slices with log files merged by Python workers on the executors (``mapInArrow``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from hudi_md.api import open_table
from hudi_md.storage.hadoop_s3a import S3A, is_s3_path, s3a_storage_options

if TYPE_CHECKING:
    from pyspark.sql import Column, SparkSession

    from hudi_md.planning.expressions import Expression


def _merge_slices(
    path: str, options: Mapping[str, str], columns: list[str] | None, as_of: str | None
) -> Callable[[Iterable[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def fn(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from hudi_md.planning.scan import with_values
        from hudi_md.read.merge import MergeSpec
        from hudi_md.read.slice_reader import instant_validator, read_file_slice
        from hudi_md.table.partitions import PartitionScheme
        from hudi_md.table.slice_rows import slice_from_row

        table = open_table(path, dict(options)).state
        schema = table.schema_as_of(as_of)
        scheme = PartitionScheme(table.config)
        merge = MergeSpec.from_config(table.config)
        valid = instant_validator(table.timeline, as_of)
        for b in batches:
            for text in b.column(0).to_pylist():
                s = slice_from_row(json.loads(text))
                rows = read_file_slice(
                    table.storage, s, schema=schema, merge=merge, is_valid_instant=valid, columns=columns
                )
                yield from with_values(rows, scheme.read_overrides(s.partition_path, schema)).to_batches()

    return fn


def read_table(
    spark: SparkSession,
    path: str,
    options: Mapping[str, Any] | None = None,
    *,
    filters: Sequence[Any] | None = None,
    columns: Sequence[str] | None = None,
    as_of: str | None = None,
    read_optimized: bool = False,
) -> Any:
    """A DataFrame of the table's snapshot (or read-optimized view), planned through the MDT.

    ``options`` are Hudi's keys and storage options; on S3, the S3A settings of the session's
    Hadoop configuration (:func:`session_s3a_conf`) and ``fs.s3a.*`` options apply as they do to
    ``format("hudi-md")`` (:mod:`hudi_md.storage.hadoop_s3a`), on the driver and in the executors'
    merges."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    from hudi_md.planning.filters import to_expression
    from hudi_md.planning.planner import plan_scan
    from hudi_md.spark.arrow_types import arrow_schema_to_spark_json
    from hudi_md.table.partitions import PartitionScheme
    from hudi_md.table.slice_rows import slices_to_arrow
    from hudi_md.table.timeline import resolve_instant

    def from_arrow_schema(s: pa.Schema) -> StructType:
        return StructType.fromJson(arrow_schema_to_spark_json(s))

    opts = {str(k): str(v) for k, v in (options or {}).items()}
    if is_s3_path(path):
        opts = s3a_storage_options(path, opts, session_s3a_conf(spark))
    table = open_table(path, opts).state
    expr = to_expression(filters)
    instant = resolve_instant(as_of)
    plan = plan_scan(table, expr, as_of=instant, read_optimized=read_optimized)
    schema = table.schema_as_of(instant)  # time travel: the instant's columns
    cols = list(columns) if columns is not None else schema.names
    out_schema = pa.schema([schema.field(c) for c in cols])
    spark_schema = from_arrow_schema(out_schema)
    base_only = [s for s in plan.slices if not s.log_files and s.base_file is not None]
    with_logs = [s for s in plan.slices if s.log_files]
    frames = []
    if base_only:
        # Partition columns read from the path (the default partition's nulls, files without the
        # columns) are set per partition, as the Python reader sets them.
        scheme = PartitionScheme(table.config)
        groups: dict[str, list[Any]] = {}
        for s in base_only:
            overrides = scheme.read_overrides(s.partition_path, schema)
            groups.setdefault(json.dumps(overrides, sort_keys=True, default=str), []).append((s, overrides))
        for members in groups.values():
            files = [_literal_path(table.storage.uri(s.base_file.path)) for s, _ in members]
            frame = spark.read.schema(from_arrow_schema(schema)).parquet(*files)
            for name, value in members[0][1].items():
                frame = frame.withColumn(name, F.lit(value).cast(frame.schema[name].dataType))
            frames.append(frame.select(*cols))
    if with_logs:
        # One slice row (as Table.file_slices() has it) per merged slice, as JSON.
        descriptors = [json.dumps(row) for row in slices_to_arrow(with_logs).to_pylist()]
        slices = spark.createDataFrame([(d,) for d in descriptors], "slice string").repartition(
            len(descriptors)
        )
        frames.append(slices.mapInArrow(_merge_slices(path, opts, cols, instant), spark_schema))
    if not frames:
        return spark.createDataFrame([], spark_schema)
    df = frames[0]
    for f in frames[1:]:
        df = df.unionByName(f)
    if expr is not None:
        # Pruning is inclusive; the rows themselves are filtered here, with Spark's SQL semantics.
        from hudi_md.planning.binding import bind

        df = df.filter(_spark_condition(bind(expr, schema)))
    return df


def session_s3a_conf(spark: SparkSession) -> dict[str, str]:
    """The ``fs.s3a.*`` entries of the session's Hadoop configuration as Spark's scans see it
    (``SessionState.newHadoopConf``: ``spark.hadoop.*``, ``sc.hadoopConfiguration`` set at run time,
    the session's SQL conf), without those only Hadoop's ``*-default.xml`` sets; what the shim sends
    the planner as ``hadoop_conf``."""
    conf = spark._jsparkSession.sessionState().newHadoopConf()
    props = conf.getPropsWithPrefix(S3A)
    out: dict[str, str] = {}
    for name in list(props.keySet()):
        key = S3A + str(name)
        sources = [str(s) for s in (conf.getPropertySources(key) or [])]
        if sources and all(s.endswith("-default.xml") for s in sources):
            continue
        out[key] = str(props.get(name))
    return out


def _literal_path(uri: str) -> str:
    """A file path that Spark's DataFrameReader, which expands Hadoop globs, reads as it is (a
    partition value may hold ``[``, ``{``, ``*``, ``?`` or a backslash)."""
    return re.sub(r"([\\\[\]{}*?])", r"\\\1", uri)


def _spark_condition(expr: Expression) -> Column:
    """The bound filter as a Spark Column (SQL three-valued logic on both sides)."""
    from pyspark.sql import functions as F

    from hudi_md.planning.expressions import (
        AlwaysFalse,
        AlwaysTrue,
        And,
        LiteralPredicate,
        Not,
        Op,
        Or,
        Predicate,
        SetPredicate,
        UnaryPredicate,
    )

    if isinstance(expr, AlwaysTrue):
        return F.lit(True)
    if isinstance(expr, AlwaysFalse):
        return F.lit(False)
    if isinstance(expr, And):
        return _spark_condition(expr.left) & _spark_condition(expr.right)
    if isinstance(expr, Or):
        return _spark_condition(expr.left) | _spark_condition(expr.right)
    if isinstance(expr, Not):
        return ~_spark_condition(expr.child)
    if not isinstance(expr, Predicate):
        raise TypeError(f"cannot translate {expr!r} for Spark")
    col = F.col(f"`{expr.column}`")
    if isinstance(expr, UnaryPredicate):
        return col.isNull() if expr.op == Op.IS_NULL else col.isNotNull()
    if isinstance(expr, SetPredicate):
        values = list(expr.values)
        cond = col.isin(values) if values else F.lit(False)
        return cond if expr.op == Op.IN else (col.isNotNull() & ~cond if values else F.lit(True))
    if isinstance(expr, LiteralPredicate):
        v = expr.value
        return {
            Op.EQ: lambda: col == F.lit(v),
            Op.NE: lambda: col != F.lit(v),
            Op.LT: lambda: col < F.lit(v),
            Op.LE: lambda: col <= F.lit(v),
            Op.GT: lambda: col > F.lit(v),
            Op.GE: lambda: col >= F.lit(v),
            Op.STARTS_WITH: lambda: col.startswith(v),
            Op.NOT_STARTS_WITH: lambda: ~col.startswith(v),
        }[expr.op]()
    raise TypeError(f"cannot translate {expr!r} for Spark")
