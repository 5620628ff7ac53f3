package hudi.md.spark

import java.util.Locale

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.FunctionIdentifier
import org.apache.spark.sql.catalyst.expressions.{Expression, ExpressionInfo}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan

/**
 * `SELECT * FROM hudi_table_changes('db.t' | '<path>', 'latest_state', '<begin>' [, '<end>'])`:
 * Apache Hudi's table-valued function for incremental reads, on `hudi-md` tables — the latest
 * state of the records written by the commits after `begin` (exclusive; `earliest` for every
 * commit) up to `end` (inclusive), the same read as `format("hudi-md")` with
 * `hoodie.datasource.query.type=incremental` ([[Incremental]]). Hudi's `cdc` query type needs the
 * CDC log, which hudi-md does not write: refused, naming `latest_state`.
 */
object TableChanges {

  val Name = "hudi_table_changes"

  /** The function as [[HudiMdExtensions]] registers it. */
  val description: (FunctionIdentifier, ExpressionInfo, Seq[Expression] => LogicalPlan) =
    (FunctionIdentifier(Name), new ExpressionInfo(getClass.getCanonicalName, Name), (args: Seq[Expression]) => plan(args))

  private val Usage = s"$Name('<db.table or path>', 'latest_state', '<begin instant or earliest>' [, '<end instant>'])"

  /** Apache Hudi's own function (its Spark bundle's), for tables of another provider when a session
   *  carries both extensions: the last one registered takes the name. */
  private val HudiTableChanges = "org.apache.spark.sql.catalyst.plans.logical.HoodieTableChanges"

  def plan(args: Seq[Expression]): LogicalPlan = {
    if (args.size < 3 || args.size > 4) fail(s"takes 3 or 4 arguments, got ${args.size}")
    val values = args.map { a =>
      if (!a.foldable) fail(s"arguments must be constants, got $a")
      Option(a.eval()).map(_.toString.trim).getOrElse(fail("arguments must not be NULL"))
    }
    hudiFunction(values.head, args).getOrElse(hudiMdPlan(values))
  }

  private def hudiMdPlan(values: Seq[String]): LogicalPlan = {
    val queryType = values(1).toLowerCase(Locale.ROOT)
    if (queryType != "latest_state") {
      fail(s"query type '${values(1)}' is not supported: hudi-md reads 'latest_state' (it writes no CDC log)")
    }
    val begin = if (values(2).equalsIgnoreCase("earliest")) "000" else values(2)
    val session = SparkSession.active
    val (path, tableOptions) = locate(session, values.head)
    val options = tableOptions ++ Map(
      Incremental.QueryTypeKey -> Protocol.QueryIncremental,
      Incremental.BeginKey -> begin) ++ values.lift(3).map(Incremental.EndKey -> _)
    SessionCompat.analyzed(session.read.format("hudi-md").options(options).load(path))
  }

  /** Apache Hudi's plan of the call, when `ref` names a catalog table that is not a hudi-md one
   *  and Hudi's bundle is loaded. */
  private def hudiFunction(ref: String, args: Seq[Expression]): Option[LogicalPlan] =
    if (ref.contains("/") || ref.contains(":")) None
    else {
      CatalogTables.lookup(SparkSession.active, ref).filterNot(WriteGuard.isHudiMd).flatMap { _ =>
        try {
          val cls = Class.forName(HudiTableChanges, true, Thread.currentThread().getContextClassLoader)
          Some(cls.getConstructors.head.newInstance(args).asInstanceOf[LogicalPlan])
        } catch {
          case _: ClassNotFoundException | _: LinkageError => None
        }
      }
    }

  /** A table name's location and storage options, or a path as it is. */
  private def locate(session: SparkSession, ref: String): (String, Map[String, String]) =
    if (ref.contains("/") || ref.contains(":")) (ref, Map.empty)
    else {
      val table = CatalogTables.lookup(session, ref).getOrElse(fail(s"no table $ref"))
      if (!WriteGuard.isHudiMd(table)) fail(s"$ref is not a hudi-md table (its provider is ${table.provider.getOrElse("none")})")
      CatalogTables.location(table)
    }

  private def fail(message: String): Nothing =
    throw new HudiMdTableChangesException(s"$Name: $message; usage: $Usage")
}

/** A bad call of `hudi_table_changes` (not an `AnalysisException`: Spark 4 re-creates those with the
 *  call's position, and PySpark then fails to read a message without an error class). */
class HudiMdTableChangesException(message: String) extends IllegalArgumentException(message)
