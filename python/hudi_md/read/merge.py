"""Merging the records of one file slice: log records among themselves, then with the base file.

This follows Hudi 1.x's file group reader (``KeyBasedFileGroupRecordBuffer`` and
``BufferedRecordMergerFactory``), which is also how Hudi 1.x reads v6 tables:

* Log records are merged per record key in log order (``deltaMerge``); the result is merged with
  the base file's row of the same key (``finalMerge``). Base rows whose key no log record touches
  are returned untouched, without looking at them row by row.
* ``COMMIT_TIME_ORDERING``: the later record (or delete) always wins.
* ``EVENT_TIME_ORDERING``: the record with the larger ordering value wins; on a tie the later one
  wins. A null ordering field counts as Hudi's default ordering value ``0`` (``OrderingValues``).
* Deletes are ``_hoodie_is_deleted = true`` rows (or a configured delete marker, or
  ``_hoodie_operation = 'D'``) and DELETE-block entries. A delete whose ordering value is the
  default (null, or the *int* ``0`` that Spark SQL ``DELETE`` and ``DeleteRecord.create`` write) is
  a **commit-time delete**: in either mode it beats every earlier record and loses to every later
  one, whatever their ordering values (``BufferedRecord.isCommitTimeOrderingDelete``). A delete
  with a real ordering value is ordered like a record, except that in log-to-log merging an
  existing record only survives it if the two ordering values have the same type and the
  existing one is strictly larger (``deltaMergeDeleteRecord``).
* A log record that follows a delete of its key replaces the delete in the log buffer, whatever
  its ordering value; it then meets the base row as an ordinary record. So with event time a
  re-insert with a smaller ordering value than the base row brings the *base* row back. That is
  what Hudi 1.x (and hudi-rs 0.5.0) return, and it is kept on purpose.

Writers merge by the same rules, here too (one record merger): :func:`dedupe` (the records of
one write among themselves, local and Spark), :func:`merge_with_stored` (a COW update against the
stored row) and :func:`stored_ordering_nulls` (the check MOR appends need). Where Hudi 1.2 fails
on an input they refuse it (:class:`~hudi_md.errors.RecordMergeError`): under event time a null
ordering value that must be compared with another version of its key (Hudi 1.2 throws a
``NullPointerException`` or ``ClassCastException`` there, or in MOR writes a table it then cannot
read).

Everything here works on Arrow tables and plain Python values, so merging is testable without
files; :mod:`hudi_md.read.slice_reader` turns log blocks into those inputs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_md.config import table as T
from hudi_md.errors import InvalidOptionError, RecordMergeError, UnsupportedFeatureError
from hudi_md.formats.avro_arrow import align_to_schema
from hudi_md.table.config import TableConfig

__all__ = [
    "COMMIT_TIME_ORDERING",
    "EVENT_TIME_ORDERING",
    "LogEntry",
    "LogRecordBuffer",
    "MergeSpec",
    "StoredMerge",
    "dedupe",
    "delete_mask",
    "merge_with_base",
    "merge_with_stored",
    "record_keys",
    "stored_ordering_nulls",
]

COMMIT_TIME_ORDERING = "COMMIT_TIME_ORDERING"
EVENT_TIME_ORDERING = "EVENT_TIME_ORDERING"
CUSTOM = "CUSTOM"

RECORD_KEY_COLUMN = "_hoodie_record_key"
IS_DELETED_COLUMN = "_hoodie_is_deleted"
OPERATION_COLUMN = "_hoodie_operation"

# HoodieRecordMerger strategy ids (v8+ `hoodie.record.merge.strategy.id`, v6
# `hoodie.compaction.record.merger.strategy`).
_EVENT_TIME_STRATEGY = "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"
_COMMIT_TIME_STRATEGY = "ce9acb64-bde0-424c-9b91-f6ebba25356d"
_PAYLOAD_BASED_STRATEGY = "00000000-0000-0000-0000-000000000000"

# Payload classes whose merge Hudi 1.x maps onto a merge mode (HoodieTableConfig
# .inferRecordMergeModeFromPayloadClass); any other payload is custom code we cannot run.
_PAYLOAD_MODES = {
    "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload": COMMIT_TIME_ORDERING,
    "org.apache.hudi.common.model.DefaultHoodieRecordPayload": EVENT_TIME_ORDERING,
    "org.apache.hudi.common.model.EventTimeAvroPayload": EVENT_TIME_ORDERING,
}


# Hudi keys of records whose key fields are null or empty (KeyGenUtils).
_NULL_KEY = "__null__"
_EMPTY_KEY = "__empty__"

# Arrow types whose values Hudi holds as java.lang.Integer: only an Integer 0 equals Hudi's default
# ordering value (`Integer.valueOf(0).equals(Long.valueOf(0))` is false in Java).
_JAVA_INT_TYPES = (pa.int8(), pa.int16(), pa.int32())


@dataclass(frozen=True)
class MergeSpec:
    """How the records of one table merge.

    ``merge_mode`` is ``COMMIT_TIME_ORDERING`` or ``EVENT_TIME_ORDERING`` (``CUSTOM`` is resolved
    by :meth:`from_config` or refused). ``use_meta_key`` takes the key from ``_hoodie_record_key``
    (tables that populate meta fields); otherwise it is built from ``record_key_fields``.
    ``delete_field``/``delete_marker`` name a custom delete marker column and value.
    """

    record_key_fields: list[str]
    ordering_fields: list[str]
    merge_mode: str
    use_meta_key: bool
    delete_field: str | None = None
    delete_marker: str | None = None

    def __post_init__(self) -> None:
        if self.merge_mode == CUSTOM:
            raise UnsupportedFeatureError("CUSTOM record merge mode: resolve it with MergeSpec.from_config")
        if self.merge_mode not in (COMMIT_TIME_ORDERING, EVENT_TIME_ORDERING):
            raise InvalidOptionError(f"unknown record merge mode {self.merge_mode!r}")
        if not self.use_meta_key and not self.record_key_fields:
            raise InvalidOptionError("a table without meta fields needs record key fields to merge on")

    @property
    def event_time(self) -> bool:
        return self.merge_mode == EVENT_TIME_ORDERING

    @classmethod
    def from_config(cls, config: TableConfig) -> MergeSpec:
        """The merge behaviour Hudi 1.x infers for a table (``inferMergingConfigsForPreV9Table``).

        A stored ``hoodie.record.merge.mode`` wins. Tables without one (v6) take the mode from
        the payload class, else the merge strategy id, else ``EVENT_TIME_ORDERING`` when there is
        an ordering field and ``COMMIT_TIME_ORDERING`` otherwise. ``CUSTOM`` is accepted only
        for the built-in payloads that behave like a merge mode; anything else raises
        :class:`UnsupportedFeatureError` naming the payload class or strategy.
        """
        ordering = config.ordering_fields
        payload = config.payload_class or ""
        strategy = config.merge_strategy_id or ""
        mode = config.stored_record_merge_mode or ""
        if not mode:
            if payload:
                mode = _PAYLOAD_MODES.get(payload, CUSTOM)
            elif strategy:
                mode = _strategy_mode(strategy)
            else:
                mode = EVENT_TIME_ORDERING if ordering else COMMIT_TIME_ORDERING
        if mode == CUSTOM:
            if strategy not in ("", _PAYLOAD_BASED_STRATEGY, _EVENT_TIME_STRATEGY, _COMMIT_TIME_STRATEGY):
                raise UnsupportedFeatureError(
                    f"table uses a custom record merger (merge strategy id {strategy!r}, payload class "
                    f"{payload or None!r}); hudi-md only merges by commit time or event time"
                )
            if payload not in _PAYLOAD_MODES:
                raise UnsupportedFeatureError(
                    f"table uses the record payload class {payload or None!r}; hudi-md only reads tables "
                    f"whose payload is one of {sorted(_PAYLOAD_MODES)}"
                )
            mode = _PAYLOAD_MODES[payload]
        partial = config.partial_update_mode
        if partial and partial.upper() != "NONE":
            raise UnsupportedFeatureError(f"partial update mode {partial!r} is not supported")
        if mode == EVENT_TIME_ORDERING and not ordering:
            # Every record then has the default ordering value: ties everywhere, so the later
            # record wins and every delete is a commit-time delete — exactly commit-time merging.
            mode = COMMIT_TIME_ORDERING
        # Custom delete markers (DeleteContext): a field and the value that marks a row deleted.
        delete_field = config.merge_property(T.PAYLOAD_DELETE_FIELD)
        delete_marker = config.merge_property(T.PAYLOAD_DELETE_MARKER)
        return cls(
            record_key_fields=config.record_key_fields,
            ordering_fields=ordering,
            merge_mode=mode,
            use_meta_key=config.populate_meta_fields,
            delete_field=delete_field if delete_marker is not None else None,
            delete_marker=delete_marker if delete_field is not None else None,
        )

    def key_columns(self) -> list[str]:
        """Columns the record key is read from."""
        return [RECORD_KEY_COLUMN] if self.use_meta_key else list(self.record_key_fields)

    def merge_columns(self) -> list[str]:
        """Columns merging needs besides the ones a caller asks for."""
        cols = self.key_columns()
        if self.event_time:
            cols += self.ordering_fields
        return list(dict.fromkeys(cols))


def _strategy_mode(strategy: str) -> str:
    if strategy == _EVENT_TIME_STRATEGY:
        return EVENT_TIME_ORDERING
    if strategy == _COMMIT_TIME_STRATEGY:
        return COMMIT_TIME_ORDERING
    return CUSTOM


# --- keys, ordering values, delete flags ---------------------------------------------------------


def record_keys(table: pa.Table, merge: MergeSpec) -> pa.ChunkedArray:
    """The Hudi record key of every row, as strings.

    With meta fields it is ``_hoodie_record_key``. Without, it is built as Hudi's key generators
    do: the single field's value, or ``field:value`` pairs joined by ``,`` for several fields
    (null → ``__null__``, empty → ``__empty__``).
    """
    if merge.use_meta_key:
        if RECORD_KEY_COLUMN not in table.column_names:
            raise InvalidOptionError(f"rows have no {RECORD_KEY_COLUMN} column to merge on")
        return table.column(RECORD_KEY_COLUMN).cast(pa.string())
    parts = []
    for name in merge.record_key_fields:
        if name not in table.column_names:
            raise InvalidOptionError(f"rows have no record key column {name!r} to merge on")
        col = table.column(name).cast(pa.string())
        col = pc.if_else(pc.equal(col, ""), pa.scalar(_EMPTY_KEY), col)
        col = pc.fill_null(col, _NULL_KEY)
        if len(merge.record_key_fields) > 1:
            col = pc.binary_join_element_wise(pa.scalar(f"{name}:"), col, "")
        parts.append(col)
    if len(parts) == 1:
        return parts[0]
    return pc.binary_join_element_wise(*parts, ",")


@dataclass(frozen=True)
class Ordering:
    """An ordering value as Hudi compares it, and whether it is Hudi's default value."""

    value: Any
    is_default: bool


