package hudi.md.spark

import java.io.{BufferedInputStream, BufferedOutputStream, DataInputStream, DataOutputStream, IOException}
import java.nio.charset.StandardCharsets
import java.util.concurrent.{Executors, ScheduledFuture, ThreadFactory, TimeUnit}

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import com.fasterxml.jackson.databind.node.ObjectNode
import org.slf4j.LoggerFactory

/** How to reach the planner: the interpreter to run and how long one request may take. */
case class PlannerSettings(python: String, timeoutSeconds: Long)

object PlannerSettings {
  val TimeoutConf = "spark.hudi_md.planner.timeoutSeconds"
  val DefaultTimeoutSeconds = 600L

  /** The interpreter of the planner process (a Python with `hudi_md` installed). */
  val PythonConf = "spark.hudi_md.planner.python"

  /** How to point the planner at the right interpreter, for error messages. */
  val PythonHint: String =
    s"set $PythonConf (or spark.pyspark.python) to a Python with hudi_md installed, e.g. " +
      s"`spark-sql --conf $PythonConf=/path/to/venv/bin/python`; from PySpark, " +
      "hudi_md.spark.session.configure(builder) sets it to the driver's interpreter"

  /**
   * [[PythonConf]], else `spark.pyspark.python`, else `$PYSPARK_PYTHON`, else `python3`; the
   * timeout from [[TimeoutConf]].
   */
  def fromConf(conf: org.apache.spark.SparkConf): PlannerSettings =
    PlannerSettings(
      python = Seq(conf.getOption(PythonConf), conf.getOption("spark.pyspark.python"), Option(System.getenv("PYSPARK_PYTHON")))
        .flatten
        .find(_.trim.nonEmpty)
        .getOrElse("python3"),
      timeoutSeconds = conf.getLong(TimeoutConf, DefaultTimeoutSeconds)
    )

  /** The settings of this JVM's Spark (driver or executor), or the defaults outside Spark. */
  def current(): PlannerSettings =
    Option(org.apache.spark.SparkEnv.get).map(env => fromConf(env.conf))
      .getOrElse(fromConf(new org.apache.spark.SparkConf(false)))
}

/**
 * The planner refused or failed a request (`error_type: message` from Python), or could not run.
 * `errorType` is the Python error's class name (e.g. `InvalidOptionError`), null when the process
 * itself failed, so callers can turn a refused option into the JVM's `IllegalArgumentException`.
 */
class HudiMdPlannerException(message: String, cause: Throwable = null, val errorType: String = null)
    extends RuntimeException(message, cause)

/**
 * One long-lived `python -m hudi_md.spark.planner` process per JVM (DESIGN.md, "Planner
 * protocol"), started lazily: on the driver for schemas and plans, on executors for `read_slice`
 * (MOR file slices with log files, see [[HudiMdFileFormat]]). Frames are a 4-byte big-endian length and the payload; requests are
 * JSON, responses are a JSON header and, for `plan` and `read_slice`, a second frame holding an Arrow IPC stream.
 *
 * Requests are serialized. A process that died (EOF / broken pipe) is restarted once and the request
 * retried; a request the planner answers with `ok: false` is not retried and raises
 * [[HudiMdPlannerException]] with the planner's `error_type: message`.
 *
 * A `plan` sent with a [[PlanEngine]] offers the driver's Spark (`engine: true`): the planner may
 * then ask for it before answering (a `callback` frame, answered with [[PlanEngine.offer]]). While
 * it is lent the answer is awaited interruptibly: an interrupted caller cancels the plan's job (the
 * planner answers the failure). The engine is closed (its Py4J server stopped) with the request.
 */
object PlannerClient {
  private val log = LoggerFactory.getLogger(getClass)
  val mapper = new ObjectMapper()
  private val Module = Protocol.PlannerModule
  private val StderrLines = 200

  @volatile private var process: Process = _
  private var python: String = _
  private var in: DataInputStream = _
  private var out: DataOutputStream = _
  private val stderrTail = new java.util.ArrayDeque[String]()
  private var stderrThread: Thread = _

  private val watchdog = Executors.newSingleThreadScheduledExecutor(new ThreadFactory {
    override def newThread(r: Runnable): Thread = {
      val t = new Thread(r, "hudi-md-planner-watchdog")
      t.setDaemon(true)
      t
    }
  })

  Runtime.getRuntime.addShutdownHook(new Thread("hudi-md-planner-shutdown") {
    // No lock here: a request may be blocked reading from the process being torn down.
    override def run(): Unit = Option(process).foreach(_.destroy())
  })

