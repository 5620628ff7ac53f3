package hudi.md.spark

import java.util.Locale

import com.fasterxml.jackson.databind.JsonNode
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.{DataFrame, SQLContext, SaveMode}
import org.apache.spark.sql.catalyst.util.CaseInsensitiveMap
import org.apache.spark.sql.execution.datasources.HadoopFsRelation
import org.apache.spark.sql.execution.streaming.{Sink, Source}
import org.apache.spark.sql.sources.{BaseRelation, CreatableRelationProvider, DataSourceRegister, RelationProvider, SchemaRelationProvider, StreamSinkProvider, StreamSourceProvider}
import org.apache.spark.sql.streaming.OutputMode
import org.apache.spark.sql.types.StructType

/**
 * `spark.read.format("hudi-md").load(path)` and `CREATE TABLE t USING `hudi-md` LOCATION '...'`.
 *
 * The file listing comes from the Python planner (`python -m hudi_md.spark.planner`, see
 * [[PlannerClient]]); Spark's own Parquet reader reads the base files ([[HudiMdFileFormat]]), and
 * file slices with log files (MOR snapshot reads) are merged by the planner process on the executor.
 *
 * Query types (`hoodie.datasource.query.type`): `snapshot` (default; `as.of.instant` for time
 * travel), `read_optimized` (base files only) and `incremental` (`hoodie.datasource.read.begin.instanttime`
 * required and exclusive, `hoodie.datasource.read.end.instanttime` optional and inclusive: the
 * latest version of the records written by the commits in that range, see [[Incremental]]).
 *
 * Writes through Spark's API (`df.write.format("hudi-md").save`, `saveAsTable`, CTAS, and SQL
 * `INSERT` / `DELETE` through [[WriteRules]]) go to `hudi_md.write`'s Spark writer
 * ([[WriteBridge]]); the rest is refused ([[WriteGuard]]).
 */