_DEFAULT = Ordering(0, True)


def ordering_values(table: pa.Table, merge: MergeSpec) -> list[Ordering]:
    """The ordering value of every row (only called for the few rows that need one)."""
    n = table.num_rows
    if not merge.event_time or not merge.ordering_fields:
        return [_DEFAULT] * n
    columns: list[tuple[list[Any], bool]] = []
    for name in merge.ordering_fields:
        if name in table.column_names:
            col = table.column(name)
            columns.append((col.to_pylist(), any(col.type.equals(t) for t in _JAVA_INT_TYPES)))
        else:
            columns.append(([None] * n, False))
    if len(columns) == 1:
        values, java_int = columns[0]
        return [
            _DEFAULT if v is None else Ordering(v, java_int and v == 0 and not isinstance(v, bool))
            for v in values
        ]
    # Several ordering fields compare element by element (ArrayComparable), nulls as 0; an array
    # is never equal to the default value.
    return [Ordering(tuple(0 if c[0][i] is None else c[0][i] for c in columns), False) for i in range(n)]


def delete_ordering(value: Any) -> Ordering:
    """The ordering of a DELETE-block entry (``RecordContext.getOrderingValue(DeleteRecord)``).

    Null and the int ``0`` are the default. The log reader hands values over unwrapped, so a
    ``LongWrapper(0)`` (not the default in Hudi) cannot be told from ``IntWrapper(0)`` here and is
    treated as the default too.
    """
    if value is None or (type(value) is int and value == 0):
        return _DEFAULT
    return Ordering(value, False)


