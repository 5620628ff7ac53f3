package hudi.md.spark

import java.util.Locale

import org.apache.spark.sql.{AnalysisException, SparkSessionExtensions, SparkSessionExtensionsProvider}
import org.apache.spark.sql.catalyst.catalog.{CatalogTable, HiveTableRelation, UnresolvedCatalogRelation}
import org.apache.spark.sql.catalyst.plans.logical.{DeleteFromTable, LogicalPlan, MergeIntoTable, UpdateTable}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.command.InsertIntoDataSourceDirCommand
import org.apache.spark.sql.execution.datasources.{HadoopFsRelation, InsertIntoHadoopFsRelationCommand, LogicalRelation}

/**
 * A Spark write into a `hudi-md` table that hudi-md does not carry out, refused before anything
 * is written: Spark's generic writers would add files no Hudi instant wrote (no reader sees them)
 * or delete partitions behind the timeline's back.
 */
class HudiMdWriteException(message: String) extends AnalysisException(message)

/**
 * What the session extension refuses at analysis: `INSERT OVERWRITE DIRECTORY ... USING hudi-md`,
 * and any write into a `hudi-md` table [[WriteRules]] did not plan (it plans `INSERT INTO` /
 * `INSERT OVERWRITE`, `UPDATE`, `MERGE INTO` and `DELETE FROM`; [[DefaultSource]] takes
 * `df.write.format("hudi-md").save`, `saveAsTable` and CTAS).
 *
 * The check runs during analysis ([[HudiMdExtensions]] injects it into sessions that start with the
 * shim jar on their classpath), i.e. before Spark runs the command. A session the extension was
 * not loaded into (the jar added after the session started) still writes through `DefaultSource`,
 * but its SQL `INSERT` reaches Spark's own file writer: [[HudiMdFileFormat.prepareWrite]] refuses
 * it, too late for `INSERT OVERWRITE`, whose partitions Spark deletes first.
 */
object WriteGuard {

  /** Provider names of the `hudi-md` data source in a catalog table (compared case-insensitively). */
  val ProviderNames: Set[String] =
    Set("hudi-md", "hudi_md", classOf[DefaultSource].getName, classOf[HudiMdSource].getName)
      .map(_.toLowerCase(Locale.ROOT))

  val SupportedWrite: String =
    "write with SQL INSERT INTO / INSERT OVERWRITE / UPDATE / MERGE INTO / DELETE FROM on the table, " +
      "df.write.format(\"hudi-md\").mode(...).options(...).save(path), or from PySpark " +
      "hudi_md.write(df, path, operation=..., options={...}) (operations: insert, bulk_insert, upsert, delete, " +
      "insert_overwrite, insert_overwrite_table, delete_partition)"

  def message(what: String, target: String, hint: String = SupportedWrite): String =
    s"hudi-md does not support $what on a hudi-md table ($target). Nothing was written; $hint."

  def refuse(what: String, target: String, hint: String = SupportedWrite): Nothing =
    throw new HudiMdWriteException(message(what, target, hint))

  def isHudiMdProvider(provider: String): Boolean =
    provider != null && ProviderNames.contains(provider.trim.toLowerCase(Locale.ROOT))

  def isHudiMd(table: CatalogTable): Boolean = table.provider.exists(isHudiMdProvider)

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

  /** Throws [[HudiMdWriteException]] if `plan` writes into a `hudi-md` table in a way hudi-md does not. */
  def check(plan: LogicalPlan): Unit = plan.foreach {
    case c: InsertIntoHadoopFsRelationCommand
        if c.fileFormat.isInstanceOf[HudiMdFileFormat] || c.catalogTable.exists(isHudiMd) =>
      val what = if (c.mode == org.apache.spark.sql.SaveMode.Overwrite) "INSERT OVERWRITE" else "INSERT INTO"
      refuse(what + " through Spark's file writer", c.catalogTable.map(describe).getOrElse(c.outputPath.toString))
    case c: InsertIntoDataSourceDirCommand if isHudiMdProvider(c.provider) =>
      refuse("INSERT OVERWRITE DIRECTORY", c.storage.locationUri.fold("no path")(_.toString))
    case u: UpdateTable     => hudiMdTarget(u.table).foreach(refuse("this UPDATE", _))
    case m: MergeIntoTable  => hudiMdTarget(m.targetTable).foreach(refuse("this MERGE INTO", _))
    case d: DeleteFromTable => hudiMdTarget(d.table).foreach(refuse("this DELETE FROM", _))
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
 * Resolution rules: [[WriteRules.FillMetaColumns]] (inserts without Hudi's meta columns) and
 * [[WriteGuardRule]] (INSERT OVERWRITE DIRECTORY refused before Spark's own checks); post-hoc:
 * [[WriteRules.PlanWrites]] (SQL writes into [[DefaultSource]], `UPDATE` / `MERGE INTO` through
 * [[RowLevelWrites]], `SHOW PARTITIONS`); [[WriteGuard.check]] on the analyzed plan; and the
 * table function `hudi_table_changes` ([[TableChanges]]).
 */
class HudiMdExtensions extends SparkSessionExtensionsProvider {
  override def apply(extensions: SparkSessionExtensions): Unit = {
    extensions.injectParser((session, delegate) => SqlParser(session, delegate))
    extensions.injectResolutionRule(_ => WriteGuardRule)
    extensions.injectResolutionRule(session => TimeTravelRule(session))
    extensions.injectResolutionRule(session => CallRule(session))
    extensions.injectResolutionRule(session => WriteRules.FillMetaColumns(session))
    extensions.injectPostHocResolutionRule(_ => WriteRules.PlanWrites)
    extensions.injectPreCBORule(session => UseV2Scan(session))
    extensions.injectCheckRule(_ => WriteGuard.check)
    extensions.injectTableFunction(TableChanges.description)
  }
}

/** INSERT OVERWRITE DIRECTORY into `hudi-md`, refused during resolution. */
object WriteGuardRule extends Rule[LogicalPlan] {
  override def apply(plan: LogicalPlan): LogicalPlan = {
    plan.foreach {
      case _: InsertIntoDataSourceDirCommand => WriteGuard.check(plan)
      case _                                 => ()
    }
    plan
  }
}
