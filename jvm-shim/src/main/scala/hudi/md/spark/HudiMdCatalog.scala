package hudi.md.spark

import java.util.Locale

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.analysis.{UnresolvedIdentifier, UnresolvedRelation, UnresolvedTable, UnresolvedTableOrView}
import org.apache.spark.sql.catalyst.catalog.CatalogTable
import org.apache.spark.sql.catalyst.expressions.{Expression, PredicateHelper}
import org.apache.spark.sql.catalyst.plans.logical.{Command, Filter, InsertIntoStatement, LogicalPlan}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.connector.catalog.{Column, DelegatingCatalogExtension, Identifier, Table, TableProvider}
import org.apache.spark.sql.connector.expressions.Transform
import org.apache.spark.sql.execution.datasources.{HadoopFsRelation, LogicalRelation}
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.CaseInsensitiveStringMap

/**
 * `spark.read.format("hudi-md-v2").load(path)`: the table at a path as a DataSource V2 table
 * ([[HudiMdTable]]), the same options as `hudi-md`, no session extension needed. With the session
 * extension on, `format("hudi-md")` queries read through the same scan anyway ([[UseV2Scan]]).
 * DataFrame writes (`df.write.format("hudi-md-v2")`) fall back to `hudi-md`'s V1 writer, as Spark
 * does for a table without V2 batch writes; so does streaming.
 */
class HudiMdTableProvider extends DefaultSource with TableProvider {

  override def shortName(): String = "hudi-md-v2"

  @transient private var last: Option[(Map[String, String], HudiMdTable)] = None

  override def inferSchema(options: CaseInsensitiveStringMap): StructType = table(options).schema()

  override def inferPartitioning(options: CaseInsensitiveStringMap): Array[Transform] = table(options).partitioning()

  override def getTable(schema: StructType, partitioning: Array[Transform], properties: java.util.Map[String, String]): Table =
    table(new CaseInsensitiveStringMap(properties))

  /** One relation per options (Spark asks the schema, then the table). */
  private def table(options: CaseInsensitiveStringMap): HudiMdTable = synchronized {
    val requested = JavaCompat.scalaMap(options.asCaseSensitiveMap())
    last.collect { case (o, t) if o == requested => t }.getOrElse {
      val session = SparkSession.active
      val relation = createRelation(session.sqlContext, requested).asInstanceOf[HadoopFsRelation]
      val t = new HudiMdTable(relation, None)
      last = Some((requested, t))
      t
    }
  }
}

/**
 * A catalog of hudi-md tables, usable two ways:
 *
 *  - as the session catalog (`spark.sql.catalog.spark_catalog=hudi.md.spark.HudiMdCatalog`, what
 *    Apache Hudi's users set for `HoodieCatalog`): every table is the session catalog's; hudi-md
 *    tables keep their V1 entries, so every statement runs as without it (queries read through
 *    the V2 scan anyway, [[UseV2Scan]]);
 *  - as a named catalog (`spark.sql.catalog.lake=hudi.md.spark.HudiMdCatalog`): the session
 *    catalog's databases and tables under another name, hudi-md tables loaded as [[HudiMdTable]]s
 *    (queries through the V2 scan). Statements that change a table (INSERT, UPDATE, DELETE, MERGE
 *    INTO, DDL) name the same table in the session catalog before analysis ([[CatalogNames]]), so
 *    they run exactly as on `spark_catalog`.
 */
class HudiMdCatalog extends DelegatingCatalogExtension {

  private var catalogName: String = HudiMdCatalog.SessionCatalogName

  override def initialize(name: String, options: CaseInsensitiveStringMap): Unit = {
    catalogName = name
    // Spark hands the session catalog to its own extension only; a named one wraps it here.
    if (name != HudiMdCatalog.SessionCatalogName) setDelegateCatalog(SessionCompat.v2SessionCatalog(SparkSession.active))
  }

  override def name(): String = catalogName

  override def loadTable(ident: Identifier): Table = {
    val table = super.loadTable(ident)
    if (catalogName == HudiMdCatalog.SessionCatalogName || !isHudiMd(table)) table
    else HudiMdCatalog.v2Table(SparkSession.active, ident)
  }

  override def createTable(
      ident: Identifier,
      columns: Array[Column],
      partitions: Array[Transform],
      properties: java.util.Map[String, String]): Table = {
    refuseHudiMd(properties, ident)
    super.createTable(ident, columns, partitions, properties)
  }

  override def createTable(
      ident: Identifier,
      schema: StructType,
      partitions: Array[Transform],
      properties: java.util.Map[String, String]): Table = {
    refuseHudiMd(properties, ident)
    super.createTable(ident, schema, partitions, properties)
  }

  /** A hudi-md table created through the V2 API would be a catalog entry without a Hudi table. */
  private def refuseHudiMd(properties: java.util.Map[String, String], ident: Identifier): Unit =
    Option(properties.get("provider")).filter(WriteGuard.isHudiMdProvider).foreach { _ =>
      throw new HudiMdWriteException(
        s"hudi-md: $catalogName.${ident.namespace().mkString(".")}.${ident.name()}: create hudi-md tables with SQL " +
          "CREATE TABLE ... USING hudi-md or df.write.format(\"hudi-md\").saveAsTable(...); DataFrameWriterV2 " +
          "(df.writeTo) does not create them")
    }

