package hudi.md.spark

import java.util.Locale

import com.fasterxml.jackson.databind.node.ObjectNode
import org.apache.spark.sql.{Row, SaveMode, SparkSession}
import org.apache.spark.sql.catalyst.analysis.EliminateSubqueryAliases
import org.apache.spark.sql.catalyst.catalog.CatalogTable
import org.apache.spark.sql.catalyst.expressions.{Alias, AttributeReference, Expression, Literal}
import org.apache.spark.sql.catalyst.plans.logical.{DeleteFromTable, Filter, InsertIntoStatement, LogicalPlan, MergeIntoTable, Project, UpdateTable}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.util.CaseInsensitiveMap
import org.apache.spark.sql.execution.command.{AlterTableAddColumnsCommand, AlterTableDropPartitionCommand, CreateDataSourceTableAsSelectCommand, CreateDataSourceTableCommand, LeafRunnableCommand, ShowPartitionsCommand, TruncateTableCommand}
import org.apache.spark.sql.execution.datasources.{CreateTable, HadoopFsRelation, InsertIntoHadoopFsRelationCommand, LogicalRelation, SaveIntoDataSourceCommand}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.StringType

/**
 * SQL writes into `hudi-md` tables, as the session extension ([[HudiMdExtensions]]) plans them:
 * `INSERT INTO` / `INSERT OVERWRITE` (static and dynamic partitions) and `DELETE FROM` become
 * Spark's `SaveIntoDataSourceCommand` into [[DefaultSource]], whose `createRelation` hands the
 * rows to the Python writer ([[WriteBridge]]); the statement's meaning travels as a JSON
 * descriptor in the internal option [[SqlWriteOption]] (see `hudi_md/spark/write_request.py`).
 */
object WriteRules {

  /** The option carrying an SQL write's descriptor from these rules to [[DefaultSource]]. */
  val SqlWriteOption = "hudi_md.internal.sql.write"

  /** Hudi's meta columns, which hudi-md tables read first and which a write never takes. */
  val MetaColumns: Seq[String] =
    Seq("_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path", "_hoodie_file_name")

  private val RecordKey = "hoodie.datasource.write.recordkey.field"
  private val Precombine = "hoodie.datasource.write.precombine.field"
  private val TableType = "hoodie.datasource.write.table.type"
  private val PartitionPath = "hoodie.datasource.write.partitionpath.field"
  private val HiveStyle = "hoodie.datasource.write.hive_style_partitioning"
  private val TableName = "hoodie.table.name"
  private val DatabaseName = "hoodie.database.name"

  /**
   * Spark SQL's short option names of Hudi tables (Apache Hudi's `HoodieOptionConfig`), lower
   * case, and the Hudi keys they stand for. Table options, never storage options: reads do not
   * pass them to the planner, writes get Hudi's keys ([[hudiOptions]]).
   */
  val SqlOptionKeys: Map[String, String] = Map(
    "primarykey" -> RecordKey,
    "precombinefield" -> Precombine,
    "orderingfields" -> Precombine,
    "type" -> TableType,
    "recordmergemode" -> "hoodie.record.merge.mode")

  val SqlOptionNames: Set[String] = SqlOptionKeys.keySet

  /**
   * `props` with Spark SQL's short names as Hudi's keys (`type` = cow | mor as COPY_ON_WRITE |
   * MERGE_ON_READ); other keys kept when `keepOthers` (a table's OPTIONS: storage options), else
   * only `hoodie.*` ones (TBLPROPERTIES also hold the catalog's own entries).
   */
  def hudiOptions(props: Map[String, String], keepOthers: Boolean): Map[String, String] = props.flatMap { case (k, v) =>
    SqlOptionKeys.get(k.toLowerCase(Locale.ROOT)) match {
      case Some(TableType) =>
        Some(TableType -> (v.trim.toLowerCase(Locale.ROOT) match {
          case "cow" => "COPY_ON_WRITE"
          case "mor" => "MERGE_ON_READ"
          case _     => v
        }))
      case Some(key)                                      => Some(key -> v)
      case None if keepOthers || k.startsWith("hoodie.") => Some(k -> v)
      case None                                           => None
    }
  }

  private val PartitionOverwriteModeConf = "spark.sql.sources.partitionOverwriteMode"
  private val PartitionOverwriteModeOption = "partitionOverwriteMode"

