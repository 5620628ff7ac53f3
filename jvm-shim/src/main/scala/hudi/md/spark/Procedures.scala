package hudi.md.spark

import java.io.ByteArrayInputStream
import java.util.Locale

import scala.collection.mutable
import scala.util.Try

import com.fasterxml.jackson.databind.node.ObjectNode
import org.apache.arrow.vector.ipc.ArrowStreamReader
import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.catalyst.CatalystTypeConverters
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference}
import org.apache.spark.sql.catalyst.parser.ParserInterface
import org.apache.spark.sql.catalyst.plans.logical.{LeafNode, LogicalPlan}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.types.{DataType, StructType}
import org.apache.spark.sql.vectorized.{ArrowColumnVector, ColumnVector, ColumnarBatch}

/**
 * `CALL <procedure>(<arg>, ...)` on hudi-md tables: Apache Hudi's procedures by Hudi's names
 * (`show_commits`, `run_compaction`, ...; `hudi_md/spark/procedures.py` lists them), run by the
 * planner process on the table's path. Arguments are literals, by name (`table => 'db.t'`) or by
 * position; the table is `table => '<name>'`, `path => '<location>'`, or the first positional
 * argument.
 *
 * Spark 3.5 has no `CALL` statement and Spark 4's resolves only through a V2 procedure catalog, so
 * [[SqlParser]] parses it ([[CallStatement]]) before the session's parser; what that parser makes of
 * the statement (Apache Hudi's own `CALL` when its extension is loaded too) is kept, and used when
 * the table is not a hudi-md one.
 */
case class HudiMdCall(procedure: String, args: Seq[(Option[String], String)], fallback: Option[LogicalPlan])
    extends LeafNode {
  override def output: Seq[Attribute] = Nil
  override lazy val resolved: Boolean = false
}

/** The statement parser: `CALL [catalog.][db.]name ( [[name =>] literal [, ...]] ) [;]`. */
object CallStatement {

  /** `sql` as a `CALL`, or None when it is not one; a malformed `CALL` fails naming what is wrong. */
  def parse(sql: String, delegate: ParserInterface): Option[HudiMdCall] = {
    val t = new Tokens(sql)
    if (!t.keyword("CALL")) return None
    val name = t.name()
    t.expect("(")
    val args = mutable.ArrayBuffer.empty[(Option[String], String)]
    if (!t.accept(")")) {
      do {
        val named = t.argumentName()
        args += named -> t.literal()
      } while (t.accept(","))
      t.expect(")")
    }
    t.accept(";")
    t.end()
    Some(HudiMdCall(name.toLowerCase(Locale.ROOT), args.toList, Try(delegate.parsePlan(sql)).toOption))
  }

  private final class Tokens(sql: String) {
    private var i = 0

    private def skip(): Unit = {
      var moved = true
      while (moved) {
        moved = false
        while (i < sql.length && sql.charAt(i).isWhitespace) { i += 1; moved = true }
        if (sql.startsWith("--", i)) {
          while (i < sql.length && sql.charAt(i) != '\n') i += 1
          moved = true
        } else if (sql.startsWith("/*", i)) {
          val close = sql.indexOf("*/", i + 2)
          i = if (close < 0) sql.length else close + 2
          moved = true
        }
      }
    }

    private def word(): Option[String] = {
      skip()
      if (i < sql.length && sql.charAt(i) == '`') {
        val close = sql.indexOf('`', i + 1)
        if (close < 0) fail("an unclosed `")
        val w = sql.substring(i + 1, close)
        i = close + 1
        Some(w)
      } else {
        val start = i
        while (i < sql.length && (sql.charAt(i).isLetterOrDigit || sql.charAt(i) == '_')) i += 1
        if (i > start) Some(sql.substring(start, i)) else None
      }
    }

    /** An unquoted keyword `k` next. */
    def keyword(k: String): Boolean = {
      skip()
      val after = i + k.length
      val matches = sql.regionMatches(true, i, k, 0, k.length) &&
        (after >= sql.length || !(sql.charAt(after).isLetterOrDigit || sql.charAt(after) == '_'))
      if (matches) i = after
      matches
    }

    /** The procedure's name: its last part (a catalog or database before it is ignored, as in Hudi). */
    def name(): String = {
      var last = word().getOrElse(fail("a procedure name after CALL"))
      while (accept(".")) last = word().getOrElse(fail("a name after '.'"))
      last
    }

