package hudi.md.spark

import java.util.Locale

import org.apache.spark.sql.{AnalysisException, SparkSessionExtensions, SparkSessionExtensionsProvider}
import org.apache.spark.sql.catalyst.catalog.{CatalogTable, HiveTableRelation, UnresolvedCatalogRelation}
import org.apache.spark.sql.catalyst.plans.logical.{DeleteFromTable, InsertIntoStatement, LogicalPlan, MergeIntoTable, UpdateTable}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.command.{CreateDataSourceTableAsSelectCommand, InsertIntoDataSourceDirCommand}
import org.apache.spark.sql.execution.datasources.{CreateTable, HadoopFsRelation, InsertIntoHadoopFsRelationCommand, LogicalRelation, SaveIntoDataSourceCommand}

/**
 * A Spark write that would bypass the Hudi timeline, refused. Spark's generic writers would put
 * files into the table's directories that no instant wrote (no reader ever sees them) or delete
 * partitions (`INSERT OVERWRITE`) behind the timeline's back.
 */
class HudiMdWriteException(message: String) extends AnalysisException(message)

/**
 * Refuses every Spark write into a `hudi-md` table before it touches storage: SQL `INSERT INTO` /
 * `INSERT OVERWRITE` (static and dynamic partitions), CTAS, `DataFrameWriter.save` /
 * `saveAsTable` / `insertInto`, `INSERT OVERWRITE DIRECTORY ... USING hudi-md`, `UPDATE`,
 * `DELETE` and `MERGE INTO`. Writes go through `hudi_md.write` (PySpark), which keeps the timeline
 * and the metadata table in step.
 *
 * The check runs during analysis ([[HudiMdExtensions]] injects it into sessions that start with the
 * shim jar on their classpath), i.e. before Spark runs the command:
 * `InsertIntoHadoopFsRelationCommand` deletes the partitions an `INSERT OVERWRITE` replaces before
 * it asks the file format for a writer, so [[HudiMdFileFormat.prepareWrite]] alone comes too late.
 * [[DefaultSource]]'s `CreatableRelationProvider.createRelation` and `prepareWrite` refuse too, for
 * a session the extension was not loaded into (the jar added after the session started).
 */
object WriteGuard {

  /** Provider names of the `hudi-md` data source in a catalog table (compared case-insensitively). */
  val ProviderNames: Set[String] =
    Set("hudi-md", "hudi_md", classOf[DefaultSource].getName, classOf[HudiMdSource].getName)
      .map(_.toLowerCase(Locale.ROOT))

  val SupportedWrite: String =
    "write from PySpark with hudi_md.write(df, path, operation=..., options={...}) " +
      "(operations: insert, bulk_insert, upsert, delete, insert_overwrite, insert_overwrite_table)"

  def message(what: String, target: String): String =
    s"hudi-md does not support $what on a hudi-md table ($target): Spark's own writer would add or " +
      "delete files outside the Hudi timeline, which no hudi-md reader sees. Nothing was written; " +
      SupportedWrite + "."

  def refuse(what: String, target: String): Nothing = throw new HudiMdWriteException(message(what, target))

  def isHudiMdProvider(provider: String): Boolean =
    provider != null && ProviderNames.contains(provider.trim.toLowerCase(Locale.ROOT))

  private def isHudiMd(table: CatalogTable): Boolean = table.provider.exists(isHudiMdProvider)

  private def describe(table: CatalogTable): String =
    table.identifier.unquotedString + table.storage.locationUri.fold("")(u => s" at $u")

  /** The `hudi-md` table a write target resolves to (its name or path), if it is one. */
  def hudiMdTarget(target: LogicalPlan): Option[String] =
    target.collectFirst {
      case l: LogicalRelation if isHudiMdRelation(l) =>
        l.catalogTable.map(describe).getOrElse(l.relation.asInstanceOf[HadoopFsRelation].location.rootPaths.mkString(", "))
      case l: LogicalRelation if l.catalogTable.exists(isHudiMd) => describe(l.catalogTable.get)
      case r: UnresolvedCatalogRelation if isHudiMd(r.tableMeta) => describe(r.tableMeta)
      case r: HiveTableRelation if isHudiMd(r.tableMeta)         => describe(r.tableMeta)
    }

