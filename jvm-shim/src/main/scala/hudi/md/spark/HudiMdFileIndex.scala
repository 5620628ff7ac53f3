package hudi.md.spark

import java.io.ByteArrayInputStream
import java.util.Locale

import scala.collection.mutable

import com.fasterxml.jackson.databind.JsonNode
import com.fasterxml.jackson.databind.node.ObjectNode
import org.apache.arrow.memory.RootAllocator
import org.apache.arrow.vector._
import org.apache.arrow.vector.complex.ListVector
import org.apache.arrow.vector.ipc.ArrowStreamReader
import org.apache.arrow.vector.types.TimeUnit
import org.apache.arrow.vector.types.pojo.ArrowType
import org.apache.hadoop.fs.{FileStatus, Path}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{And, AttributeReference, BoundReference, Expression, PlanExpression, Predicate}
import org.apache.spark.sql.execution.datasources.{FileIndex, FileStatusWithMetadata, PartitionDirectory}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import org.slf4j.LoggerFactory

/**
 * One file slice of a plan: a slice row of the planner's answer ([[Protocol]]: partition path,
 * file id, base instant, base file, log files, sizes) and its partition values (Catalyst internal
 * form).
 */
private[spark] case class PlannedSlice(
    partitionPath: String,
    fileId: String,
    baseInstant: String,
    values: InternalRow,
    baseFile: Option[String],
    baseFileSize: Long,
    logFiles: Seq[String],
    logFileSizes: Seq[Long],
    totalSize: Long) {

  /** The slice row as a JSON object (without the partition values): `read_slice`'s `slice`. */
  def toJson: ObjectNode = {
    val row = PlannerClient.mapper.createObjectNode()
    row.put(Protocol.PartitionPath, partitionPath)
    row.put(Protocol.FileId, fileId)
    row.put(Protocol.BaseInstant, baseInstant)
    baseFile match {
      case Some(f) =>
        row.put(Protocol.BaseFile, f)
        row.put(Protocol.BaseFileSize, baseFileSize)
      case None =>
        row.putNull(Protocol.BaseFile)
        row.putNull(Protocol.BaseFileSize)
    }
    val logs = row.putArray(Protocol.LogFiles)
    logFiles.foreach(f => logs.add(f))
    val sizes = row.putArray(Protocol.LogFileSizes)
    logFileSizes.foreach(n => sizes.add(n))
    row.put(Protocol.TotalSize, totalSize)
    row
  }
}

/** Spark's partition directories of (some of) a plan's slices, how many of their files are merged
 *  slices, and how many files they hold. The directories wrap an array of `PartitionDirectory`:
 *  Spark's scan turns them into one, which for such a Seq is the array itself (Scala 2.12) or one
 *  `System.arraycopy` (2.13), not a copy element by element, each a type check of an object far
 *  from the last (~5 ms of a warm unfiltered plan over 100k directories in a JFR profile). Their
 *  file lists and the directories answer the `map` and `sum` of Spark's file-count and size
 *  metrics with plain loops on Scala 2.12 ([[SeqCompat]]). */
private[spark] case class Directories(directories: Seq[PartitionDirectory], merged: Int, files: Int)

private[spark] object Directories {
  /** `directories` with their counts: a merged slice is a file carrying its slice description. */
  def of(directories: Array[PartitionDirectory]): Directories = {
    var merged, files = 0
    directories.foreach { d =>
      d.files.foreach(f => if (f.metadata.contains(HudiMdFileFormat.SliceKey)) merged += 1)
      files += d.files.size
    }
    Directories(SeqCompat.wrapArray(directories), merged, files)
  }
}