def delete_flags(table: pa.Table, merge: MergeSpec) -> list[bool]:
    """Whether each row is a delete (``_hoodie_is_deleted``, custom marker, ``_hoodie_operation``)."""
    n = table.num_rows
    mask: pa.ChunkedArray | pa.Array | None = None

    def either(a: Any, b: Any) -> Any:
        b = pc.fill_null(b, False)
        return b if a is None else pc.or_(a, b)

    if IS_DELETED_COLUMN in table.column_names:
        mask = either(mask, table.column(IS_DELETED_COLUMN).cast(pa.bool_()))
    if merge.delete_field and merge.delete_field in table.column_names:
        col = table.column(merge.delete_field).cast(pa.string())
        mask = either(mask, pc.equal(col, merge.delete_marker))
    if OPERATION_COLUMN in table.column_names:
        mask = either(mask, pc.equal(table.column(OPERATION_COLUMN).cast(pa.string()), "D"))
    if mask is None:
        return [False] * n
    return [bool(v) for v in mask.to_pylist()]


# --- merging log records -----------------------------------------------------------------------


@dataclass(frozen=True)
class LogEntry:
    """The current state of one key after merging log records: a row of the buffer or a delete."""

    row: int  # row of LogRecordBuffer.table(); -1 for a DELETE-block entry
    ordering: Ordering
    is_delete: bool

    @property
    def is_commit_time_delete(self) -> bool:
        return self.is_delete and self.ordering.is_default