  private def isHudiMdRelation(l: LogicalRelation): Boolean = l.relation match {
    case h: HadoopFsRelation => h.fileFormat.isInstanceOf[HudiMdFileFormat]
    case _                   => false
  }

  /** Throws [[HudiMdWriteException]] if `plan` writes into a `hudi-md` table anywhere. */
  def check(plan: LogicalPlan): Unit = plan.foreach {
    case c: InsertIntoHadoopFsRelationCommand
        if c.fileFormat.isInstanceOf[HudiMdFileFormat] || c.catalogTable.exists(isHudiMd) =>
      val what = if (c.mode == org.apache.spark.sql.SaveMode.Overwrite) "INSERT OVERWRITE" else "INSERT INTO"
      refuse(what, c.catalogTable.map(describe).getOrElse(c.outputPath.toString))
    case i: InsertIntoStatement =>
      hudiMdTarget(i.table).foreach(t => refuse(if (i.overwrite) "INSERT OVERWRITE" else "INSERT INTO", t))
    case c: CreateTable if c.query.isDefined && isHudiMd(c.tableDesc) =>
      refuse("CREATE TABLE AS SELECT / DataFrameWriter.saveAsTable", describe(c.tableDesc))
    case c: CreateDataSourceTableAsSelectCommand if isHudiMd(c.table) =>
      refuse("CREATE TABLE AS SELECT / DataFrameWriter.saveAsTable", describe(c.table))
    case c: SaveIntoDataSourceCommand if c.dataSource.isInstanceOf[DefaultSource] =>
      refuse("DataFrameWriter.save (df.write.format(\"hudi-md\"))", pathOption(c.options))
    case c: InsertIntoDataSourceDirCommand if isHudiMdProvider(c.provider) =>
      refuse("INSERT OVERWRITE DIRECTORY", c.storage.locationUri.fold("no path")(_.toString))
    case u: UpdateTable     => hudiMdTarget(u.table).foreach(refuse("UPDATE", _))
    case d: DeleteFromTable => hudiMdTarget(d.table).foreach(refuse("DELETE FROM", _))
    case m: MergeIntoTable  => hudiMdTarget(m.targetTable).foreach(refuse("MERGE INTO", _))
    case _                  => ()
  }

  /** The `path` of a writer's options (a case-insensitive map from Spark), for messages. */
  def pathOption(options: Map[String, String]): String =
    options.get("path").orElse(options.collectFirst { case (k, v) if k.equalsIgnoreCase("path") => v })
      .getOrElse("no path")
}

/**
 * Registered in `META-INF/services/org.apache.spark.sql.SparkSessionExtensionsProvider` (Spark 4
 * applies it to every session created while the shim jar is on the classpath) and named in
 * `spark.sql.extensions` by `hudi_md.spark.session.configure` (sessions PySpark 3.5 creates only
 * apply that conf; the `spark-sql` / `spark-submit` builders of both lines also load the service file).
 *
 * The check runs twice: as a resolution rule, so a write into a `hudi-md` table is refused before
 * Spark's own post-hoc checks (table creation, insert column matching) fail it with a message that
 * does not say how to write, and as a check rule on the analyzed plan.
 */
class HudiMdExtensions extends SparkSessionExtensionsProvider {
  override def apply(extensions: SparkSessionExtensions): Unit = {
    extensions.injectResolutionRule(_ => WriteGuardRule)
    extensions.injectCheckRule(_ => WriteGuard.check)
  }
}

/** [[WriteGuard.check]] as an analyzer rule (it never changes the plan). */
object WriteGuardRule extends Rule[LogicalPlan] {
  override def apply(plan: LogicalPlan): LogicalPlan = {
    WriteGuard.check(plan)
    plan
  }
}