/** A `plan` answer: the header's counters and instant, and the slices. */
private[spark] case class PlanResult(
    counters: ObjectNode,
    latestInstant: String,
    slices: IndexedSeq[PlannedSlice],
    reused: Boolean = false)(
    // What is made from the slices, once per answer, shared by its reuses.
    views: AnswerViews = new AnswerViews) {

  /** Spark's directories of every slice: a repeated unfiltered query of a large table (100k
   *  files) reuses them instead of building (and counting) 100k FileStatus objects again. */
  def directories(readOptimized: Boolean, build: => Directories): Directories =
    views.whole.computeIfAbsent(readOptimized, _ => build)

  /** Those of the directories of every slice (`all`) that a partition predicate (`keep`) keeps:
   *  `all` itself when it keeps every partition (a join on a partition column infers
   *  `isnotnull(dt)`). Held per predicate (`key`: the predicate bound to the partition values and
   *  canonicalized; the last [[AnswerViews.FilteredCapacity]]) unless `key` is None (a predicate
   *  whose answer may change: a subquery's, a nondeterministic one). */
  def filtered(readOptimized: Boolean, key: Option[Expression], all: Directories, keep: InternalRow => Boolean): Directories = {
    val filteredBy = views.filteredBy
    val held = key.map(k => (readOptimized, k))
    held.flatMap(k => filteredBy.synchronized(Option(filteredBy.get(k)))).getOrElse {
      val kept = all.directories.filter(d => keep(d.values))
      val found = if (kept.size == all.directories.size) all else Directories.of(kept.toArray)
      held.foreach(k => filteredBy.synchronized(filteredBy.put(k, found)))
      found
    }
  }

  /** The bytes of the slices' base files, and of their log files unless `readOptimized`: Spark's
   *  statistics ask at every plan with a join (~10 ms over 100k slices). */
  def sizeInBytes(readOptimized: Boolean): Long =
    views.sizes.computeIfAbsent(readOptimized, _ => {
      var total = 0L
      var i = 0
      while (i < slices.length) {
        val s = slices(i)
        total += s.baseFileSize
        if (!readOptimized) s.logFileSizes.foreach(n => total += n)
        i += 1
      }
      java.lang.Long.valueOf(total)
    })

  /** The slices' base files, then their log files unless `readOptimized` (a new array each call). */
  def inputFiles(readOptimized: Boolean): Array[String] =
    views.files.computeIfAbsent(readOptimized, _ =>
      (slices.flatMap(_.baseFile) ++ (if (readOptimized) Nil else slices.flatMap(_.logFiles))).toArray).clone()

  /** The same answer, held by the JVM and reused (with what was made from it). */
  def asReused: PlanResult = copy(reused = true)(views)
}

/** What a [[PlanResult]] makes from its slices, by read_optimized (and partition predicate). */
private[spark] final class AnswerViews {
  import java.util.concurrent.ConcurrentHashMap
  val whole = new ConcurrentHashMap[Boolean, Directories]()
  val sizes = new ConcurrentHashMap[Boolean, java.lang.Long]()
  val files = new ConcurrentHashMap[Boolean, Array[String]]()
  val filteredBy: java.util.LinkedHashMap[(Boolean, Expression), Directories] =
    new java.util.LinkedHashMap[(Boolean, Expression), Directories](16, 0.75f, true) {
      override def removeEldestEntry(e: java.util.Map.Entry[(Boolean, Expression), Directories]): Boolean =
        size() > AnswerViews.FilteredCapacity
    }
}

private[spark] object AnswerViews {
  val FilteredCapacity = 8
}

/**
 * The driver's recent plan answers, decoded, by request (path, options, storage settings,
 * filters), across file indexes: every DataFrame gets a new index, and a query repeated on an
 * unchanged table gets the same answer. The planner names each answer; a request carries the name
 * of the one held here and the planner replies `unchanged` instead of sending the slices again.
 * Soft references: the JVM drops them under memory pressure, and the plan is then sent again.
 */
