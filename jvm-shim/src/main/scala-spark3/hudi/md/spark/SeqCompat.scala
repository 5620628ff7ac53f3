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

  private final class ArrayOfRefs[T <: AnyRef](val array: Array[T]) extends mutable.WrappedArray[T] with Serializable {
    def elemTag: ClassTag[T] = ClassTag(array.getClass.getComponentType)
    def length: Int = array.length
    def apply(i: Int): T = array(i)
    def update(i: Int, elem: T): Unit = array(i) = elem

    override def map[B, That](f: T => B)(implicit bf: CanBuildFrom[mutable.WrappedArray[T], B, That]): That =
      if (bf eq SeqBuilder) {
        val out = new Array[AnyRef](array.length)
        var i = 0
        while (i < array.length) {
          out(i) = f(array(i)).asInstanceOf[AnyRef]
          i += 1
        }
        new Mapped[B](out).asInstanceOf[That]
      } else super.map(f)(bf)
  }

  /** What `ArrayOfRefs.map` built (boxed values of any type). */
  private final class Mapped[B](values: Array[AnyRef]) extends AbstractSeq[B] with immutable.IndexedSeq[B] with Serializable {
    def length: Int = values.length
    def apply(i: Int): B = values(i).asInstanceOf[B]
    override def sum[B1 >: B](implicit num: Numeric[B1]): B1 = sumOf(values, num)
  }

  private final class Single[T](element: T) extends AbstractSeq[T] with immutable.IndexedSeq[T] with Serializable {
    def length: Int = 1
    def apply(i: Int): T = if (i == 0) element else throw new IndexOutOfBoundsException(i.toString)
    override def sum[B >: T](implicit num: Numeric[B]): B = num.plus(num.zero, element)

    override def map[B, That](f: T => B)(implicit bf: CanBuildFrom[immutable.IndexedSeq[T], B, That]): That =
      if (bf eq SeqBuilder) new Single(f(element)).asInstanceOf[That] else super.map(f)(bf)
  }
}
