package hudi.md.spark

import scala.collection.immutable.ArraySeq

/** Sequences as Spark's `Seq` of its Scala version needs them (this: Spark 4.x, Scala 2.13). */
object SeqCompat {

  /** `array` as an immutable Seq without a copy, whose `toArray` is one `System.arraycopy`. */
  def wrapArray[T <: AnyRef](array: Array[T]): Seq[T] = ArraySeq.unsafeWrapArray(array)

  /** A file list of one file. */
  def single[T <: AnyRef](element: T): Seq[T] = element :: Nil
}
