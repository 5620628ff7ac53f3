package hudi.md.spark

import java.io.{BufferedReader, File, IOException, InputStreamReader}
import java.nio.charset.StandardCharsets
import java.util.UUID
import java.util.concurrent.{ConcurrentHashMap, TimeUnit}
import java.util.regex.Pattern

import com.fasterxml.jackson.databind.node.ObjectNode
import org.apache.spark.{SparkConf, SparkContext}
import org.apache.spark.api.java.JavaSparkContext
import org.apache.spark.hudi_md.PythonGateway
import org.apache.spark.sql.{DataFrame, SparkSession}
import org.slf4j.LoggerFactory

/**
 * A write through Spark's API that failed in its Python process (`errorType`: the Python error's
 * class name, e.g. `WriteConflictError`), or whose process could not run (`errorType` null).
 */
class HudiMdWriteFailedException(message: String, val errorType: String, cause: Throwable = null)
    extends RuntimeException(message, cause)

/**
 * One write handed to a Python process: the JVM objects it wraps and the request, asked for over
 * Py4J ([[WriteBridge.job]]), and the outcome it reports. The public methods are called from
 * `hudi_md/spark/bridge.py`.
 */
class WriteJob private[spark] (
    val id: String,
    session: SparkSession,
    data: DataFrame,
    requestJson: String,
    caller: CallerJobs) {

  @volatile private var result: Option[Either[(String, String), String]] = None

  def javaSparkContext(): JavaSparkContext = JavaSparkContext.fromSparkContext(session.sparkContext)
  def sparkSession(): SparkSession = session
  def dataFrame(): DataFrame = data
  def request(): String = requestJson

  /**
   * Called by the Python process on its JVM thread (Py4J pins one per Python thread) before it
   * runs jobs: the caller's job group, description, scheduler pool and tags, plus this write's
   * own tag. Cancelling the caller's statement (its group or tags) or the write cancels them.
   */
  def attached(): Unit = caller.applyTo(session.sparkContext)

  /** The write committed `instant` (null: nothing was written, e.g. save mode ignore). */
  def succeeded(instant: String): Unit = result = Some(Right(instant))

  def failed(errorType: String, message: String): Unit = result = Some(Left((errorType, message)))

  private[spark] def outcome: Option[Either[(String, String), String]] = result
}

/**
 * Writes through Spark's own API ([[DefaultSource]]'s `createRelation` with a `SaveMode`, which
 * the session extension's SQL rules also reach) run in a Python process attached to this JVM, so
 * that the executors run exactly `hudi_md.write`'s code (`mapInArrow`) and the commit protocol is
 * the Python writer's, whatever the driver is (PySpark, a JVM application, `spark-sql`, a Spark
 * Connect server).
 *
 * Per write: a Py4J server in this JVM (Spark's own, [[PythonGateway]]), the job registered under
 * a random id, and a `python -m hudi_md.spark.bridge` process (the planner's interpreter, see
 * [[PlannerSettings]]) that gets the server's port and secret and the id on its stdin (one JSON
 * line; it then attaches as `spark-submit app.py` attaches PySpark). Python wraps the running
 * SparkContext and session and the DataFrame, writes, and reports the instant or its error. An
 * interrupted caller cancels the write's jobs and stops the process (SIGTERM: the writer abandons
 * its instant; the next write rolls back anything left).
 *
 * A process serves one write, and its start (the interpreter and ~1 s of imports) is most of a
 * small write's fixed cost: after each write the next one's process is started ([[Spare]]), and
 * waits, imports done, for its assignment.
 *
 * Errors come back typed: a refused option (`InvalidOptionError`) is an
 * `IllegalArgumentException`, an existing table under save mode errorifexists a
 * [[HudiMdWriteException]], anything else a [[HudiMdWriteFailedException]] naming the Python
 * error. Values of options whose key looks secret (Spark's `spark.redaction.regex`) never appear
 * in messages or logs.
 */
object WriteBridge {
  private val log = LoggerFactory.getLogger(getClass)
  private val jobs = new ConcurrentHashMap[String, WriteJob]()
  private val OutputLines = 100
  /** How long a cancelled write's process gets to abandon its instant before it is killed. */
  private val CancelGraceSeconds = 60L

  /** The job of `id` (null when none): called by the Python process. */
  def job(id: String): WriteJob = jobs.get(id)

