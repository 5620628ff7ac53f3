package hudi.md.spark

import java.time.{Instant, LocalDate, LocalDateTime, ZoneOffset}
import java.time.format.DateTimeFormatter
import java.util.Base64

import com.fasterxml.jackson.databind.JsonNode
import com.fasterxml.jackson.databind.node.{ArrayNode, JsonNodeFactory, ObjectNode}
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

/**
 * Spark `Expression`s → the planner's JSON expression form (`hudi_md.planning.expressions`).
 *
 * The translation is conservative: a part that cannot be expressed is dropped from an AND (the
 * result then selects a superset) and makes an OR or a NOT untranslatable as a whole. Every
 * translation carries `exact`: whether it selects exactly the rows Spark's expression is TRUE for
 * (three-valued logic), which a NOT requires of its child. The whole filter falls back to
 * `{"op": "true"}`. Partition filters are re-evaluated exactly on the JVM afterwards, data filters
 * by Spark after the scan, so the planner only ever has to prune conservatively.
 */
object FilterTranslator {
  private val json = JsonNodeFactory.instance
  private val TimestampFormat = DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSSSSS")

  private case class Translated(node: ObjectNode, exact: Boolean)

  /** The AND of the translatable parts of `filters`, or `{"op":"true"}`. */
  def translate(filters: Seq[Expression]): ObjectNode = {
    val parts = filters.flatMap(f => translateOne(f)).map(_.node)
    parts match {
      case Seq()     => op("true")
      case Seq(only) => only
      case many      => nary("and", many)
    }
  }

  private def op(name: String): ObjectNode = json.objectNode().put("op", name)

  private def nary(name: String, children: Seq[ObjectNode]): ObjectNode = {
    val node = op(name)
    val arr = node.putArray("children")
    children.foreach(arr.add(_: JsonNode))
    node
  }

  private def translateOne(e: Expression): Option[Translated] = e match {
    case And(l, r) =>
      (translateOne(l), translateOne(r)) match {
        case (Some(a), Some(b)) => Some(Translated(nary("and", Seq(a.node, b.node)), a.exact && b.exact))
        case (Some(a), None)    => Some(a.copy(exact = false))
        case (None, Some(b))    => Some(b.copy(exact = false))
        case _                  => None
      }
    case Or(l, r) =>
      for (a <- translateOne(l); b <- translateOne(r))
        yield Translated(nary("or", Seq(a.node, b.node)), a.exact && b.exact)
    case Not(child) =>
      translateOne(child).filter(_.exact).map { c =>
        val node = op("not")
        node.set[JsonNode]("child", c.node)
        Translated(node, exact = true)
      }
    case IsNull(Column(name, _))    => Some(Translated(op("is_null").put("column", name), exact = true))
    case IsNotNull(Column(name, _)) => Some(Translated(op("not_null").put("column", name), exact = true))

    case EqualTo(Column(n, _), Lit(v, t))     => compare("eq", n, v, t)
    case EqualTo(Lit(v, t), Column(n, _))     => compare("eq", n, v, t)
    // `a <=> x` is FALSE (not NULL) for a null `a`: same rows as `a = x`, but not under a NOT.
    case EqualNullSafe(Column(n, _), Lit(v, t)) if v != null => compare("eq", n, v, t).map(_.copy(exact = false))
    case EqualNullSafe(Lit(v, t), Column(n, _)) if v != null => compare("eq", n, v, t).map(_.copy(exact = false))
    case LessThan(Column(n, _), Lit(v, t))           => compare("lt", n, v, t)
    case LessThan(Lit(v, t), Column(n, _))           => compare("gt", n, v, t)
    case LessThanOrEqual(Column(n, _), Lit(v, t))    => compare("le", n, v, t)
    case LessThanOrEqual(Lit(v, t), Column(n, _))    => compare("ge", n, v, t)
    case GreaterThan(Column(n, _), Lit(v, t))        => compare("gt", n, v, t)
    case GreaterThan(Lit(v, t), Column(n, _))        => compare("lt", n, v, t)
    case GreaterThanOrEqual(Column(n, _), Lit(v, t)) => compare("ge", n, v, t)
    case GreaterThanOrEqual(Lit(v, t), Column(n, _)) => compare("le", n, v, t)

    case StartsWith(Column(n, StringType), Lit(v: UTF8String, StringType)) =>
      Some(Translated(op("starts_with").put("column", n).put("value", v.toString), exact = true))

    case In(Column(n, t), list) if list.forall(_.isInstanceOf[Literal]) =>
      inSet(n, list.map(_.asInstanceOf[Literal].value), t)
    case InSet(Column(n, t), values) =>
      inSet(n, values.toSeq, t)

    // A bare boolean column (Spark simplifies `b = true` to `b`).
    case Column(n, BooleanType) =>
      Some(Translated(op("eq").put("column", n).put("value", true), exact = true))

    case _ => None
  }