  /** The `hudi-md` relation a write target resolves to. */
  def hudiMdRelation(target: LogicalPlan): Option[LogicalRelation] = EliminateSubqueryAliases(target) match {
    case l: LogicalRelation if isHudiMd(l) => Some(l)
    case _                                 => None
  }

  private def isHudiMd(l: LogicalRelation): Boolean = l.relation match {
    case h: HadoopFsRelation => h.fileFormat.isInstanceOf[HudiMdFileFormat]
    case _                   => false
  }

  /** The `hudi-md` relation the catalog table `table` reads as (commands that run on a table). */
  def catalogRelation(session: SparkSession, table: org.apache.spark.sql.catalyst.TableIdentifier): LogicalRelation =
    SessionCompat.analyzed(session.table(table.quotedString)).collectFirst {
      case l: LogicalRelation if isHudiMd(l) => l
    }.getOrElse(throw new IllegalStateException(s"hudi-md: $table does not read as a hudi-md table"))

  /** A `hudi-md` relation's file index (its planner). */
  def fileIndex(target: LogicalRelation): HudiMdFileIndex =
    target.relation.asInstanceOf[HadoopFsRelation].location.asInstanceOf[HudiMdFileIndex]

  /**
   * A resolution rule: `INSERT INTO t VALUES (...)` / `SELECT ...` / `(cols) ...` / `BY NAME`
   * without Hudi's meta columns (the table reads them first) gets them as NULLs, as Apache
   * Hudi's SQL takes rows without them. Rows that carry them (a copy of another Hudi table) stay
   * as they are; the writer ignores their values.
   */
  case class FillMetaColumns(session: SparkSession) extends Rule[LogicalPlan] {
    override def apply(plan: LogicalPlan): LogicalPlan = plan.resolveOperators {
      case i: InsertIntoStatement if i.query.resolved && hudiMdRelation(i.table).isDefined => fill(i, hudiMdRelation(i.table).get)
      case c: CreateTable if c.mode == SaveMode.Append && c.query.exists(_.resolved) && WriteGuard.isHudiMd(c.tableDesc) =>
        appendToTable(c)
    }

    /**
     * `df.write.format("hudi-md").mode("append").saveAsTable(t)` onto a table whose catalog
     * schema has the meta columns (CTAS, or a table over existing data): the rows get them as
     * NULLs, or Spark's check that the query has the table's columns fails it.
     */
    private def appendToTable(c: CreateTable): LogicalPlan = {
      val resolver = SQLConf.get.resolver
      val query = c.query.get
      val existing = SessionCompat.catalogTable(session, c.tableDesc.identifier).map(_.schema.fieldNames.toSeq)
      val missing = existing.toSeq.flatten.filter(n => MetaColumns.exists(resolver(_, n)))
        .filterNot(m => query.output.exists(a => resolver(a.name, m)))
      if (missing.isEmpty) c
      else c.copy(query = Some(Project(missing.map(n => Alias(Literal(null, StringType), n)()) ++ query.output, query)))
    }

    private def fill(i: InsertIntoStatement, target: LogicalRelation): LogicalPlan = {
      val resolver = SQLConf.get.resolver
      def isMeta(name: String): Boolean = MetaColumns.exists(resolver(_, name))
      val meta = target.output.map(_.name).filter(isMeta)
      if (meta.isEmpty || i.userSpecifiedCols.exists(isMeta)) return i
      val queryNames = i.query.output.map(_.name)
      def nulls(names: Seq[String]) = names.map(n => Alias(Literal(null, StringType), n)())
      if (i.userSpecifiedCols.nonEmpty) {
        i.copy(userSpecifiedCols = meta ++ i.userSpecifiedCols, query = Project(nulls(meta) ++ i.query.output, i.query))
      } else if (i.byName) {
        val missing = meta.filterNot(m => queryNames.exists(resolver(_, m)))
        if (missing.isEmpty) i else i.copy(query = Project(nulls(missing) ++ i.query.output, i.query))
      } else {
        val static = i.partitionSpec.count(_._2.isDefined)
        val dataColumns = target.output.size - meta.size - static
        if (queryNames.size == dataColumns && !queryNames.exists(isMeta)) {
          i.copy(query = Project(nulls(meta) ++ i.query.output, i.query))
        } else i
      }
    }
  }

