"""The names of the planner protocol (ARCHITECTURE.md, "Planner protocol"; frames and requests are
described at the top of :mod:`hudi_md.spark.planner`), defined once for Python.

The Scala shim spells the same names in one object, ``jvm-shim/src/main/scala/hudi/md/spark/
Protocol.scala``; ``tests/test_protocol.py`` checks the two agree. A file slice travels as a slice
row (:mod:`hudi_md.table.slice_rows`): the ``plan`` answer is an Arrow stream of such rows (plus
``p:<column>`` partition values), and one slice (``read_slice``'s ``slice``) is the same row as a
JSON object.
"""

from __future__ import annotations

from hudi_md.config import read as R
from hudi_md.table.slice_rows import (
    BASE_FILE,
    BASE_FILE_SIZE,
    BASE_INSTANT,
    FILE_ID,
    LOG_FILE_SIZES,
    LOG_FILES,
    PARTITION_PATH,
    PARTITION_VALUE_PREFIX,
    SLICE_COLUMNS,
    TOTAL_SIZE,
)

# The planner process: ``python -m <PLANNER_MODULE>``.
PLANNER_MODULE = "hudi_md.spark.planner"
# The planner's stderr is its log, one record a line starting with Python's level name; the shim
# copies it into the driver's log, lines with these prefixes at WARN (Spark's shells show WARN).
LOG_WARNING_PREFIX = "WARNING:"
LOG_ERROR_PREFIX = "ERROR:"

# Ops (the request's OP).
OP_PING = "ping"
OP_SCHEMA = "schema"
OP_PLAN = "plan"
OP_READ_SLICE = "read_slice"
OP_INCREMENTAL_RANGE = "incremental_range"
OP_CREATE_TABLE = "create_table"
OP_PARTITIONS = "partitions"  # the table's partition paths (SHOW PARTITIONS)
OP_PROCEDURE_SCHEMA = "procedure_schema"  # a CALL's output columns (hudi_md.spark.procedures)
OP_CALL = "call"  # a CALL's rows, as an Arrow stream
OPS = (
    OP_PING,
    OP_SCHEMA,
    OP_PLAN,
    OP_READ_SLICE,
    OP_INCREMENTAL_RANGE,
    OP_CREATE_TABLE,
    OP_PARTITIONS,
    OP_PROCEDURE_SCHEMA,
    OP_CALL,
)

# Request keys.
OP = "op"
PATH = "path"
OPTIONS = "options"
# The S3A entries (``fs.s3a.*``) of the Spark session's Hadoop configuration, as Spark's own
# readers see it: mapped to storage options with the read options (hudi_md.storage.hadoop_s3a).
HADOOP_CONF = "hadoop_conf"
FILTERS = "filters"
SLICE = "slice"
COLUMNS = "columns"
TABLE_SCHEMA = "schema"  # create_table: the table's columns, a Spark StructType as JSON
# procedure_schema / call: the procedure's name and its arguments (each {"arg_name": N, "arg_value": V})
PROCEDURE = "procedure"
PROCEDURE_ARGS = "args"
ARG_NAME = "arg_name"
ARG_VALUE = "arg_value"

# ``plan``: true when the shim can lend the driver's Spark for the plan (its column_stats job).
ENGINE = "engine"
# ``plan``: the ANSWER of a plan answer the shim still holds; if the planner's answer is that one,
# it replies UNCHANGED (true) and an empty frame instead of the slices.
KNOWN_ANSWER = "known_answer"

# A callback: a frame the planner writes in the middle of a request, which the shim answers with
# one frame (the request's answer follows). CALLBACK_ENGINE asks for the driver's Spark; the answer
# is OK with GATEWAY_PORT, GATEWAY_SECRET (a Py4J server of the driver JVM, for this plan) and
# ENGINE_JOB (the id to ask ENGINE_CLASS's ``job`` for), or OK false and MESSAGE.
CALLBACK = "callback"
CALLBACK_ENGINE = "engine"
GATEWAY_PORT = "port"
GATEWAY_SECRET = "secret"
ENGINE_JOB = "job"
ENGINE_CLASS = "hudi.md.spark.PlanEngine"
# The job tag of every plan's Spark job (each also has its own, PLAN_JOB_TAG-<id>).
PLAN_JOB_TAG = "hudi-md-plan"