class DeleteLike(Protocol):
    """One entry of a DELETE block (:class:`hudi_md.formats.logfile.DeleteRecord` fits)."""

    @property
    def record_key(self) -> str | None: ...

    @property
    def ordering_value(self) -> Any: ...


def _compare_newer(new: Ordering, old: Ordering) -> bool:
    """``new >= old`` the way Hudi compares ordering values; incomparable types let the newer win."""
    try:
        return bool(new.value >= old.value)
    except TypeError:
        return True


def _same_class(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_same_class(x, y) for x, y in zip(a, b, strict=True))
    return True


class LogRecordBuffer:
    """Log records merged per key in log order (Hudi's ``deltaMerge``).

    Feed it data batches (:meth:`add_data`) and delete batches (:meth:`add_deletes`) in log
    order, after rollbacks and invalid instants have been dropped. Rows are kept as Arrow; only the
    key, ordering value and delete flag of each log row are looked at in Python.
    """

    def __init__(self, schema: pa.Schema, merge: MergeSpec) -> None:
        self.schema = schema
        self.merge = merge
        self.entries: dict[str, LogEntry] = {}
        self._tables: list[pa.Table] = []
        self._rows = 0

    def add_data(self, table: pa.Table) -> None:
        """Merge one data block's rows (any schema; aligned to the buffer's schema by name)."""
        if table.num_rows == 0:
            return
        keys = record_keys(table, self.merge).to_pylist()
        orderings = ordering_values(table, self.merge)
        deletes = delete_flags(table, self.merge)
        base = self._rows
        self._tables.append(align_to_schema(table, self.schema))
        self._rows += table.num_rows
        for i, key in enumerate(keys):
            if key is None:
                continue  # Hudi cannot write a record without a key; nothing could match it
            self._merge_record(key, LogEntry(base + i, orderings[i], deletes[i]))

    def add_deletes(self, deletes: Iterable[DeleteLike]) -> None:
        """Merge one DELETE block's entries."""
        for d in deletes:
            if d.record_key is None:
                continue
            self._merge_delete(d.record_key, LogEntry(-1, delete_ordering(d.ordering_value), True))

    def _merge_record(self, key: str, new: LogEntry) -> None:
        old = self.entries.get(key)
        if old is None or newer_wins(old, new, self.merge):
            self.entries[key] = new

    def _merge_delete(self, key: str, new: LogEntry) -> None:
        old = self.entries.get(key)
        if old is None or not self.merge.event_time:
            self.entries[key] = new
            return
        if old.is_commit_time_delete:
            return  # already deleted for good; Hudi keeps the existing delete
        # deltaMergeDeleteRecord: the existing record survives only a typed, strictly smaller delete.
        keep_old = (
            not new.ordering.is_default
            and _same_class(old.ordering.value, new.ordering.value)
            and not _compare_newer(new.ordering, old.ordering)
        )
        if not keep_old:
            self.entries[key] = new

    def table(self) -> pa.Table:
        """All buffered log rows (``LogEntry.row`` indexes into this), aligned to the schema."""
        if not self._tables:
            return self.schema.empty_table()
        return pa.concat_tables(self._tables)

    def __len__(self) -> int:
        return len(self.entries)