  /**
   * A post-hoc resolution rule (after Spark's `DataSourceAnalysis`, which has checked and
   * aligned the insert's columns): the `InsertIntoHadoopFsRelationCommand` of a `hudi-md`
   * target and a `DELETE FROM` one become writes through [[DefaultSource]].
   */
  object PlanWrites extends Rule[LogicalPlan] {
    override def apply(plan: LogicalPlan): LogicalPlan = plan.transformDown {
      case c: InsertIntoHadoopFsRelationCommand if c.fileFormat.isInstanceOf[HudiMdFileFormat] => insert(c)
      case d: DeleteFromTable if d.resolved && hudiMdRelation(d.table).isDefined            =>
        val (keyed, _) = withRecordKey(d, hudiMdRelation(d.table).get)
        delete(keyed.asInstanceOf[DeleteFromTable])
      case u: UpdateTable if u.resolved =>
        hudiMdRelation(u.table).fold[LogicalPlan](u) { t =>
          val (keyed, target) = withRecordKey(u, t)
          writeTo(target, RowLevelWrites.update(keyed.asInstanceOf[UpdateTable], target), Protocol.SqlUpsert)
        }
      case m: MergeIntoTable if m.resolved =>
        hudiMdRelation(m.targetTable).fold[LogicalPlan](m) { t =>
          val (keyed, target) = withRecordKey(m, t)
          writeTo(target, RowLevelWrites.merge(keyed.asInstanceOf[MergeIntoTable], target), Protocol.SqlUpsert)
        }
      case s: ShowPartitionsCommand if isHudiMdTable(s.tableName)                           =>
        ShowHudiMdPartitions(s.tableName, s.output, s.spec)
      case d: AlterTableDropPartitionCommand if isHudiMdTable(d.tableName)                  =>
        val descriptor = tableDescriptor(Protocol.SqlDropPartitions, d.tableName)
        val specs = descriptor.putArray(Protocol.SqlPartitionSpecs)
        d.specs.foreach(spec => specs.add(jsonMap(spec)))
        descriptor.put(Protocol.SqlIfExists, d.ifExists)
        HudiMdTableWrite(d.tableName, descriptor.toString)
      case a: AlterTableAddColumnsCommand if isHudiMdTable(a.table)                         =>
        HudiMdAddColumns(a.table, a.colsToAdd, tableDescriptor(Protocol.SqlUpsert, a.table).toString)
      case t: TruncateTableCommand if isHudiMdTable(t.tableName)                            =>
        val descriptor = tableDescriptor(Protocol.SqlTruncate, t.tableName)
        val specs = descriptor.putArray(Protocol.SqlPartitionSpecs)
        t.partitionSpec.foreach(spec => specs.add(jsonMap(spec)))
        HudiMdTableWrite(t.tableName, descriptor.toString)
      case c: CreateDataSourceTableAsSelectCommand if WriteGuard.isHudiMd(c.table)          => c.copy(table = ctas(c.table))
      case c: CreateDataSourceTableCommand if WriteGuard.isHudiMd(c.table) && c.table.schema.nonEmpty =>
        CreateHudiMdTable(c)
    }
  }

  /**
   * Hudi's write options of a table the SQL creates: its TBLPROPERTIES' and OPTIONS' Hudi options,
   * its name, and PARTITIONED BY (hive-style, as Hudi's SQL creates tables).
   */
  def creationOptions(t: CatalogTable): Map[String, String] = {
    val partitioned =
      if (t.partitionColumnNames.isEmpty) Map.empty[String, String]
      else Map(PartitionPath -> t.partitionColumnNames.mkString(","), HiveStyle -> "true")
    val defaults = Map(TableName -> t.identifier.table) ++ t.identifier.database.map(DatabaseName -> _) ++ partitioned
    defaults ++ hudiOptions(t.properties, keepOthers = false) ++ hudiOptions(t.storage.properties, keepOthers = true)
  }

  /**
   * CTAS / `saveAsTable`: Spark hands [[DefaultSource]] only the table's OPTIONS, so its
   * TBLPROPERTIES' Hudi options, PARTITIONED BY (hive-style, as Hudi's SQL creates tables) and
   * name go there, as Hudi's keys (they stay in the catalog's OPTIONS, where later writes and
   * reads find them).
   */
  private def ctas(t: CatalogTable): CatalogTable =
    t.copy(storage = t.storage.copy(properties = creationOptions(t)))

