package hudi.md.spark

import java.util.OptionalLong

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.catalog.CatalogTable
import org.apache.spark.sql.catalyst.expressions.{And, AttributeReference, Contains, EndsWith, EqualNullSafe, EqualTo, Expression, GreaterThan, GreaterThanOrEqual, In, IsNotNull, IsNull, LessThan, LessThanOrEqual, Literal, Not, Or, StartsWith, SubqueryExpression}
import org.apache.spark.sql.connector.catalog.{SupportsRead, SupportsWrite, Table, TableCapability}
import org.apache.spark.sql.connector.write.{LogicalWriteInfo, WriteBuilder}
import org.apache.spark.sql.connector.expressions.{Expressions, NamedReference, Transform}
import org.apache.spark.sql.connector.metric.{CustomMetric, CustomSumMetric, CustomTaskMetric}
import org.apache.spark.sql.connector.read._
import org.apache.spark.sql.execution.WholeStageCodegenExec
import org.apache.spark.sql.execution.datasources.{FileFormat, FilePartition, HadoopFsRelation, PartitionedFile}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.sources
import org.apache.spark.sql.types.{StringType, StructType}
import org.apache.spark.sql.util.CaseInsensitiveStringMap
import org.apache.spark.sql.vectorized.ColumnarBatch
import org.apache.spark.hudi_md.InputFiles
import org.apache.spark.paths.SparkPath

/**
 * A hudi-md table as a DataSource V2 table: reads ([[HudiMdScanBuilder]]) and appends or
 * overwrites through the V1 writer ([[HudiMdWriteBuilder]]). SQL statements that change a table go
 * through its V1 relation and the session extension's rules ([[WriteRules]], [[RowLevelWrites]]),
 * which is why a table is made from that relation: the same planner-backed file index
 * ([[HudiMdFileIndex]]), file format and schema serve both paths.
 *
 * Made by [[HudiMdTableProvider]] (`format("hudi-md-v2")`), by [[HudiMdCatalog]], and by
 * [[UseV2Scan]] for every query reading a `hudi-md` relation; that one hands over the query's
 * filters on the relation as Catalyst expressions (`queryFilters`), so partition filters Spark
 * cannot express as data source filters (`length(region) = 2`) still prune partitions, as in V1.
 */
class HudiMdTable(
    val relation: HadoopFsRelation,
    val catalogTable: Option[CatalogTable],
    val queryFilters: Seq[Expression] = Nil)
    extends Table
    with SupportsRead
    with SupportsWrite {

  def index: HudiMdFileIndex = relation.location.asInstanceOf[HudiMdFileIndex]

  override def name(): String = catalogTable.fold(s"hudi-md.`${index.tablePath}`")(_.identifier.unquotedString)

  override def schema(): StructType = relation.schema

  override def partitioning(): Array[Transform] =
    relation.partitionSchema.fieldNames.map(n => Expressions.identity(n): Transform)

  override def properties(): java.util.Map[String, String] =
    JavaCompat.javaMap(catalogTable.fold(Map.empty[String, String])(_.properties) + ("provider" -> "hudi-md") +
      ("location" -> index.tablePath))

  /** Reads; appends and overwrites as SQL inserts ([[HudiMdWriteBuilder]]), which take columns by
   *  name, cast them to the table's types and fill Hudi's meta columns: any schema Spark hands. */
  override def capabilities(): java.util.Set[TableCapability] =
    JavaCompat.javaSet(Set(TableCapability.BATCH_READ, TableCapability.V1_BATCH_WRITE, TableCapability.TRUNCATE,
      TableCapability.ACCEPT_ANY_SCHEMA))

  override def newWriteBuilder(info: LogicalWriteInfo): WriteBuilder = new HudiMdWriteBuilder(this, info)

  override def newScanBuilder(options: CaseInsensitiveStringMap): ScanBuilder = new HudiMdScanBuilder(this)

  override def toString: String = s"HudiMdTable(${name()})"
}

/**
 * Column pruning and filter push-down (data source filters, which every Spark line hands a V2
 * scan builder, plus the table's `queryFilters`), split as Spark's V1 file scans split them:
 * filters on partition columns only prune partitions exactly (a partition's values) and are not
 * evaluated again; the data-column parts of the rest go to the planner (column stats, record
 * index) and to Parquet (row groups), and Spark still evaluates them on the rows read. A filter
 * naming a partition column never reaches Parquet: a base file's copy of that column is not what
 * the table's partition says.
 */