  /**
   * Sends `request`; returns the JSON header and, when `withBody`, the body frame. `engine`: the
   * driver's Spark, lent to the planner should the plan ask for it.
   */
  def call(
      settings: PlannerSettings,
      request: ObjectNode,
      withBody: Boolean,
      engine: Option[PlanEngine] = None): (JsonNode, Option[Array[Byte]]) =
    try synchronized {
      if (engine.isDefined) request.put(Protocol.Engine, true)
      val payload = mapper.writeValueAsBytes(request)
      val op = Option(request.get(Protocol.Op)).map(_.asText).getOrElse("?")
      val (header, body) =
        try exchange(settings, payload, withBody, engine)
        catch {
          case e: IOException =>
            val firstTail = stopProcess()
            log.warn(s"hudi-md planner process failed during '$op': ${describe(e)} $firstTail; restarting it once")
            try exchange(settings, payload, withBody, engine)
            catch {
              case e2: IOException =>
                val tail = stopProcess()
                val why = if (tail.nonEmpty) tail else firstTail
                throw new HudiMdPlannerException(
                  s"hudi-md planner process (${settings.python} -m $Module) failed twice during '$op': " +
                    s"${describe(e2)}${describeTail(why)}${interpreterHint(why)}", e2)
            }
        }
      if (!header.path(Protocol.Ok).asBoolean(false)) {
        val errorType = header.path(Protocol.ErrorType).asText("PlannerError")
        val message = header.path(Protocol.Message).asText("(no message)")
        throw new HudiMdPlannerException(s"$errorType: $message", null, errorType)
      }
      (header, body)
    } finally engine.foreach(_.close())

  private def exchange(settings: PlannerSettings, payload: Array[Byte], withBody: Boolean, engine: Option[PlanEngine])
      : (JsonNode, Option[Array[Byte]]) = {
    ensureStarted(settings.python)
    val proc = process
    @volatile var timedOut = false
    val timer: ScheduledFuture[_] = watchdog.schedule(new Runnable {
      override def run(): Unit = { timedOut = true; proc.destroyForcibly() }
    }, settings.timeoutSeconds, TimeUnit.SECONDS)
    try {
      writeFrame(payload)
      var header = mapper.readTree(readFrame(engine))
      while (header.has(Protocol.Callback)) {
        writeFrame(mapper.writeValueAsBytes(callback(header.path(Protocol.Callback).asText(), engine)))
        header = mapper.readTree(readFrame(engine))
      }
      val body = if (withBody && header.path(Protocol.Ok).asBoolean(false)) Some(readFrame(engine)) else None
      (header, body)
    } catch {
      case e: IOException if timedOut =>
        val tail = stopProcess()
        throw new HudiMdPlannerException(
          s"hudi-md planner did not answer within ${settings.timeoutSeconds}s (${PlannerSettings.TimeoutConf}); " +
            s"process killed${describeTail(tail)}", e)
    } finally {
      timer.cancel(false)
    }
  }

  private def writeFrame(payload: Array[Byte]): Unit = {
    out.writeInt(payload.length)
    out.write(payload)
    out.flush()
  }

  /** The answer to a planner's callback (only the engine is asked for). */
  private def callback(kind: String, engine: Option[PlanEngine]): ObjectNode = (kind, engine) match {
    case (Protocol.CallbackEngine, Some(e)) => e.offer()
    case _ =>
      val why = if (kind == Protocol.CallbackEngine) "this request offered no Spark" else s"unknown callback '$kind'"
      mapper.createObjectNode().put(Protocol.Ok, false).put(Protocol.Message, why)
  }

  private def readFrame(engine: Option[PlanEngine] = None): Array[Byte] = {
    engine.filter(_.lent).foreach(awaitInput)
    val n = in.readInt()
    if (n < 0) throw new IOException(s"bad frame length $n from the planner")
    val buf = new Array[Byte](n)
    in.readFully(buf)
    buf
  }

  /**
   * Waits for the planner's next frame while its plan's job may run, so that an interrupted caller
   * cancels the job (the planner then answers its failure, which the caller gets).
   */
  private def awaitInput(engine: PlanEngine): Unit = {
    val proc = process
    var interrupted = false
    while (in.available() == 0 && proc.isAlive) {
      try Thread.sleep(10)
      catch {
        case _: InterruptedException if !interrupted =>
          interrupted = true
          log.warn("hudi-md: the query was interrupted while its plan's Spark job ran; cancelling the job")
          engine.cancel()
        case _: InterruptedException => ()
      }
    }
    if (interrupted) Thread.currentThread().interrupt()
  }

