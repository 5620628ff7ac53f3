package hudi.md.spark

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.hadoop.mapreduce.Job
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.execution.datasources.{FileFormat, OutputWriterFactory, PartitionedFile}
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.sources.Filter
import org.apache.spark.sql.types.StructType

/**
 * The file format of `hudi-md` relations: Spark's Parquet format for base files, plus MOR file
 * slices with log files merged by the planner process on the executor.
 *
 * [[HudiMdFileIndex]] lists a slice with log files as one file under a path no file has
 * (`<partition dir>/.hudi-md-slice/<file id>`), with the slice description (the slice's plan row as
 * a JSON object, see [[Protocol]] and [[HudiMdFileIndex]]) in the listing's file metadata. Spark copies that metadata into each `PartitionedFile`
 * (`otherConstantMetadataColumnValues`), which is serialized to the executors with the task; the
 * reader built here sends it to the executor's planner process (`read_slice`, see [[SliceReader]])
 * and turns the Arrow answer into Spark's columnar batches or rows. Every other file goes to the
 * Parquet reader unchanged.
 *
 * Slice files are never split ([[isSplitable]]) and never opened by Spark: the scan only uses the
 * listing's length and modification time.
 *
 * For an incremental query (`incremental` set) base-file rows outside the commit range are dropped
 * here ([[Incremental.rowFilter]]); the planner process drops those of merged slices.
 */
class HudiMdFileFormat(
    val tablePath: String,
    val plannerOptions: Map[String, String],
    val incremental: Option[IncrementalRange] = None)
    extends ParquetFileFormat {

  /** Rows for incremental queries: their base-file rows are filtered one by one (a batch cannot drop rows). */
  override def supportBatch(sparkSession: SparkSession, schema: StructType): Boolean =
    incremental.isEmpty && super.supportBatch(sparkSession, schema)

  override def isSplitable(sparkSession: SparkSession, options: Map[String, String], path: Path): Boolean =
    !HudiMdFileFormat.isSlicePath(path) && super.isSplitable(sparkSession, options, path)

  /**
   * No concrete vector classes: a batch holds Parquet's on/off-heap vectors for base files and
   * Arrow vectors for merged slices, so the generated code must use the `ColumnVector` interface.
   */
  override def vectorTypes(
      requiredSchema: StructType,
      partitionSchema: StructType,
      sqlConf: SQLConf): Option[Seq[String]] = None

  override def buildReaderWithPartitionValues(
      sparkSession: SparkSession,
      dataSchema: StructType,
      partitionSchema: StructType,
      requiredSchema: StructType,
      filters: Seq[Filter],
      options: Map[String, String],
      hadoopConf: Configuration): PartitionedFile => Iterator[InternalRow] = {
    val returningBatch = options.get(FileFormat.OPTION_RETURNING_BATCH).exists(_.trim.equalsIgnoreCase("true"))
    def parquetReader(required: StructType, pushed: Seq[Filter]): PartitionedFile => Iterator[InternalRow] =
      super.buildReaderWithPartitionValues(
        sparkSession, dataSchema, partitionSchema, required, pushed, options, hadoopConf)
    val parquet = incremental match {
      case None => parquetReader(requiredSchema, filters)
      case Some(range) =>
        if (returningBatch) {
          throw new IllegalStateException(s"hudi-md: batch scan of an incremental query on $tablePath")
        }
        Incremental.rowFilter(range, requiredSchema, partitionSchema, filters, parquetReader)
    }
    val slices = new SliceReader(
      tablePath, plannerOptions, StorageConf.forTable(tablePath, hadoopConf), dataSchema, partitionSchema, requiredSchema, returningBatch)
    (file: PartitionedFile) =>
      file.otherConstantMetadataColumnValues.get(HudiMdFileFormat.SliceKey) match {
        case Some(desc) if desc != null => slices.read(file, desc.toString)
        case _ if HudiMdFileFormat.isSlicePath(file.toPath) =>
          throw SliceReader.failure(
            s"hudi-md: ${file.filePath} stands for a merged MOR file slice of $tablePath but carries no " +
              "slice description; it can only be read through the `hudi-md` relation that listed it")
        case _ => parquet(file)
      }
  }

  /** Spark's file writers never write into a `hudi-md` table (see [[WriteGuard]]). */
  override def prepareWrite(
      sparkSession: SparkSession,
      job: Job,
      options: Map[String, String],
      dataSchema: StructType): OutputWriterFactory =
    WriteGuard.refuse("writing through Spark's file writer (INSERT INTO / INSERT OVERWRITE)", tablePath)

  override def toString: String = "HudiMdParquet"

  override def equals(other: Any): Boolean = other match {
    case f: HudiMdFileFormat =>
      f.tablePath == tablePath && f.plannerOptions == plannerOptions && f.incremental == incremental
    case _ => false
  }

  override def hashCode(): Int = (getClass.getName, tablePath, plannerOptions, incremental).hashCode()
}

object HudiMdFileFormat {

  /** The file-metadata key of a merged slice's description (JSON). */
  val SliceKey = "hudi_md_slice"

  /** The (never existing) directory the synthetic files of merged slices live in. */
  val SliceDir = ".hudi-md-slice"

  def isSlicePath(path: Path): Boolean = {
    val parent = path.getParent
    parent != null && parent.getName == SliceDir
  }

  /**
   * The file id of a base file (`<file id>_<write token>_<instant>.<ext>`) or a log file
   * (`.<file id>_<base instant>.log.<version>_<write token>`).
   */
  def fileIdOf(fileName: String): String = {
    val name = fileName.stripPrefix(".")
    val i = name.indexOf('_')
    if (i > 0) name.substring(0, i) else name
  }
}
