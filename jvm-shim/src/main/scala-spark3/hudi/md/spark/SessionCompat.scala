package hudi.md.spark

import java.net.URI

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.TableIdentifier
import org.apache.spark.sql.catalyst.catalog.CatalogTable

/** What the shim needs of a session that Spark 3.5 and 4.x spell differently (this: Spark 3.5). */
object SessionCompat {

  /** Where the session's catalog puts a managed table. */
  def defaultTablePath(session: SparkSession, table: TableIdentifier): URI =
    session.sessionState.catalog.defaultTablePath(table)

  /** The session catalog's entry of `table`, if it has one. */
  def catalogTable(session: SparkSession, table: TableIdentifier): Option[CatalogTable] = {
    if (session.sessionState.catalog.tableExists(table)) Some(session.sessionState.catalog.getTableMetadata(table))
    else None
  }

  /** The analyzed plan of a DataFrame. */
  def analyzed(df: org.apache.spark.sql.DataFrame): org.apache.spark.sql.catalyst.plans.logical.LogicalPlan =
    df.queryExecution.analyzed

  /** Replaces the data columns (not the partition columns) of `table`'s catalog entry. */
  def alterDataSchema(session: SparkSession, table: TableIdentifier, dataSchema: org.apache.spark.sql.types.StructType): Unit =
    session.sessionState.catalog.alterTableDataSchema(table, dataSchema)

  /** A DataFrame's rows as its own query execution computes them (a streaming micro-batch's, with
   *  no new analysis of its streaming plan). */
  def executedRows(df: org.apache.spark.sql.DataFrame): org.apache.spark.rdd.RDD[org.apache.spark.sql.catalyst.InternalRow] =
    df.queryExecution.toRdd

  /** The Hadoop configuration Spark's file scans read with: the context's, the session's SQL conf, `options`. */
  def hadoopConf(session: SparkSession, options: Map[String, String]): org.apache.hadoop.conf.Configuration =
    session.sessionState.newHadoopConfWithOptions(options)

  /** The session catalog as a V2 catalog (what Spark's own `spark_catalog` is without an extension). */
  def v2SessionCatalog(session: SparkSession): org.apache.spark.sql.connector.catalog.CatalogPlugin =
    new org.apache.spark.sql.execution.datasources.v2.V2SessionCatalog(session.sessionState.catalog)
}
