package hudi.md.spark

import scala.collection.mutable

/** Sequences as Spark's `Seq` of its Scala version needs them (this: Spark 3.5, Scala 2.12). */
object SeqCompat {

  /** `array` as a Seq without a copy, whose `toArray` of the same element type is `array` itself. */
  def wrapArray[T <: AnyRef](array: Array[T]): Seq[T] = mutable.WrappedArray.make[T](array)
}