class HudiMdScanBuilder(table: HudiMdTable)
    extends ScanBuilder
    with SupportsPushDownRequiredColumns
    with SupportsPushDownFilters {

  private val schema = table.schema()
  private val partitionColumns = table.relation.partitionSchema.fieldNames
  private def isPartitionColumn(name: String): Boolean = partitionColumns.exists(SQLConf.get.resolver(_, name))

  private var required: StructType = schema
  private var pushed: Array[sources.Filter] = Array.empty
  private var converted: Seq[Expression] = Nil
  private var exactPartitionFilters: Seq[Expression] = Nil

  override def pruneColumns(requiredSchema: StructType): Unit = required = requiredSchema

  override def pushFilters(filters: Array[sources.Filter]): Array[sources.Filter] = {
    val exact = filters.flatMap(f => FilterExpressions.exact(f, schema).filter(onPartitions).map(f -> _))
    val rest = filters.filterNot(f => exact.exists(_._1 eq f))
    exactPartitionFilters = exact.map(_._2).toSeq
    converted = rest.flatMap(f => FilterExpressions.expression(f, schema)).toSeq
    pushed = filters
    rest
  }

  override def pushedFilters(): Array[sources.Filter] = pushed

  private def onPartitions(e: Expression): Boolean =
    e.references.nonEmpty && e.references.forall(a => isPartitionColumn(a.name))

  override def build(): Scan = {
    val usable = table.queryFilters
      .filter(f => f.deterministic && !SubqueryExpression.hasSubquery(f))
      .map(_.transform { case a: AttributeReference => a.withQualifier(Nil) })
    // The query's filters and the pushed ones are mostly the same filters twice.
    def distinct(filters: Seq[Expression]): Seq[Expression] = filters.groupBy(_.sql).values.map(_.head).toSeq.sortBy(_.sql)
    val partitionFilters = distinct(usable.filter(onPartitions) ++ exactPartitionFilters)
    val dataFilters = distinct((usable.filterNot(onPartitions) ++ converted).flatMap(FilterExpressions.within(_, n => !isPartitionColumn(n))))
    val parquetFilters = pushed.filterNot(_.references.exists(isPartitionColumn)).toSeq
    val readData = StructType(required.fields.filterNot(f => isPartitionColumn(f.name)))
    new HudiMdScan(table, readData, partitionFilters, dataFilters, parquetFilters)
  }
}

/**
 * The scan: the planner's file slices (partition, stats and record-index pruning, in a constant
 * number of MDT reads) as Spark's file partitions; base-file-only slices read by Spark's
 * vectorized Parquet reader, slices with log files merged by the executor's planner process
 * ([[SliceReader]]) — the very reader function of the V1 relation ([[HudiMdFileFormat]]).
 *
 * Runtime filtering: a dynamic partition pruning filter on the partition columns re-plans with it,
 * so a join reads only the partitions the other side names.
 */
