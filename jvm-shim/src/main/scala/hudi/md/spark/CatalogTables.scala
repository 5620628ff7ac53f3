package hudi.md.spark

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.TableIdentifier
import org.apache.spark.sql.catalyst.catalog.CatalogTable

/** Session catalog tables named in SQL text (`hudi_table_changes('db.t', ...)`, `CALL ...(table =>
 *  'db.t')`, `t TIMESTAMP AS OF ...`), and what the planner needs of a hudi-md one. */
object CatalogTables {

  /** The session catalog's table `parts` names (`t`, `db.t`, `spark_catalog.db.t`), if any; a
   *  temporary view of that name hides it, as it does in a query. */
  def lookup(session: SparkSession, parts: Seq[String]): Option[CatalogTable] = {
    val ident = parts match {
      case Seq(name)                                           => Some(TableIdentifier(name))
      case Seq(db, name)                                       => Some(TableIdentifier(name, Some(db)))
      case Seq(c, db, name) if c.equalsIgnoreCase("spark_catalog") => Some(TableIdentifier(name, Some(db)))
      case _                                                   => None
    }
    ident
      .filterNot(_ => parts.size == 1 && session.sessionState.catalog.isTempView(parts))
      .flatMap(SessionCompat.catalogTable(session, _))
  }

  /** `name` (SQL text) as [[lookup]] takes it; None when it does not parse as a table name. */
  def lookup(session: SparkSession, name: String): Option[CatalogTable] =
    scala.util.Try(session.sessionState.sqlParser.parseMultipartIdentifier(name)).toOption.flatMap(lookup(session, _))

  /** A hudi-md table's location and its storage options (those the planner opens it with). */
  def location(table: CatalogTable): (String, Map[String, String]) = {
    val location = table.storage.locationUri.getOrElse(
      throw new IllegalArgumentException(s"hudi-md: ${table.identifier} has no location"))
    (location.toString, table.storage.properties.filterNot { case (k, _) => k.equalsIgnoreCase("path") })
  }
}
