package hudi.md.spark

import java.io.ByteArrayInputStream

import com.fasterxml.jackson.databind.JsonNode
import org.apache.arrow.memory.{BufferAllocator, RootAllocator}
import org.apache.arrow.vector._
import org.apache.arrow.vector.complex.{ListVector, MapVector, StructVector}
import org.apache.arrow.vector.ipc.ArrowStreamReader
import org.apache.spark.TaskContext
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{JoinedRow, UnsafeProjection}
import org.apache.spark.sql.execution.datasources.PartitionedFile
import org.apache.spark.sql.execution.vectorized.{ColumnVectorUtils, ConstantColumnVector}
import org.apache.spark.sql.types._
import org.apache.spark.sql.vectorized.{ArrowColumnVector, ColumnVector, ColumnarArray, ColumnarBatch, ColumnarMap}
import org.apache.spark.unsafe.types.UTF8String

/**
 * Reads merged MOR file slices on an executor (see [[HudiMdFileFormat]]): sends `read_slice` with
 * the required data columns to this JVM's planner process ([[PlannerClient]], started lazily with
 * `spark.pyspark.python` / `$PYSPARK_PYTHON`) and returns the Arrow answer as Spark expects it:
 * `ColumnarBatch`es of [[ArrowColumnVector]]s plus constant partition columns when the scan is
 * vectorized (`returningBatch`), else `UnsafeRow`s of `requiredSchema ++ partitionSchema`.
 *
 * Every required column's Arrow type must be the one Spark expects (the planner's `schema` answer);
 * a difference fails the task naming the column instead of reading wrong values. Structs may carry
 * more fields than required (Spark prunes nested fields of Parquet scans); the required ones are
 * picked by name. Filters are not applied: Spark re-applies them after the scan.
 */
