package hudi.md.spark

import org.apache.spark.sql.catalyst.expressions.{Alias, And, Attribute, AttributeReference, CaseWhen, ExprId, Expression, IsNotNull, IsNull, Literal, NamedExpression, Or}
import org.apache.spark.sql.catalyst.plans.LeftOuter
import org.apache.spark.sql.catalyst.plans.logical.{Assignment, DeleteAction, Filter, InsertAction, Join, JoinHint, LogicalPlan, MergeAction, MergeIntoTable, Project, UpdateAction, UpdateTable}
import org.apache.spark.sql.execution.datasources.LogicalRelation
import org.apache.spark.sql.internal.SQLConf

/**
 * `UPDATE` and `MERGE INTO` on a `hudi-md` table, as Apache Hudi's SQL runs them: Spark plans the
 * rows the statement writes (the updated rows; the join of the source with the table and each
 * row's first applicable clause), and they are written as one upsert by record key through the
 * same pipeline as every write ([[WriteRules]] → [[DefaultSource]] → `hudi_md.write`), so the
 * table's ordering field and merge mode decide between a written row and a stored one.
 *
 * A `MERGE INTO`'s `WHEN MATCHED ... THEN DELETE` rows are deletes by key in the same upsert (one
 * instant: the rows carry [[Protocol.WriteDeleteFlag]]). `WHEN NOT MATCHED BY SOURCE` (which
 * Apache Hudi does not take either) is refused before anything is written.
 */
object RowLevelWrites {

  /** `UPDATE t SET c = e, ... [WHERE cond]`: the matching rows with their new values. */
  def update(u: UpdateTable, target: LogicalRelation): LogicalPlan = {
    val where = describe(target)
    val assigned = assignments(u.assignments, "UPDATE", where)
    // as Apache Hudi: a row's key and partition are where it is, an UPDATE does not move it
    val resolver = SQLConf.get.resolver
    val index = WriteRules.fileIndex(target)
    val fixed = index.recordKeyFields.map(_ -> "record key") ++ index.partitionSchema.fieldNames.map(_ -> "partition")
    u.table.output.filter(a => assigned.contains(a.exprId)).foreach { a =>
      fixed.find { case (f, _) => resolver(f, a.name) }.foreach { case (_, kind) =>
        WriteGuard.refuse(
          s"UPDATE ... SET of the $kind field `${a.name}`",
          where,
          "delete the row and insert it with its new value, as Apache Hudi requires")
      }
    }
    val rows = u.condition.fold(u.table)(c => Filter(c, u.table))
    val values: Seq[NamedExpression] = u.table.output.map { attr =>
      assigned.get(attr.exprId) match {
        case Some(e) => Alias(e, attr.name)()
        case None    => attr
      }
    }
    Project(values, rows)
  }

  /** `MERGE INTO t USING s ON cond WHEN MATCHED [AND c] THEN UPDATE ... WHEN NOT MATCHED [AND c]
   *  THEN INSERT ...`: each source row takes its first applicable clause; rows no clause applies to
   *  are not written. */
  def merge(m: MergeIntoTable, target: LogicalRelation): LogicalPlan = {
    val where = describe(target)
    val matched: Seq[MergeAction] = m.matchedActions
    val notMatched: Seq[MergeAction] = m.notMatchedActions
    val bySource: Seq[MergeAction] = m.notMatchedBySourceActions
    if (bySource.nonEmpty) {
      WriteGuard.refuse("MERGE INTO ... WHEN NOT MATCHED BY SOURCE", where, MergeHint)
    }
    val table = m.targetTable
    // which table rows a source row matched: a marker that the outer join leaves null otherwise
    val marker = Alias(Literal(true), "__hudi_md_matched")()
    val markedTable = Project(table.output :+ marker, table)
    val joined = Join(m.sourceTable, markedTable, LeftOuter, Some(m.mergeCondition), JoinHint.NONE)
    val isMatched: Expression = IsNotNull(marker.toAttribute)
    val isNotMatched: Expression = IsNull(marker.toAttribute)

    val resolver = SQLConf.get.resolver
    // a table whose keys are generated: an updated or deleted row keeps its key (an inserted one
    // gets none here, and a new key from the writer)
    val keyless = WriteRules.fileIndex(target).recordKeyFields.isEmpty
    val written = table.output.filter(a => !isMeta(a.name) || (keyless && resolver(a.name, WriteRules.MetaColumns(2))))
    val ordering = WriteRules.fileIndex(target).orderingFields
    val orderingColumns = written.filter(a => ordering.exists(resolver(_, a.name)))
    // A delete is ordered like a record by the source row's ordering value (Apache Hudi orders a
    // MERGE's deletes so on MERGE_ON_READ tables); its key and partition are the stored row's.
    val deleteValues: Map[Attribute, Expression] = orderingColumns.flatMap { attr =>
      m.sourceTable.output.find(s => resolver(s.name, attr.name)).map(s => attr -> (s: Expression))
    }.toMap
    // (when the clause applies, the value of each written column)
    val clauses: Seq[Clause] =
      matched.map(a => clause(isMatched, a, written, where, insert = false, deleteValues, orderingColumns)) ++
        notMatched.map(a => clause(isNotMatched, a, written, where, insert = true, deleteValues, orderingColumns))
    if (clauses.isEmpty) return Filter(Literal(false), Project(written, table))
    val applies = clauses.map(_.when).reduce[Expression](Or(_, _))
    val values: Seq[NamedExpression] = written.map { attr =>
      Alias(CaseWhen(clauses.map(c => (c.when, c.values(attr))), None), attr.name)()
    }
    val deletes: Seq[NamedExpression] =
      if (!clauses.exists(_.delete)) Nil
      else Seq(Alias(CaseWhen(clauses.map(c => (c.when, Literal(c.delete))), None), Protocol.WriteDeleteFlag)())
    Project(values ++ deletes, Filter(applies, joined))
  }

