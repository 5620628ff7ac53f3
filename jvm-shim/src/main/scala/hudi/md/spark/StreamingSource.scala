package hudi.md.spark

import java.util.Locale

import org.apache.spark.sql.{DataFrame, SQLContext}
import org.apache.spark.sql.execution.streaming.{Offset, Source}
import org.apache.spark.sql.hudi_md.StreamingFrames
import org.apache.spark.sql.types.StructType

/** A position in a hudi-md table's timeline: the incremental range bound of a commit (its
 *  completion time on tables of version 8 and later, its instant time on version 6). */
case class HudiMdOffset(instant: String) extends Offset {
  override def json(): String = PlannerClient.mapper.writeValueAsString(instant)
}

object HudiMdOffset {
  /** An offset as Spark hands it back (ours, or read from the query's checkpoint as JSON). */
  def instant(offset: Offset): String = offset match {
    case HudiMdOffset(i) => i
    case other           => PlannerClient.mapper.readTree(other.json()).asText()
  }
}

/**
 * `spark.readStream.format("hudi-md").load(path)`: the table's commits as a stream. Each batch is
 * the incremental read of the commits completed since the last batch (the latest version of the
 * records they wrote, as `hoodie.datasource.query.type=incremental` reads them); offsets are
 * commits ([[HudiMdOffset]]), so a restarted query resumes after the last commit it delivered and
 * delivers every commit once. Where it starts: `hoodie.datasource.streaming.startOffset`
 * (Apache Hudi's option): `earliest` (default: every commit), `latest` (commits after the query
 * starts) or an instant time (commits after it).
 */
class HudiMdStreamingSource(sqlContext: SQLContext, parameters: Map[String, String]) extends Source {

  private val path = parameters.getOrElse("path",
    throw new IllegalArgumentException("hudi-md: readStream needs the table path: .load(<table path>)"))

  private val tableOptions = parameters.filterNot { case (k, _) =>
    k.equalsIgnoreCase("path") || HudiMdStreamingSource.StreamOptions.contains(k.toLowerCase(Locale.ROOT))
  }

  private val settings = PlannerSettings.fromConf(sqlContext.sparkContext.getConf)

  private val startOffset =
    parameters.collectFirst { case (k, v) if k.equalsIgnoreCase(HudiMdStreamingSource.StartOffset) => v.trim }
      .getOrElse("earliest")

  /** The table's columns as a snapshot read has them (fixed for the life of the query). */
  override lazy val schema: StructType =
    sqlContext.read.format("hudi-md").options(tableOptions).load(path).schema

  // `latest`: the commits after this one (the newest when the query started)
  private lazy val latestAtStart: String = latest().getOrElse("000")

  private def latest(): Option[String] =
    Incremental.range(path, tableOptions ++ Map(Incremental.QueryTypeKey -> Protocol.QueryIncremental, Incremental.BeginKey -> "000"), settings).latest

  override def getOffset: Option[Offset] = latest().map(HudiMdOffset(_))

  override def getBatch(start: Option[Offset], end: Offset): DataFrame = {
    val begin = start.map(HudiMdOffset.instant).getOrElse(startOffset.toLowerCase(Locale.ROOT) match {
      case "earliest" => "000"
      case "latest"   => latestAtStart
      case instant    => instant
    })
    val until = HudiMdOffset.instant(end)
    val rows =
      if (begin >= until) sqlContext.read.schema(schema).format("hudi-md").options(tableOptions).load(path).limit(0)
      else
        sqlContext.read.format("hudi-md")
          .options(tableOptions ++ Map(
            Incremental.QueryTypeKey -> Protocol.QueryIncremental,
            Incremental.BeginKey -> begin,
            Incremental.EndKey -> until))
          .load(path)
    val columns = rows.select(schema.fieldNames.map(n => rows.col(s"`$n`")): _*)
    StreamingFrames.streaming(sqlContext, SessionCompat.executedRows(columns), schema)
  }

  override def stop(): Unit = ()

  override def toString: String = s"HudiMdStreamingSource[$path]"
}

object HudiMdStreamingSource {
  /** Apache Hudi's option: where a query without a checkpoint starts. */
  val StartOffset = "hoodie.datasource.streaming.startOffset"

  /** A stream's own options (lower case): not the table's. */
  val StreamOptions: Set[String] = Set(StartOffset.toLowerCase(Locale.ROOT), "maxfilespertrigger")
}
