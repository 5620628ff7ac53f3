"""The write tests' oracle: an in-memory model of the rows a table must hold, and the readers
compared with it (hudi-md through the MDT and by listing, hudi-rs), each answering the rows as
sorted ``(id, ts, fare)`` triples.

Used by tests/write (the writer model, crash recovery, the crash matrix's harness, archival) and
tests/test_s3_faults.py; imported as ``table_model``, the way ``fixtures`` is (tests/ is on
sys.path: conftest.py puts it there, crash_harness.py too when run as a script).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import hudi
import pyarrow as pa

import hudi_md
from hudi_md.storage import Storage
from hudi_md.table.timeline import Timeline

if TYPE_CHECKING:
    from hudi_md.api import Table

# The columns the model keeps and the readers compare.
COLUMNS = ["id", "ts", "fare"]
CITIES = ["sf", "nyc", "sao_paulo"]

Rows = pa.Table | Sequence[Mapping[str, Any]]


def rows(ids: Iterable[int], ts: int, seed: int) -> pa.Table:
    """Rows ``id-NNNN`` partitioned by ``city`` (one of CITIES, by id), all with ``ts``, fares from
    ``seed``."""
    rng = random.Random(seed)
    ids = list(ids)
    return pa.table(
        {
            "id": pa.array([f"id-{i:04d}" for i in ids], pa.string()),
            "city": pa.array([CITIES[i % 3] for i in ids], pa.string()),
            "ts": pa.array([ts] * len(ids), pa.int64()),
            "fare": pa.array([round(rng.uniform(1, 100), 2) for _ in ids], pa.float64()),
        }
    )


def triples(t: pa.Table, columns: Sequence[str] = COLUMNS) -> list[tuple]:
    """A table's rows as sorted ``(id, ts, fare)`` (or tuples of other ``columns``)."""
    return sorted(zip(*(t.column(c).to_pylist() for c in columns), strict=True))


def _records(data: Rows) -> list[Mapping[str, Any]]:
    return data.to_pylist() if isinstance(data, pa.Table) else list(data)


class Model:
    """Expected rows by (partition values, id): the table as it should read. A row is a dict with
    at least ``id``, ``ts``, ``fare`` and the partition fields; operations take a pyarrow table or
    a list of such dicts."""

    def __init__(self, partitions: Sequence[str] = ("city",)) -> None:
        self.partitions = list(partitions)
        self.rows: dict[tuple, Mapping[str, Any]] = {}

    def copy(self) -> Model:
        m = Model(self.partitions)
        m.rows = dict(self.rows)
        return m

    def pkey(self, row: Mapping[str, Any]) -> tuple:
        return (*(row[p] for p in self.partitions), row["id"])

    def upsert(self, data: Rows) -> None:
        """The latest ``ts`` wins; an equal ``ts`` takes the new row."""
        for r in _records(data):
            k = self.pkey(r)
            old = self.rows.get(k)
            if old is None or r["ts"] >= old["ts"]:
                self.rows[k] = r

    def insert(self, data: Rows) -> None:
        for r in _records(data):
            self.rows[self.pkey(r)] = r

    def delete(self, data: Rows) -> None:
        for r in _records(data):
            self.rows.pop(self.pkey(r), None)

    def overwrite(self, data: Rows, whole_table: bool) -> None:
        """insert_overwrite (the partitions the rows touch) or insert_overwrite_table."""
        records = _records(data)
        touched = {tuple(r[p] for p in self.partitions) for r in records}
        for k in list(self.rows):
            if whole_table or k[: len(self.partitions)] in touched:
                del self.rows[k]
        self.insert(records)

    def apply(self, operation: str, data: Rows) -> None:
        """A write operation by its name; any other than these replaces rows as insert does."""
        if operation == "upsert":
            self.upsert(data)
        elif operation == "delete":
            self.delete(data)
        elif operation in ("insert_overwrite", "insert_overwrite_table"):
            self.overwrite(data, whole_table=operation == "insert_overwrite_table")
        else:
            self.insert(data)

    def expected(self) -> list[tuple]:
        return sorted((r["id"], r["ts"], r["fare"]) for r in self.rows.values())


def read_hudi_md(uri: str, options: Mapping[str, str] | None = None) -> list[tuple]:
    """hudi-md's snapshot read (through the MDT unless ``options`` switch it off)."""
    return triples(hudi_md.open_table(uri, options).read(columns=COLUMNS))


def read_listing(uri: str, options: Mapping[str, str] | None = None) -> list[tuple]:
    """hudi-md's snapshot read listing storage (``hoodie.metadata.enable=false``)."""
    return read_hudi_md(uri, {**(options or {}), "hoodie.metadata.enable": "false"})


