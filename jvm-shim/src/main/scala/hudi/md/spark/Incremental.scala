package hudi.md.spark

import java.util.Locale

import scala.collection.mutable

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, Expression, UnsafeProjection}
import org.apache.spark.sql.execution.datasources.PartitionedFile
import org.apache.spark.sql.sources.{Filter, In}
import org.apache.spark.sql.types.{StringType, StructField, StructType}
import org.apache.spark.unsafe.types.UTF8String

/**
 * The range of an incremental query (`hoodie.datasource.query.type=incremental`) as the planner
 * checked it (`incremental_range`, see `hudi_md.spark.planner`): `begin` exclusive (None: from the
 * first commit), `end` inclusive as given (None: the latest), `latest` the latest completed commit
 * when the query was created, and the completed commits in `(begin, end or latest]`. A row belongs
 * to the query when its `_hoodie_commit_time` is one of `commitTimes`.
 * The relation's options carry `end or latest` as the end ([[Incremental.pinned]]).
 */
private[spark] case class IncrementalRange(
    begin: Option[String],
    end: Option[String],
    latest: Option[String],
    commitTimes: Seq[String]) {

  override def toString: String =
    s"incremental (${begin.getOrElse("-inf")}, ${end.orElse(latest).getOrElse("-")}], ${commitTimes.size} commit(s)"
}

/**
 * Incremental queries through the `hudi-md` source, as Apache Hudi's: the latest version of the
 * records whose commit time lies in `(begin, end]`.
 *
 * The planner lists only the slices of file groups written by the commits in range; the commit
 * time is then checked on every row: by [[rowFilter]] for base files (Spark's Parquet reader, also
 * given an `In` filter on the column for row-group skipping), and by the planner process for
 * merged MOR slices (`read_slice` with the same options).
 */
private[spark] object Incremental {
  val QueryTypeKey: String = Protocol.QueryType
  val BeginKey: String = Protocol.Begin
  val EndKey: String = Protocol.End
  val AsOfKey: String = Protocol.AsOf
  val CommitTimeColumn = "_hoodie_commit_time"

  /** The read options the planner looks up by exact name. */
  private val ReadKeys = Seq(QueryTypeKey, BeginKey, EndKey, AsOfKey)

  /**
   * `options` with Spark's case-insensitive spelling of the read options replaced by the names the
   * planner looks up, and the query type lower-cased (Spark options are case-insensitive; the
   * planner's dictionary is not).
   */
  def canonical(options: Map[String, String]): Map[String, String] =
    options.map { case (k, v) =>
      ReadKeys.find(_.equalsIgnoreCase(k)) match {
        case Some(QueryTypeKey) => QueryTypeKey -> v.trim.toLowerCase(Locale.ROOT)
        case Some(key)          => key -> v
        case None               => k -> v
      }
    }

  def isIncremental(options: Map[String, String]): Boolean = options.get(QueryTypeKey).contains(Protocol.QueryIncremental)

  /**
   * The planner's range for `options` (canonical names). A missing or malformed begin, a
   * malformed end or an end before the begin is the caller's error: `IllegalArgumentException`
   * with the planner's message, which names the option.
   */
  def range(
      path: String,
      options: Map[String, String],
      settings: PlannerSettings,
      storageConf: Map[String, String] = Map.empty): IncrementalRange = {
    val req = PlannerClient.mapper.createObjectNode()
    req.put(Protocol.Op, Protocol.OpIncrementalRange)
    req.put(Protocol.Path, path)
    val opts = req.putObject(Protocol.Options)
    options.foreach { case (k, v) => opts.put(k, v) }
    StorageConf.put(req, storageConf)
    val (header, _) =
      try PlannerClient.call(settings, req, withBody = false)
      catch {
        case e: HudiMdPlannerException if e.errorType == Protocol.InvalidOptionError =>
          throw new IllegalArgumentException(s"hudi-md: ${e.getMessage} (table $path)", e)
      }
    def text(field: String): Option[String] =
      Option(header.get(field)).filterNot(_.isNull).map(_.asText())
    val times = mutable.ArrayBuffer.empty[String]
    val it = header.path(Protocol.CommitTimes).elements()
    while (it.hasNext) times += it.next().asText()
    IncrementalRange(
      text(Protocol.BeginInstant), text(Protocol.EndInstant), text(Protocol.LatestInstant), times.toList)
  }

  /**
   * `options` for the index, the format and the executors' planner: an open-ended range (no end
   * given) ends at the latest commit when the query was created, as in Hudi, so commits completing
   * while the DataFrame is used change neither its plan nor what its tasks read.
   */
  def pinned(options: Map[String, String], range: IncrementalRange): Map[String, String] =
    if (options.get(EndKey).exists(_.trim.nonEmpty)) options
    else range.latest.fold(options)(l => options + (EndKey -> l))

  /**
   * A base-file reader for the incremental query `range`: `parquet` builds Spark's Parquet reader
   * for a required schema and filters; the rows it returns are kept when their commit time is in
   * range. The commit-time column is read even when the query does not select it, and projected
   * away afterwards. Rows, not batches: the format turns off batch reads for incremental queries
   * ([[HudiMdFileFormat.supportBatch]]), as a `ColumnarBatch` cannot drop rows.
   */
  def rowFilter(
      range: IncrementalRange,
      requiredSchema: StructType,
      partitionSchema: StructType,
      filters: Seq[Filter],
      parquet: (StructType, Seq[Filter]) => PartitionedFile => Iterator[InternalRow])
      : PartitionedFile => Iterator[InternalRow] = {
    val selected = requiredSchema.fieldNames.indexOf(CommitTimeColumn)
    val readSchema =
      if (selected >= 0) requiredSchema
      else requiredSchema.add(StructField(CommitTimeColumn, StringType, nullable = true))
    val timeOrdinal = if (selected >= 0) selected else requiredSchema.length
    // Lets Parquet skip row groups whose commit-time statistics miss the range (an `In` with more
    // values than spark.sql.parquet.pushdown.inFilterThreshold is pushed as its min/max range).
    val pushed = if (range.commitTimes.isEmpty) filters else filters :+ In(CommitTimeColumn, range.commitTimes.toArray[Any])
    val read = parquet(readSchema, pushed)
    val times: Set[UTF8String] = range.commitTimes.map(UTF8String.fromString).toSet
    // The reader's rows are `readSchema ++ partitionSchema`; Spark expects `requiredSchema ++ partitionSchema`.
    val output: Seq[Expression] =
      (requiredSchema.fields.indices.map(i => BoundReference(i, requiredSchema(i).dataType, nullable = true)) ++
        partitionSchema.fields.indices.map(i =>
          BoundReference(readSchema.length + i, partitionSchema(i).dataType, nullable = true))).toList
    (file: PartitionedFile) => {
      val rows = read(file).filter(r => !r.isNullAt(timeOrdinal) && times.contains(r.getUTF8String(timeOrdinal)))
      if (selected >= 0) rows
      else {
        // One projection per file: projections keep state and the reader function is shared by tasks.
        val project = UnsafeProjection.create(output)
        rows.map(r => project(r))
      }
    }
  }
}