  private def ensureStarted(exec: String): Unit = {
    if (process != null && process.isAlive && python == exec) return
    if (process != null) stopProcess()
    val pb = new ProcessBuilder(exec, "-m", Module)
    // Spark's own PySpark first, when $SPARK_HOME has one: the planner attaches to this JVM with it.
    val pythonPath = org.apache.spark.hudi_md.PythonGateway.sparkPythonPath ++
      Option(pb.environment().get("PYTHONPATH")).filter(_.nonEmpty)
    if (pythonPath.nonEmpty) pb.environment().put("PYTHONPATH", pythonPath.mkString(java.io.File.pathSeparator))
    pb.redirectInput(ProcessBuilder.Redirect.PIPE)
    pb.redirectOutput(ProcessBuilder.Redirect.PIPE)
    pb.redirectError(ProcessBuilder.Redirect.PIPE)
    val proc =
      try pb.start()
      catch {
        case e: IOException =>
          throw new HudiMdPlannerException(
            s"hudi-md: cannot start the planner '$exec -m $Module' (${PlannerSettings.PythonHint}): ${e.getMessage}", e)
      }
    log.info(s"hudi-md: started planner process ${pidOf(proc)} ($exec -m $Module)")
    stderrTail.synchronized(stderrTail.clear())
    val err = proc.getErrorStream
    val t = new Thread(s"hudi-md-planner-stderr-${pidOf(proc)}") {
      override def run(): Unit = {
        val reader = new java.io.BufferedReader(new java.io.InputStreamReader(err, StandardCharsets.UTF_8))
        try {
          var line = reader.readLine()
          while (line != null) {
            // the planner's warnings (a mistyped option) at WARN, where Spark's shells show them
            if (line.startsWith(Protocol.LogWarningPrefix) || line.startsWith(Protocol.LogErrorPrefix)) {
              log.warn(s"planner: $line")
            } else log.info(s"planner: $line")
            stderrTail.synchronized {
              stderrTail.addLast(line)
              while (stderrTail.size > StderrLines) stderrTail.removeFirst()
            }
            line = reader.readLine()
          }
        } catch { case _: IOException => () }
      }
    }
    t.setDaemon(true)
    t.start()
    process = proc
    python = exec
    stderrThread = t
    in = new DataInputStream(new BufferedInputStream(proc.getInputStream, 1 << 16))
    out = new DataOutputStream(new BufferedOutputStream(proc.getOutputStream, 1 << 16))
  }

  /** Stops the process (if any); returns its exit code and the last lines it wrote to stderr. */
  private def stopProcess(): String = {
    val proc = process
    process = null
    if (proc == null) return ""
    try out.close() catch { case _: IOException => () }
    if (!proc.waitFor(2, TimeUnit.SECONDS)) {
      proc.destroy()
      if (!proc.waitFor(2, TimeUnit.SECONDS)) proc.destroyForcibly()
    }
    if (stderrThread != null) stderrThread.join(2000)
    val exit = if (proc.isAlive) "still running" else s"exit code ${proc.exitValue()}"
    stderrTail.synchronized {
      val s = String.join("\n", stderrTail)
      stderrTail.clear()
      if (s.trim.isEmpty) s"($exit)" else s"($exit); planner stderr:\n$s"
    }
  }

  private def describeTail(tail: String): String = if (tail.isEmpty) "" else s" $tail"

  /** When the interpreter has no `hudi_md` (or no pyarrow): how to point the planner at one that has. */
  private def interpreterHint(stderr: String): String =
    if (stderr.contains("No module named") || stderr.contains("ModuleNotFoundError")) s"\n(${PlannerSettings.PythonHint})"
    else ""

  private def describe(e: Throwable): String = e match {
    case _: java.io.EOFException => "the planner closed its output"
    case _                       => Option(e.getMessage).getOrElse(e.getClass.getName)
  }

  /** Used by tests and tools: the pid of the running planner, or -1. */
  def pid: Long = synchronized(if (process != null && process.isAlive) pidOf(process) else -1L)

  /** Stops the planner process; the next request starts a new one. */
  def shutdown(): Unit = synchronized { stopProcess(); () }

  /** `Process.pid()` is Java 9+; the Spark 3.5 build targets Java 8. */
  private def pidOf(proc: Process): Long =
    try classOf[Process].getMethod("pid").invoke(proc).asInstanceOf[java.lang.Long].longValue()
    catch { case _: Exception => -1L }
}
