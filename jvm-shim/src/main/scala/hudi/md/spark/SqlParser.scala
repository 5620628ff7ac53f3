package hudi.md.spark

import java.lang.reflect.{InvocationHandler, InvocationTargetException, Method, Proxy}
import java.time.format.DateTimeFormatter
import java.util.Locale

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.analysis.{RelationTimeTravel, UnresolvedRelation}
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression}
import org.apache.spark.sql.catalyst.parser.ParserInterface
import org.apache.spark.sql.catalyst.plans.logical.{LeafNode, LogicalPlan, SubqueryAlias}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.util.DateTimeUtils
import org.apache.spark.sql.types.{StringType, TimestampType}
import org.apache.spark.unsafe.types.UTF8String

/**
 * hudi-md's SQL parser: `CALL` statements ([[CallStatement]]), then the session's parser, and on
 * what it parsed, `TIMESTAMP AS OF` / `VERSION AS OF` handed to hudi-md ([[HudiMdTimeTravel]])
 * instead of Spark's time travel, which refuses a Hudi instant string as a timestamp
 * (`INVALID_TIME_TRAVEL_TIMESTAMP_EXPR`) and V1 tables anyway.
 *
 * A `java.lang.reflect.Proxy` over `ParserInterface`: its methods differ between Spark lines (4.x
 * adds parameterized plans, routine parameters, statement splitting), and every one but the plan
 * parsers is the delegate's as it is.
 */
object SqlParser {

  private val PlanMethods = Set("parsePlan", "parsePlanWithParameters", "parseQuery")

  def apply(session: SparkSession, delegate: ParserInterface): ParserInterface =
    Proxy
      .newProxyInstance(getClass.getClassLoader, Array(classOf[ParserInterface]), new Handler(session, delegate))
      .asInstanceOf[ParserInterface]

  private final class Handler(session: SparkSession, delegate: ParserInterface) extends InvocationHandler {
    override def invoke(proxy: AnyRef, method: Method, args: Array[AnyRef]): AnyRef = method.getName match {
      case "toString" if method.getParameterCount == 0 => s"hudi-md parser over $delegate"
      case "hashCode" if method.getParameterCount == 0 => Integer.valueOf(System.identityHashCode(proxy))
      case "equals" if method.getParameterCount == 1   => java.lang.Boolean.valueOf(proxy eq args(0))
      case name =>
        val call = args match {
          case Array(sql: String, _*) if name == "parsePlan" || name == "parsePlanWithParameters" =>
            CallStatement.parse(sql, delegate)
          case _ => None
        }
        call.getOrElse {
          val result =
            try method.invoke(delegate, args: _*)
            catch { case e: InvocationTargetException => throw e.getCause }
          result match {
            case plan: LogicalPlan if PlanMethods.contains(name) =>
              CatalogNames.statementsToSessionCatalog(session, markTimeTravel(plan))
            case other                                           => other
          }
        }
    }
  }

  /** Every time-travel relation (subqueries included) as [[HudiMdTimeTravel]]. */
  def markTimeTravel(plan: LogicalPlan): LogicalPlan = plan.transformUpWithSubqueries {
    case RelationTimeTravel(relation: UnresolvedRelation, timestamp, version) =>
      HudiMdTimeTravel(relation, timestamp, version)
  }
}

/**
 * `relation TIMESTAMP AS OF timestamp` or `VERSION AS OF version` as parsed, until
 * [[TimeTravelRule]] knows whether `relation` is a hudi-md table. Unresolved: it holds no output.
 */
case class HudiMdTimeTravel(relation: UnresolvedRelation, timestamp: Option[Expression], version: Option[String])
    extends LeafNode {
  override def output: Seq[Attribute] = Nil
  override lazy val resolved: Boolean = false
}

/**
 * A resolution rule: a [[HudiMdTimeTravel]] of a hudi-md catalog table reads it as of the instant
 * given — Apache Hudi 1.2's `TIMESTAMP AS OF`: the commits requested at or before it, the instant as
 * `yyyyMMddHHmmss[SSS]` or `yyyy-MM-dd HH:mm:ss[.SSS]` (a timestamp value: in the session time
 * zone), the same read as the `as.of.instant` option. `VERSION AS OF` takes an instant time too.
 * Any other relation gets Spark's own time travel back.
 */
case class TimeTravelRule(session: SparkSession) extends Rule[LogicalPlan] {

  override def apply(plan: LogicalPlan): LogicalPlan = plan.resolveOperatorsUpWithPruning(_ => true) {
    case t @ HudiMdTimeTravel(relation, timestamp, version) if timestamp.forall(_.resolved) =>
      hudiMdTable(relation) match {
        case Some(table) => read(relation, table, instant(t))
        case None        => RelationTimeTravel(relation, timestamp, version)
      }
  }

  private def hudiMdTable(relation: UnresolvedRelation): Option[org.apache.spark.sql.catalyst.catalog.CatalogTable] =
    CatalogTables.lookup(session, relation.multipartIdentifier).filter(WriteGuard.isHudiMd)

  private def read(relation: UnresolvedRelation, table: org.apache.spark.sql.catalyst.catalog.CatalogTable, asOf: String): LogicalPlan = {
    val (location, storage) = CatalogTables.location(table)
    val read = SessionCompat.analyzed(session.read.format("hudi-md").options(storage + (Protocol.AsOf -> asOf)).load(location))
    val name = table.identifier
    SubqueryAlias(Seq("spark_catalog", name.database.getOrElse(session.sessionState.catalog.getCurrentDatabase), name.table), read)
  }

  /** The instant string of a `TIMESTAMP AS OF` / `VERSION AS OF`. */
  private def instant(t: HudiMdTimeTravel): String = t.timestamp match {
    case Some(e) =>
      if (!e.foldable) fail(s"TIMESTAMP AS OF takes a constant, got ${e.sql}")
      (e.dataType, e.eval()) match {
        case (_, null)                     => fail("TIMESTAMP AS OF NULL")
        case (StringType, s: UTF8String)   => s.toString.trim
        case (TimestampType, micros: java.lang.Long) =>
          val zone = DateTimeUtils.getZoneId(session.sessionState.conf.sessionLocalTimeZone)
          InstantFormat.format(DateTimeUtils.microsToInstant(micros).atZone(zone))
        case (other, _) => fail(s"TIMESTAMP AS OF takes an instant time string or a timestamp, got ${other.simpleString}")
      }
    case None =>
      val v = t.version.getOrElse("").trim
      if (!v.forall(_.isDigit) || v.length < 14) {
        fail(s"VERSION AS OF takes an instant time like 20240101123000000 (hudi-md tables have no numbered versions), got '$v'")
      }
      v
  }

  private val InstantFormat = DateTimeFormatter.ofPattern("yyyyMMddHHmmssSSS", Locale.ROOT)

  private def fail(message: String): Nothing = throw new IllegalArgumentException(s"hudi-md: $message")
}