def newer_wins(old: LogEntry | Ordering, new: LogEntry, merge: MergeSpec) -> bool:
    """Whether ``new`` (later in log order) replaces ``old`` (``shouldKeepNewerRecord``).

    ``old`` may be a bare :class:`Ordering` for a base-file row (never a delete).
    """
    if not merge.event_time:
        return True
    if new.is_commit_time_delete:
        return True
    if isinstance(old, LogEntry):
        if old.is_commit_time_delete:
            return True
        old_ordering = old.ordering
    else:
        old_ordering = old
    return _compare_newer(new.ordering, old_ordering)


# --- merging with the base file ------------------------------------------------------------------


def merge_with_base(base: pa.Table | None, log: LogRecordBuffer) -> pa.Table:
    """Merge buffered log records into the base file's rows (``finalMerge``), columnar.

    ``base`` must have the buffer's schema. Base rows whose keys the log does not touch are kept
    as they are, in base order; a touched row is kept or replaced according to the merge mode;
    log-only keys are appended unless their final state is a delete.
    """
    merge = log.merge
    log_table = log.table()
    if base is None:
        base = log.schema.empty_table()
    if not log.entries:
        return base
    log_keys = pa.array(list(log.entries), pa.string())
    base_keys = record_keys(base, merge) if base.num_rows else pa.chunked_array([], pa.string())
    touched = pc.is_in(base_keys, value_set=log_keys)

    base_wins: set[str] = set()
    if merge.event_time and base.num_rows:
        # Only rows whose key is also in the log are looked at individually.
        touched_rows = base.filter(touched)
        touched_keys = record_keys(touched_rows, merge).to_pylist()
        for key, ordering in zip(touched_keys, ordering_values(touched_rows, merge), strict=True):
            if not newer_wins(ordering, log.entries[key], merge):
                base_wins.add(key)
    if base_wins:
        replaced = pa.array([k for k in log.entries if k not in base_wins], pa.string())
        keep = pc.invert(pc.is_in(base_keys, value_set=replaced))
    else:
        keep = pc.invert(touched)
    kept_base = base.filter(keep) if base.num_rows else base
    log_rows = [e.row for k, e in log.entries.items() if not e.is_delete and k not in base_wins]
    if not log_rows:
        return kept_base
    return pa.concat_tables([kept_base, log_table.take(pa.array(log_rows, pa.int64()))])


# --- merging a write's records (writers) ------------------------------------------------------------


def delete_mask(table: pa.Table, merge: MergeSpec) -> pa.Array:
    """Whether each record of a write is a delete (``_hoodie_is_deleted``, the custom marker,
    ``_hoodie_operation = 'D'``), as a boolean array without nulls."""
    return pa.array(delete_flags(table, merge), pa.bool_())


def _ordering_columns(table: pa.Table, merge: MergeSpec) -> list[pa.ChunkedArray]:
    out = []
    for name in merge.ordering_fields:
        if name in table.column_names:
            out.append(table.column(name))
        else:
            out.append(pa.chunked_array([pa.nulls(table.num_rows, pa.int32())]))
    return out


def _shown_keys(keys: Iterable[Any], n: int = 5) -> str:
    items = [str(k) for k in keys]
    more = f" and {len(items) - n} more" if len(items) > n else ""
    return ", ".join(items[:n]) + more