def hudi_rs_table(uri: str, options: Mapping[str, str] | None = None, allow_empty: bool = False) -> pa.Table:
    """hudi-rs's snapshot read, meta fields included. No batches at all is an error (pyarrow's)
    unless ``allow_empty``: then an empty table of the columns the tests use."""
    builder = hudi.HudiTableBuilder.from_base_uri(uri)
    if options:
        builder = builder.with_options(dict(options))
    batches = builder.build().read()
    if batches or not allow_empty:
        return pa.Table.from_batches(batches)
    return pa.table(
        {
            "id": pa.array([], pa.string()),
            "_hoodie_record_key": pa.array([], pa.string()),
            "ts": pa.array([], pa.int64()),
            "fare": pa.array([], pa.float64()),
            "_hoodie_partition_path": pa.array([], pa.string()),
            "_hoodie_file_name": pa.array([], pa.string()),
        }
    )


def read_hudi_rs(uri: str, options: Mapping[str, str] | None = None) -> list[tuple]:
    return triples(hudi_rs_table(uri, options))


def assert_same(got: list[tuple], expected: list[tuple], reader: str) -> None:
    """``got == expected``; the message names the reader and the first differences."""
    if got != expected:
        missing = sorted(set(expected) - set(got))
        extra = sorted(set(got) - set(expected))
        raise AssertionError(
            f"{reader}: {len(got)} rows, expected {len(expected)}; "
            f"missing {missing[:5]} ({len(missing)}), unexpected {extra[:5]} ({len(extra)})"
        )


def assert_readers(
    uri: str,
    expected: list[tuple],
    options: Mapping[str, str] | None = None,
    rs_options: Mapping[str, str] | None = None,
    columns: Sequence[str] = COLUMNS,
) -> tuple[Table, pa.Table]:
    """Every reader returns exactly ``expected`` (sorted tuples of ``columns``): hudi-md through the
    MDT (or as ``options`` say), hudi-md listing storage, hudi-rs (an empty read where ``expected``
    is empty). Returns hudi-md's table and hudi-rs's read."""
    columns = list(columns)
    table = hudi_md.open_table(uri, options)
    assert_same(triples(table.read(columns=columns), columns), expected, "hudi-md")
    listed = hudi_md.open_table(uri, {**(options or {}), "hoodie.metadata.enable": "false"})
    assert_same(triples(listed.read(columns=columns), columns), expected, "hudi-md (listing)")
    rs = hudi_rs_table(uri, rs_options, allow_empty=True)
    assert_same(triples(rs, columns), expected, "hudi-rs")
    return table, rs


def assert_record_index_matches(table: Table, snapshot: pa.Table) -> None:
    """The MDT's record index holds exactly the keys of ``snapshot`` (a read with the meta columns,
    hudi-rs's as the oracle), each at the partition and file group the row was read from."""
    from hudi_md.metadata import keys as K

    want = {
        k: (p, f.lstrip(".").split("_", 1)[0])  # <fileId>_<token>_<instant>.parquet, .<fileId>_... logs
        for k, p, f in zip(
            snapshot.column("_hoodie_record_key").to_pylist(),
            snapshot.column("_hoodie_partition_path").to_pylist(),
            snapshot.column("_hoodie_file_name").to_pylist(),
            strict=True,
        )
    }
    mdt = table.metadata_table
    assert mdt is not None
    assert set(mdt.read_records(K.RECORD_INDEX)) == set(want), "record index keys"
    got = {k: (loc.partition_path, loc.file_id) for k, loc in mdt.record_index.locations(list(want)).items()}
    assert got == want, "record index locations"


def pending_instants(uri: str, storage_options: Mapping[str, str] | None = None) -> list[str]:
    """The pending instants of the timeline (layout 2) of the table at ``uri``."""
    timeline = Timeline.load(
        Storage(uri, dict(storage_options) if storage_options else None), ".hoodie/timeline", 2
    )
    return [str(i) for i in timeline.pending()]


# --- a small keyed table by region, for write-then-read tests ---------------------------------------


def region_options(table_name: str, table_type: str) -> dict[str, str]:
    """Write options of a table keyed by ``id``, partitioned hive-style by ``region``, ordered by ``ts``."""
    return {
        "hoodie.table.name": table_name,
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "region",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.hive_style_partitioning": "true",
    }


def region_rows(ids: range | list[int], ts: int, value: int) -> pa.Table:
    """Rows ``id-NNN`` over three regions, with ordering value ``ts`` and ``value + i``."""
    ids = list(ids)
    return pa.table(
        {
            "id": [f"id-{i:03d}" for i in ids],
            "region": [("eu", "us", "apac")[i % 3] for i in ids],
            "ts": pa.array([ts] * len(ids), pa.int64()),
            "value": pa.array([value + i for i in ids], pa.int64()),
        }
    )