private[spark] class SliceReader(
    tablePath: String,
    plannerOptions: Map[String, String],
    storageConf: Map[String, String],
    dataSchema: StructType,
    partitionSchema: StructType,
    requiredSchema: StructType,
    returningBatch: Boolean)
    extends Serializable {

  /** Rows (or batches, as `InternalRow`s the way Spark's scans pass them) of one merged slice. */
  def read(file: PartitionedFile, description: String): Iterator[InternalRow] = {
    val slice = PlannerClient.mapper.readTree(description)
    val unknown = requiredSchema.fields.filterNot(f => dataSchema.fieldNames.contains(f.name))
    if (unknown.nonEmpty) {
      throw SliceReader.failure(
        s"hudi-md: column(s) ${unknown.map(_.name).mkString(", ")} cannot be read from the merged MOR file slice " +
          s"${describe(slice)} of $tablePath (not table columns; e.g. _metadata.row_index is only known for base files)")
    }
    val request = PlannerClient.mapper.createObjectNode()
    request.put(Protocol.Op, Protocol.OpReadSlice)
    request.put(Protocol.Path, tablePath)
    val opts = request.putObject(Protocol.Options)
    plannerOptions.foreach { case (k, v) => opts.put(k, v) }
    StorageConf.put(request, storageConf)
    request.set[JsonNode](Protocol.Slice, slice)
    val columns = request.putArray(Protocol.Columns)
    if (requiredSchema.isEmpty) {
      // Only the row count is needed: ask for one column, the record key when there is one.
      columns.add(dataSchema.fieldNames.find(_ == "_hoodie_record_key").getOrElse(dataSchema.fieldNames.head))
    } else {
      requiredSchema.fieldNames.foreach(n => columns.add(n))
    }
    val (header, body) =
      try PlannerClient.call(PlannerSettings.current(), request, withBody = true)
      catch { case e: HudiMdPlannerException => throw SliceReader.portable(e) }
    val announced = header.path(Protocol.Rows).asLong(-1L)
    val iter = new SliceIterator(body.getOrElse(Array.emptyByteArray), file.partitionValues, slice, announced)
    Option(TaskContext.get()).foreach(_.addTaskCompletionListener[Unit](_ => iter.close()))
    // Batches travel as rows through the scan's erased `Iterator[InternalRow]`, as in Spark's readers.
    iter.asInstanceOf[Iterator[InternalRow]]
  }

  private def describe(slice: JsonNode): String = {
    val base = Option(slice.get(Protocol.BaseFile)).filterNot(_.isNull).map(_.asText)
    val logs = Option(slice.get(Protocol.LogFiles)).map(_.size).getOrElse(0)
    s"(${base.getOrElse("no base file")}, $logs log file(s))"
  }

  /** The Arrow stream's batches as Spark batches or rows; frees the Arrow memory when exhausted. */
  private final class SliceIterator(body: Array[Byte], partitionValues: InternalRow, slice: JsonNode, announced: Long)
      extends Iterator[AnyRef] {

    private var allocator: BufferAllocator = SliceReader.allocator.newChildAllocator("hudi-md-slice", 0, Long.MaxValue)
    private var reader: ArrowStreamReader = _
    private var root: VectorSchemaRoot = _
    private var rows: Iterator[InternalRow] = Iterator.empty
    private var pending: ColumnarBatch = _
    private var seen = 0L
    private var done = false
    private val joined = new JoinedRow()
    private val where = s"the MOR file slice ${describe(slice)} of $tablePath"
    private lazy val toUnsafe = UnsafeProjection.create(StructType(requiredSchema.fields ++ partitionSchema.fields))

    try {
      reader = new ArrowStreamReader(new ByteArrayInputStream(body), allocator)
      root = reader.getVectorSchemaRoot
      columns(0) // checks the types before any row is read
    } catch {
      case e: Throwable => close(); throw e
    }

    override def hasNext: Boolean = {
      if (done) return false
      if (pending != null || rows.hasNext) return true
      while (reader.loadNextBatch()) {
        val n = root.getRowCount
        seen += n
        if (n > 0) {
          val batch = new ColumnarBatch(columns(n), n)
          if (returningBatch) pending = batch
          else {
            val it = batch.rowIterator()
            rows = new Iterator[InternalRow] {
              override def hasNext: Boolean = it.hasNext
              override def next(): InternalRow = toUnsafe(joined(it.next(), partitionValues))
            }
          }
          return true
        }
      }
      if (announced >= 0 && seen != announced) {
        close()
        throw SliceReader.failure(
          s"hudi-md: the planner announced $announced rows for $where but sent $seen")
      }
      close()
      false
    }

    override def next(): AnyRef = {
      if (!hasNext) throw new NoSuchElementException("end of the merged MOR file slice")
      if (pending != null) {
        val b = pending
        pending = null
        b
      } else rows.next()
    }

    /** Vectors for the current batch: the required data columns, then the partition values. */
    private def columns(numRows: Int): Array[ColumnVector] = {
      val data = requiredSchema.fields.map { f =>
        val vec = Option(root.getVector(f.name))
          .orElse(SliceReader.list(root.getFieldVectors).find(_.getName.equalsIgnoreCase(f.name)))
          .getOrElse(throw SliceReader.failure(s"hudi-md: the planner's rows of $where have no column '${f.name}'"))
        SliceReader.vector(vec, f.dataType, f.name, numRows, where)
      }
      val parts = partitionSchema.fields.indices.map { i =>
        val c = new ConstantColumnVector(math.max(numRows, 1), partitionSchema(i).dataType)
        ColumnVectorUtils.populate(c, partitionValues, i)
        c: ColumnVector
      }
      data ++ parts
    }

    def close(): Unit = {
      done = true
      pending = null
      rows = Iterator.empty
      if (reader != null) {
        try reader.close() catch { case _: Exception => () }
        reader = null
      }
      if (allocator != null) {
        try allocator.close() catch { case _: Exception => () }
        allocator = null
      }
    }
  }
}

