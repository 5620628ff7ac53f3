"""Merging rules on synthetic inputs: commit time vs event time, deletes, keys, merge-mode inference."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pytest

from hudi_md.errors import InvalidOptionError, UnsupportedFeatureError
from hudi_md.read.merge import (
    COMMIT_TIME_ORDERING,
    EVENT_TIME_ORDERING,
    LogRecordBuffer,
    MergeSpec,
    merge_with_base,
    record_keys,
)
from hudi_md.table.config import TableConfig

SCHEMA = pa.schema(
    [
        ("_hoodie_commit_time", pa.string()),
        ("_hoodie_record_key", pa.string()),
        ("ts", pa.int64()),
        ("val", pa.string()),
        ("_hoodie_is_deleted", pa.bool_()),
    ]
)

COMMIT = MergeSpec(["id"], ["ts"], COMMIT_TIME_ORDERING, use_meta_key=True)
EVENT = MergeSpec(["id"], ["ts"], EVENT_TIME_ORDERING, use_meta_key=True)


@dataclass
class Delete:
    record_key: str | None
    ordering_value: Any
    partition_path: str | None = None


Row = tuple[str, int | None, str] | tuple[str, int | None, str, bool]


def rows(*items: Row, commit: str = "c") -> pa.Table:
    """A batch of (key, ts, val[, is_deleted]) rows."""
    return pa.table(
        {
            "_hoodie_commit_time": [commit] * len(items),
            "_hoodie_record_key": [i[0] for i in items],
            "ts": pa.array([i[1] for i in items], pa.int64()),
            "val": [i[2] for i in items],
            "_hoodie_is_deleted": [i[3] if len(i) > 3 else False for i in items],
        },
        schema=SCHEMA,
    )


def merged(merge: MergeSpec, base: pa.Table | None, *batches: pa.Table | list[Delete]) -> dict[str, str]:
    buffer = LogRecordBuffer(SCHEMA, merge)
    for b in batches:
        if isinstance(b, pa.Table):
            buffer.add_data(b)
        else:
            buffer.add_deletes(b)
    out = merge_with_base(base, buffer)
    keys = out.column("_hoodie_record_key").to_pylist()
    assert len(keys) == len(set(keys)), "a key came out twice"
    return dict(zip(keys, out.column("val").to_pylist(), strict=True))


# --- commit time -----------------------------------------------------------------------------------


def test_commit_time_later_record_wins_whatever_its_ordering_value() -> None:
    base = rows(("k1", 100, "base1"), ("k2", 100, "base2"))
    log1 = rows(("k1", 5, "log1"), ("k3", 500, "new3"))
    log2 = rows(("k3", 1, "newer3"))
    assert merged(COMMIT, base, log1, log2) == {"k1": "log1", "k2": "base2", "k3": "newer3"}


def test_commit_time_deletes_win_and_later_inserts_revive() -> None:
    base = rows(("k1", 100, "base1"), ("k2", 100, "base2"))
    deletes = [Delete("k1", 999), Delete("k2", None)]
    assert merged(COMMIT, base, deletes) == {}
    assert merged(COMMIT, base, deletes, rows(("k2", 1, "again"))) == {"k2": "again"}
    assert merged(COMMIT, base, rows(("k1", 1, "x", True))) == {"k2": "base2"}


# --- event time ------------------------------------------------------------------------------------


def test_event_time_larger_ordering_wins_ties_go_to_the_later_record() -> None:
    base = rows(("k1", 10, "base1"), ("k2", 10, "base2"), ("k3", 10, "base3"))
    log1 = rows(("k1", 5, "older1"), ("k2", 10, "tie2"), ("k3", 11, "newer3"), ("k4", 7, "a4"))
    log2 = rows(("k4", 6, "b4"), ("k5", 1, "a5"))
    log3 = rows(("k5", 1, "b5"))
    assert merged(EVENT, base, log1, log2, log3) == {
        "k1": "base1",  # base has the larger ts
        "k2": "tie2",  # tie with base: the log is newer
        "k3": "newer3",
        "k4": "a4",  # larger ts than the later b4
        "k5": "b5",  # tie inside the log: later wins
    }


def test_event_time_base_row_order_is_kept_for_untouched_and_base_winning_rows() -> None:
    base = rows(("a", 1, "A"), ("b", 9, "B"), ("c", 1, "C"), ("d", 1, "D"))
    buffer = LogRecordBuffer(SCHEMA, EVENT)
    buffer.add_data(rows(("b", 1, "stale"), ("c", 5, "C2"), ("e", 1, "E")))
    out = merge_with_base(base, buffer)
    assert out.column("val").to_pylist() == ["A", "B", "D", "C2", "E"]


def test_commit_time_delete_beats_larger_ordering_then_loses_to_any_later_record() -> None:
    # A DELETE-block entry whose ordering value is null or the int 0 (what Spark SQL DELETE writes)
    # is ordered by commit time in both merge modes (Hudi 1.x BufferedRecord.isCommitTimeOrderingDelete).
    base = rows(("k1", 1000, "base1"), ("k2", 1000, "base2"))
    log1 = rows(("k2", 2000, "log2"))
    deletes = [Delete("k1", 0), Delete("k2", None)]
    assert merged(EVENT, base, log1, deletes) == {}
    # A later log record replaces the delete whatever its ordering value...
    assert merged(EVENT, None, deletes, rows(("k1", 1, "back1"))) == {"k1": "back1"}
    assert merged(EVENT, base, deletes, rows(("k1", 2000, "back1"))) == {"k1": "back1"}
    # ...but then meets the base row as an ordinary record: Hudi 1.x's deltaMerge forgets the
    # delete, so with a smaller ordering value than the base row the *base* row comes back.
    assert merged(EVENT, base, deletes, rows(("k1", 1, "back1"))) == {"k1": "base1"}
    # A second, event-time delete after a commit-time one changes nothing.
    assert merged(EVENT, base, deletes, [Delete("k1", 1)]) == {}


def test_event_time_delete_with_ordering_value_is_ordered_like_a_record() -> None:
    base = rows(("k1", 10, "base1"), ("k2", 10, "base2"), ("k3", 10, "base3"))
    deletes = [Delete("k1", 5), Delete("k2", 10), Delete("k3", 11)]
    # Against the base: the delete needs ordering >= the base row's.
    assert merged(EVENT, base, deletes) == {"k1": "base1"}
    # Inside the log: an existing record survives only a strictly smaller delete of its type...
    log = rows(("k4", 10, "a4"), ("k5", 10, "a5"), ("k6", 10, "a6"))
    assert merged(EVENT, None, log, [Delete("k4", 9), Delete("k5", 10), Delete("k6", "zz")]) == {"k4": "a4"}
    # ...and a later record replaces an event-time delete when its ordering is >= the delete's.
    later = rows(("k4", 4, "b4"), ("k5", 10, "b5"))
    assert merged(EVENT, None, [Delete("k4", 5), Delete("k5", 10)], later) == {"k5": "b5"}


def test_is_deleted_rows_with_and_without_ordering_values() -> None:
    base = rows(("k1", 100, "base1"), ("k2", 100, "base2"), ("k3", 100, "base3"))
    log = rows(("k1", None, "x", True), ("k2", 50, "x", True), ("k3", 100, "x", True))
    # null ordering = commit-time delete; 50 < 100 loses to the base; 100 ties and wins.
    assert merged(EVENT, base, log) == {"k2": "base2"}
    # Deleted in the log, nothing in the base: nothing to return.
    assert merged(EVENT, None, rows(("k9", 1, "x", True))) == {}


def test_only_a_java_int_zero_is_the_default_ordering_value() -> None:
    # Hudi's default ordering value is Integer 0: an int32 0 on a deleted row makes a commit-time
    # delete, an int64 0 is an ordinary (small) ordering value.
    def batch(ts_type: pa.DataType) -> pa.Table:
        return pa.table(
            {"_hoodie_record_key": ["k1"], "ts": pa.array([0], ts_type), "_hoodie_is_deleted": [True]}
        )

    base = rows(("k1", 5, "base1"))
    assert merged(EVENT, base, batch(pa.int32())) == {}
    assert merged(EVENT, base, batch(pa.int64())) == {"k1": "base1"}


def test_several_ordering_fields_compare_element_by_element() -> None:
    schema = pa.schema([("_hoodie_record_key", pa.string()), ("a", pa.int32()), ("b", pa.string())])
    spec = MergeSpec(["id"], ["a", "b"], EVENT_TIME_ORDERING, use_meta_key=True)
    base = pa.table({"_hoodie_record_key": ["k1", "k2"], "a": [1, 1], "b": ["m", "m"]}, schema=schema)
    buffer = LogRecordBuffer(schema, spec)
    log = pa.table({"_hoodie_record_key": ["k1", "k2"], "a": [1, 1], "b": ["a", "z"]}, schema=schema)
    buffer.add_data(log)
    out = merge_with_base(base, buffer).to_pylist()
    assert sorted((r["_hoodie_record_key"], r["b"]) for r in out) == [("k1", "m"), ("k2", "z")]


def test_incomparable_ordering_values_let_the_newer_record_win() -> None:
    schema = pa.schema([("_hoodie_record_key", pa.string()), ("ts", pa.string())])
    base = pa.table({"_hoodie_record_key": ["k1"], "ts": ["9"]}, schema=schema)
    buffer = LogRecordBuffer(schema, EVENT)
    buffer.add_data(pa.table({"_hoodie_record_key": ["k1"], "ts": pa.array([1], pa.int64())}))
    assert merge_with_base(base, buffer).column("ts").to_pylist() == ["1"]


def test_log_only_slice_and_empty_log() -> None:
    assert merged(EVENT, None, rows(("k1", 1, "a"), ("k1", 2, "b"))) == {"k1": "b"}
    base = rows(("k1", 1, "a"))
    assert merge_with_base(base, LogRecordBuffer(SCHEMA, EVENT)).equals(base)


# --- keys ---------------------------------------------------------------------------------------


def test_record_keys_without_meta_fields() -> None:
    table = pa.table({"id": [1, None, 3], "name": ["a", "b", ""]})
    simple = MergeSpec(["id"], [], COMMIT_TIME_ORDERING, use_meta_key=False)
    complex_ = MergeSpec(["id", "name"], [], COMMIT_TIME_ORDERING, use_meta_key=False)
    assert record_keys(table, simple).to_pylist() == ["1", "__null__", "3"]
    assert record_keys(table, complex_).to_pylist() == [
        "id:1,name:a",
        "id:__null__,name:b",
        "id:3,name:__empty__",
    ]


def test_nometa_merge_keys_match_delete_block_keys() -> None:
    spec = MergeSpec(["id", "name"], ["ts"], EVENT_TIME_ORDERING, use_meta_key=False)
    schema = pa.schema([("id", pa.int32()), ("name", pa.string()), ("ts", pa.int64())])
    base = pa.table({"id": [1, 2], "name": ["a", "b"], "ts": [1, 1]}, schema=schema)
    buffer = LogRecordBuffer(schema, spec)
    buffer.add_deletes([Delete("id:2,name:b", 0)])
    assert merge_with_base(base, buffer).column("id").to_pylist() == [1]


def test_missing_key_column_is_an_error() -> None:
    buffer = LogRecordBuffer(SCHEMA, EVENT)
    with pytest.raises(InvalidOptionError):
        buffer.add_data(pa.table({"ts": [1]}))


# --- merge mode inference --------------------------------------------------------------------------


def config(**props: str) -> TableConfig:
    base = {"hoodie.table.name": "t", "hoodie.table.version": "6", "hoodie.table.recordkey.fields": "id"}
    text = "\n".join(f"{k}={v}" for k, v in {**base, **props}.items())
    return TableConfig.from_bytes(text.encode())


PAYLOAD = "hoodie.compaction.payload.class"
MODE = "hoodie.record.merge.mode"
PKG = "org.apache.hudi.common.model."
PRE = "hoodie.table.precombine.field"


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        ({PAYLOAD: PKG + "OverwriteWithLatestAvroPayload", PRE: "ts"}, COMMIT_TIME_ORDERING),
        ({PAYLOAD: PKG + "DefaultHoodieRecordPayload", PRE: "ts"}, EVENT_TIME_ORDERING),
        ({PAYLOAD: PKG + "EventTimeAvroPayload", PRE: "ts"}, EVENT_TIME_ORDERING),
        ({PRE: "ts"}, EVENT_TIME_ORDERING),
        ({}, COMMIT_TIME_ORDERING),
        (
            {"hoodie.compaction.record.merger.strategy": "ce9acb64-bde0-424c-9b91-f6ebba25356d", PRE: "ts"},
            COMMIT_TIME_ORDERING,
        ),
        (
            {"hoodie.table.version": "9", MODE: "EVENT_TIME_ORDERING", "hoodie.table.ordering.fields": "ts"},
            EVENT_TIME_ORDERING,
        ),
        (
            {"hoodie.table.version": "9", MODE: "COMMIT_TIME_ORDERING", "hoodie.table.ordering.fields": "ts"},
            COMMIT_TIME_ORDERING,
        ),
        (
            {
                "hoodie.table.version": "9",
                MODE: "CUSTOM",
                PAYLOAD: PKG + "DefaultHoodieRecordPayload",
                "hoodie.table.ordering.fields": "ts",
            },
            EVENT_TIME_ORDERING,
        ),
        # Event time without an ordering field orders everything by commit time.
        ({"hoodie.table.version": "9", MODE: "EVENT_TIME_ORDERING"}, COMMIT_TIME_ORDERING),
    ],
)
def test_merge_mode_inference(props: dict[str, str], expected: str) -> None:
    spec = MergeSpec.from_config(config(**props))
    assert spec.merge_mode == expected
    assert spec.use_meta_key and spec.record_key_fields == ["id"]


@pytest.mark.parametrize(
    ("props", "named"),
    [
        ({PAYLOAD: PKG + "PartialUpdateAvroPayload"}, "PartialUpdateAvroPayload"),
        ({"hoodie.table.version": "9", MODE: "CUSTOM", PAYLOAD: "com.example.MyPay"}, "com.example.MyPay"),
        (
            {
                "hoodie.table.version": "9",
                MODE: "CUSTOM",
                "hoodie.record.merge.strategy.id": "1897ef5f-18bc-4557-939c-9d6a8afd1519",
            },
            "1897ef5f-18bc-4557-939c-9d6a8afd1519",
        ),
        (
            {
                "hoodie.table.version": "9",
                MODE: "EVENT_TIME_ORDERING",
                "hoodie.table.partial.update.mode": "IGNORE_DEFAULTS",
            },
            "IGNORE_DEFAULTS",
        ),
    ],
)
def test_unsupported_merges_are_refused_by_name(props: dict[str, str], named: str) -> None:
    with pytest.raises(UnsupportedFeatureError, match=named):
        MergeSpec.from_config(config(**props))


def test_merge_spec_validation_and_custom_delete_marker() -> None:
    with pytest.raises(UnsupportedFeatureError):
        MergeSpec(["id"], [], "CUSTOM", use_meta_key=True)
    with pytest.raises(InvalidOptionError):
        MergeSpec([], [], COMMIT_TIME_ORDERING, use_meta_key=False)
    spec = MergeSpec.from_config(
        config(
            **{
                "hoodie.payload.delete.field": "op",
                "hoodie.payload.delete.marker": "d",
                "hoodie.populate.meta.fields": "false",
            }
        )
    )
    assert (spec.delete_field, spec.delete_marker, spec.use_meta_key) == ("op", "d", False)
    schema = pa.schema([("id", pa.int64()), ("op", pa.string())])
    base = pa.table({"id": [1, 2], "op": ["i", "i"]}, schema=schema)
    buffer = LogRecordBuffer(schema, spec)
    buffer.add_data(pa.table({"id": [1, 2], "op": ["d", "u"]}, schema=schema))
    assert merge_with_base(base, buffer).to_pylist() == [{"id": 2, "op": "u"}]