def dedupe(rows: pa.Table, by: Sequence[str], merge: MergeSpec, *, order: str | None = None) -> pa.Table:
    """One record per ``by`` group (partition and record key) of a write's records, the one that
    wins by the table's rules (Hudi's ``deduplicateRecords``): under event time the largest
    ordering value (several ordering fields compare in turn), a tie going to the later record;
    under commit time the later record. Deletes (``_hoodie_is_deleted``) take part like records.
    ``order``: a column giving the records' order (default: row order). The survivors keep their
    relative order.

    Under event time a group of two or more records with a null ordering value raises
    :class:`RecordMergeError` (Hudi 1.2 fails on it with a ``NullPointerException``).
    """
    n = rows.num_rows
    if n <= 1:
        return rows
    position = pa.array(np.arange(n, dtype=np.int64))
    cols: dict[str, Any] = {f"g{i}": rows.column(c) for i, c in enumerate(by)}
    cols["_seq"] = rows.column(order) if order is not None else position
    cols["_pos"] = position
    event = merge.event_time and bool(merge.ordering_fields)
    if event:
        for i, column in enumerate(_ordering_columns(rows, merge)):
            cols[f"o{i}"] = column
    t = pa.table(cols)
    groups = [f"g{i}" for i in range(len(by))]
    counts = t.group_by(groups).aggregate([([], "count_all")])
    if counts.num_rows == n:
        return rows
    if event:
        _refuse_null_duplicates(t, groups, counts, len(merge.ordering_fields), by)
    sort = [(g, "ascending") for g in groups]
    if event:
        sort += [(f"o{i}", "ascending") for i in range(len(merge.ordering_fields))]
    sort.append(("_seq", "ascending"))
    ordered = t.sort_by(sort)
    changed = np.zeros(n, dtype=bool)
    changed[-1] = True
    for g in groups:
        column = ordered.column(g).combine_chunks()
        same = pc.equal(column.slice(1), column.slice(0, n - 1))
        changed[:-1] |= ~pc.fill_null(same, False).to_numpy(zero_copy_only=False)
        # two nulls are one group (a null partition or key field)
        both_null = pc.and_(column.slice(1).is_null(), column.slice(0, n - 1).is_null())
        changed[:-1] &= ~both_null.to_numpy(zero_copy_only=False)
    keep = np.sort(ordered.column("_pos").to_numpy()[changed])
    return rows.take(pa.array(keep))


def _refuse_null_duplicates(
    t: pa.Table, groups: list[str], counts: pa.Table, n_ordering: int, by: Sequence[str]
) -> None:
    nulls = None
    for i in range(n_ordering):
        isnull = t.column(f"o{i}").is_null()
        nulls = isnull if nulls is None else pc.or_(nulls, isnull)
    if nulls is None or not pc.any(nulls).as_py():
        return
    dup = counts.filter(pc.greater(counts.column("count_all"), 1)).select(groups)
    flagged = t.filter(nulls).select(groups).join(dup, groups, join_type="inner")
    if flagged.num_rows:
        keys = [tuple(r.values()) for r in flagged.to_pylist()]
        raise RecordMergeError(
            f"records with a null ordering value ({', '.join(by)} = {_shown_keys(keys)}) meet "
            "other records of their key in the same write; under EVENT_TIME_ORDERING Apache Hudi "
            "cannot order them (it fails with a NullPointerException). Give them ordering values, "
            "or write with hoodie.write.record.merge.mode=COMMIT_TIME_ORDERING. Nothing was written",
            [str(k) for k in keys],
        )


def _newer_or_equal(new: Sequence[Any], old: Sequence[Any]) -> pa.Array:
    """Element-wise ``new >= old`` over ordering tuples (columns compared in turn)."""
    result: Any = pa.array(np.ones(len(new[0]) if new else 0, dtype=bool))
    for a, b in reversed(list(zip(new, old, strict=True))):
        if not a.type.equals(b.type):
            b = b.cast(a.type)
        result = pc.or_(pc.greater(a, b), pc.and_(pc.equal(a, b), result))
    return result