class HudiMdScan(
    table: HudiMdTable,
    readDataSchema: StructType,
    partitionFilters: Seq[Expression],
    dataFilters: Seq[Expression],
    parquetFilters: Seq[sources.Filter])
    extends Scan
    with Batch
    with SupportsRuntimeFiltering
    with SupportsReportStatistics {

  private val relation = table.relation
  private val session: SparkSession = relation.sparkSession
  private var runtimeFilters: Seq[Expression] = Nil

  /** Data columns read, then every partition column (the reader appends all of a file's values). */
  override def readSchema(): StructType = StructType(readDataSchema.fields ++ relation.partitionSchema.fields)

  /** Batches when Spark's own file scans would return them: vectorized reads, and whole-stage
   *  code generation to take them. */
  private lazy val columnar: Boolean = {
    val conf = SQLConf.get
    conf.wholeStageEnabled && !WholeStageCodegenExec.isTooManyFields(conf, readSchema()) &&
      relation.fileFormat.supportBatch(session, readSchema())
  }

  override def description(): String = {
    val reader = if (columnar) "vectorized Parquet" else "Parquet rows"
    def list(filters: Seq[Any]) = filters.mkString("[", ", ", "]")
    s"HudiMdScan ${table.name()} reader=$reader, PartitionFilters: ${list(partitionFilters.map(_.sql))}, " +
      s"DataFilters: ${list(dataFilters.map(_.sql))}, PushedFilters: ${list(parquetFilters)}, " +
      s"ReadSchema: ${readDataSchema.catalogString}"
  }

  /** Spark's file scan metrics, of the files listed (the driver's). */
  override def supportedCustomMetrics(): Array[CustomMetric] =
    Array(new ScanMetrics.NumFiles, new ScanMetrics.FilesSize, new ScanMetrics.NumPartitions)

  override def reportDriverMetrics(): Array[CustomTaskMetric] = {
    val files = planInputPartitions().flatMap(_.asInstanceOf[FilePartition].files)
    val whole = files.filter(_.start == 0)
    Array(
      ScanMetrics.value(ScanMetrics.NumFilesName, whole.length),
      ScanMetrics.value(ScanMetrics.FilesSizeName, whole.map(_.fileSize).sum),
      ScanMetrics.value(ScanMetrics.NumPartitionsName, whole.map(_.partitionValues).distinct.length))
  }

  override def toBatch: Batch = this

  /** The listing of the filters so far (runtime ones included): planned once per scan, however
   *  many times Spark asks (stage re-planning copies the scan's node, not the scan). */
  private var planned: Option[(Seq[Expression], Array[InputPartition])] = None

  override def planInputPartitions(): Array[InputPartition] = synchronized {
    planned.collect { case (filters, partitions) if filters == runtimeFilters => partitions }.getOrElse {
      val partitions = listInputPartitions()
      planned = Some((runtimeFilters, partitions))
      partitions
    }
  }

  /** The files this scan reads (its listing, pieces of a split file once), one per line: what
   *  benchmarks compare between systems. */
  def plannedFiles(): String =
    planInputPartitions().flatMap(_.asInstanceOf[FilePartition].files).filter(_.start == 0).map(_.filePath.toString).mkString("\n")

  private def listInputPartitions(): Array[InputPartition] = {
    val directories = table.index.listFiles(partitionFilters ++ runtimeFilters, dataFilters)
    val maxSplitBytes = FilePartition.maxSplitBytes(session, directories)
    val format = relation.fileFormat
    val files = directories.flatMap { dir =>
      dir.files.flatMap { f =>
        val status = f.fileStatus
        val path = status.getPath
        val length = status.getLen
        def piece(start: Long, size: Long) =
          PartitionedFile(dir.values, SparkPath.fromPath(path), start, size, Array.empty[String],
            status.getModificationTime, length, f.metadata)
        if (format.isSplitable(session, relation.options, path) && length > maxSplitBytes)
          (0L until length by maxSplitBytes).map(start => piece(start, math.min(maxSplitBytes, length - start)))
        else Seq(piece(0, length))
      }
    }
    FilePartition.getFilePartitions(session, files.sortBy(-_.length).toList, maxSplitBytes).toArray
  }

  override def createReaderFactory(): PartitionReaderFactory = {
    val options = relation.options + (FileFormat.OPTION_RETURNING_BATCH -> columnar.toString)
    val read = relation.fileFormat.buildReaderWithPartitionValues(
      session, relation.dataSchema, relation.partitionSchema, readDataSchema, parquetFilters, options,
      SessionCompat.hadoopConf(session, relation.options))
    new HudiMdReaderFactory(read, columnar)
  }

  override def filterAttributes(): Array[NamedReference] =
    relation.partitionSchema.fieldNames.map(n => Expressions.column(n))

  override def filter(filters: Array[sources.Filter]): Unit =
    runtimeFilters = runtimeFilters ++ filters.flatMap(FilterExpressions.expression(_, relation.partitionSchema))

  /** The size of the files this scan reads (its pruned listing), as Spark's file scans report it. */
  override def estimateStatistics(): Statistics = {
    val size = planInputPartitions().map(_.asInstanceOf[FilePartition].files.map(_.length).sum).sum
    new Statistics {
      override def sizeInBytes(): OptionalLong = OptionalLong.of(size)
      override def numRows(): OptionalLong = OptionalLong.empty()
    }
  }

  override def toString: String = description()
}

/** The metrics of Spark's V1 file scans, by the same names (`numFiles`, `filesSize`, `numPartitions`). */
object ScanMetrics {
  val NumFilesName = "numFiles"
  val FilesSizeName = "filesSize"
  val NumPartitionsName = "numPartitions"

  class NumFiles extends CustomSumMetric {
    override def name(): String = NumFilesName
    override def description(): String = "number of files read"
  }

  class FilesSize extends CustomSumMetric {
    override def name(): String = FilesSizeName
    override def description(): String = "size of files read"
  }

  class NumPartitions extends CustomSumMetric {
    override def name(): String = NumPartitionsName
    override def description(): String = "number of partitions read"
  }

  def value(metric: String, v: Long): CustomTaskMetric = new CustomTaskMetric {
    override def name(): String = metric
    override def value(): Long = v
  }
}

/** Each task's reader: the relation's reader function over the files of its file partition. */
class HudiMdReaderFactory(read: PartitionedFile => Iterator[InternalRow], columnar: Boolean) extends PartitionReaderFactory {

  override def supportColumnarReads(partition: InputPartition): Boolean = columnar

  override def createReader(partition: InputPartition): PartitionReader[InternalRow] =
    new FilesReader[InternalRow](partition.asInstanceOf[FilePartition], read)

  override def createColumnarReader(partition: InputPartition): PartitionReader[ColumnarBatch] =
    new FilesReader[ColumnarBatch](partition.asInstanceOf[FilePartition], read)

