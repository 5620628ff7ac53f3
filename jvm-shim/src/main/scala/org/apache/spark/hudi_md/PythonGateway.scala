package org.apache.spark.hudi_md

import java.io.File

import org.apache.spark.SparkConf
import org.apache.spark.api.python.{Py4JServer, PythonUtils}

/**
 * A Py4J server in this JVM for one Python process to attach to: Spark's own (`Py4JServer`, what
 * `spark-submit app.py` starts for PySpark), bound to the loopback address with a fresh secret,
 * a `ClientServer` (one JVM thread per Python thread) unless `PYSPARK_PIN_THREAD=false`.
 *
 * In a package under `org.apache.spark` because Spark keeps these classes `private[spark]`.
 */
final class PythonGateway private (server: Py4JServer) {
  def port: Int = server.getListeningPort
  def secret: String = server.secret
  def shutdown(): Unit = server.shutdown()
}

object PythonGateway {
  def start(conf: SparkConf): PythonGateway = {
    val server = new Py4JServer(conf)
    server.start()
    new PythonGateway(server)
  }

  /** Spark's own Python path (`$SPARK_HOME/python/lib/pyspark.zip` and py4j's zip), the entries that exist. */
  def sparkPythonPath: Seq[String] =
    PythonUtils.sparkPythonPath.split(File.pathSeparator).toSeq.filter(p => p.endsWith(".zip") && new File(p).exists())
}

/** `input_file_name()` of the rows a V2 scan reads (Spark keeps the holder `private[spark]`). */
object InputFiles {
  def set(path: String, start: Long, length: Long): Unit = org.apache.spark.rdd.InputFileBlockHolder.set(path, start, length)
  def unset(): Unit = org.apache.spark.rdd.InputFileBlockHolder.unset()
}