private[spark] object RecentAnswers {
  private val Capacity = 16
  private val entries =
    new java.util.LinkedHashMap[String, java.lang.ref.SoftReference[(String, PlanResult)]](16, 0.75f, true) {
      override def removeEldestEntry(e: java.util.Map.Entry[String, java.lang.ref.SoftReference[(String, PlanResult)]]) =
        size() > Capacity
    }

  /** The request's key: a digest, so that secrets in its settings are not kept as map keys. */
  def key(request: ObjectNode): String = {
    val digest = java.security.MessageDigest.getInstance("SHA-256").digest(PlannerClient.mapper.writeValueAsBytes(request))
    digest.map("%02x".format(_)).mkString
  }

  def get(key: String): Option[(String, PlanResult)] = entries.synchronized {
    Option(entries.get(key)).flatMap(ref => Option(ref.get()))
  }

  def put(key: String, answer: String, plan: PlanResult): Unit = entries.synchronized {
    entries.put(key, new java.lang.ref.SoftReference((answer, plan)))
  }
}

/**
 * The file listing of one `hudi-md` relation, asked from the Python planner.
 *
 * `listFiles` sends the translatable part of Spark's partition and data filters (for partition
 * pruning and data skipping), then re-evaluates the partition filters exactly on the JVM: Spark does
 * not re-apply partition filters after the scan. Each scan asks the planner for the table as it is
 * then (the same answer is not sent again); estimates (`sizeInBytes`, `inputFiles`) reuse the
 * last plan until [[refresh]].
 *
 * A slice without log files (or any slice, for `read_optimized`) is its base file, read by Spark's
 * Parquet reader. A slice with log files (MOR snapshot) is one synthetic file carrying the slice
 * description, merged on the executor ([[HudiMdFileFormat]]). An incremental query (`incremental`)
 * lists only the slices of file groups its commits wrote; the rows are filtered when read.
 *
 * `session`: the driver's, lent to the planner for a plan whose column_stats pruning Hudi's rule
 * sends to the engine ([[PlanEngine]]); without it the planner prunes in process.
 */
