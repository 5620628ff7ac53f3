package hudi.md.spark

import java.util.UUID

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.connector.write.{LogicalWriteInfo, SupportsTruncate, V1Write, Write, WriteBuilder}
import org.apache.spark.sql.sources.InsertableRelation

/**
 * V2 writes to a catalog's [[HudiMdTable]] (`df.writeTo("lake.db.t").append()`,
 * `.overwrite(lit(true))`), as Apache Hudi runs them on its V2 table: the rows inserted as SQL's
 * `INSERT INTO` / `INSERT OVERWRITE TABLE` would insert them (columns by name, cast to the table's
 * types by Spark's store assignment rules, Hudi's meta columns filled, Hudi's SQL insert
 * operation), through the same statement ([[WriteRules]]): one commit per write. A path's table
 * (`hudi-md-v2`) never gets here: Spark writes it through `hudi-md`'s V1 writer.
 */
class HudiMdWriteBuilder(table: HudiMdTable, info: LogicalWriteInfo) extends WriteBuilder with SupportsTruncate {

  private var overwrite = false

  override def truncate(): WriteBuilder = {
    overwrite = true
    this
  }

  override def build(): Write = new V1Write {
    override def toInsertableRelation(): InsertableRelation = new InsertableRelation {
      override def insert(data: DataFrame, ignored: Boolean): Unit = HudiMdWriteBuilder.insert(table, data, overwrite)
    }

    override def description(): String = s"hudi-md write to ${table.name()}"
  }
}

object HudiMdWriteBuilder {

  private def quote(name: String): String = "`" + name.replace("`", "``") + "`"

  def insert(table: HudiMdTable, data: DataFrame, overwrite: Boolean): Unit = {
    val target = table.catalogTable.getOrElse(
      throw new HudiMdWriteException(
        s"hudi-md: ${table.name()} is not a catalog table; write it with df.write.format('hudi-md')"))
    val name = target.identifier
    val qualified = (Seq(HudiMdCatalog.SessionCatalogName) ++ name.database.toSeq :+ name.table).map(quote).mkString(".")
    val columns = data.columns.filterNot(WriteRules.MetaColumns.contains).map(quote).mkString(", ")
    val view = s"hudi_md_write_${UUID.randomUUID().toString.replace("-", "")}"
    val session = data.sparkSession
    data.createOrReplaceTempView(view)
    try {
      val verb = if (overwrite) "INSERT OVERWRITE TABLE" else "INSERT INTO"
      session.sql(s"$verb $qualified ($columns) SELECT $columns FROM ${quote(view)}")
    } finally session.catalog.dropTempView(view)
  }
}