# Response keys.
OK = "ok"
VERSION = "version"
ERROR_TYPE = "error_type"
MESSAGE = "message"
DATA_SCHEMA = "data_schema"
PARTITION_SCHEMA = "partition_schema"
LATEST_INSTANT = "latest_instant"
RESULT_SCHEMA = "result_schema"  # procedure_schema: the output columns, a Spark StructType as JSON
PARAMETERS = "parameters"  # procedure_schema: the parameters' names, in Hudi's order
ORDERING_FIELDS = "ordering_fields"  # ``schema``: the table's ordering fields (MERGE INTO's deletes)
RECORD_KEY_FIELDS = "record_key_fields"  # ``schema``: the table's record key fields (UPDATE's check)
PARTITION_PATHS = "partition_paths"  # ``partitions``: the table's partition paths, sorted
COUNTERS = "counters"
ROWS = "rows"
BEGIN_INSTANT = "begin"
END_INSTANT = "end"
COMMIT_TIMES = "commit_times"
ANSWER = "answer"
UNCHANGED = "unchanged"

# Counters of a `plan` answer that both sides name (the planner's are in planning/).
COUNTER_COMMITS_IN_RANGE = "commits_in_range"
COUNTER_FILE_SLICES = "file_slices"
COUNTER_STORAGE_REQUESTS = "storage_requests"
# Added by the JVM to the counters of the last plan (``session.last_plan_counters``).
COUNTER_JVM_PARTITIONS = "jvm_partitions"
COUNTER_JVM_FILES = "jvm_files"
COUNTER_JVM_MERGED_SLICES = "jvm_merged_slices"
# 1 when the JVM's plan is an answer it held, decoded (the planner replied UNCHANGED).
COUNTER_JVM_ANSWER_REUSED = "jvm_answer_reused"

# Read options the planner looks up by their exact name (the shim canonicalizes Spark's spelling).
AS_OF = R.AS_OF_INSTANT.key
QUERY_TYPE = R.QUERY_TYPE.key
BEGIN = R.BEGIN_INSTANT.key
END = R.END_INSTANT.key
QUERY_SNAPSHOT = "snapshot"
QUERY_READ_OPTIMIZED = "read_optimized"
QUERY_INCREMENTAL = "incremental"
QUERY_TYPES = (QUERY_SNAPSHOT, QUERY_READ_OPTIMIZED, QUERY_INCREMENTAL)

# Error type the shim turns into IllegalArgumentException (the caller's option was wrong).
INVALID_OPTION_ERROR = "InvalidOptionError"

# --- writes through Spark's API (the write bridge, ARCHITECTURE.md "Spark-side writes") ---------
# The Python process the shim starts for one write (ahead of it), attached to the driver JVM
# through Py4J: ``python -m <BRIDGE_MODULE>`` reads its assignment from stdin, one JSON line with
# the JVM's Py4J server (BRIDGE_PORT, BRIDGE_SECRET) and the job's id (BRIDGE_JOB); it asks the
# JVM object BRIDGE_CLASS for the job (``job(id)``: the DataFrame, its session, the request JSON)
# and reports the outcome to it.
BRIDGE_MODULE = "hudi_md.spark.bridge"
BRIDGE_CLASS = "hudi.md.spark.WriteBridge"
BRIDGE_PORT = "port"
BRIDGE_SECRET = "secret"
BRIDGE_JOB = "job"

# The write request (JSON; ``hudi_md.spark.write_request``): PATH, OPTIONS and these.
WRITE_SAVE_MODE = "save_mode"
WRITE_PARTITION_COLUMNS = "partition_columns"
WRITE_SQL = "sql"
SAVE_MODE_APPEND = "append"
SAVE_MODE_OVERWRITE = "overwrite"
SAVE_MODE_ERROR_IF_EXISTS = "errorifexists"
SAVE_MODE_IGNORE = "ignore"
SAVE_MODES = (SAVE_MODE_APPEND, SAVE_MODE_OVERWRITE, SAVE_MODE_ERROR_IF_EXISTS, SAVE_MODE_IGNORE)
# WRITE_SQL's object: an SQL command on a catalog table (partition columns: WRITE_PARTITION_COLUMNS).
SQL_COMMAND = "command"
SQL_INSERT = "insert"
SQL_DELETE = "delete"
SQL_UPSERT = "upsert"  # UPDATE, MERGE INTO: the changed rows as an upsert
SQL_DROP_PARTITIONS = "drop_partitions"  # ALTER TABLE DROP PARTITION
SQL_TRUNCATE = "truncate"  # TRUNCATE TABLE [PARTITION (...)]
SQL_PARTITION_SPECS = "partition_specs"  # DROP PARTITION / TRUNCATE: a list of column -> value
SQL_IF_EXISTS = "if_exists"
# MERGE INTO's rows: a boolean column, true for a row its DELETE clause deletes by key
WRITE_DELETE_FLAG = "_hoodie_md_delete"
SQL_OVERWRITE = "overwrite"
SQL_PARTITION_SPEC = "partition_spec"
SQL_OVERWRITE_MODE = "overwrite_mode"
SQL_TABLE = "table"
SQL_DATABASE = "database"
SQL_TABLE_PROPERTIES = "table_properties"
SQL_SESSION_OPTIONS = "session_options"
# Error type of a write that found a table where save mode errorifexists wants none.
TABLE_EXISTS_ERROR = "TableExistsError"

