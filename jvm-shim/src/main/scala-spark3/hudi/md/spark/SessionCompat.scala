package hudi.md.spark

import java.net.URI

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.TableIdentifier

/** What the shim needs of a session that Spark 3.5 and 4.x spell differently (this: Spark 3.5). */
object SessionCompat {

  /** Where the session's catalog puts a managed table. */
  def defaultTablePath(session: SparkSession, table: TableIdentifier): URI =
    session.sessionState.catalog.defaultTablePath(table)
}