private[spark] object SliceReader {

  /**
   * Errors of executor-side reads are JDK exceptions: the driver deserializes a failed task's
   * exception with its own class loader, which may not see the shim's classes (a jar added with
   * `ADD JAR` at runtime), and would then report a `ClassNotFound` instead of the message.
   */
  def failure(message: String): IllegalStateException = new IllegalStateException(message)

  def portable(e: HudiMdPlannerException): IllegalStateException = {
    val cause = Option(e.getCause).filterNot(_.isInstanceOf[HudiMdPlannerException]).orNull
    val out = new IllegalStateException(e.getMessage, cause)
    out.setStackTrace(e.getStackTrace)
    out
  }

  private[spark] lazy val allocator: BufferAllocator = new RootAllocator(Long.MaxValue)

  /**
   * A Spark vector over `vec` for the expected type `expected`, or a clear error naming the column
   * when the Arrow type is not the one Spark expects. Exact matches are Spark's own
   * [[ArrowColumnVector]]; structs with more fields than required (nested column pruning), and
   * lists and maps of them, get a pruning view over the Arrow children.
   */
  def vector(vec: ValueVector, expected: DataType, column: String, numRows: Int, where: String): ColumnVector = {
    if (exact(vec, expected)) return new ArrowView(vec)
    (vec, expected) match {
      case (_: NullVector, t) if atomic(t) =>
        val c = new ConstantColumnVector(math.max(numRows, 1), t)
        c.setNull()
        c
      case (s: StructVector, st: StructType) =>
        val children = st.fields.map { f =>
          val child = structChild(s, f.name).getOrElse(
            throw mismatch(column, vec, expected, where, s"no field '${f.name}'"))
          vector(child, f.dataType, s"$column.${f.name}", numRows, where)
        }
        new StructView(st, s, children)
      case (m: MapVector, mt: MapType) =>
        val entries = m.getDataVector match {
          case e: StructVector if e.size() == 2 => e
          case _                                => throw mismatch(column, vec, expected, where, "bad map entries")
        }
        val keys = vector(entries.getChildByOrdinal(0), mt.keyType, s"$column.key", numRows, where)
        val values = vector(entries.getChildByOrdinal(1), mt.valueType, s"$column.value", numRows, where)
        new MapView(mt, m, keys, values)
      case (l: ListVector, at: ArrayType) =>
        new ListView(at, l, vector(l.getDataVector, at.elementType, s"$column.element", numRows, where))
      case _ => throw mismatch(column, vec, expected, where, "")
    }
  }

  private[spark] def list[T](l: java.util.List[T]): Seq[T] = {
    val out = Seq.newBuilder[T]
    val it = l.iterator()
    while (it.hasNext) out += it.next()
    out.result()
  }

  private def mismatch(column: String, vec: ValueVector, expected: DataType, where: String, detail: String) =
    SliceReader.failure(
      s"hudi-md: column '$column' of $where: the planner sent Arrow type ${vec.getField.getType} " +
        s"(${vec.getField}), Spark expects ${expected.catalogString}" + (if (detail.isEmpty) "" else s" ($detail)") +
        "; refusing to read values of another type")

  private def atomic(t: DataType): Boolean = t match {
    case _: StructType | _: ArrayType | _: MapType => false
    case _                                          => true
  }

  private def structChild(s: StructVector, name: String): Option[ValueVector] = {
    val children = list(s.getChildrenFromFields)
    children.find(_.getName == name).orElse(children.find(_.getName.equalsIgnoreCase(name)))
  }

  /** `vec` holds exactly the values of `expected` the way [[ArrowColumnVector]] reads them. */
  private def exact(vec: ValueVector, expected: DataType): Boolean = (vec, expected) match {
    case (_: BitVector, BooleanType)                           => true
    case (_: TinyIntVector, ByteType)                          => true
    case (_: SmallIntVector, ShortType)                        => true
    case (_: IntVector, IntegerType)                           => true
    case (_: BigIntVector, LongType)                           => true
    case (_: Float4Vector, FloatType)                          => true
    case (_: Float8Vector, DoubleType)                         => true
    case (v: DecimalVector, t: DecimalType)                    => v.getPrecision == t.precision && v.getScale == t.scale
    case (_: VarCharVector | _: LargeVarCharVector, _: StringType) => true
    case (_: VarBinaryVector | _: LargeVarBinaryVector, BinaryType) => true
    case (_: DateDayVector, DateType)                          => true
    // Microseconds since the epoch either way; a naive Parquet timestamp read as TimestampType
    // also keeps its stored value, like Spark's Parquet reader does for base files.
    case (_: TimeStampMicroTZVector, TimestampType)            => true
    case (_: TimeStampMicroVector, TimestampType | TimestampNTZType) => true
    case (s: StructVector, st: StructType) =>
      val children = list(s.getChildrenFromFields)
      children.size == st.size && children.zip(st.fields).forall { case (c, f) =>
        c.getName == f.name && exact(c, f.dataType)
      }
    case (m: MapVector, mt: MapType) =>
      m.getDataVector match {
        case e: StructVector if e.size() == 2 =>
          val k = e.getChild(MapVector.KEY_NAME)
          val v = e.getChild(MapVector.VALUE_NAME)
          k != null && v != null && exact(k, mt.keyType) && exact(v, mt.valueType)
        case _ => false
      }
    case (_: MapVector, _) => false
    case (l: ListVector, at: ArrayType) => exact(l.getDataVector, at.elementType)
    case _ => false
  }

  /**
   * Spark's Arrow vector, minus closing: `ColumnarToRowExec` closes each batch it consumed
   * (`closeIfFreeable`), which would free (and, for structs, drop the children of) vectors the
   * stream reader reuses for its next batch. The slice's reader frees the Arrow memory.
   */
  private final class ArrowView(vec: ValueVector) extends ArrowColumnVector(vec) {
    override def close(): Unit = ()
    override def closeIfFreeable(): Unit = ()
  }

  /** Vectors whose values are only reached through their children (struct, list, map views). */
  private abstract class View(t: DataType, vec: ValueVector) extends ColumnVector(t) {
    override def close(): Unit = () // the Arrow memory belongs to the slice's stream reader
    override def closeIfFreeable(): Unit = ()
    override def hasNull: Boolean = vec.getNullCount > 0
    override def numNulls: Int = vec.getNullCount
    override def isNullAt(rowId: Int): Boolean = vec.isNull(rowId)
    private def unsupported = throw new UnsupportedOperationException(s"not a ${dataType.catalogString} value")
    override def getBoolean(rowId: Int): Boolean = unsupported
    override def getByte(rowId: Int): Byte = unsupported
    override def getShort(rowId: Int): Short = unsupported
    override def getInt(rowId: Int): Int = unsupported
    override def getLong(rowId: Int): Long = unsupported
    override def getFloat(rowId: Int): Float = unsupported
    override def getDouble(rowId: Int): Double = unsupported
    override def getArray(rowId: Int): ColumnarArray = unsupported
    override def getMap(ordinal: Int): ColumnarMap = unsupported
    override def getDecimal(rowId: Int, precision: Int, scale: Int): Decimal = unsupported
    override def getUTF8String(rowId: Int): UTF8String = unsupported
    override def getBinary(rowId: Int): Array[Byte] = unsupported
    override def getChild(ordinal: Int): ColumnVector = unsupported
  }

  /** A struct with only the required fields, in the required order. */
  private final class StructView(t: StructType, vec: StructVector, children: Array[ColumnVector]) extends View(t, vec) {
    override def getChild(ordinal: Int): ColumnVector = children(ordinal)
  }

  private final class ListView(t: ArrayType, vec: ListVector, elements: ColumnVector) extends View(t, vec) {
    override def getArray(rowId: Int): ColumnarArray = {
      val offsets = vec.getOffsetBuffer
      val start = offsets.getInt(rowId.toLong * 4)
      val end = offsets.getInt((rowId + 1).toLong * 4)
      new ColumnarArray(elements, start, end - start)
    }
  }

  private final class MapView(t: MapType, vec: MapVector, keys: ColumnVector, values: ColumnVector)
      extends View(t, vec) {
    override def getMap(rowId: Int): ColumnarMap = {
      val offsets = vec.getOffsetBuffer
      val start = offsets.getInt(rowId.toLong * 4)
      val end = offsets.getInt((rowId + 1).toLong * 4)
      new ColumnarMap(keys, values, start, end - start)
    }
  }
}