  /**
   * Writes `data` as `request` (JSON, see `hudi_md/spark/write_request.py`) says; returns the
   * committed instant, None when nothing was written. `secrets`: option values to keep out of
   * messages and logs.
   */
  def write(
      session: SparkSession,
      data: DataFrame,
      request: ObjectNode,
      path: String,
      secrets: Iterable[String]): Option[String] = {
    val sc = session.sparkContext
    val conf = sc.getConf
    val settings = PlannerSettings.fromConf(conf)
    val id = UUID.randomUUID().toString
    val tag = "hudi-md-write-" + id
    val caller = CallerJobs.capture(sc, s"hudi-md write to $path", sqlExecution = false, tag)
    val job = new WriteJob(id, session, data, PlannerClient.mapper.writeValueAsString(request), caller)
    val gateway =
      try PythonGateway.start(conf)
      catch {
        case e: LinkageError =>
          throw new HudiMdWriteFailedException(
            s"hudi-md: cannot start a Py4J server for the write to $path (is py4j on the driver's classpath? " +
              s"Spark's jars/ has it): $e", null, e)
      }
    val redact = new Redaction(secrets.toSeq :+ gateway.secret)
    jobs.put(id, job)
    val launch = Launch(settings, conf)
    var ahead: Option[Process] = None
    try {
      ahead = Spare.take(launch)
      val proc = ahead match {
        case Some(p) if assign(p, gateway, id) => p
        case taken =>
          // none waiting, or it died just as it was taken (its assignment could not be written)
          taken.foreach(_.destroy())
          ahead = None
          val fresh = start(launch, path)
          if (!assign(fresh, gateway, id)) log.warn(s"hudi-md: the write process for $path did not take its assignment")
          fresh
      }
      // the next write's process: now when this one was ready (writes in a row find it ready too),
      // else after this write, not beside this process's own imports
      if (ahead.isDefined) Spare.prepare(launch, () => start(launch, path))
      val output = new ProcessOutput(proc, redact, id.take(8))
      val exit = awaitOrCancel(proc, sc, tag, path)
      output.join()
      job.outcome match {
        case Some(Right(instant)) =>
          log.info(s"hudi-md: wrote $path at ${Option(instant).getOrElse("(nothing written)")}")
          Option(instant)
        case Some(Left((errorType, message))) =>
          log.warn(s"hudi-md: the write to $path failed: $errorType${output.describe}")
          throw failure(errorType, redact(message), path)
        case None =>
          throw new HudiMdWriteFailedException(
            s"hudi-md: the write to $path failed: its process (${settings.python} -m ${Protocol.BridgeModule}) " +
              s"exited with code $exit and no outcome${output.describe}${output.interpreterHint}", null)
      }
    } finally {
      jobs.remove(id)
      gateway.shutdown()
      if (ahead.isEmpty) Spare.prepare(launch, () => start(launch, path))
    }
  }

  /** How many write processes were started, and how many of the writes took one started ahead
   *  (JSON `{"started": n, "ahead": m}`; for tests). */
  def processCounts(): String = s"""{"started": ${started.get()}, "ahead": ${Spare.taken.get()}}"""

  /** The process id of the process started ahead, -1 when there is none (for tests). */
  def spareProcessId(): Long = Spare.pid

  private val started = new java.util.concurrent.atomic.AtomicLong()

  /** How a write's process is started: what its environment is made of. */
  private final case class Launch(python: String, workers: String, pythonPath: Seq[String])

  private object Launch {
    def apply(settings: PlannerSettings, conf: SparkConf): Launch = {
      // The executors' Python workers: spark.pyspark.python, else $PYSPARK_PYTHON, else this one.
      val workers = conf.getOption("spark.pyspark.python").orElse(sys.env.get("PYSPARK_PYTHON")).filter(_.trim.nonEmpty)
      val pythonPath = PythonGateway.sparkPythonPath ++ sys.env.get("PYTHONPATH").filter(_.nonEmpty)
      Launch(settings.python, workers.getOrElse(settings.python), pythonPath)
    }
  }

  /**
   * The process started ahead for the next write, at most one (an idle interpreter with a write's
   * modules loaded, ~150 MB), for the next write of the same [[Launch]]; a process of another, or
   * one that died, is stopped and a new one started. Stopped when the JVM exits (its stdin closes
   * with it too: a spare whose JVM is gone exits by itself).
   */
  private object Spare {
    private var spare: Option[(Launch, Process)] = None
    val taken = new java.util.concurrent.atomic.AtomicLong()

    Runtime.getRuntime.addShutdownHook(new Thread("hudi-md-write-spare-shutdown") {
      override def run(): Unit = Spare.synchronized(spare.foreach(_._2.destroy()))
    })

    // Process.pid is Java 9's; the Spark 3.5 jar is built for Java 8's API
    def pid: Long = synchronized {
      spare.map { case (_, proc) => classOf[Process].getMethod("pid").invoke(proc).asInstanceOf[Long] }.getOrElse(-1L)
    }

    def take(launch: Launch): Option[Process] = synchronized {
      val found = spare.collect { case (l, p) if l == launch && p.isAlive => p }
      if (found.isEmpty) spare.foreach(_._2.destroy())
      spare = None
      found.foreach(_ => taken.incrementAndGet())
      found
    }

    /** Starts the next write's process (in the background) unless one is ready. */
    def prepare(launch: Launch, starter: () => Process): Unit = {
      val ready = synchronized(spare.exists { case (l, p) => l == launch && p.isAlive })
      if (!ready) {
        val t = new Thread("hudi-md-write-spare") {
          override def run(): Unit =
            try {
              val proc = starter()
              val replaced = Spare.synchronized {
                val old = spare
                spare = Some((launch, proc))
                old
              }
              replaced.foreach(_._2.destroy())
            } catch { case e: Exception => log.debug(s"hudi-md: no write process started ahead: $e") }
        }
        t.setDaemon(true)
        t.start()
      }
    }
  }