  /** The files one after the other; a columnar read's "rows" are Parquet's or Arrow's batches. */
  private class FilesReader[T](partition: FilePartition, read: PartitionedFile => Iterator[InternalRow]) extends PartitionReader[T] {
    private val files = partition.files.iterator
    private var current: Iterator[InternalRow] = Iterator.empty
    private var value: T = _

    override def next(): Boolean = {
      while (!current.hasNext && files.hasNext) {
        closeCurrent()
        val file = files.next()
        InputFiles.set(file.urlEncodedPath, file.start, file.length)
        current = read(file)
      }
      if (current.hasNext) { value = current.next().asInstanceOf[AnyRef].asInstanceOf[T]; true }
      else false
    }

    override def get(): T = value

    override def close(): Unit = {
      closeCurrent()
      InputFiles.unset()
    }

    private def closeCurrent(): Unit = current match {
      case c: AutoCloseable => c.close()
      case _                => ()
    }
  }
}

/**
 * Data source filters as Catalyst predicates on the columns of `schema` (what the file index and
 * the planner take): the pushed filters of a scan, and Spark's runtime filters (dynamic partition
 * pruning: `IN` lists of partition values). None for a filter on another column or of a kind not
 * known here: it is then not pushed (a scan's) or prunes nothing (a runtime one).
 */
private[spark] object FilterExpressions {

  def expression(filter: sources.Filter, schema: StructType): Option[Expression] = {
    val resolver = SQLConf.get.resolver
    def column(name: String): Option[AttributeReference] =
      schema.fields.find(f => resolver(f.name, name)).map(f => AttributeReference(f.name, f.dataType, f.nullable)())
    def compare(name: String, v: Any)(make: (Expression, Expression) => Expression): Option[Expression] =
      column(name).map(a => make(a, Literal.create(v, a.dataType)))
    def string(name: String, v: String)(make: (Expression, Expression) => Expression): Option[Expression] =
      column(name).filter(_.dataType == StringType).map(a => make(a, Literal(v)))
    def both(l: sources.Filter, r: sources.Filter)(make: (Expression, Expression) => Expression): Option[Expression] =
      for (x <- expression(l, schema); y <- expression(r, schema)) yield make(x, y)
    filter match {
      case sources.EqualTo(n, v)            => compare(n, v)(EqualTo)
      case sources.EqualNullSafe(n, v)      => compare(n, v)(EqualNullSafe)
      case sources.GreaterThan(n, v)        => compare(n, v)(GreaterThan)
      case sources.GreaterThanOrEqual(n, v) => compare(n, v)(GreaterThanOrEqual)
      case sources.LessThan(n, v)           => compare(n, v)(LessThan)
      case sources.LessThanOrEqual(n, v)    => compare(n, v)(LessThanOrEqual)
      case sources.In(n, vs)                => column(n).map(a => In(a, vs.toSeq.map(v => Literal.create(v, a.dataType))))
      case sources.IsNull(n)                => column(n).map(IsNull)
      case sources.IsNotNull(n)             => column(n).map(IsNotNull)
      case sources.StringStartsWith(n, v)   => string(n, v)(StartsWith)
      case sources.StringEndsWith(n, v)     => string(n, v)(EndsWith)
      case sources.StringContains(n, v)     => string(n, v)(Contains)
      case sources.And(l, r) =>
        (expression(l, schema), expression(r, schema)) match {
          case (Some(x), Some(y)) => Some(And(x, y))
          // Pruning with one side of an AND keeps every row the whole keeps.
          case (x, y) => x.orElse(y)
        }
      case sources.Or(l, r)  => both(l, r)(Or)
      case sources.Not(c)    => exact(c, schema).map(Not)
      case _                 => None
    }
  }

  /** The parts of `e` naming only columns `allowed` takes (both sides of an OR, either of an AND). */
  def within(e: Expression, allowed: String => Boolean): Option[Expression] = e match {
    case And(l, r) =>
      (within(l, allowed), within(r, allowed)) match {
        case (Some(x), Some(y)) => Some(And(x, y))
        case (x, y)             => x.orElse(y)
      }
    case Or(l, r)                                          => for (x <- within(l, allowed); y <- within(r, allowed)) yield Or(x, y)
    case other if other.references.forall(a => allowed(a.name)) => Some(other)
    case _                                                 => None
  }

  /** `filter` converted whole, or None (an AND missing a side prunes less than it says: under a
   *  NOT it would prune too much, and as a partition filter it is not the filter). */
  def exact(filter: sources.Filter, schema: StructType): Option[Expression] = filter match {
    case sources.And(l, r) => for (x <- exact(l, schema); y <- exact(r, schema)) yield And(x, y)
    case sources.Or(l, r)  => for (x <- exact(l, schema); y <- exact(r, schema)) yield Or(x, y)
    case sources.Not(c)    => expression(c, schema).map(Not)
    case other             => expression(other, schema)
  }
}