@dataclass(frozen=True)
class StoredMerge:
    """What a COW update keeps: ``keep_stored`` (a mask over the stored rows) and
    ``write_incoming`` (a mask over the incoming records: those that win and are not deletes)."""

    keep_stored: pa.Array
    write_incoming: pa.Array


def merge_with_stored(
    stored: pa.Table,
    incoming: pa.Table,
    merge: MergeSpec,
    *,
    table: str = "table",
    flagged: pa.Array | None = None,
) -> StoredMerge:
    """Merge a write's records (one per key) with the stored rows of the same file group, by the
    table's rules (a COW update; Hudi's merge handle): a record of a stored key replaces it when it
    wins (commit time: always; event time: ordering value at least the stored one), a winning
    delete removes it, a losing record is dropped; a record of a new key is written unless it is a
    delete. Both tables need ``_hoodie_record_key`` and the ordering columns, in the same types.

    Under event time a null ordering value on either side of a key raises
    :class:`RecordMergeError` (Hudi 1.2 fails there). ``flagged``: incoming records that are deletes
    though they carry no delete marker column (a MERGE INTO's DELETE on MOR: ordered like records).
    """
    stored_keys = stored.column(RECORD_KEY_COLUMN).combine_chunks()
    in_keys = incoming.column(RECORD_KEY_COLUMN).combine_chunks()
    deletes = delete_mask(incoming, merge)
    if flagged is not None:
        deletes = pc.or_(deletes, flagged)
    if incoming.num_rows == 0:
        return StoredMerge(pa.array(np.ones(stored.num_rows, dtype=bool)), pa.array([], pa.bool_()))
    at = pc.index_in(in_keys, value_set=stored_keys)  # stored row of each incoming key, or null
    matched = pc.is_valid(at)
    wins: Any = matched
    if merge.event_time and merge.ordering_fields and pc.any(matched).as_py():
        rows = pc.fill_null(at, 0)
        new_cols = [c.combine_chunks() for c in _ordering_columns(incoming, merge)]
        old_cols = [c.combine_chunks().take(rows) for c in _ordering_columns(stored, merge)]
        nulls: Any = None
        for a, b in zip(new_cols, old_cols, strict=True):
            either = pc.or_(a.is_null(), b.is_null())
            nulls = either if nulls is None else pc.or_(nulls, either)
        nulls = pc.and_(nulls, matched)
        if pc.any(nulls).as_py():
            keys = in_keys.filter(nulls).to_pylist()
            raise RecordMergeError(
                f"{table}: records of key(s) {_shown_keys(keys)} would update stored rows, and a null "
                "ordering value is on one side; under EVENT_TIME_ORDERING Apache Hudi cannot order "
                "them (it fails with a NullPointerException or ClassCastException). Give them "
                "ordering values, or write with hoodie.write.record.merge.mode=COMMIT_TIME_ORDERING. "
                "Nothing was written",
                keys,
            )
        wins = pc.and_(matched, _newer_or_equal(new_cols, old_cols))
    replaced = pc.fill_null(at.filter(wins), 0) if pc.any(wins).as_py() else pa.array([], pa.int32())
    keep = np.ones(stored.num_rows, dtype=bool)
    keep[replaced.to_numpy(zero_copy_only=False)] = False
    # a record of a new key, or one that wins; never a delete
    write = pc.and_(pc.or_(pc.invert(matched), wins), pc.invert(deletes))
    return StoredMerge(pa.array(keep), write)


def stored_ordering_nulls(stored: pa.Table, keys: pa.Array, merge: MergeSpec) -> list[str]:
    """The ``keys`` whose stored row (``stored``: key and ordering columns) has a null ordering
    value: under event time a record of such a key cannot be merged (see :func:`merge_with_stored`)."""
    if not (merge.event_time and merge.ordering_fields) or stored.num_rows == 0:
        return []
    nulls: Any = None
    for c in _ordering_columns(stored, merge):
        isnull = c.is_null()
        nulls = isnull if nulls is None else pc.or_(nulls, isnull)
    if nulls is None or not pc.any(nulls).as_py():
        return []
    null_keys = stored.column(RECORD_KEY_COLUMN).filter(nulls)
    return sorted(set(keys.filter(pc.is_in(keys, value_set=null_keys.combine_chunks())).to_pylist()))
