package hudi.md.spark

import scala.collection.immutable.ArraySeq

/** Sequences as Spark's `Seq` of its Scala version needs them (this: Spark 4.x, Scala 2.13). */
object SeqCompat {

  /** `array` as an immutable Seq without a copy, whose `toArray` is one `System.arraycopy`. */
  def wrapArray[T <: AnyRef](array: Array[T]): Seq[T] = ArraySeq.unsafeWrapArray(array)

  /** A file list of one file. */
  def single[T <: AnyRef](element: T): Seq[T] = element :: Nil
}

/** Java and Scala collections, converted as each Scala version spells it. */
object JavaCompat {
  import scala.jdk.CollectionConverters._

  def javaMap(m: Map[String, String]): java.util.Map[String, String] = m.asJava
  def scalaMap(m: java.util.Map[String, String]): Map[String, String] = m.asScala.toMap
  def javaSet[T](s: Set[T]): java.util.Set[T] = s.asJava
}
