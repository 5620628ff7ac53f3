package hudi.md.spark

/**
 * The names of the planner protocol (ARCHITECTURE.md, "Planner protocol"), as the Python side
 * defines them in `hudi_md/spark/protocol.py` (slice row columns: `hudi_md/table/slice_rows.py`).
 * Every Scala file uses these instead of string literals; `tests/test_protocol.py` checks that each
 * `val X = "..."` here equals the Python constant of the same meaning, so the two cannot drift.
 *
 * A file slice travels as a slice row: the `plan` answer is an Arrow stream of them (plus one
 * `p:<column>` partition value column per partition column), and `read_slice`'s `slice` is one
 * of them as a JSON object with the same keys (without the `p:` columns).
 */
object Protocol {
  /** The planner process: `python -m <PlannerModule>`. */
  val PlannerModule = "hudi_md.spark.planner"
  /** The planner's stderr is its log; lines with these prefixes go to the driver's log at WARN. */
  val LogWarningPrefix = "WARNING:"
  val LogErrorPrefix = "ERROR:"

  // Ops (the request's `op`).
  val OpPing = "ping"
  val OpSchema = "schema"
  val OpPlan = "plan"
  val OpReadSlice = "read_slice"
  val OpIncrementalRange = "incremental_range"
  val OpCreateTable = "create_table"
  val OpPartitions = "partitions"
  val OpProcedureSchema = "procedure_schema"
  val OpCall = "call"

  // Request keys.
  val Op = "op"
  val Path = "path"
  val Options = "options"
  val HadoopConf = "hadoop_conf"
  val Filters = "filters"
  val Slice = "slice"
  val Columns = "columns"
  /** `create_table`: the table's columns (a Spark `StructType` as JSON). */
  val TableSchema = "schema"
  /** `procedure_schema` / `call`: the procedure's name, and its arguments (each a name, if given, and a value). */
  val Procedure = "procedure"
  val ProcedureArgs = "args"
  val ArgName = "arg_name"
  val ArgValue = "arg_value"

  /** `plan`: true when the shim can lend the driver's Spark for the plan ([[PlanEngine]]). */
  val Engine = "engine"
  /** `plan`: the name of an answer the shim holds; the planner replies `Unchanged` if it is its answer. */
  val KnownAnswer = "known_answer"

  // A callback frame the planner writes during a request; the shim answers it with one frame.
  val Callback = "callback"
  val CallbackEngine = "engine"
  val GatewayPort = "port"
  val GatewaySecret = "secret"
  val EngineJob = "job"
  /** The JVM object the planner asks for its plan job (`job(id)`). */
  val EngineClass = "hudi.md.spark.PlanEngine"
  /** The job tag of every plan's Spark job (each also has its own, `<PlanJobTag>-<id>`). */
  val PlanJobTag = "hudi-md-plan"

  // Response keys.
  val Ok = "ok"
  val Version = "version"
  val ErrorType = "error_type"
  val Message = "message"
  val DataSchema = "data_schema"
  val PartitionSchema = "partition_schema"
  val LatestInstant = "latest_instant"
  /** `procedure_schema`: the procedure's output columns (a Spark `StructType` as JSON). */
  val ResultSchema = "result_schema"
  /** `procedure_schema`: the procedure's parameter names, in Hudi's order. */
  val Parameters = "parameters"
  val PartitionPaths = "partition_paths"
  val OrderingFields = "ordering_fields"
  val RecordKeyFields = "record_key_fields"
  val Counters = "counters"
  val Rows = "rows"
  val BeginInstant = "begin"
  val EndInstant = "end"
  val CommitTimes = "commit_times"
  val Answer = "answer"
  val Unchanged = "unchanged"

  // Counters of a `plan` answer that both sides name.
  val CounterCommitsInRange = "commits_in_range"
  val CounterFileSlices = "file_slices"
  val CounterStorageRequests = "storage_requests"
  // Added by the JVM to the counters of the last plan (`hudi_md.spark.session.last_plan_counters`).
  val CounterJvmPartitions = "jvm_partitions"
  val CounterJvmFiles = "jvm_files"
  val CounterJvmMergedSlices = "jvm_merged_slices"
  // 1 when the plan is an answer the JVM held (the planner said `Unchanged`).
  val CounterJvmAnswerReused = "jvm_answer_reused"

  // Slice row columns (`hudi_md.table.slice_rows`).
  val PartitionPath = "partition_path"
  val FileId = "file_id"
  val BaseInstant = "base_instant"
  val BaseFile = "base_file"
  val BaseFileSize = "base_file_size"
  val LogFiles = "log_files"
  val LogFileSizes = "log_file_sizes"
  val TotalSize = "total_size"
  val PartitionValuePrefix = "p:"

  // Read options the planner looks up by their exact name.
  val AsOf = "as.of.instant"
  val QueryType = "hoodie.datasource.query.type"
  val Begin = "hoodie.datasource.read.begin.instanttime"
  val End = "hoodie.datasource.read.end.instanttime"
  val QuerySnapshot = "snapshot"
  val QueryReadOptimized = "read_optimized"
  val QueryIncremental = "incremental"

  /** The planner's error type for a wrong option (the shim raises `IllegalArgumentException`). */
  val InvalidOptionError = "InvalidOptionError"

  // --- writes through Spark's API ([[WriteBridge]]) ----------------------------------------------
  /** The Python process of one write: `python -m <BridgeModule>`, attached to this JVM by Py4J. */
  val BridgeModule = "hudi_md.spark.bridge"
  /** The JVM object that process asks for its job (`job(id)`) and reports to. */
  val BridgeClass = "hudi.md.spark.WriteBridge"
  /** Its assignment, one JSON line on its stdin: the Py4J server's port and secret, the job's id. */
  val BridgePort = "port"
  val BridgeSecret = "secret"
  val BridgeJob = "job"

  // The write request (JSON): Path, Options and these.
  val WriteSaveMode = "save_mode"
  val WritePartitionColumns = "partition_columns"
  val WriteSql = "sql"
  val SaveModeAppend = "append"
  val SaveModeOverwrite = "overwrite"
  val SaveModeErrorIfExists = "errorifexists"
  val SaveModeIgnore = "ignore"
  // WriteSql's object: an SQL command on a catalog table (its partition columns: WritePartitionColumns).
  val SqlCommand = "command"
  val SqlInsert = "insert"
  val SqlDelete = "delete"
  val SqlUpsert = "upsert"
  val SqlDropPartitions = "drop_partitions"
  val SqlTruncate = "truncate"
  val SqlPartitionSpecs = "partition_specs"
  val SqlIfExists = "if_exists"
  val WriteDeleteFlag = "_hoodie_md_delete"
  val SqlOverwrite = "overwrite"
  val SqlPartitionSpec = "partition_spec"
  val SqlOverwriteMode = "overwrite_mode"
  val SqlTable = "table"
  val SqlDatabase = "database"
  val SqlTableProperties = "table_properties"
  val SqlSessionOptions = "session_options"

  /** Python's error types the shim raises as `IllegalArgumentException` / `AnalysisException`-like. */
  val TableExistsError = "TableExistsError"
}
