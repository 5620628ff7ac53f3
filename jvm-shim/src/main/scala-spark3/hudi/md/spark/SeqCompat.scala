package hudi.md.spark

import scala.collection.{AbstractSeq, immutable, mutable}
import scala.collection.generic.CanBuildFrom
import scala.reflect.ClassTag

/**
 * Sequences as Spark's `Seq` of its Scala version needs them (this: Spark 3.5, Scala 2.12).
 *
 * A plan's directories and their file lists are built for what Spark's scan does with them: it
 * turns the directories into an array, and for its metrics maps every directory to its file count
 * and to the sum of its files' lengths (`map(...)` with `Seq`'s builder, then `sum`). Over 100k
 * directories Scala's generic `map` and `sum` (a builder, a boxed partial sum per element, and
 * per directory a new list of its lengths) take most of a warm unfiltered plan. These sequences
 * answer the same calls with plain loops; every other call is Scala's own.
 *
 * A plan reusing an answer hands Spark the same directories again, and Spark maps them with the
 * same two functions again: they capture nothing, so each is one object for the life of the JVM.
 * Even with plain loops those two passes were ~70 % of the JVM's time in a warm unfiltered plan
 * over 100k directories (JFR; a box per size, a pointer chase per directory and file), so a
 * wrapped array keeps what a function mapped it to when every value is a count (a boxed `Long` or
 * `Integer`), and gives it again when the same function object maps it again. That is Scala's own
 * answer for a function whose result depends only on its argument, and the directories, their
 * file lists and the files' statuses are not changed once made.
 */
object SeqCompat {

  /** `array` as a Seq without a copy, whose `toArray` of the same element type is `array` itself. */
  def wrapArray[T <: AnyRef](array: Array[T]): Seq[T] = new ArrayOfRefs(array)

  /** A file list of one file. */
  def single[T <: AnyRef](element: T): Seq[T] = new Single(element)

  private val SeqBuilder = scala.collection.Seq.canBuildFrom[Any]

  /** `Numeric.plus` over the elements from zero, as `TraversableOnce.sum`; for `Long` unboxed. */
  private def sumOf[B](values: Array[AnyRef], num: Numeric[B]): B =
    if (num eq Numeric.LongIsIntegral) {
      var s = 0L
      var i = 0
      while (i < values.length) {
        s += scala.runtime.BoxesRunTime.unboxToLong(values(i)) // null as 0L, as Numeric.plus unboxes it
        i += 1
      }
      java.lang.Long.valueOf(s).asInstanceOf[B]
    } else {
      var s = num.zero
      var i = 0
      while (i < values.length) {
        s = num.plus(s, values(i).asInstanceOf[B])
        i += 1
      }
      s
    }

  /** How many functions' counts a wrapped array keeps (Spark's scan maps with two). */
  private val KeptCounts = 4

  private final class ArrayOfRefs[T <: AnyRef](val array: Array[T]) extends mutable.WrappedArray[T] with Serializable {
    def elemTag: ClassTag[T] = ClassTag(array.getClass.getComponentType)
    def length: Int = array.length
    def apply(i: Int): T = array(i)
    def update(i: Int, elem: T): Unit = {
      counts = Nil // not done to a plan's directories; if done, what was mapped is stale
      array(i) = elem
    }

    // (function, what it mapped this array to) for functions mapping to counts, newest first; not
    // sent to executors with the sequence (a function object is one only within a JVM)
    @transient @volatile private var counts: List[(AnyRef, Mapped[_])] = Nil

    override def map[B, That](f: T => B)(implicit bf: CanBuildFrom[mutable.WrappedArray[T], B, That]): That =
      if (bf eq SeqBuilder) {
        val kept = counts
        kept.find(_._1 eq f) match {
          case Some((_, mapped)) => mapped.asInstanceOf[That]
          case None =>
            val out = new Array[AnyRef](array.length)
            var allCounts = true
            var i = 0
            while (i < array.length) {
              val v = f(array(i)).asInstanceOf[AnyRef]
              out(i) = v
              allCounts &&= v.isInstanceOf[java.lang.Long] || v.isInstanceOf[java.lang.Integer]
              i += 1
            }
            val mapped = new Mapped[B](out)
            if (allCounts) counts = ((f, mapped) :: kept).take(KeptCounts)
            mapped.asInstanceOf[That]
        }
      } else super.map(f)(bf)
  }

  /** What `ArrayOfRefs.map` built (boxed values of any type); its `Long` sum is kept (Spark's
   *  scan sums the same mapped counts again when they are given again). */
  private final class Mapped[B](values: Array[AnyRef]) extends AbstractSeq[B] with immutable.IndexedSeq[B] with Serializable {
    def length: Int = values.length
    def apply(i: Int): B = values(i).asInstanceOf[B]
    @transient @volatile private var longSum: AnyRef = null

    override def sum[B1 >: B](implicit num: Numeric[B1]): B1 =
      if (num eq Numeric.LongIsIntegral) {
        if (longSum eq null) longSum = sumOf(values, num).asInstanceOf[AnyRef]
        longSum.asInstanceOf[B1]
      } else sumOf(values, num)
  }

  private final class Single[T](element: T) extends AbstractSeq[T] with immutable.IndexedSeq[T] with Serializable {
    def length: Int = 1
    def apply(i: Int): T = if (i == 0) element else throw new IndexOutOfBoundsException(i.toString)
    override def sum[B >: T](implicit num: Numeric[B]): B = num.plus(num.zero, element)

    override def map[B, That](f: T => B)(implicit bf: CanBuildFrom[immutable.IndexedSeq[T], B, That]): That =
      if (bf eq SeqBuilder) new Single(f(element)).asInstanceOf[That] else super.map(f)(bf)
  }
}

/** Java and Scala collections, converted as each Scala version spells it. */
object JavaCompat {
  import scala.collection.JavaConverters._

  def javaMap(m: Map[String, String]): java.util.Map[String, String] = m.asJava
  def scalaMap(m: java.util.Map[String, String]): Map[String, String] = m.asScala.toMap
  def javaSet[T](s: Set[T]): java.util.Set[T] = s.asJava
}