  private def insert(c: InsertIntoHadoopFsRelationCommand): LogicalPlan = {
    val target = c.catalogTable.map(describe).getOrElse(c.outputPath.toString)
    if (c.ifPartitionNotExists) {
      WriteGuard.refuse("INSERT OVERWRITE ... PARTITION (...) IF NOT EXISTS", target)
    }
    val options = original(c.options)
    val resolver = SQLConf.get.resolver
    val partitionColumns = c.partitionColumns.map(_.name)
    val spec = PlannerClient.mapper.createObjectNode()
    partitionColumns.foreach { p =>
      c.staticPartitions.collectFirst { case (k, v) if resolver(k, p) => v } match {
        case Some(v) => spec.put(p, v)
        case None    => spec.putNull(p)
      }
    }
    val overwriteMode = options
      .collectFirst { case (k, v) if k.equalsIgnoreCase(PartitionOverwriteModeOption) => v }
      .getOrElse(SQLConf.get.getConfString(PartitionOverwriteModeConf, "STATIC"))
    val descriptor = sqlDescriptor(Protocol.SqlInsert, c.catalogTable, partitionColumns)
    descriptor.put(Protocol.SqlOverwrite, c.mode == SaveMode.Overwrite)
    descriptor.set[ObjectNode](Protocol.SqlPartitionSpec, spec)
    descriptor.put(Protocol.SqlOverwriteMode, overwriteMode)
    val query =
      if (c.query.output.map(_.name) == c.outputColumnNames) c.query
      else Project(c.query.output.zip(c.outputColumnNames).map { case (a, n) => Alias(a, n)() }, c.query)
    write(query, options, c.outputPath.toString, descriptor)
  }

  /**
   * A statement on a table whose keys are generated (no record key fields), its target reading
   * `_hoodie_record_key` too: the rows an UPDATE, DELETE or MERGE INTO rewrites are found by the
   * keys they have. (Its catalog columns need not hold Hudi's meta columns; the target's other
   * attributes stay as Spark resolved them.) Other statements as they are.
   */
  private def withRecordKey(plan: LogicalPlan, target: LogicalRelation): (LogicalPlan, LogicalRelation) = {
    val resolver = SQLConf.get.resolver
    val key = MetaColumns(2)
    if (fileIndex(target).recordKeyFields.nonEmpty || target.output.exists(a => resolver(a.name, key))) (plan, target)
    else {
      val relation = target.relation.asInstanceOf[HadoopFsRelation]
      val data = relation.dataSchema.length
      val keyed = relation.copy(dataSchema = relation.dataSchema.add(key, StringType, nullable = true))(relation.sparkSession)
      val output = target.output.take(data) ++ Seq(AttributeReference(key, StringType, nullable = true)()) ++
        target.output.drop(data)
      val swapped = target.copy(relation = keyed, output = output)
      (plan.transformDown { case l: LogicalRelation if l eq target => swapped }, swapped)
    }
  }

  private def delete(d: DeleteFromTable): LogicalPlan = {
    val rows = if (isTrue(d.condition)) d.table else Filter(d.condition, d.table)
    writeTo(hudiMdRelation(d.table).get, rows, Protocol.SqlDelete)
  }

  /** `rows` (the table's columns) written into `target` by the SQL `command` (DELETE FROM: the
   *  rows deleted; UPDATE / MERGE INTO: an upsert by record key). */
  private def writeTo(target: LogicalRelation, rows: LogicalPlan, command: String): SaveIntoDataSourceCommand =
    writeTo(target, rows, sqlDescriptor(command, target.catalogTable, target.relation.asInstanceOf[HadoopFsRelation].partitionSchema.fieldNames.toSeq))

  /** `rows` written into `target` with the SQL write's `descriptor`. */
  def writeTo(target: LogicalRelation, rows: LogicalPlan, descriptor: ObjectNode): SaveIntoDataSourceCommand = {
    val relation = target.relation.asInstanceOf[HadoopFsRelation]
    write(rows, original(relation.options), relation.location.rootPaths.head.toString, descriptor)
  }

  /** An SQL command's descriptor on a catalog table (its partition columns from the catalog). */
  private def tableDescriptor(command: String, name: org.apache.spark.sql.catalyst.TableIdentifier): ObjectNode = {
    val table = SparkSession.getActiveSession.flatMap(s => SessionCompat.catalogTable(s, name))
    sqlDescriptor(command, table, table.map(_.partitionColumnNames).getOrElse(Nil))
  }

  private def jsonMap(values: Map[String, String]): ObjectNode = {
    val node = PlannerClient.mapper.createObjectNode()
    values.foreach { case (k, v) => node.put(k, v) }
    node
  }

  private def isHudiMdTable(name: org.apache.spark.sql.catalyst.TableIdentifier): Boolean =
    SparkSession.getActiveSession.exists(s => SessionCompat.catalogTable(s, name).exists(WriteGuard.isHudiMd))

