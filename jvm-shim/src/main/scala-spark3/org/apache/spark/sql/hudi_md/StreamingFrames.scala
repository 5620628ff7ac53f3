package org.apache.spark.sql.hudi_md

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.{DataFrame, SQLContext}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types.StructType

/**
 * A streaming source's batch as Spark requires it (a DataFrame marked streaming), made as Spark's
 * own sources make theirs (this: Spark 3.5). In a package under `org.apache.spark.sql` because
 * Spark keeps `internalCreateDataFrame` `private[sql]`.
 */
object StreamingFrames {
  def streaming(sqlContext: SQLContext, rows: RDD[InternalRow], schema: StructType): DataFrame =
    sqlContext.internalCreateDataFrame(rows, schema, isStreaming = true)
}