class DefaultSource
    extends RelationProvider
    with SchemaRelationProvider
    with CreatableRelationProvider
    with StreamSinkProvider
    with StreamSourceProvider
    with DataSourceRegister {

  override def shortName(): String = "hudi-md"

  /** `df.writeStream.format("hudi-md")`: [[HudiMdStreamingSink]]. */
  override def createSink(
      sqlContext: SQLContext,
      parameters: Map[String, String],
      partitionColumns: Seq[String],
      outputMode: OutputMode): Sink =
    new HudiMdStreamingSink(sqlContext, parameters, partitionColumns, outputMode)

  /** `spark.readStream.format("hudi-md")`: [[HudiMdStreamingSource]]; its schema, the table's. */
  override def sourceSchema(
      sqlContext: SQLContext,
      schema: Option[StructType],
      providerName: String,
      parameters: Map[String, String]): (String, StructType) =
    (shortName(), new HudiMdStreamingSource(sqlContext, parameters).schema)

  override def createSource(
      sqlContext: SQLContext,
      metadataPath: String,
      schema: Option[StructType],
      providerName: String,
      parameters: Map[String, String]): Source =
    new HudiMdStreamingSource(sqlContext, parameters)

  override def createRelation(sqlContext: SQLContext, parameters: Map[String, String]): BaseRelation =
    relation(sqlContext, parameters, None)

  override def createRelation(
      sqlContext: SQLContext,
      parameters: Map[String, String],
      schema: StructType): BaseRelation =
    relation(sqlContext, parameters, Option(schema))

  /**
   * `df.write.format("hudi-md").mode(...).options(...).save(path)` (and `saveAsTable`, CTAS, and
   * the SQL writes [[WriteRules]] plan): the rows go to `hudi_md.write`'s Spark writer in a Python
   * process ([[WriteBridge]]). Save modes: `ErrorIfExists` fails and `Ignore` writes nothing when a
   * Hudi table exists at the path (`.hoodie/hoodie.properties`); the operation each mode means is
   * decided in `hudi_md/spark/write_request.py`. Returns the table's relation, as a read sees it.
   */
  override def createRelation(
      sqlContext: SQLContext,
      mode: SaveMode,
      parameters: Map[String, String],
      data: DataFrame): BaseRelation = {
    val session = sqlContext.sparkSession
    val passed = WriteRules.original(parameters)
    val requested = parameters.getOrElse("path",
      throw new IllegalArgumentException("hudi-md: no table path; use df.write.format(\"hudi-md\").save(<table path>)"))
    val path = qualified(requested, sqlContext)
    val sql = passed.get(WriteRules.SqlWriteOption).map(PlannerClient.mapper.readTree)
    val exists = {
      val p = new Path(new Path(path), DefaultSource.PropertiesFile)
      p.getFileSystem(sqlContext.sparkContext.hadoopConfiguration).exists(p)
    }
    if (mode == SaveMode.ErrorIfExists && exists && sql.isEmpty) {
      throw new HudiMdWriteException(
        s"hudi-md: a Hudi table exists at $path already (save mode ErrorIfExists); " +
          "write with mode(\"append\") or mode(\"overwrite\")")
    }
    val userOptions = passed.filterNot { case (k, _) => DefaultSource.isWriteInternal(k) }
    if (!(mode == SaveMode.Ignore && exists && sql.isEmpty)) {
      val request = PlannerClient.mapper.createObjectNode()
      request.put(Protocol.Path, path)
      request.put(Protocol.WriteSaveMode, DefaultSource.saveModeName(mode))
      val opts = request.putObject(Protocol.Options)
      userOptions.foreach { case (k, v) => opts.put(k, v) }
      val columns = request.putArray(Protocol.WritePartitionColumns)
      passed.get(DefaultSource.PartitionColumnsOption).foreach { json =>
        PlannerClient.mapper.readTree(json).elements().forEachRemaining(c => columns.add(c.asText()))
      }
      sql.foreach(node => request.set[JsonNode](Protocol.WriteSql, node))
      val secretSources = userOptions ++ sql.toSeq.flatMap(DefaultSource.nestedOptions)
      val secrets = Redaction.secretValues(session.sparkContext.getConf, secretSources)
      WriteBridge.write(session, data, request, path, secrets)
      session.catalog.refreshByPath(path)
      sql.flatMap(DefaultSource.tableName).foreach { name =>
        if (session.catalog.tableExists(name)) session.catalog.refreshTable(name)
      }
    }
    val readOptions = userOptions.filterNot { case (k, _) => WriteRules.SqlOptionNames.contains(k.toLowerCase(Locale.ROOT)) }
    try relation(sqlContext, readOptions + ("path" -> path), None)
    catch {
      // The write committed; a relation that cannot be built now must not make it look failed.
      case e: Exception =>
        DefaultSource.log.warn(s"hudi-md: wrote $path but cannot open it for reading now: $e")
        new WrittenRelation(sqlContext, data.schema)
    }
  }

  /** A path without a scheme, qualified by the default file system (as Spark reads it). */
  private def qualified(requested: String, sqlContext: SQLContext): String = {
    val p = new Path(requested)
    if (p.toUri.getScheme != null) requested
    else p.getFileSystem(sqlContext.sparkContext.hadoopConfiguration).makeQualified(p).toString
  }

  private def relation(
      sqlContext: SQLContext,
      parameters: Map[String, String],
      userSchema: Option[StructType]): BaseRelation = {
    val session = sqlContext.sparkSession
    // `get` on Spark's CaseInsensitiveMap before anything else: iterating it lower-cases the keys.
    val requested = parameters
      .get("path")
      .orElse(parameters.get("basePath"))
      .getOrElse(throw new IllegalArgumentException(
        "hudi-md: no table path; use spark.read.format(\"hudi-md\").load(<table path>) or LOCATION"))
    if (parameters.contains("paths")) {
      throw new IllegalArgumentException(s"hudi-md reads one table per relation, got several paths for $requested")
    }
    // A path without a scheme means the default file system to Spark (which reads the files), so
    // the planner (which lists them) gets it qualified the same way: `file:/...` locally.
    val path = {
      val p = new Path(requested)
      if (p.toUri.getScheme != null) requested
      else p.getFileSystem(sqlContext.sparkContext.hadoopConfiguration).makeQualified(p).toString
    }
    val original: Map[String, String] = parameters match {
      case ci: CaseInsensitiveMap[String @unchecked] => ci.originalMap
      case m                                          => m
    }
    // Spark SQL's short Hudi table options (`primaryKey`, ...) and the write-only ones are not
    // storage options: the planner would hand them to fsspec.
    val requestedOptions = Incremental.canonical(original.filter { case (k, _) =>
      !k.equalsIgnoreCase("path") && !k.equalsIgnoreCase("paths") && !k.equalsIgnoreCase("basePath") &&
      !DefaultSource.isWriteInternal(k) && !WriteRules.SqlOptionNames.contains(k.toLowerCase(Locale.ROOT))
    })
    val settings = PlannerSettings.fromConf(sqlContext.sparkContext.getConf)
    val sc = sqlContext.sparkContext
    val storageConf = () => StorageConf.forTable(path, sc, original)
    // The incremental range is checked and fixed once, here: the DataFrame's plan and every
    // executor's reads then agree on the commits in range (and a bad begin fails at load()).
    val incremental =
      if (Incremental.isIncremental(requestedOptions)) Some(Incremental.range(path, requestedOptions, settings, storageConf()))
      else None
    val plannerOptions = incremental.fold(requestedOptions)(Incremental.pinned(requestedOptions, _))
    val index = new HudiMdFileIndex(path, plannerOptions, settings, incremental, storageConf, Some(session))
    val partitionSchema = index.partitionSchema
    val resolver = org.apache.spark.sql.internal.SQLConf.get.resolver
    val dataSchema = userSchema match {
      // Catalog tables pass their stored schema (data columns, then partition columns).
      case Some(s) if s.nonEmpty =>
        StructType(s.fields.filterNot(f => partitionSchema.fieldNames.exists(p => resolver(p, f.name))))
      case _ => index.dataSchema
    }
    val format = new HudiMdFileFormat(index.tablePath, plannerOptions, incremental)
    HadoopFsRelation(index, partitionSchema, dataSchema, None, format, parameters)(session)
  }
}