  private def isTrue(e: Expression): Boolean = e match {
    case Literal(true, _) => true
    case _                => false
  }

  private def write(query: LogicalPlan, options: Map[String, String], path: String, descriptor: ObjectNode): SaveIntoDataSourceCommand = {
    val kept = hudiOptions(options, keepOthers = true).filterNot { case (k, _) => DefaultSource.isWriteInternal(k) }
    val all = kept + ("path" -> path) + (SqlWriteOption -> descriptor.toString)
    SaveIntoDataSourceCommand(query, new DefaultSource, all, SaveMode.Append)
  }

  /** The command, the table (name, properties, partition columns) and the session's `hoodie.*`. */
  private def sqlDescriptor(command: String, table: Option[CatalogTable], partitionColumns: Seq[String]): ObjectNode = {
    val node = PlannerClient.mapper.createObjectNode()
    node.put(Protocol.SqlCommand, command)
    table.foreach { t =>
      node.put(Protocol.SqlTable, t.identifier.table)
      t.identifier.database.foreach(db => node.put(Protocol.SqlDatabase, db))
      val props = node.putObject(Protocol.SqlTableProperties)
      hudiOptions(t.properties, keepOthers = false).foreach { case (k, v) => props.put(k, v) }
    }
    val columns = node.putArray(Protocol.WritePartitionColumns)
    table.map(_.partitionColumnNames).filter(_.nonEmpty).getOrElse(partitionColumns).foreach(c => columns.add(c))
    val session = node.putObject(Protocol.SqlSessionOptions)
    SQLConf.get.getAllConfs.foreach { case (k, v) =>
      if (k.toLowerCase(Locale.ROOT).startsWith("hoodie.")) session.put(k, v)
    }
    node
  }

  /** Options as the user spelled them (Spark's case-insensitive map lower-cases its keys). */
  def original(options: Map[String, String]): Map[String, String] = options match {
    case ci: CaseInsensitiveMap[String @unchecked] => ci.originalMap
    case m                                          => m
  }

  private def describe(table: CatalogTable): String =
    table.identifier.unquotedString + table.storage.locationUri.fold("")(u => s" at $u")
}

/**
 * `CREATE TABLE t (...) USING hudi-md [PARTITIONED BY (...)] [TBLPROPERTIES (...)] [LOCATION]`
 * (not AS SELECT) on a location without a Hudi table: the table is created first, as Apache
 * Hudi's SQL does (`hoodie.properties` from the declared columns and
 * [[WriteRules.creationOptions]], no instant; the planner's `create_table`), then Spark's own
 * command registers it, reading it back like any `hudi-md` table. A location that holds a table
 * already keeps it.
 */
case class CreateHudiMdTable(create: CreateDataSourceTableCommand) extends LeafRunnableCommand {
  override def run(session: SparkSession): Seq[Row] = {
    val table = create.table
    val exists = session.catalog.tableExists(table.identifier.unquotedString)
    val location = table.storage.locationUri.getOrElse(SessionCompat.defaultTablePath(session, table.identifier))
    val path = new org.apache.hadoop.fs.Path(location)
    val fs = path.getFileSystem(session.sparkContext.hadoopConfiguration)
    val hasTable = fs.exists(new org.apache.hadoop.fs.Path(path, DefaultSource.PropertiesFile))
    if (!exists && table.storage.locationUri.isEmpty && !hasTable && fs.exists(path) && fs.listStatus(path).nonEmpty) {
      // Spark's own rule for a managed table's location, said before anything is written there
      throw new IllegalArgumentException(
        s"hudi-md: CREATE TABLE ${table.identifier}: its managed location $location holds files that are not a " +
          "Hudi table; remove them, or give the table a LOCATION")
    }
    if (!exists) {
      if (!hasTable) {
        val req = PlannerClient.mapper.createObjectNode()
        req.put(Protocol.Op, Protocol.OpCreateTable)
        req.put(Protocol.Path, fs.makeQualified(path).toString)
        val opts = req.putObject(Protocol.Options)
        WriteRules.creationOptions(table).foreach { case (k, v) => opts.put(k, v) }
        val columns = org.apache.spark.sql.types.StructType(
          table.schema.fields.filterNot(f => WriteRules.MetaColumns.contains(f.name)))
        req.set[com.fasterxml.jackson.databind.JsonNode](Protocol.TableSchema, PlannerClient.mapper.readTree(columns.json))
        try PlannerClient.call(PlannerSettings.fromConf(session.sparkContext.getConf), req, withBody = false)
        catch {
          case e: HudiMdPlannerException if e.errorType == Protocol.InvalidOptionError =>
            throw new IllegalArgumentException(s"hudi-md: ${e.getMessage} (CREATE TABLE ${table.identifier})", e)
        }
      }
    }
    if (exists || table.storage.locationUri.nonEmpty) create.run(session)
    else createManaged(session, location)
  }

  /**
   * A managed table (no `LOCATION`): the catalog entry as Spark's command makes it, with the
   * table's location (the database's, made above) given to the relation. Spark's command would
   * resolve the relation without a path, and its check that a managed location is empty would
   * refuse the `hoodie.properties` written there first (the one outside check is above).
   */
  private def createManaged(session: SparkSession, location: java.net.URI): Seq[Row] = {
    val table = create.table
    val relation = org.apache.spark.sql.execution.datasources.DataSource(
      sparkSession = session,
      className = table.provider.get,
      userSpecifiedSchema = if (table.schema.isEmpty) None else Some(table.schema),
      options = table.storage.properties + ("path" -> location.toString)).resolveRelation(checkFilesExist = false)
    val partitionColumns = table.partitionColumnNames
    val entry = table.copy(
      schema = relation.schema,
      storage = table.storage.copy(locationUri = Some(location)),
      tracksPartitionsInCatalog = partitionColumns.nonEmpty && session.sessionState.conf.manageFilesourcePartitions)
    session.sessionState.catalog.createTable(entry, ignoreIfExists = false, validateLocation = false)
    Seq.empty
  }
}