  private val MergeHint: String =
    "write the clauses Apache Hudi's MERGE INTO takes: WHEN MATCHED [AND ...] THEN UPDATE / DELETE, " +
      "WHEN NOT MATCHED [AND ...] THEN INSERT"

  /** When a clause applies (its group's condition and its own), its value for every written
   *  column, and whether it deletes the row. */
  private final case class Clause(when: Expression, values: Map[Attribute, Expression], delete: Boolean)

  private def clause(
      group: Expression,
      action: MergeAction,
      written: Seq[Attribute],
      where: String,
      insert: Boolean,
      deleteValues: Map[Attribute, Expression],
      orderingColumns: Seq[Attribute]): Clause = {
    val (condition, set, delete) = action match {
      case u: UpdateAction => (u.condition, u.assignments, false)
      case i: InsertAction => (i.condition, i.assignments, false)
      case d: DeleteAction => (d.condition, Seq.empty[Assignment], true)
      case other => WriteGuard.refuse(s"MERGE INTO with ${other.getClass.getSimpleName}", where, MergeHint)
    }
    val assigned = assignments(set, "MERGE INTO", where)
    if (!delete) {
      // as Apache Hudi: the ordering value decides between the written and the stored row
      orderingColumns.filterNot(a => assigned.contains(a.exprId)).foreach { a =>
        WriteGuard.refuse(
          s"a MERGE INTO ${if (insert) "INSERT" else "UPDATE"} clause that does not set the ordering field `${a.name}`",
          where,
          s"set it (`${a.name}` = <source column>), as Apache Hudi requires: it decides between the written and the stored row")
      }
    }
    val values = written.map { attr =>
      // an update (and a delete: its key and partition) keeps what it does not set; an insert
      // leaves it null
      val kept = if (delete) deleteValues.getOrElse(attr, attr) else attr
      attr -> assigned.getOrElse(attr.exprId, if (insert) Literal(null, attr.dataType) else kept)
    }.toMap
    Clause(condition.fold(group)(c => And(group, c)), values, delete)
  }

  /** Assignments to the table's columns by attribute (Hudi's meta columns are never assigned). */
  private def assignments(set: Seq[Assignment], what: String, where: String): Map[ExprId, Expression] =
    set.flatMap { a =>
      a.key match {
        case attr: AttributeReference if isMeta(attr.name) => None
        case attr: AttributeReference => Some(attr.exprId -> a.value)
        case other =>
          WriteGuard.refuse(s"$what of a nested field ($other)", where, "assign the whole column")
      }
    }.toMap

  private def isMeta(name: String): Boolean = {
    val resolver = SQLConf.get.resolver
    WriteRules.MetaColumns.exists(resolver(_, name))
  }

  private def describe(target: LogicalRelation): String = WriteGuard.hudiMdTarget(target).getOrElse(target.toString)
}

/**
 * `SHOW PARTITIONS t [PARTITION (c = v, ...)]` on a `hudi-md` table: its partitions with live file
 * groups as the MDT (or the listing) has them, each as Spark shows one (`c=v/...`, whether or not
 * the paths are hive-style; as a Hive-synced table showed them) (Spark's own command reads the
 * session catalog's partitions, which a `hudi-md` table does not register: it would show none).
 */
case class ShowHudiMdPartitions(
    table: org.apache.spark.sql.catalyst.TableIdentifier,
    override val output: Seq[Attribute],
    spec: Option[Map[String, String]])
    extends org.apache.spark.sql.execution.command.LeafRunnableCommand {

  override def run(session: org.apache.spark.sql.SparkSession): Seq[org.apache.spark.sql.Row] = {
    val index = WriteRules.fileIndex(WriteRules.catalogRelation(session, table))
    val columns = index.partitionSchema.fieldNames.toSeq
    val resolver = SQLConf.get.resolver
    index.partitionPaths().map(ShowHudiMdPartitions.values(_, columns)).filter { values =>
      spec.getOrElse(Map.empty).forall { case (k, v) =>
        values.exists { case (name, value) => resolver(name, k) && value == v }
      }
    }.map(values => org.apache.spark.sql.Row(values.map { case (k, v) => s"$k=$v" }.mkString("/")))
  }
}

object ShowHudiMdPartitions {

  /** A partition path's (column, value) pairs: `c=v` levels (hive style) or values by position. */
  def values(path: String, columns: Seq[String]): Seq[(String, String)] = {
    val levels = path.split("/").toSeq
    levels.zipWithIndex.map { case (level, i) =>
      val eq = level.indexOf('=')
      if (eq > 0) (level.substring(0, eq), level.substring(eq + 1))
      else (if (i < columns.size) columns(i) else "", level)
    }
  }
}
