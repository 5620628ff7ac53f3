package hudi.md.spark

import java.util.Locale

import com.fasterxml.jackson.databind.node.ObjectNode
import org.apache.hadoop.conf.Configuration
import org.apache.spark.SparkContext
import org.apache.spark.sql.internal.SQLConf

/**
 * The S3A entries (`fs.s3a.*`) of the Hadoop configuration Spark reads a relation with, for the
 * planner's requests (`hadoop_conf`, mapped to storage options by `hudi_md.storage.hadoop_s3a`): the
 * session's settings reach the Python side as they reach Spark's own readers, without being
 * repeated as read options.
 *
 * On the driver it is built as Spark's file scans build theirs (`SessionState.newHadoopConfWithOptions`:
 * the SparkContext's configuration, which holds `spark.hadoop.*` and what was set at run time
 * through `sc.hadoopConfiguration`, then the session's SQL conf entries, then the read options),
 * at each request, so a setting made after `load()` applies as it does to Spark's reads. On the
 * executors it is the configuration Spark hands the format's reader. Entries only Hadoop's
 * `*-default.xml` set are left out: they are S3A's defaults, which the mapping assumes anyway.
 *
 * Only a table on S3 (`s3://`, `s3a://`, `s3n://`) gets them: the planner drops them for any other
 * path (`hudi_md.storage.hadoop_s3a.is_s3_path`), and collecting them walks every entry of the
 * configuration (~0.5–1 ms, twice per query).
 */
private[spark] object StorageConf {
  val Prefix = "fs.s3a."

  /** The schemes of the paths the planner reads with S3A's settings (`hadoop_s3a._S3_SCHEMES`). */
  val S3Schemes: Set[String] = Set("s3", "s3a", "s3n")

  /** Whether the planner reads `tablePath` with S3A's settings: its scheme is one of [[S3Schemes]]. */
  def appliesTo(tablePath: String): Boolean = {
    val end = tablePath.indexOf("://")
    end > 0 && S3Schemes.contains(tablePath.substring(0, end).toLowerCase(Locale.ROOT))
  }

  /** [[ofSession]] for a table at `tablePath`: nothing unless it is on S3 ([[appliesTo]]). */
  def forTable(tablePath: String, sc: SparkContext, options: Map[String, String]): Map[String, String] =
    if (appliesTo(tablePath)) ofSession(sc, options) else Map.empty

  /** [[of]] for a table at `tablePath`: nothing unless it is on S3 ([[appliesTo]]). */
  def forTable(tablePath: String, conf: Configuration): Map[String, String] =
    if (appliesTo(tablePath)) of(conf) else Map.empty

  def ofSession(sc: SparkContext, options: Map[String, String]): Map[String, String] = {
    val sql = SQLConf.get.getAllConfs
    val shared = sc.hadoopConfiguration
    // Copying the configuration (~1 ms, at every planner request) changes nothing when neither the
    // session's SQL conf nor the read options set an S3A entry and no S3A value of the shared one
    // names a variable they might set: the entries are then the shared configuration's own.
    if (!sql.keysIterator.exists(_.startsWith(Prefix)) && !options.keysIterator.exists(_.startsWith(Prefix))) {
      val entries = of(shared)
      if (!entries.keysIterator.exists(k => Option(shared.getRaw(k)).exists(_.contains("${")))) return entries
    }
    val conf = new Configuration(shared)
    sql.foreach { case (k, v) => if (v != null) conf.set(k, v) }
    options.foreach { case (k, v) =>
      if (v != null && !k.equalsIgnoreCase("path") && !k.equalsIgnoreCase("paths")) conf.set(k, v)
    }
    of(conf)
  }

  def of(conf: Configuration): Map[String, String] = {
    val out = Map.newBuilder[String, String]
    val it = conf.getPropsWithPrefix(Prefix).entrySet().iterator()
    while (it.hasNext) {
      val e = it.next()
      val key = Prefix + e.getKey
      val sources = Option(conf.getPropertySources(key)).getOrElse(Array.empty[String])
      if (e.getValue != null && !(sources.nonEmpty && sources.forall(_.endsWith("-default.xml")))) {
        out += key -> e.getValue
      }
    }
    out.result()
  }

  /** Adds `conf` to a planner request. */
  def put(request: ObjectNode, conf: Map[String, String]): Unit = {
    val node = request.putObject(Protocol.HadoopConf)
    conf.foreach { case (k, v) => node.put(k, v) }
  }
}
