"""Which record wins, and what a write does to the table's columns: small write sequences with
Apache Hudi 1.2's outcome for each (issue 36).

Each :class:`Case` is a sequence of batches written to one table and the rows Apache Hudi 1.2's
``format("hudi")`` leaves after it (or the batch it refuses). ``tests/write/test_write_semantics.py``
checks hudi-md's writers against these outcomes; ``integration/test_merge_findings.py`` runs
Apache Hudi 1.2's bundle on the same batches and checks that the outcomes written here are still
Hudi's, so an outcome in this file is never just our own belief.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

TYPES = {
    "string": pa.string(),
    "bigint": pa.int64(),
    "int": pa.int32(),
    "double": pa.float64(),
    "boolean": pa.bool_(),
}


@dataclass(frozen=True)
class Batch:
    """One write: its operation, its columns (name → Spark DDL type) and its rows."""

    op: str
    columns: dict[str, str]
    rows: list[tuple[Any, ...]]
    refused: bool = False  # Apache Hudi 1.2 refuses this batch (and leaves the table as it was)

    def arrow(self) -> pa.Table:
        return pa.table(
            {
                c: pa.array([r[i] for r in self.rows], TYPES[t])
                for i, (c, t) in enumerate(self.columns.items())
            }
        )

    def ddl(self) -> str:
        return ", ".join(f"{c} {t}" for c, t in self.columns.items())


@dataclass(frozen=True)
class Case:
    name: str
    table_type: str
    batches: list[Batch]
    expected: list[dict[str, Any]]  # the final rows, data columns only
    ordering: str = "ts"
    options: dict[str, str] = field(default_factory=dict)
    finding: str = ""
    # the final rows when the table has Hudi's record index (hoodie.index.type=RECORD_INDEX), where
    # they differ: the record index forgets a deleted key, so a re-insert is a new record
    with_record_index: list[dict[str, Any]] | None = None

    @property
    def id(self) -> str:
        return f"{self.name}-{'mor' if self.table_type == 'MERGE_ON_READ' else 'cow'}"

    def expected_rows(self, record_index: bool) -> list[dict[str, Any]]:
        return (
            self.with_record_index if record_index and self.with_record_index is not None else self.expected
        )

    def write_options(self, record_index: bool = False) -> dict[str, str]:
        index = {"hoodie.metadata.record.index.enable": "true", "hoodie.index.type": "RECORD_INDEX"}
        return {
            "hoodie.table.name": "t",
            "hoodie.datasource.write.recordkey.field": "k",
            "hoodie.datasource.write.partitionpath.field": "p",
            "hoodie.datasource.write.precombine.field": self.ordering,
            "hoodie.datasource.write.table.type": self.table_type,
            "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.SimpleKeyGenerator",
            **(index if record_index else {}),
            **self.options,
        }


KPTV = {"k": "string", "p": "string", "ts": "bigint", "v": "string"}
DELETED = {**KPTV, "_hoodie_is_deleted": "boolean"}
TWO = {"k": "string", "p": "string", "ts": "bigint", "t2": "bigint", "v": "string"}
KEYS_ONLY = {"k": "string", "p": "string"}


def _cases(table_type: str) -> list[Case]:
    mor = table_type == "MERGE_ON_READ"
    return [
        # The reproduction: a narrower upsert is refused whole; a keys-only delete keeps
        # every other column of the surviving rows.
        Case(
            "narrow_upsert_then_keys_delete",
            table_type,
            [
                Batch(
                    "upsert",
                    {"k": "string", "p": "string", "ts": "bigint", "fare": "double", "tip": "double"},
                    [("a", "sf", 1, 1.0, 0.1), ("b", "sf", 1, 2.0, 0.2), ("c", "sf", 1, 3.0, 0.3)],
                ),
                Batch(
                    "upsert",
                    {"k": "string", "p": "string", "ts": "bigint", "fare": "double"},
                    [("a", "sf", 2, 10.0)],
                    refused=True,
                ),
                Batch("delete", {"k": "string", "p": "string", "ts": "bigint"}, [("c", "sf", 5)]),
            ],
            [
                {"k": "a", "p": "sf", "ts": 1, "fare": 1.0, "tip": 0.1},
                {"k": "b", "p": "sf", "ts": 1, "fare": 2.0, "tip": 0.2},
            ],
            finding="reproduction",
        ),
        # Finding 1: Hudi's write key for the merge mode.
        Case(
            "commit_time_write_key",
            table_type,
            [
                Batch("upsert", KPTV, [("a", "p0", 5, "first"), ("b", "p0", 5, "first")]),
                Batch("upsert", KPTV, [("a", "p0", 1, "later, lower ts")]),
            ],
            [
                {"k": "a", "p": "p0", "ts": 1, "v": "later, lower ts"},
                {"k": "b", "p": "p0", "ts": 5, "v": "first"},
            ],
            options={"hoodie.write.record.merge.mode": "COMMIT_TIME_ORDERING"},
            finding="1",
        ),
        # Finding 2: `_hoodie_is_deleted` deletes an existing key and writes nothing for a new one.
        Case(
            "is_deleted_flag",
            table_type,
            [
                Batch("upsert", DELETED, [("a", "p0", 1, "a1", False), ("b", "p0", 1, "b1", False)]),
                Batch("upsert", DELETED, [("a", "p0", 2, "a2", True), ("n", "p0", 2, "n2", True)]),
            ],
            [{"k": "b", "p": "p0", "ts": 1, "v": "b1", "_hoodie_is_deleted": False}],
            finding="2",
        ),
        # Finding 3: two ordering fields compare as a tuple, in the batch and against the stored row.
        Case(
            "two_ordering_fields",
            table_type,
            [
                Batch("upsert", TWO, [("a", "p0", 1, 5, "a-stored"), ("c", "p0", 1, 5, "c-stored")]),
                Batch(
                    "upsert",
                    TWO,
                    [
                        ("b", "p0", 1, 1, "b-low"),
                        ("b", "p0", 1, 3, "b-high"),
                        ("b", "p0", 1, 2, "b-mid"),
                        ("a", "p0", 1, 6, "a-higher second field"),
                        ("c", "p0", 1, 4, "c-lower second field"),
                    ],
                ),
            ],
            [
                {"k": "a", "p": "p0", "ts": 1, "t2": 6, "v": "a-higher second field"},
                {"k": "b", "p": "p0", "ts": 1, "t2": 3, "v": "b-high"},
                {"k": "c", "p": "p0", "ts": 1, "t2": 5, "v": "c-stored"},
            ],
            ordering="ts,t2",
            finding="3",
        ),
        # Ties on every ordering field: the later record wins, in the batch and against the
        # stored row.
        Case(
            "ordering_ties",
            table_type,
            [
                Batch("upsert", TWO, [("a", "p0", 1, 5, "a-stored")]),
                Batch(
                    "upsert",
                    TWO,
                    [("b", "p0", 2, 2, "b-first"), ("b", "p0", 2, 2, "b-second"), ("a", "p0", 1, 5, "a-new")],
                ),
            ],
            [
                {"k": "a", "p": "p0", "ts": 1, "t2": 5, "v": "a-new"},
                {"k": "b", "p": "p0", "ts": 2, "t2": 2, "v": "b-second"},
            ],
            ordering="ts,t2",
            finding="3",
        ),
        # Finding 4: a null ordering value meeting a stored row under event time: Hudi fails (COW)
        # or writes a table it cannot read (MOR); hudi-md refuses it before writing anything.
        Case(
            "null_ordering_against_stored",
            table_type,
            [
                Batch("upsert", KPTV, [("a", "p0", 1, "a1")]),
                Batch("upsert", KPTV, [("a", "p0", None, "a-null")], refused=True),
            ],
            [{"k": "a", "p": "p0", "ts": 1, "v": "a1"}],
            finding="4",
        ),
        # Finding 5: commit-time ordering within one batch: the later row wins, whatever its ts.
        Case(
            "commit_time_in_batch",
            table_type,
            [
                Batch("upsert", KPTV, [("a", "p0", 9, "first row"), ("a", "p0", 1, "second row")]),
            ],
            [{"k": "a", "p": "p0", "ts": 1, "v": "second row"}],
            options={"hoodie.write.record.merge.mode": "COMMIT_TIME_ORDERING"},
            finding="5",
        ),
        # Finding 6: a key deleted by a `_hoodie_is_deleted` record, then re-inserted with a lower
        # ordering value. COW: the delete removed the row, the re-insert is new. MOR: Hudi's
        # default index finds the key in the file group whose base file holds it, where the
        # delete wins; with the record index (which forgot the key) it is a new record.
        Case(
            "reinsert_below_flagged_delete",
            table_type,
            [
                Batch("upsert", DELETED, [("a", "p0", 5, "a5", False), ("b", "p0", 5, "b5", False)]),
                Batch("upsert", DELETED, [("a", "p0", 6, "a6", True)]),
                Batch("upsert", DELETED, [("a", "p0", 3, "a3", False)]),
            ],
            [{"k": "b", "p": "p0", "ts": 5, "v": "b5", "_hoodie_is_deleted": False}]
            if mor
            else [
                {"k": "a", "p": "p0", "ts": 3, "v": "a3", "_hoodie_is_deleted": False},
                {"k": "b", "p": "p0", "ts": 5, "v": "b5", "_hoodie_is_deleted": False},
            ],
            finding="6",
            with_record_index=[
                {"k": "a", "p": "p0", "ts": 3, "v": "a3", "_hoodie_is_deleted": False},
                {"k": "b", "p": "p0", "ts": 5, "v": "b5", "_hoodie_is_deleted": False},
            ],
        ),
        # And the same re-insert above the delete's ordering value comes back in both.
        Case(
            "reinsert_above_flagged_delete",
            table_type,
            [
                Batch("upsert", DELETED, [("a", "p0", 5, "a5", False)]),
                Batch("upsert", DELETED, [("a", "p0", 6, "a6", True)]),
                Batch("upsert", DELETED, [("a", "p0", 7, "a7", False)]),
            ],
            [{"k": "a", "p": "p0", "ts": 7, "v": "a7", "_hoodie_is_deleted": False}],
            finding="6",
        ),
        # A keys-only delete frame (Hudi's quickstart) keeps every other column of other rows.
        Case(
            "keys_only_delete",
            table_type,
            [
                Batch("upsert", KPTV, [("a", "p0", 1, "a1"), ("b", "p1", 1, "b1")]),
                Batch("delete", KEYS_ONLY, [("a", "p0")]),
            ],
            [{"k": "b", "p": "p1", "ts": 1, "v": "b1"}],
        ),
    ]


def _type_change(
    name: str,
    table_type: str,
    stored: tuple[str, Any, Any],
    incoming: tuple[str, Any],
    expected: tuple[Any, Any] | None,
) -> Case:
    """Column ``x`` written as ``stored`` (type, a's value, b's value), then a's row with ``x`` of
    another type; ``expected``: (a's, b's) value read back after, or None when Hudi refuses it."""
    first = Batch("upsert", {**KPT, "x": stored[0]}, [("a", "p0", 1, stored[1]), ("b", "p0", 1, stored[2])])
    second = Batch(
        "upsert", {**KPT, "x": incoming[0]}, [("a", "p0", 2, incoming[1])], refused=expected is None
    )
    rows = (
        [{"k": "a", "p": "p0", "ts": 1, "x": stored[1]}, {"k": "b", "p": "p0", "ts": 1, "x": stored[2]}]
        if expected is None
        else [
            {"k": "a", "p": "p0", "ts": 2, "x": expected[0]},
            {"k": "b", "p": "p0", "ts": 1, "x": expected[1]},
        ]
    )
    return Case(name, table_type, [first, second], rows, finding="types")


KPT = {"k": "string", "p": "string", "ts": "bigint"}


def _type_cases(table_type: str) -> list[Case]:
    return [
        # promoted: the table's column becomes the records' type, older values read converted
        _type_change("int_to_long", table_type, ("int", 7, 8), ("bigint", 2**40), (2**40, 8)),
        _type_change("long_to_double", table_type, ("bigint", 7, 8), ("double", 2.5), (2.5, 8.0)),
        _type_change("long_to_string", table_type, ("bigint", 7, 8), ("string", "s"), ("s", "8")),
        _type_change("double_to_string", table_type, ("double", 7.5, 8.0), ("string", "s"), ("s", "8.0")),
        # converted: the table keeps its type, the records' values become it
        _type_change("int_into_double", table_type, ("double", 7.5, 8.5), ("int", 3), (3.0, 8.5)),
        _type_change("long_into_string", table_type, ("string", "s", "t"), ("bigint", 3), ("3", "t")),
        # refused
        _type_change("boolean_into_double", table_type, ("double", 7.5, 8.5), ("boolean", True), None),
        _type_change("boolean_into_long", table_type, ("bigint", 7, 8), ("boolean", False), None),
    ]


CASES = [c for t in ("COPY_ON_WRITE", "MERGE_ON_READ") for c in (*_cases(t), *_type_cases(t))]


# One case of each finding for CI's slice of the interoperability suite (the rest run in
# scripts/integration).
CI_CASES = {
    "narrow_upsert_then_keys_delete-cow",
    "commit_time_write_key-mor",
    "is_deleted_flag-mor",
    "two_ordering_fields-cow",
    "null_ordering_against_stored-mor",
    "commit_time_in_batch-cow",
    "reinsert_below_flagged_delete-mor",
    "long_to_string-mor",
    "boolean_into_double-cow",
}


def normalised(rows: list[dict[str, Any]], columns: list[str]) -> list[tuple]:
    """Rows as sorted tuples of ``columns`` (floats rounded), for comparing readers."""
    out = []
    for r in rows:
        out.append(tuple(round(r.get(c), 9) if isinstance(r.get(c), float) else r.get(c) for c in columns))
    return sorted(out, key=repr)


def listing(path: str | Path) -> dict[str, str]:
    """Every file under the table (lock files aside) with its size and hash: a refused write
    leaves this unchanged."""
    root = Path(path)
    if not root.exists():
        return {}
    return {
        str(f.relative_to(root)): f"{f.stat().st_size}:{hashlib.sha1(f.read_bytes()).hexdigest()}"
        for f in sorted(root.rglob("*"))
        if f.is_file() and ".locks" not in f.parts and not f.name.endswith(".crc")
    }


def columns_of(case: Case) -> list[str]:
    return list(dict.fromkeys(c for r in case.expected for c in r))


def assert_rows(path: Path, case: Case, record_index: bool = False) -> None:
    """hudi-md (through the MDT and by listing) and hudi-rs read the case's rows from the table."""
    import hudi_md
    from table_model import hudi_rs_table

    columns = columns_of(case)
    expected = normalised(case.expected_rows(record_index), columns)
    uri = str(path)
    got = {
        "hudi-md": hudi_md.open_table(uri).read().to_pylist(),
        "hudi-md (listing)": hudi_md.open_table(uri, {"hoodie.metadata.enable": "false"}).read().to_pylist(),
    }
    if "," not in case.ordering:  # hudi-rs 0.5 reads one ordering field only
        got["hudi-rs"] = hudi_rs_table(uri, allow_empty=True).to_pylist()
    for reader, rows in got.items():
        assert normalised(rows, columns) == expected, f"{reader}"