    def accept(s: String): Boolean = {
      skip()
      if (sql.startsWith(s, i)) { i += s.length; true } else false
    }

    def expect(s: String): Unit = if (!accept(s)) fail(s"'$s'")

    def end(): Unit = {
      skip()
      if (i < sql.length) fail("the end of the statement")
    }

    /** `name =>` before an argument, if there is one. */
    def argumentName(): Option[String] = {
      val save = i
      word() match {
        case Some(w) if accept("=>") => Some(w)
        case _                       => i = save; None
      }
    }

    /** A literal's text: strings unquoted ('' and \' escapes), numbers, booleans and NULL as written. */
    def literal(): String = {
      skip()
      if (i >= sql.length) fail("an argument")
      val q = sql.charAt(i)
      if (q == '\'' || q == '"') {
        val out = new StringBuilder
        i += 1
        while (i < sql.length && !(sql.charAt(i) == q && !sql.startsWith(s"$q$q", i))) {
          if (sql.charAt(i) == '\\' && i + 1 < sql.length) { out += sql.charAt(i + 1); i += 2 }
          else if (sql.startsWith(s"$q$q", i)) { out += q; i += 2 }
          else { out += sql.charAt(i); i += 1 }
        }
        if (i >= sql.length) fail(s"a closing $q")
        i += 1
        out.toString
      } else {
        val start = i
        while (i < sql.length && (sql.charAt(i).isLetterOrDigit || "-+._".indexOf(sql.charAt(i)) >= 0)) i += 1
        if (i == start) fail("a literal argument (a string, number, boolean or NULL)")
        sql.substring(start, i)
      }
    }

    private def fail(what: String): Nothing = throw new IllegalArgumentException(
      s"hudi-md: CALL: expected $what at position $i of: $sql")
  }
}

/** A resolution rule: a [[HudiMdCall]] on a hudi-md table (or a path) as [[HudiMdCallCommand]]. */
case class CallRule(session: SparkSession) extends Rule[LogicalPlan] {

  private val TableArg = "TABLE" // Hudi's parameter names, compared ignoring case
  private val PathArg = "PATH"

  override def apply(plan: LogicalPlan): LogicalPlan = plan.resolveOperatorsUpWithPruning(_ => true) {
    case c: HudiMdCall => resolve(c)
  }

  private def resolve(c: HudiMdCall): LogicalPlan = {
    val settings = PlannerSettings.fromConf(session.sparkContext.getConf)
    // Another extension's plan of the statement (Apache Hudi's `CALL`); Spark 4's own `Call`
    // resolves only through a procedure catalog, so for a table that is no hudi-md one only
    val extensionPlan = c.fallback.filterNot(_.getClass.getName == SparkCall)
    // the procedure's columns and parameters (any path: they do not depend on the table)
    val header =
      try CallRule.ask(settings, CallRule.request(Protocol.OpProcedureSchema, c.procedure, ".", Map.empty, Nil), withBody = false)._1
      catch { case e: IllegalArgumentException => return extensionPlan.getOrElse(throw e) }
    val parameters = Seq.newBuilder[String]
    header.path(Protocol.Parameters).elements().forEachRemaining(p => parameters += p.asText())
    val args = bind(c, parameters.result())
    def arg(n: String) = args.collectFirst { case (k, v) if k.equalsIgnoreCase(n) => v }
    val located: Option[Option[(String, Map[String, String])]] =
      arg(PathArg).map(p => Some((p, Map.empty[String, String]))).orElse(arg(TableArg).map(hudiMdTable))
    located match {
      case Some(Some((path, options))) =>
        val schema = DataType.fromJson(header.path(Protocol.ResultSchema).asText()).asInstanceOf[StructType]
        val output = schema.fields.map(f => AttributeReference(f.name, f.dataType, f.nullable)()).toList
        val rest = args.filterNot { case (k, _) => k.equalsIgnoreCase(TableArg) || k.equalsIgnoreCase(PathArg) }
        HudiMdCallCommand(c.procedure, path, options, rest.map { case (k, v) => (Some(k), v) }, output)
      case Some(None) =>
        c.fallback.getOrElse(fail(s"CALL ${c.procedure}: ${arg(TableArg).get} is not a hudi-md table"))
      case None =>
        extensionPlan.getOrElse(fail(s"CALL ${c.procedure}: name the table, as table => 'db.t' or path => '<table location>'"))
    }
  }

  private val SparkCall = "org.apache.spark.sql.catalyst.plans.logical.Call"

  /** The call's arguments by name: those given by position take the parameters in order. */
  private def bind(c: HudiMdCall, parameters: Seq[String]): Seq[(String, String)] = {
    val positional = c.args.takeWhile(_._1.isEmpty).map(_._2)
    if (c.args.drop(positional.size).exists(_._1.isEmpty)) {
      fail(s"CALL ${c.procedure}: an argument by position after one by name")
    }
    if (positional.size > parameters.size) {
      fail(s"CALL ${c.procedure}: ${positional.size} arguments by position; it takes ${parameters.mkString(", ")}")
    }
    parameters.zip(positional) ++ c.args.drop(positional.size).map { case (k, v) => (k.get, v) }
  }

  /** A catalog table's location and storage options, when it is a hudi-md table. */
  private def hudiMdTable(name: String): Option[(String, Map[String, String])] =
    CatalogTables.lookup(session, name).filter(WriteGuard.isHudiMd).map(CatalogTables.location)

  private def fail(message: String): Nothing = throw new IllegalArgumentException(s"hudi-md: $message")
}