class HudiMdFileIndex(
    val tablePath: String,
    val options: Map[String, String],
    settings: PlannerSettings,
    incremental: Option[IncrementalRange] = None,
    storageConf: () => Map[String, String] = () => Map.empty,
    session: Option[SparkSession] = None)
    extends FileIndex {

  import HudiMdFileIndex._

  private val readOptimized = options.exists { case (k, v) =>
    k.equalsIgnoreCase(QueryTypeKey) && v.trim.toLowerCase(Locale.ROOT) == Protocol.QueryReadOptimized
  }

  private var schemas: Option[(StructType, StructType)] = None
  @volatile private var ordering: Seq[String] = Nil
  @volatile private var keys: Seq[String] = Nil
  private val plans = new java.util.LinkedHashMap[String, PlanResult](16, 0.75f, true) {
    override def removeEldestEntry(e: java.util.Map.Entry[String, PlanResult]): Boolean = size() > 32
  }

  override def rootPaths: Seq[Path] = Seq(new Path(tablePath))

  /** Data columns (Spark types) as the planner reports them; partition columns excluded. */
  def dataSchema: StructType = loadSchemas()._1

  override def partitionSchema: StructType = loadSchemas()._2

  /** The table's ordering fields (`hoodie.table.ordering.fields`; none: commit time ordering). */
  def orderingFields: Seq[String] = { loadSchemas(); ordering }

  /** The table's record key fields (`hoodie.table.recordkey.fields`). */
  def recordKeyFields: Seq[String] = { loadSchemas(); keys }

  private def loadSchemas(): (StructType, StructType) = synchronized {
    schemas.getOrElse {
      val (header, _) = PlannerClient.call(settings, request(Protocol.OpSchema), withBody = false)
      val data = DataType.fromJson(header.path(Protocol.DataSchema).asText()).asInstanceOf[StructType]
      val part = DataType.fromJson(header.path(Protocol.PartitionSchema).asText()).asInstanceOf[StructType]
      ordering = strings(header.path(Protocol.OrderingFields))
      keys = strings(header.path(Protocol.RecordKeyFields))
      schemas = Some((data, part))
      (data, part)
    }
  }

  override def listFiles(partitionFilters: Seq[Expression], dataFilters: Seq[Expression]): Seq[PartitionDirectory] = {
    val filters = FilterTranslator.translate(partitionFilters ++ dataFilters)
    // A scan lists the table as it is now: a catalog table's relation (and this index) outlives
    // the writes other processes make. The planner answers `unchanged` when it is the same.
    val plan = planFor(filters, current = true)
    val usable = partitionFilters.filter(usablePartitionFilter)
    val all = plan.directories(readOptimized, directoriesOf(plan))
    val listed =
      if (usable.isEmpty) all
      else {
        val bound = boundPartitionFilter(usable)
        val stable = bound.deterministic && !bound.exists(_.isInstanceOf[PlanExpression[_]])
        plan.filtered(readOptimized, if (stable) Some(bound.canonicalized) else None, all, partitionPredicate(bound))
      }
    val Directories(directories, merged, fileCount) = listed
    val counters = plan.counters.deepCopy()
    counters.put(Protocol.CounterJvmPartitions, directories.size)
    counters.put(Protocol.CounterJvmFiles, fileCount)
    counters.put(Protocol.CounterJvmMergedSlices, merged)
    counters.put(Protocol.CounterJvmAnswerReused, if (plan.reused) 1 else 0)
    record(tablePath, plan.latestInstant, filters, counters)
    if (log.isInfoEnabled) log.info(s"hudi-md plan for $tablePath at ${plan.latestInstant}: $counters")
    directories
  }

  /**
   * A plan's slices as Spark's partition directories (made once per answer; a partition filter
   * selects among them), and how many of their files are slices merged on the executors.
   */
  private def directoriesOf(plan: PlanResult): Directories = {
    val groups = new mutable.LinkedHashMap[String, (InternalRow, mutable.ArrayBuffer[PlannedSlice])]
    plan.slices.foreach { s =>
      groups.getOrElseUpdate(s.partitionPath, (s.values, mutable.ArrayBuffer.empty[PlannedSlice]))._2 += s
    }
    val directories = groups.values.toSeq.map { case (values, slices) =>
      val files = slices.flatMap { s =>
        if (!readOptimized && s.logFiles.nonEmpty) Some(sliceStatus(s))
        else
          s.baseFile.map(f =>
            FileStatusWithMetadata(new FileStatus(s.baseFileSize, false, 1, BlockSize, ModificationTime, new Path(f))))
      }
      PartitionDirectory(values, if (files.size == 1) SeqCompat.single(files.head) else SeqCompat.wrapArray(files.toArray))
    }.filter(_.files.nonEmpty).toArray
    Directories.of(directories)
  }

  private def partitionIndex(name: String): Int =
    partitionSchema.fieldNames.indexWhere(SQLConf.get.resolver(_, name))

  private def usablePartitionFilter(filter: Expression): Boolean =
    filter.references.forall(a => partitionIndex(a.name) >= 0)

  /** Spark's partition filters as one predicate on a partition's values (no attribute ids: the
   *  same filters of any query bind to the same expression). */
  private def boundPartitionFilter(usable: Seq[Expression]): Expression = {
    val schema = partitionSchema
    usable.reduce(And).transform {
      case a: AttributeReference =>
        val i = partitionIndex(a.name)
        BoundReference(i, schema(i).dataType, nullable = true)
    }
  }

  /** Exact partition pruning: Spark's partition filters, evaluated on each partition's values. */
  private def partitionPredicate(bound: Expression): InternalRow => Boolean = {
    val predicate = Predicate.createInterpreted(bound)
    predicate.initialize(0)
    row => predicate.eval(row)
  }

  /**
   * A file slice with log files as one unsplittable file for Spark's scan: a path no file has
   * (`<partition>/.hudi-md-slice/<file id>`, see [[HudiMdFileFormat.isSlicePath]]) and the slice
   * description (the slice row, [[PlannedSlice.toJson]]) in the file's metadata, which Spark hands to the
   * reader on the executor as `PartitionedFile.otherConstantMetadataColumnValues`.
   */
  private def sliceStatus(s: PlannedSlice): FileStatusWithMetadata = {
    val anyFile = new Path(s.baseFile.getOrElse(s.logFiles.head))
    val fileId = HudiMdFileFormat.fileIdOf(anyFile.getName)
    val path = new Path(new Path(anyFile.getParent, HudiMdFileFormat.SliceDir), fileId)
    val length = s.baseFileSize + s.logFileSizes.sum
    FileStatusWithMetadata(
      new FileStatus(length, false, 1, BlockSize, ModificationTime, path),
      Map(HudiMdFileFormat.SliceKey -> s.toJson.toString))
  }

  /** The plan of `filters`: this index's last answer, or with `current` the planner's answer for
   *  the table as it is now (the same answer, not sent again, when nothing changed). */
  private def planFor(filters: ObjectNode, current: Boolean = false): PlanResult = synchronized {
    val key = filters.toString
    if (incremental.exists(_.commitTimes.isEmpty)) {
      // No commit in range: nothing to list, and nothing a later commit may add to this query.
      val counters =
        PlannerClient.mapper.createObjectNode().put(Protocol.CounterCommitsInRange, 0).put(Protocol.CounterFileSlices, 0)
      return PlanResult(counters, incremental.flatMap(_.latest).orNull, IndexedSeq.empty)()
    }
    Option(plans.get(key)).filterNot(_ => current).getOrElse {
      val req = request(Protocol.OpPlan)
      if (filters.path("op").asText() == "true") req.putNull(Protocol.Filters)
      else req.set[JsonNode](Protocol.Filters, filters)
      val recentKey = RecentAnswers.key(req)
      val known = RecentAnswers.get(recentKey)
      known.foreach { case (answer, _) => req.put(Protocol.KnownAnswer, answer) }
      val engine = session.map(new PlanEngine(_, tablePath))
      val (header, body) = PlannerClient.call(settings, req, withBody = true, engine)
      val result = known match {
        case Some((_, held)) if header.path(Protocol.Unchanged).asBoolean(false) => held.asReused
        case _ =>
          val counters = header.path(Protocol.Counters) match {
            case o: ObjectNode => o
            case _             => PlannerClient.mapper.createObjectNode()
          }
          val fresh = PlanResult(counters, header.path(Protocol.LatestInstant).asText(null), decode(body.get))()
          if (fresh.slices.size != header.path(Protocol.Rows).asInt(fresh.slices.size)) {
            throw new HudiMdPlannerException(
              s"hudi-md: planner announced ${header.path(Protocol.Rows)} slices for $tablePath but sent ${fresh.slices.size}")
          }
          Option(header.path(Protocol.Answer).asText(null)).foreach(a => RecentAnswers.put(recentKey, a, fresh))
          fresh
      }
      plans.put(key, result)
      result
    }
  }

  /** The unfiltered plan (what the relation reads without filters); cached until [[refresh]]. */
  private def fullPlan: PlanResult = planFor(FilterTranslator.translate(Nil))

  override def inputFiles: Array[String] = fullPlan.inputFiles(readOptimized)

  override def sizeInBytes: Long = fullPlan.sizeInBytes(readOptimized)

  /** The table's partition paths now (the MDT's, or a listing's), sorted. */
  def partitionPaths(): Seq[String] = {
    val (header, _) = PlannerClient.call(settings, request(Protocol.OpPartitions), withBody = false)
    strings(header.path(Protocol.PartitionPaths))
  }

  /** A JSON array of strings (none when absent). */
  private def strings(node: JsonNode): Seq[String] = {
    val out = Seq.newBuilder[String]
    node.elements().forEachRemaining(e => out += e.asText())
    out.result()
  }

  override def refresh(): Unit = synchronized {
    schemas = None
    plans.clear()
  }

  override def toString: String =
    s"HudiMdFileIndex($tablePath${incremental.fold("")(r => s", $r")})"

  private def request(op: String): ObjectNode = {
    val req = PlannerClient.mapper.createObjectNode()
    req.put(Protocol.Op, op)
    req.put(Protocol.Path, tablePath)
    val opts = req.putObject(Protocol.Options)
    options.foreach { case (k, v) => opts.put(k, v) }
    StorageConf.put(req, storageConf())
    req
  }

  /** The planner's Arrow IPC stream of slices → [[PlannedSlice]]s with Catalyst partition values. */
  private def decode(body: Array[Byte]): IndexedSeq[PlannedSlice] = {
    val partSchema = partitionSchema
    val out = IndexedSeq.newBuilder[PlannedSlice]
    val allocator = new RootAllocator(Long.MaxValue)
    try {
      val reader = new ArrowStreamReader(new ByteArrayInputStream(body), allocator)
      try {
        val root = reader.getVectorSchemaRoot
        def column(name: String): FieldVector =
          Option(root.getVector(name)).getOrElse(
            throw new HudiMdPlannerException(s"hudi-md: planner reply for $tablePath has no column '$name'"))
        while (reader.loadNextBatch()) {
          val partitionPath = column(Protocol.PartitionPath)
          val fileId = column(Protocol.FileId)
          val baseInstant = column(Protocol.BaseInstant)
          val partCols = partSchema.fields.map(f => (column(Protocol.PartitionValuePrefix + f.name), f.dataType))
          val baseFile = column(Protocol.BaseFile)
          val baseSize = column(Protocol.BaseFileSize)
          val logFiles = column(Protocol.LogFiles).asInstanceOf[ListVector]
          val logSizes = column(Protocol.LogFileSizes).asInstanceOf[ListVector]
          val totalSize = column(Protocol.TotalSize)
          var i = 0
          while (i < root.getRowCount) {
            val values = partCols.map { case (vec, t) => internalValue(vec, i, t) }
            out += PlannedSlice(
              partitionPath = stringAt(partitionPath, i),
              fileId = stringAt(fileId, i),
              baseInstant = stringAt(baseInstant, i),
              values = InternalRow.fromSeq(values.toSeq),
              baseFile = Option(stringAt(baseFile, i)),
              baseFileSize = longAt(baseSize, i),
              logFiles = listAt(logFiles, i).map(v => if (v == null) null else v.toString),
              logFileSizes = listAt(logSizes, i).map(v => if (v == null) 0L else v.asInstanceOf[Number].longValue()),
              totalSize = longAt(totalSize, i)
            )
            i += 1
          }
        }
      } finally reader.close()
    } finally allocator.close()
    out.result()
  }

  /** One partition value in Catalyst's internal form for `target`. */
  private def internalValue(vec: FieldVector, i: Int, target: DataType): Any = {
    if (vec.isNull(i)) return null
    val raw: Any = vec match {
      case v: VarCharVector      => UTF8String.fromBytes(v.get(i))
      case v: LargeVarCharVector => UTF8String.fromBytes(v.get(i))
      case v: BitVector          => v.get(i) != 0
      case v: TinyIntVector      => v.get(i)
      case v: SmallIntVector     => v.get(i)
      case v: IntVector          => v.get(i)
      case v: BigIntVector       => v.get(i)
      case v: UInt1Vector        => v.getValueAsLong(i)
      case v: UInt2Vector        => v.get(i).toLong
      case v: UInt4Vector        => v.getValueAsLong(i)
      case v: Float4Vector       => v.get(i)
      case v: Float8Vector       => v.get(i)
      case v: DateDayVector      => Days(v.get(i))
      case v: DateMilliVector    => Days(Math.floorDiv(v.get(i), 86400000L).toInt)
      case v: TimeStampVector    =>
        val unit = v.getField.getType.asInstanceOf[ArrowType.Timestamp].getUnit
        Micros(unit match {
          case TimeUnit.SECOND      => Math.multiplyExact(v.get(i), 1000000L)
          case TimeUnit.MILLISECOND => Math.multiplyExact(v.get(i), 1000L)
          case TimeUnit.MICROSECOND => v.get(i)
          case TimeUnit.NANOSECOND  => Math.floorDiv(v.get(i), 1000L)
        })
      case v: DecimalVector      => v.getObject(i)
      case v: Decimal256Vector   => v.getObject(i)
      case v: VarBinaryVector    => v.get(i)
      case other                 =>
        throw new HudiMdPlannerException(
          s"hudi-md: unsupported partition value type ${other.getField.getType} in column ${other.getName} of $tablePath")
    }
    coerce(raw, target, vec.getName)
  }

  private def coerce(raw: Any, target: DataType, column: String): Any = (raw, target) match {
    case (s: UTF8String, StringType)               => s
    case (d: Days, StringType)                     => UTF8String.fromString(java.time.LocalDate.ofEpochDay(d.days.toLong).toString)
    case (v, StringType)                           => UTF8String.fromString(String.valueOf(v))
    case (b: Boolean, BooleanType)                 => b
    case (n: Number, ByteType)                     => n.byteValue()
    case (n: Number, ShortType)                    => n.shortValue()
    case (n: Number, IntegerType)                  => n.intValue()
    case (n: Number, LongType)                     => n.longValue()
    case (n: Number, FloatType)                    => n.floatValue()
    case (n: Number, DoubleType)                   => n.doubleValue()
    case (d: Days, DateType)                       => d.days
    case (m: Micros, TimestampType | TimestampNTZType) => m.micros
    case (d: Days, TimestampType | TimestampNTZType)   => d.days.toLong * 86400000000L
    case (b: java.math.BigDecimal, t: DecimalType) => Decimal(b, t.precision, t.scale)
    case (n: Number, t: DecimalType)               => Decimal(new java.math.BigDecimal(n.toString), t.precision, t.scale)
    case (b: Array[Byte], BinaryType)              => b
    case _ =>
      throw new HudiMdPlannerException(
        s"hudi-md: cannot use the value $raw of $column as a Spark $target partition value ($tablePath)")
  }

  private def stringAt(vec: FieldVector, i: Int): String =
    if (vec.isNull(i)) null
    else vec match {
      case v: VarCharVector      => new String(v.get(i), java.nio.charset.StandardCharsets.UTF_8)
      case v: LargeVarCharVector => new String(v.get(i), java.nio.charset.StandardCharsets.UTF_8)
      case v                     => String.valueOf(v.getObject(i))
    }

  private def longAt(vec: FieldVector, i: Int): Long =
    if (vec.isNull(i)) 0L else vec.getObject(i).asInstanceOf[Number].longValue()

  private def listAt(vec: ListVector, i: Int): Seq[AnyRef] =
    if (vec.isNull(i)) Nil
    else {
      val list = vec.getObject(i)
      (0 until list.size()).map(j => list.get(j).asInstanceOf[AnyRef])
    }
}