  /** A write's process, started: it loads a write's modules and waits for its assignment. */
  private def start(launch: Launch, path: String): Process = {
    val pb = new ProcessBuilder(launch.python, "-m", Protocol.BridgeModule)
    val env = pb.environment()
    env.put("PYSPARK_PYTHON", launch.workers)
    env.put("PYTHONUNBUFFERED", "1")
    if (launch.pythonPath.nonEmpty) env.put("PYTHONPATH", launch.pythonPath.mkString(File.pathSeparator))
    pb.redirectErrorStream(true)
    val proc =
      try pb.start()
      catch {
        case e: IOException =>
          throw new HudiMdWriteFailedException(
            s"hudi-md: cannot start '${launch.python} -m ${Protocol.BridgeModule}' for the write to $path " +
              s"(${PlannerSettings.PythonHint}): ${e.getMessage}", null, e)
      }
    started.incrementAndGet()
    proc
  }

  /**
   * The write's assignment on the process's stdin: the Py4J server to attach to and the job.
   * False when it cannot be written (the process died; what it printed explains its exit, which
   * the caller reports).
   */
  private def assign(proc: Process, gateway: PythonGateway, id: String): Boolean = {
    val line = PlannerClient.mapper.createObjectNode()
    line.put(Protocol.BridgePort, gateway.port)
    line.put(Protocol.BridgeSecret, gateway.secret)
    line.put(Protocol.BridgeJob, id)
    val stdin = proc.getOutputStream
    try {
      stdin.write((line.toString + "\n").getBytes(StandardCharsets.UTF_8))
      stdin.close()
      true
    } catch { case _: IOException => false }
  }

  private def awaitOrCancel(proc: Process, sc: SparkContext, tag: String, path: String): Int =
    try proc.waitFor()
    catch {
      case e: InterruptedException =>
        log.warn(s"hudi-md: the write to $path was interrupted; cancelling its jobs and stopping its process")
        sc.cancelJobsWithTag(tag)
        proc.destroy()
        if (!proc.waitFor(CancelGraceSeconds, TimeUnit.SECONDS)) proc.destroyForcibly()
        Thread.currentThread().interrupt()
        throw new HudiMdWriteFailedException(
          s"hudi-md: the write to $path was cancelled (nothing was committed, or the commit stands if it " +
            "completed before; the next write rolls back whatever the write left pending)", null, e)
    }

  private def failure(errorType: String, message: String, path: String): Exception = errorType match {
    case Protocol.InvalidOptionError => new IllegalArgumentException(s"hudi-md: $message")
    case Protocol.TableExistsError   => new HudiMdWriteException(s"hudi-md: $message")
    case _ => new HudiMdWriteFailedException(s"hudi-md: the write to $path failed: $errorType: $message", errorType)
  }

  /** The last lines a write's process printed (its traceback), each logged as it comes. */
  private final class ProcessOutput(proc: Process, redact: Redaction, label: String) {
    private val tail = new java.util.ArrayDeque[String]()
    private val thread = new Thread(s"hudi-md-write-$label-output") {
      override def run(): Unit = {
        val reader = new BufferedReader(new InputStreamReader(proc.getInputStream, StandardCharsets.UTF_8))
        try {
          var line = reader.readLine()
          while (line != null) {
            val shown = redact(line)
            log.info(s"hudi-md write $label: $shown")
            tail.synchronized {
              tail.addLast(shown)
              while (tail.size > OutputLines) tail.removeFirst()
            }
            line = reader.readLine()
          }
        } catch { case _: IOException => () }
      }
    }
    thread.setDaemon(true)
    thread.start()

    def join(): Unit = thread.join(10000)

    private def text: String = tail.synchronized(String.join("\n", tail))

    def describe: String = if (text.trim.isEmpty) "" else s"; its output:\n$text"

    def interpreterHint: String =
      if (text.contains("No module named") || text.contains("ModuleNotFoundError")) s"\n(${PlannerSettings.PythonHint})"
      else ""
  }
}

/**
 * Replaces secret values in text (messages, log lines) with Spark's redaction text.
 * [[Redaction.secretValues]] picks the values of options whose key matches Spark's
 * `spark.redaction.regex`.
 */
final class Redaction(secrets: Seq[String]) extends (String => String) {
  private val values = secrets.filter(s => s != null && s.length >= 3).distinct.sortBy(-_.length)

  override def apply(text: String): String =
    if (text == null) null else values.foldLeft(text)((t, s) => t.replace(s, Redaction.Replacement))
}

object Redaction {
  val Replacement = "*********(redacted)"
  private val DefaultRegex = "(?i)secret|password|token|access[.]key"

  def secretValues(conf: SparkConf, options: Iterable[(String, String)]): Seq[String] = {
    val regex = Pattern.compile(conf.get("spark.redaction.regex", DefaultRegex))
    options.collect { case (k, v) if v != null && regex.matcher(k).find() => v }.toSeq
  }
}
