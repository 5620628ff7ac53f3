package hudi.md.spark

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.{DataFrame, SQLContext, SaveMode}
import org.apache.spark.sql.catalyst.util.CaseInsensitiveMap
import org.apache.spark.sql.execution.datasources.HadoopFsRelation
import org.apache.spark.sql.sources.{BaseRelation, CreatableRelationProvider, DataSourceRegister, RelationProvider, SchemaRelationProvider}
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
 * Writes through Spark (`df.write.format("hudi-md")`, SQL `INSERT`, CTAS, ...) are refused
 * ([[WriteGuard]]); `createRelation` with a `SaveMode` is only here to refuse them before anything
 * touches storage (without it Spark fails with an internal error).
 */
class DefaultSource
    extends RelationProvider
    with SchemaRelationProvider
    with CreatableRelationProvider
    with DataSourceRegister {

  override def shortName(): String = "hudi-md"

  override def createRelation(sqlContext: SQLContext, parameters: Map[String, String]): BaseRelation =
    relation(sqlContext, parameters, None)

  override def createRelation(
      sqlContext: SQLContext,
      parameters: Map[String, String],
      schema: StructType): BaseRelation =
    relation(sqlContext, parameters, Option(schema))

  override def createRelation(
      sqlContext: SQLContext,
      mode: SaveMode,
      parameters: Map[String, String],
      data: DataFrame): BaseRelation =
    WriteGuard.refuse(
      "DataFrameWriter.save (df.write.format(\"" + shortName() + "\"), mode " + mode + ")",
      WriteGuard.pathOption(parameters))

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
    val requestedOptions = Incremental.canonical(original.filter { case (k, _) =>
      !k.equalsIgnoreCase("path") && !k.equalsIgnoreCase("paths") && !k.equalsIgnoreCase("basePath")
    })
    val settings = PlannerSettings.fromConf(sqlContext.sparkContext.getConf)
    val sc = sqlContext.sparkContext
    val storageConf = () => StorageConf.ofSession(sc, original)
    // The incremental range is checked and fixed once, here: the DataFrame's plan and every
    // executor's reads then agree on the commits in range (and a bad begin fails at load()).
    val incremental =
      if (Incremental.isIncremental(requestedOptions)) Some(Incremental.range(path, requestedOptions, settings, storageConf()))
      else None
    val plannerOptions = incremental.fold(requestedOptions)(Incremental.pinned(requestedOptions, _))
    val index = new HudiMdFileIndex(path, plannerOptions, settings, incremental, storageConf)
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

/** The same source under the SQL-friendly name `hudi_md` (`USING hudi_md` needs no backquotes). */
class HudiMdSource extends DefaultSource {
  override def shortName(): String = "hudi_md"
}