__all__ = [
    "ANSWER",
    "ARG_NAME",
    "ARG_VALUE",
    "AS_OF",
    "BASE_FILE",
    "BASE_FILE_SIZE",
    "BASE_INSTANT",
    "BEGIN",
    "BEGIN_INSTANT",
    "BRIDGE_CLASS",
    "BRIDGE_JOB",
    "BRIDGE_MODULE",
    "BRIDGE_PORT",
    "BRIDGE_SECRET",
    "CALLBACK",
    "CALLBACK_ENGINE",
    "COLUMNS",
    "COMMIT_TIMES",
    "COUNTERS",
    "COUNTER_COMMITS_IN_RANGE",
    "COUNTER_FILE_SLICES",
    "COUNTER_JVM_ANSWER_REUSED",
    "COUNTER_JVM_FILES",
    "COUNTER_JVM_MERGED_SLICES",
    "COUNTER_JVM_PARTITIONS",
    "COUNTER_STORAGE_REQUESTS",
    "DATA_SCHEMA",
    "END",
    "END_INSTANT",
    "ENGINE",
    "ENGINE_CLASS",
    "ENGINE_JOB",
    "ERROR_TYPE",
    "FILE_ID",
    "FILTERS",
    "GATEWAY_PORT",
    "GATEWAY_SECRET",
    "INVALID_OPTION_ERROR",
    "KNOWN_ANSWER",
    "LATEST_INSTANT",
    "LOG_ERROR_PREFIX",
    "LOG_FILES",
    "LOG_FILE_SIZES",
    "LOG_WARNING_PREFIX",
    "MESSAGE",
    "OK",
    "OP",
    "OPS",
    "OPTIONS",
    "OP_CALL",
    "OP_CREATE_TABLE",
    "OP_INCREMENTAL_RANGE",
    "OP_PARTITIONS",
    "OP_PING",
    "OP_PLAN",
    "OP_PROCEDURE_SCHEMA",
    "OP_READ_SLICE",
    "OP_SCHEMA",
    "ORDERING_FIELDS",
    "PARAMETERS",
    "PARTITION_PATH",
    "PARTITION_PATHS",
    "PARTITION_SCHEMA",
    "PARTITION_VALUE_PREFIX",
    "PATH",
    "PLANNER_MODULE",
    "PLAN_JOB_TAG",
    "PROCEDURE",
    "PROCEDURE_ARGS",
    "QUERY_INCREMENTAL",
    "QUERY_READ_OPTIMIZED",
    "QUERY_SNAPSHOT",
    "QUERY_TYPE",
    "QUERY_TYPES",
    "RECORD_KEY_FIELDS",
    "RESULT_SCHEMA",
    "ROWS",
    "SAVE_MODES",
    "SAVE_MODE_APPEND",
    "SAVE_MODE_ERROR_IF_EXISTS",
    "SAVE_MODE_IGNORE",
    "SAVE_MODE_OVERWRITE",
    "SLICE",
    "SLICE_COLUMNS",
    "SQL_COMMAND",
    "SQL_DATABASE",
    "SQL_DELETE",
    "SQL_DROP_PARTITIONS",
    "SQL_IF_EXISTS",
    "SQL_INSERT",
    "SQL_OVERWRITE",
    "SQL_OVERWRITE_MODE",
    "SQL_PARTITION_SPEC",
    "SQL_PARTITION_SPECS",
    "SQL_SESSION_OPTIONS",
    "SQL_TABLE",
    "SQL_TABLE_PROPERTIES",
    "SQL_TRUNCATE",
    "SQL_UPSERT",
    "TABLE_EXISTS_ERROR",
    "TABLE_SCHEMA",
    "TOTAL_SIZE",
    "UNCHANGED",
    "VERSION",
    "WRITE_DELETE_FLAG",
    "WRITE_PARTITION_COLUMNS",
    "WRITE_SAVE_MODE",
    "WRITE_SQL",
]