object HudiMdFileIndex {
  private val log = LoggerFactory.getLogger(classOf[HudiMdFileIndex])
  val QueryTypeKey: String = Protocol.QueryType
  private val BlockSize = 128L * 1024 * 1024
  /** The listing's modification time of every file (the planner does not report one). */
  private val ModificationTime = 0L

  private final case class Days(days: Int)
  private final case class Micros(micros: Long)

  @volatile private var last: String = "{}"

  /**
   * The last plan as JSON: `{"path": ..., "latest_instant": ..., "filters": <the expression JSON
   * sent to the planner>, "counters": {...}}`, where the counters are the planner's (`partitions`, `partitions_after_partition_pruning`,
   * `file_slices`, ...) plus `jvm_partitions` / `jvm_files` after the JVM's exact partition pruning.
   * Read from Python with `hudi_md.spark.session.last_plan_counters(spark)`.
   */
  def lastPlanJson: String = last

  private def record(path: String, instant: String, filters: ObjectNode, counters: ObjectNode): Unit = {
    val node = PlannerClient.mapper.createObjectNode()
    node.put(Protocol.Path, path)
    node.put(Protocol.LatestInstant, instant)
    node.set[JsonNode](Protocol.Filters, filters)
    node.set[JsonNode](Protocol.Counters, counters)
    last = node.toString
  }
}