  private def isHudiMd(table: Table): Boolean =
    Option(table.properties().get("provider")).exists(WriteGuard.isHudiMdProvider)
}

object HudiMdCatalog {

  /** Spark's name of the session catalog. */
  val SessionCatalogName = "spark_catalog"

  /** The session catalog's hudi-md table `ident` as a V2 table, read as `hudi-md` reads it. */
  def v2Table(session: SparkSession, ident: Identifier): HudiMdTable = {
    val name = org.apache.spark.sql.catalyst.TableIdentifier(ident.name(), ident.namespace().lastOption)
    val catalogTable = SessionCompat.catalogTable(session, name).getOrElse(
      throw new IllegalArgumentException(s"hudi-md: no table $name in the session catalog"))
    new HudiMdTable(relationOf(session, catalogTable), Some(catalogTable))
  }

  private def relationOf(session: SparkSession, table: CatalogTable): HadoopFsRelation = {
    val (location, storage) = CatalogTables.location(table)
    new DefaultSource()
      .createRelation(session.sqlContext, storage + ("path" -> location), table.schema)
      .asInstanceOf[HadoopFsRelation]
  }
}

/**
 * The named [[HudiMdCatalog]]s of a session, and the parse-time step that sends statements
 * changing their tables to the session catalog (where the extension's rules plan them).
 */
object CatalogNames {

  private val CatalogConf = "spark.sql.catalog."

  /** Names of the session's catalogs that are hudi-md catalogs other than the session catalog. */
  def named(session: SparkSession): Set[String] =
    session.conf.getAll.collect {
      case (k, v) if k.startsWith(CatalogConf) && !k.stripPrefix(CatalogConf).contains('.') &&
          v.trim == classOf[HudiMdCatalog].getName && k.stripPrefix(CatalogConf) != HudiMdCatalog.SessionCatalogName =>
        k.stripPrefix(CatalogConf).toLowerCase(Locale.ROOT)
    }.toSet

  /** A statement (not a query) naming a table of a named hudi-md catalog names it in `spark_catalog`. */
  def statementsToSessionCatalog(session: SparkSession, plan: LogicalPlan): LogicalPlan = plan match {
    case _: InsertIntoStatement | _: Command =>
      val names = named(session)
      if (names.isEmpty) plan
      else {
        def swap(parts: Seq[String]): Option[Seq[String]] =
          if (parts.size == 3 && names.contains(parts.head.toLowerCase(Locale.ROOT)))
            Some(HudiMdCatalog.SessionCatalogName +: parts.tail)
          else None
        plan.transformUpWithSubqueries {
          case u: UnresolvedRelation     => swap(u.multipartIdentifier).fold[LogicalPlan](u)(p => u.copy(multipartIdentifier = p))
          case u: UnresolvedTable        => swap(u.multipartIdentifier).fold[LogicalPlan](u)(p => u.copy(multipartIdentifier = p))
          case u: UnresolvedTableOrView  => swap(u.multipartIdentifier).fold[LogicalPlan](u)(p => u.copy(multipartIdentifier = p))
          case u: UnresolvedIdentifier   => swap(u.nameParts).fold[LogicalPlan](u)(p => u.copy(nameParts = p))
        } match {
          case i: InsertIntoStatement =>
            i.table match {
              case u: UnresolvedRelation => swap(u.multipartIdentifier).fold[LogicalPlan](i)(p => i.copy(table = u.copy(multipartIdentifier = p)))
              case _                     => i
            }
          case other => other
        }
      }
    case query => query
  }
}

/**
 * An optimizer rule (before the V2 push-down, once the filters sit on the relations they filter):
 * a query reading a `hudi-md` relation reads it through the DataSource V2 scan ([[HudiMdScan]]:
 * pushed filters, runtime filtering, Spark's vectorized Parquet reader) — the relation's own index,
 * format and attributes, so nothing above it changes; the filter on the relation goes along as
 * Catalyst expressions ([[HudiMdTable.queryFilters]]). Statements keep their V1 targets (they are
 * planned before the optimizer); streaming relations and reads of `_metadata` stay V1.
 * `spark.hudi_md.read.connector=v1` keeps every read on the V1 scan.
 */
case class UseV2Scan(session: SparkSession) extends Rule[LogicalPlan] with PredicateHelper {

  override def apply(plan: LogicalPlan): LogicalPlan =
    if (!UseV2Scan.enabled(session)) plan
    else {
      val filters = new java.util.IdentityHashMap[LogicalRelation, Seq[Expression]]()
      plan.foreach {
        case Filter(condition, l: LogicalRelation) => filters.put(l, splitConjunctivePredicates(condition))
        case _                                      => ()
      }
      plan.transformUp {
        case l: LogicalRelation if !l.isStreaming && l.output.size == l.relation.schema.size =>
          l.relation match {
            case fs: HadoopFsRelation if fs.fileFormat.isInstanceOf[HudiMdFileFormat] =>
              val table = new HudiMdTable(fs, l.catalogTable, Option(filters.get(l)).getOrElse(Nil))
              DataSourceV2Relation.create(table, None, None).copy(output = l.output)
            case _ => l
          }
      }
    }
}

object UseV2Scan {
  val ConnectorConf = "spark.hudi_md.read.connector"

  def enabled(session: SparkSession): Boolean =
    session.conf.getOption(ConnectorConf).forall(_.trim.toLowerCase(Locale.ROOT) != "v1")
}