/**
 * `ALTER TABLE t DROP PARTITION (...)` and `TRUNCATE TABLE t [PARTITION (...)]` on a `hudi-md` table:
 * a write of no rows whose descriptor says what goes (`hudi_md/spark/write_request.py`:
 * `delete_partition` of the partitions named, or `insert_overwrite_table`), as Apache Hudi's SQL
 * runs them through its writer (Spark's own commands would drop catalog partitions the table
 * does not register, or delete its files behind the timeline).
 */
case class HudiMdTableWrite(table: org.apache.spark.sql.catalyst.TableIdentifier, descriptor: String)
    extends LeafRunnableCommand {

  override def run(session: SparkSession): Seq[Row] = {
    val relation = WriteRules.catalogRelation(session, table)
    WriteRules.writeTo(relation, Filter(Literal(false), relation), HudiMdTableWrite.descriptor(descriptor)).run(session)
  }
}

object HudiMdTableWrite {

  /** A command's descriptor, kept as JSON text in the plan (a plan node's fields are compared and
   *  copied as values). */
  def descriptor(json: String): ObjectNode = PlannerClient.mapper.readTree(json).asInstanceOf[ObjectNode]
}

/**
 * `ALTER TABLE t ADD COLUMNS (c type, ...)` on a `hudi-md` table, as Apache Hudi's SQL does it: a
 * commit of no rows whose schema has the new (nullable) columns after the table's (the write path's
 * schema evolution rules apply: an existing name is refused), then the catalog's columns. Rows
 * written before read the new columns as NULL.
 */
case class HudiMdAddColumns(
    table: org.apache.spark.sql.catalyst.TableIdentifier,
    columns: Seq[org.apache.spark.sql.types.StructField],
    descriptor: String)
    extends LeafRunnableCommand {

  override def run(session: SparkSession): Seq[Row] = {
    val relation = WriteRules.catalogRelation(session, table)
    val resolver = SQLConf.get.resolver
    columns.foreach { c =>
      if (relation.output.exists(a => resolver(a.name, c.name))) {
        throw new HudiMdWriteException(s"hudi-md: $table has a column ${c.name} already; nothing was written")
      }
    }
    val added = columns.map(c => org.apache.spark.sql.catalyst.expressions.AttributeReference(c.name, c.dataType, nullable = true)())
    val noRows = org.apache.spark.sql.catalyst.plans.logical.LocalRelation(relation.output ++ added)
    WriteRules.writeTo(relation, noRows, HudiMdTableWrite.descriptor(descriptor)).run(session)
    SessionCompat.catalogTable(session, table).foreach { t =>
      SessionCompat.alterDataSchema(session, table,
        org.apache.spark.sql.types.StructType(t.dataSchema.fields ++ columns.map(_.copy(nullable = true))))
    }
    session.catalog.refreshTable(table.quotedString)
    Nil
  }
}