  private def compare(name: String, column: String, value: Any, dataType: DataType): Option[Translated] =
    if (value == null) None // comparisons with NULL are never TRUE; let Spark handle them
    else
      encode(value, dataType).map { case (v, hint) =>
        val node = op(name).put("column", column)
        node.set[JsonNode]("value", v)
        hint.foreach(node.put("type", _))
        Translated(node, exact = true)
      }

  private def inSet(column: String, values: Seq[Any], dataType: DataType): Option[Translated] = {
    val nonNull = values.filter(_ != null)
    val encoded = nonNull.map(v => encode(v, dataType))
    if (encoded.exists(_.isEmpty)) return None
    val hints = encoded.flatMap(_.get._2).distinct
    if (hints.size > 1) return None
    val node = op("in").put("column", column)
    val arr: ArrayNode = node.putArray("values")
    encoded.foreach(e => arr.add(e.get._1))
    hints.headOption.foreach(node.put("type", _))
    // `a IN (1, NULL)` is NULL, not FALSE, for a = 2: the same TRUE rows, but not under a NOT.
    Some(Translated(node, exact = nonNull.size == values.size))
  }

  /** A Catalyst literal value as JSON, with the planner's type hint when JSON has no native form. */
  private[spark] def encode(value: Any, dataType: DataType): Option[(JsonNode, Option[String])] =
    (value, dataType) match {
      case (s: UTF8String, StringType)            => Some((json.textNode(s.toString), None))
      case (b: Boolean, BooleanType)              => Some((json.booleanNode(b), None))
      case (v: Byte, ByteType)                    => Some((json.numberNode(v.toInt), None))
      case (v: Short, ShortType)                  => Some((json.numberNode(v.toInt), None))
      case (v: Int, IntegerType)                  => Some((json.numberNode(v), None))
      case (v: Long, LongType)                    => Some((json.numberNode(v), None))
      case (v: Float, FloatType)                  => floating(v.toDouble)
      case (v: Double, DoubleType)                => floating(v)
      case (days: Int, DateType)                  => Some((json.textNode(LocalDate.ofEpochDay(days.toLong).toString), Some("date")))
      case (micros: Long, TimestampType)          =>
        Some((json.textNode(TimestampFormat.format(utc(micros)) + "+00:00"), Some("timestamp")))
      case (micros: Long, TimestampNTZType)       =>
        Some((json.textNode(TimestampFormat.format(utc(micros))), Some("timestamp")))
      case (d: Decimal, _: DecimalType)           => Some((json.textNode(d.toJavaBigDecimal.toPlainString), Some("decimal")))
      case (b: Array[Byte], BinaryType)           => Some((json.textNode(Base64.getEncoder.encodeToString(b)), Some("binary")))
      case _                                      => None
    }

  private def floating(v: Double): Option[(JsonNode, Option[String])] =
    if (v.isNaN) Some((json.textNode("NaN"), Some("float")))
    else if (v.isPosInfinity) Some((json.textNode("Infinity"), Some("float")))
    else if (v.isNegInfinity) Some((json.textNode("-Infinity"), Some("float")))
    else Some((json.numberNode(v), None))

  private def utc(micros: Long): LocalDateTime = {
    val seconds = Math.floorDiv(micros, 1000000L)
    val nanos = Math.floorMod(micros, 1000000L) * 1000L
    LocalDateTime.ofInstant(Instant.ofEpochSecond(seconds, nanos), ZoneOffset.UTC)
  }

  /** A top-level column. Casts around columns are left untranslated: Spark's optimizer already
   * unwraps the safe ones, and a literal outside the column's type range must not reach the planner. */
  private object Column {
    def unapply(e: Expression): Option[(String, DataType)] = e match {
      case a: AttributeReference => Some((a.name, a.dataType))
      case _                     => None
    }
  }

  /** A literal (Spark folds constant expressions before listing files). */
  private object Lit {
    def unapply(e: Expression): Option[(Any, DataType)] = e match {
      case l: Literal => Some((l.value, l.dataType))
      case _          => None
    }
  }
}
