package hudi.md.spark

import java.util.UUID
import java.util.concurrent.ConcurrentHashMap

import com.fasterxml.jackson.databind.node.ObjectNode
import org.apache.spark.SparkContext
import org.apache.spark.api.java.JavaSparkContext
import org.apache.spark.hudi_md.PythonGateway
import org.apache.spark.sql.SparkSession

/**
 * The caller's job group, description, scheduler pool (and, for plans, SQL execution) and job
 * tags, read on the caller's thread, for the jobs a Python process attached to this JVM runs on
 * its own Py4J thread: cancelling the caller's statement (its group or tags) cancels them too.
 */
private[spark] final case class CallerJobs(properties: Seq[(String, String)], tags: Seq[String]) {
  def applyTo(sc: SparkContext): Unit = {
    properties.foreach { case (k, v) => sc.setLocalProperty(k, v) }
    tags.foreach(sc.addJobTag)
  }
}

private[spark] object CallerJobs {
  private val Description = "spark.job.description"
  private val Keys = Seq("spark.jobGroup.id", Description, "spark.job.interruptOnCancel", "spark.scheduler.pool")
  private val SqlExecution = Seq("spark.sql.execution.id", "spark.sql.execution.root.id")

  /** The caller's properties (`description` when it has none) and tags, plus `ownTags`. */
  def capture(sc: SparkContext, description: String, sqlExecution: Boolean, ownTags: String*): CallerJobs = {
    val keys = if (sqlExecution) Keys ++ SqlExecution else Keys
    val properties = keys.flatMap(k => Option(sc.getLocalProperty(k)).map(k -> _))
    val described =
      if (properties.exists(_._1 == Description)) properties else properties :+ (Description -> description)
    CallerJobs(described, (sc.getJobTags() ++ ownTags).toSeq)
  }
}

/** One plan's Spark as the planner process sees it (its public methods are called over Py4J). */
class PlanJob private[spark] (session: SparkSession, caller: CallerJobs) {
  def javaSparkContext(): JavaSparkContext = JavaSparkContext.fromSparkContext(session.sparkContext)

  /** Called on the planner's JVM thread before its job: the caller's group, description and tags. */
  def attached(): Unit = caller.applyTo(session.sparkContext)
}

/**
 * The driver's Spark lent to the planner process for one plan (`hudi_md/spark/plan_engine.py`),
 * for its column_stats job when Hudi's rule sends that to the engine. Made on the query's thread
 * (the caller's job properties are read then); [[offer]] answers the planner's engine callback:
 * a Py4J server in this JVM ([[PythonGateway]], started on the first ask) and the id of the
 * registered [[PlanJob]]; [[close]] stops the server when the plan's answer is in. The job carries
 * the tags [[Protocol.PlanJobTag]] and `<PlanJobTag>-<id>`, by which [[cancel]] stops it.
 */
private[spark] final class PlanEngine(session: SparkSession, path: String) {
  private val sc = session.sparkContext
  private val id = UUID.randomUUID().toString
  private val tag = s"${Protocol.PlanJobTag}-$id"
  private val caller =
    CallerJobs.capture(sc, s"hudi-md plan of $path: column_stats pruning", sqlExecution = true, Protocol.PlanJobTag, tag)
  @volatile private var gateway: PythonGateway = _

  /** Whether a server was started (a job may be running). */
  def lent: Boolean = gateway != null

  def offer(): ObjectNode = synchronized {
    val reply = PlannerClient.mapper.createObjectNode()
    if (sc.isStopped) return reply.put(Protocol.Ok, false).put(Protocol.Message, "the SparkContext is stopped")
    if (gateway == null) {
      try gateway = PythonGateway.start(sc.getConf)
      catch {
        case e @ (_: LinkageError | _: RuntimeException) =>
          return reply.put(Protocol.Ok, false).put(Protocol.Message, s"cannot start a Py4J server in the driver: $e")
      }
      PlanEngine.jobs.put(id, new PlanJob(session, caller))
    }
    reply
      .put(Protocol.Ok, true)
      .put(Protocol.GatewayPort, gateway.port)
      .put(Protocol.GatewaySecret, gateway.secret)
      .put(Protocol.EngineJob, id)
  }

  /** Cancels the plan's job (the query's thread was interrupted while it ran). */
  def cancel(): Unit = sc.cancelJobsWithTag(tag)

  def close(): Unit = synchronized {
    PlanEngine.jobs.remove(id)
    if (gateway != null) {
      gateway.shutdown()
      gateway = null
    }
  }
}

object PlanEngine {
  private val jobs = new ConcurrentHashMap[String, PlanJob]()

  /** The plan job of `id` (null when none): called by the planner process. */
  def job(id: String): PlanJob = jobs.get(id)

  /** Plans whose Spark is lent right now (each has a Py4J server): tests check none outlive a plan. */
  def lentNow(): Int = jobs.size
}
