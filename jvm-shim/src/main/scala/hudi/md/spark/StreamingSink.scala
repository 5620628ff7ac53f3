package hudi.md.spark

import org.apache.spark.sql.{DataFrame, Row, SQLContext, SaveMode}
import org.apache.spark.sql.catalyst.CatalystTypeConverters
import org.apache.spark.sql.execution.streaming.Sink
import org.apache.spark.sql.streaming.OutputMode

/**
 * `df.writeStream.format("hudi-md").option("checkpointLocation", ...).start(path)`: each micro-batch
 * is one write through the same pipeline as `df.write.format("hudi-md").mode("append")` (the
 * configured operation, default `upsert`; `OutputMode.Complete` overwrites the table, as Apache
 * Hudi's sink does), committed with the batch id under Apache Hudi's sink checkpoint key
 * (`_hudi_streaming_sink_checkpoint`: `{"<batch id>": "<application>-<query>"}`, in the commit's
 * `extraMetadata` as every `_`-prefixed option goes there). A batch the table holds already (Spark
 * replays the last one when a restart finds no record of its end, e.g. after a crash right after
 * the commit) is not written again: the planner compares the newest recorded batch id, so every
 * batch commits exactly once (`hudi_md/spark/write_request.py`).
 */
class HudiMdStreamingSink(
    sqlContext: SQLContext,
    parameters: Map[String, String],
    partitionColumns: Seq[String],
    outputMode: OutputMode)
    extends Sink {

  private val path = parameters.getOrElse("path",
    throw new IllegalArgumentException("hudi-md: writeStream needs the table path: .start(<table path>) or option(\"path\", ...)"))

  private val mode = if (outputMode == OutputMode.Append()) SaveMode.Append else SaveMode.Overwrite

  // the query's own options (its checkpoint folder, ...) are Spark's, not the table's
  private val writeOptions = parameters.filterNot { case (k, _) => HudiMdStreamingSink.QueryOptions.contains(k.toLowerCase(java.util.Locale.ROOT)) }

  override def addBatch(batchId: Long, data: DataFrame): Unit = synchronized {
    val context = sqlContext.sparkContext
    // Spark's StreamExecution.QUERY_ID_KEY, set on the thread running the query's batches
    val queryId = Option(context.getLocalProperty("sql.streaming.queryId")).getOrElse("unknown")
    val checkpoint = PlannerClient.mapper.createObjectNode().put(batchId.toString, s"${context.applicationId}-$queryId")
    val partitioned =
      if (partitionColumns.isEmpty) Map.empty[String, String]
      else {
        val columns = PlannerClient.mapper.createArrayNode()
        partitionColumns.foreach(c => columns.add(c))
        Map(DefaultSource.PartitionColumnsOption -> columns.toString)
      }
    // the micro-batch's rows as a batch DataFrame: Spark refuses a batch write, or any new
    // analysis, of the streaming one (its own foreachBatch sink does the same)
    val schema = data.schema
    val rows = data.sparkSession.createDataFrame(
      SessionCompat.executedRows(data).mapPartitions { it =>
        val toRow = CatalystTypeConverters.createToScalaConverter(schema)
        it.map(r => toRow(r).asInstanceOf[Row])
      },
      schema)
    new DefaultSource().createRelation(
      sqlContext, mode, writeOptions ++ partitioned + (HudiMdStreamingSink.CheckpointKey -> checkpoint.toString), rows)
  }

  override def toString: String = s"HudiMdStreamingSink[$path]"
}

object HudiMdStreamingSink {
  /** Apache Hudi's commit metadata key of its streaming sink's batch id. */
  val CheckpointKey = "_hudi_streaming_sink_checkpoint"

  /** Options of a streaming query that are Spark's (lower case). */
  val QueryOptions: Set[String] = Set("checkpointlocation", "queryname")
}