object DefaultSource {
  private val log = org.slf4j.LoggerFactory.getLogger(classOf[DefaultSource])

  /** A Hudi table exists where this file does. */
  val PropertiesFile = ".hoodie/hoodie.properties"

  /** Spark's option for `DataFrameWriter.partitionBy` (a JSON array of column names). */
  val PartitionColumnsOption = "__partition_columns"

  /** Options Spark or the shim add to a write that are not the user's. */
  def isWriteInternal(key: String): Boolean =
    key.equalsIgnoreCase("path") || key.equalsIgnoreCase("paths") || key == PartitionColumnsOption ||
      key == WriteRules.SqlWriteOption

  def saveModeName(mode: SaveMode): String = mode match {
    case SaveMode.Append        => Protocol.SaveModeAppend
    case SaveMode.Overwrite     => Protocol.SaveModeOverwrite
    case SaveMode.ErrorIfExists => Protocol.SaveModeErrorIfExists
    case SaveMode.Ignore        => Protocol.SaveModeIgnore
  }

  /** The table and session options inside an SQL write's descriptor (to redact their secrets). */
  private def nestedOptions(sql: JsonNode): Seq[(String, String)] =
    Seq(Protocol.SqlTableProperties, Protocol.SqlSessionOptions).flatMap { key =>
      val out = Seq.newBuilder[(String, String)]
      sql.path(key).fields().forEachRemaining(e => out += (e.getKey -> e.getValue.asText()))
      out.result()
    }

  /** `database.table` of an SQL write on a catalog table. */
  private def tableName(sql: JsonNode): Option[String] =
    Option(sql.path(Protocol.SqlTable).asText(null)).filter(_.nonEmpty).map { t =>
      Option(sql.path(Protocol.SqlDatabase).asText(null)).filter(_.nonEmpty).fold(t)(db => s"$db.$t")
    }
}

/** What a write returns when the table cannot be read back right away: its rows' schema. */
private[spark] class WrittenRelation(override val sqlContext: SQLContext, override val schema: StructType) extends BaseRelation

/** The same source under the SQL-friendly name `hudi_md` (`USING hudi_md` needs no backquotes). */
class HudiMdSource extends DefaultSource {
  override def shortName(): String = "hudi_md"
}