object CallRule {

  /** A planner request of a call; a bad argument or procedure as an `IllegalArgumentException`. */
  def ask(settings: PlannerSettings, req: ObjectNode, withBody: Boolean)
      : (com.fasterxml.jackson.databind.JsonNode, Option[Array[Byte]]) =
    try PlannerClient.call(settings, req, withBody)
    catch {
      case e: HudiMdPlannerException if e.errorType == Protocol.InvalidOptionError =>
        throw new IllegalArgumentException(s"hudi-md: CALL: ${e.getMessage.stripPrefix(s"${e.errorType}: ")}", e)
    }
  def request(
      op: String, procedure: String, path: String, options: Map[String, String], args: Seq[(Option[String], String)])
      : ObjectNode = {
    val req = PlannerClient.mapper.createObjectNode()
    req.put(Protocol.Op, op)
    req.put(Protocol.Procedure, procedure)
    req.put(Protocol.Path, path)
    val opts = req.putObject(Protocol.Options)
    options.foreach { case (k, v) => opts.put(k, v) }
    val list = req.putArray(Protocol.ProcedureArgs)
    args.foreach { case (name, value) =>
      val a = list.addObject()
      name.foreach(a.put(Protocol.ArgName, _))
      a.put(Protocol.ArgValue, value)
    }
    req
  }
}

/** A `CALL` of a hudi-md procedure: the planner runs it and answers its rows as an Arrow stream. */
case class HudiMdCallCommand(
    procedure: String,
    path: String,
    options: Map[String, String],
    args: Seq[(Option[String], String)],
    override val output: Seq[Attribute])
    extends org.apache.spark.sql.execution.command.LeafRunnableCommand {

  override def run(session: SparkSession): Seq[Row] = {
    val req = CallRule.request(Protocol.OpCall, procedure, path, options, args)
    val (_, body) = CallRule.ask(PlannerSettings.fromConf(session.sparkContext.getConf), req, withBody = true)
    val schema = StructType(output.map(a => org.apache.spark.sql.types.StructField(a.name, a.dataType, a.nullable)))
    val toRow = CatalystTypeConverters.createToScalaConverter(schema)
    val allocator = SliceReader.allocator.newChildAllocator("hudi-md-call", 0, Long.MaxValue)
    val rows = Seq.newBuilder[Row]
    try {
      val reader = new ArrowStreamReader(new ByteArrayInputStream(body.getOrElse(Array.emptyByteArray)), allocator)
      try {
        val root = reader.getVectorSchemaRoot
        while (reader.loadNextBatch()) {
          val columns: Array[ColumnVector] = (0 until root.getFieldVectors.size)
            .map(i => new ArrowColumnVector(root.getVector(i)): ColumnVector).toArray
          val batch = new ColumnarBatch(columns, root.getRowCount)
          val it = batch.rowIterator()
          while (it.hasNext) rows += toRow(it.next().copy()).asInstanceOf[Row]
        }
      } finally reader.close()
    } finally allocator.close()
    rows.result()
  }

  override def simpleString(maxFields: Int): String = s"CALL $procedure on $path"
}
