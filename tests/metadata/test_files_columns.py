"""The column-wise ``files`` partition (metadata/files_columns.py) and column-wise slicing
(table/slice_table.py) against the record-wise path they replace for large plans, and the plan
they make against hudi-rs on every fixture table."""

from __future__ import annotations

import io
import itertools
import json
import random
from pathlib import Path

import fastavro
import hudi
import numpy as np
import pyarrow as pa
import pytest

import hudi_md
from hudi_md.metadata import files_columns
from hudi_md.metadata import keys as K
from hudi_md.metadata.files_codec import files_record_decoder
from hudi_md.metadata.files_columns import FilesRun, decode_files_cells, merge_files_runs
from hudi_md.metadata.records import live_files, merge
from hudi_md.planning import planner
from hudi_md.table.slice_rows import slices_to_arrow
from hudi_md.table.slice_table import latest_slices_table

from fixtures import archives

SCHEMA = {
    "type": "record",
    "name": "HoodieMetadataRecord",
    "fields": [
        {"name": "_hoodie_commit_time", "type": ["null", "string"]},
        {"name": "_hoodie_record_key", "type": ["null", "string"]},
        {"name": "key", "type": {"type": "string", "avro.java.string": "String"}},
        {"name": "type", "type": "int"},
        {
            "name": "filesystemMetadata",
            "type": [
                "null",
                {
                    "type": "map",
                    "values": {
                        "type": "record",
                        "name": "HoodieMetadataFileInfo",
                        "fields": [
                            {"name": "size", "type": "long"},
                            {"name": "isDeleted", "type": "boolean"},
                        ],
                    },
                },
            ],
        },
        {"name": "BloomFilterMetadata", "type": ["null", {"type": "record", "name": "B", "fields": []}]},
        {"name": "ColumnStatsMetadata", "type": ["null", "string"]},
        {"name": "recordIndexMetadata", "type": ["null", "long"]},
        {"name": "SecondaryIndexMetadata", "type": ["null", "boolean"]},
    ],
}
SCHEMA_JSON = json.dumps(SCHEMA)
PARSED = fastavro.parse_schema(SCHEMA)


def encode(record: dict) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, PARSED, record)
    return buf.getvalue()


def record(key: str, files: dict[str, tuple[int, bool]] | None, rng: random.Random, kind: int = 2) -> dict:
    return {
        "_hoodie_commit_time": rng.choice([None, "20240101000000000"]),
        "_hoodie_record_key": rng.choice([None, "", "ключ"]),
        "key": key,
        "type": kind,
        "filesystemMetadata": None
        if files is None
        else {n: {"size": s, "isDeleted": d} for n, (s, d) in files.items()},
        "BloomFilterMetadata": None,
        "ColumnStatsMetadata": None,
        "recordIndexMetadata": None,
        "SecondaryIndexMetadata": None,
    }


def random_files(rng: random.Random, n: int, names: list[str] | None = None) -> dict[str, tuple[int, bool]]:
    pool = names or [f"f{rng.randrange(10**6)}-{'é' * rng.randrange(3)}_{i}.parquet" for i in range(n)]
    return {
        rng.choice(pool): (
            rng.choice([0, 1, 127, 128, 2**20, 2**40, rng.randrange(2**62)]),
            rng.random() < 0.2,
        )
        for _ in range(n)
    }


def run_entries(run: FilesRun) -> list[list[tuple[str, int, bool]]]:
    per: list[list[tuple[str, int, bool]]] = [[] for _ in range(len(run.types))]
    names = run.entry_name.to_pylist()
    for r, n, s, d in zip(
        run.entry_record.tolist(), names, run.entry_size.tolist(), run.entry_deleted.tolist(), strict=True
    ):
        per[r].append((n, s, d))
    return per


@pytest.mark.parametrize("seed", range(6))
def test_decoded_runs_equal_the_record_decoder(seed: int) -> None:
    rng = random.Random(seed)
    fast = files_record_decoder(SCHEMA_JSON)
    assert fast is not None
    # many small maps (decoded in lockstep), a few large ones (finished one record at a time)
    sizes = [rng.choice([0, 1, 2, 3, 5]) for _ in range(rng.randrange(40, 400))] + [
        rng.randrange(40, 300)
    ] * 3
    rng.shuffle(sizes)
    recs = [
        record(f"p{i:05d}", None if n == 0 and rng.random() < 0.5 else random_files(rng, n), rng)
        for i, n in enumerate(sizes)
    ]
    values = [encode(r) for r in recs]
    keys = [r["key"].encode() for r in recs]
    run = decode_files_cells(keys, values, 2)
    assert run is not None
    assert run.keys.to_pylist() == [r["key"] for r in recs]
    entries = run_entries(run)
    for i, value in enumerate(values):
        want = fast(value)
        assert want is not None
        assert bool(run.has_map[i]) == (want["filesystemMetadata"] is not None)
        assert int(run.types[i]) == want["type"]
        got = [(n, s, d) for n, s, d in entries[i]]
        assert got == [(n, v["size"], v["isDeleted"]) for n, v in (want["filesystemMetadata"] or {}).items()]


@pytest.mark.parametrize("seed", range(3))
def test_large_maps_walked_by_their_separators_equal_the_record_decoder(seed: int) -> None:
    """Maps of thousands of entries (the ``__all_partitions__`` record): the plain entries (short
    name, size 0, not deleted) found by splitting at the two zero bytes that end each, the rest (a
    long name, a large size, a deletion, a name holding zero bytes) one by one."""
    rng = random.Random(seed)
    fast = files_record_decoder(SCHEMA_JSON)
    assert fast is not None

    def big_map(n: int, odd_at: int | None, odd_first: bool = False) -> dict[str, tuple[int, bool]]:
        files = {f"dt=2024-{i:07d}": (0, False) for i in range(n)}  # Hudi's partition entries
        if odd_at is not None:
            items = list(files.items())
            odd = ("x" * rng.choice([64, 200]), (rng.choice([0, 2**40]), False))  # a long name
            items.insert(0 if odd_first else odd_at, odd)
            items.insert(odd_at + 1, rng.choice([("y", (128, False)), ("z", (0, True))]))
            files = dict(items)
        return files

    recs = [
        record(K.ALL_PARTITIONS_KEY, big_map(6000, None), rng, kind=K.TYPE_ALL_PARTITIONS),
        record("p1", big_map(5000, rng.randrange(1, 4999)), rng),
        record("p2", big_map(4500, 10, odd_first=True), rng),
        record("p3", random_files(rng, 3), rng),
        # names holding the separator the walk splits at (after 100 walked entries): decoded exactly
        record(
            "p4", {**big_map(100, None), "a\0\0b": (0, False), "c\0": (0, False), **big_map(5000, None)}, rng
        ),
    ]
    values = [encode(r) for r in recs]
    run = decode_files_cells([r["key"].encode() for r in recs], values, 2)
    assert run is not None
    entries = run_entries(run)
    for i, value in enumerate(values):
        want = fast(value)
        assert want is not None
        assert entries[i] == [(n, v["size"], v["isDeleted"]) for n, v in want["filesystemMetadata"].items()]
    # a flag byte other than 0/1 inside the walked entries: not a files record it knows
    bad = bytearray(values[0])
    at = bad.index(b"dt=2024-0003000") + len("dt=2024-0003000") + 1
    assert bad[at] in (0, 1)
    bad[at] = 2
    assert decode_files_cells([r["key"].encode() for r in recs], [bytes(bad), *values[1:]], 2) is None


@pytest.mark.parametrize(
    "alphabet", [b"\0a", b"\0\0ab", b"abc\0", b"ab"], ids=["zeros-half", "zero-runs", "few-zeros", "no-zeros"]
)
def test_the_pieces_before_double_zeros_are_those_bytes_split_gives(alphabet: bytes) -> None:
    """The walk's split at ``\\0\\0`` (numpy where no run of three zeros is, bytes.split elsewhere)
    equals bytes.split's pieces but the last, for every limit on the number of splits."""
    rng = random.Random(alphabet)
    for _ in range(300):
        data = bytes(rng.choice(alphabet) for _ in range(rng.randrange(0, 60)))
        if rng.random() < 0.5:  # entries of the __all_partitions__ shape, the common case
            data = b"".join(
                bytes([2 * len(n)]) + n + b"\0\0" for n in (b"dt=%d" % i for i in range(rng.randrange(1, 9)))
            )
        for most in (1, 2, 5, 100):
            want = [len(p) for p in data.split(b"\0\0", most)[:-1]]
            got = files_columns._pieces_before_double_zeros(np.frombuffer(data, np.uint8), most)
            assert got.tolist() == want, (data, most)


def test_maps_written_in_blocks_with_byte_sizes() -> None:
    rng = random.Random(7)
    recs = [record(f"p{i}", {"f": (3, False)}, rng) for i in range(40)]
    values = []
    for r in recs:
        blocked = bytearray(encode(r))
        at = blocked.index(b"\x02\x02f")  # one entry, then the name "f"
        entry = blocked[at + 1 : at + 1 + 4]  # name (2 bytes), size, flag
        blocked[at : at + 1] = b"\x01" + bytes([len(entry) * 2])  # count -1, then the block's size
        values.append(bytes(blocked))
    run = decode_files_cells([r["key"].encode() for r in recs], values, 2)
    assert run is not None
    assert run.entry_name.to_pylist() == ["f"] * 40 and run.entry_size.tolist() == [3] * 40


def test_what_it_does_not_expect_is_left_to_the_record_path() -> None:
    rng = random.Random(3)
    recs = [record(f"p{i}", random_files(rng, 2), rng) for i in range(50)]
    values = [encode(r) for r in recs]
    keys = [r["key"].encode() for r in recs]
    assert decode_files_cells(keys, values, 2) is not None
    for bad in (
        [*values[:10], values[10][:-1], *values[11:]],  # a record cut short
        [*values[:10], values[10] + b"\x00", *values[11:]],  # bytes left over
        [*values[:10], encode({**recs[10], "ColumnStatsMetadata": "x"}), *values[11:]],  # not a files record
        [*values[:10], b"\x02\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", *values[11:]],  # a runaway varint
    ):
        assert decode_files_cells(keys, bad, 2) is None
    assert decode_files_cells(keys, values, 1) is None  # the wrong shape


def decoded_and_folded(keys: list[str], recs: list[dict], fast, folded: dict[str, dict | None]) -> FilesRun:
    """The run of ``recs`` (under ``keys``) decoded column-wise; each record also folded into
    ``folded`` by the record-wise decoder and ``records.merge``."""
    values = [encode(r) for r in recs]
    run = decode_files_cells([k.encode() for k in keys], values, 2)
    assert run is not None
    for k, v in zip(keys, values, strict=True):
        rec = fast(v)
        rec["key"] = k
        folded[k] = merge(folded.get(k), rec)
    return run


def live_rows(folded: dict[str, dict | None]) -> list[tuple[str, str, int]]:
    """(partition path, name, size) of the live files of the folded records, sorted."""
    return sorted(
        ("" if k == K.NON_PARTITIONED_NAME else k, n, s)
        for k, rec in folded.items()
        for n, s in live_files(rec).items()
    )


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("kind", [K.TYPE_FILES, K.TYPE_ALL_PARTITIONS])
def test_merged_runs_equal_the_record_merge(seed: int, kind: int) -> None:
    """Runs (a base file, then log blocks) with files added, grown, deleted, re-added: the merge
    equals folding the records with ``records.merge`` and listing ``live_files``."""
    rng = random.Random(seed)
    fast = files_record_decoder(SCHEMA_JSON)
    assert fast is not None
    partitions = [f"dt={i:03d}" for i in range(rng.randrange(1, 60))] + [K.NON_PARTITIONED_NAME]
    names = [f"n{i}.parquet" for i in range(12)]
    runs = []
    folded: dict[str, dict | None] = {}
    for _ in range(rng.randrange(1, 6)):
        keys = sorted(rng.sample(partitions, rng.randrange(1, len(partitions) + 1)))
        recs = [record(k, random_files(rng, rng.randrange(0, 6), names), rng, kind) for k in keys]
        runs.append(decoded_and_folded(keys, recs, fast, folded))
    want = live_rows(folded)
    got = merge_files_runs(runs, kind)
    assert got is not None
    assert list(zip(*(got[c].to_pylist() for c in ("partition_path", "name", "size")), strict=True)) == want
    assert merge_files_runs(runs, K.TYPE_FILES + K.TYPE_ALL_PARTITIONS - kind) is None  # the other type


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("kind", [K.TYPE_FILES, K.TYPE_ALL_PARTITIONS])
def test_few_entries_placed_into_one_large_run_equal_the_record_merge(
    seed: int, kind: int, monkeypatch
) -> None:
    """One large run whose (partition, name) pairs are in order (maps written with sorted names)
    among small runs before and after it, re-listing, growing and deleting some of its pairs and
    adding new ones: the few are placed into the large run instead of sorting them all, and the
    merge still equals the record merge (and the sort's answer)."""
    rng = random.Random(seed)
    fast = files_record_decoder(SCHEMA_JSON)
    assert fast is not None
    partitions = [*(f"dt={i:03d}" for i in range(rng.randrange(40, 120))), K.NON_PARTITIONED_NAME]
    names = [f"n{i:02d}.parquet" for i in range(12)]

    def sorted_files(n: int) -> dict[str, tuple[int, bool]]:
        return dict(sorted(random_files(rng, n, names).items()))

    large_at = rng.randrange(0, 3)
    runs = []
    folded: dict[str, dict | None] = {}
    for i in range(rng.randrange(large_at + 1, 5)):
        count = len(partitions) if i == large_at else rng.randrange(1, 6)
        keys = sorted(rng.sample(partitions, count))
        recs = [record(k, sorted_files(rng.randrange(3, 8) if i == large_at else 2), rng, kind) for k in keys]
        runs.append(decoded_and_folded(keys, recs, fast, folded))
    want = live_rows(folded)
    placed = []
    real = files_columns._few_into_one
    monkeypatch.setattr(files_columns, "_few_into_one", lambda *a: placed.append(real(*a)) or placed[-1])
    got = merge_files_runs(runs, kind)
    assert got is not None
    assert list(zip(*(got[c].to_pylist() for c in ("partition_path", "name", "size")), strict=True)) == want
    if len(runs) > 1:
        assert placed[0] is not None  # the path under test was taken
    monkeypatch.setattr(files_columns, "_PLACED_MAX", 0)  # the sort of them all agrees
    assert merge_files_runs(runs, kind) == got


@pytest.mark.parametrize("seed", range(12))
def test_a_run_is_found_in_order_exactly_when_its_pairs_are_strictly_increasing(seed: int) -> None:
    """The merge's check of one run, on its records' keys and each record's names, against the
    run's (key, name) pairs compared one by one; and the merge of that run alone (taken as it is
    when in order) still equals the record merge."""
    rng = random.Random(seed)
    fast = files_record_decoder(SCHEMA_JSON)
    assert fast is not None
    partitions = sorted(rng.sample([f"dt={i:02d}" for i in range(40)], rng.randrange(1, 12)))
    if rng.random() < 0.3:  # a key twice: not strictly increasing
        partitions.insert(rng.randrange(len(partitions)), partitions[0])
        partitions.sort()
    names = [f"n{i:02d}.parquet" for i in range(8)]
    recs = []
    for k in partitions:
        files = random_files(rng, rng.randrange(0, 4), names)
        recs.append(record(k, dict(sorted(files.items())) if rng.random() < 0.8 else files, rng))
    folded: dict[str, dict | None] = {}
    run = decoded_and_folded(partitions, recs, fast, folded)
    keys = run.keys.to_pylist()
    pairs = [(keys[r], n) for r, n in zip(run.entry_record.tolist(), run.entry_name.to_pylist(), strict=True)]
    increasing = all(a < b for a, b in itertools.pairwise(pairs))
    increasing &= all(a < b for a, b in itertools.pairwise(keys))
    assert files_columns._run_in_order(run, run.entry_name) == increasing
    if len(set(partitions)) == len(partitions):
        got = merge_files_runs([run])
        assert got is not None
        rows = list(zip(*(got[c].to_pylist() for c in ("partition_path", "name", "size")), strict=True))
        assert rows == live_rows(folded)


def test_a_key_of_another_record_type_is_left_to_the_record_merge() -> None:
    rng = random.Random(1)
    recs = [record("p1", {"a": (1, False)}, rng), record("p2", {"b": (1, False)}, rng, kind=1)]
    run = decode_files_cells([b"p1", b"p2"], [encode(r) for r in recs], 2)
    assert run is not None
    assert merge_files_runs([run]) is None


def test_a_name_twice_in_one_map_is_left_to_the_record_merge() -> None:
    rng = random.Random(1)
    value = bytearray(encode(record("p1", {"aa": (1, False), "ab": (2, False)}, rng)))
    value[value.index(b"ab") + 1] = ord("a")  # the second entry now names "aa" too
    run = decode_files_cells([b"p1"], [bytes(value)], 2)
    assert run is not None and run.entry_name.to_pylist() == ["aa", "aa"]
    assert merge_files_runs([run]) is None


# --- fixture tables: column-wise slices = record-wise slices = hudi-rs ---------------------------


def record_wise_partitions(mdt) -> list[str]:
    """The partition list as the record-wise path reads it (``__all_partitions__`` merged)."""
    record = mdt.read_records(K.FILES, keys=[K.ALL_PARTITIONS_KEY]).get(K.ALL_PARTITIONS_KEY)
    return sorted("" if p == K.NON_PARTITIONED_NAME else p for p in live_files(record))


MDT_ARCHIVES = [a for a in archives() if "v6_empty" not in a]


@pytest.mark.parametrize("archive", MDT_ARCHIVES)
def test_fixture_plans_built_column_wise(archive: str, table_path, monkeypatch) -> None:
    path = table_path(archive)
    table = hudi_md.open_table(str(path))
    mdt = table.metadata_table
    if mdt is None:
        pytest.skip("no metadata table")
    partitions = table.partitions()
    # the partition list too
    assert mdt.files._all_partitions_columns().to_pylist() == record_wise_partitions(mdt)
    view = table.state.file_system_view(None)
    files = mdt.files.files_table()
    assert files is not None  # every files record Hudi wrote takes the column-wise path
    record_wise = mdt.files.files_in_partitions(partitions)
    assert sorted(
        (p, n, s)
        for p, n, s in zip(*(files[c].to_pylist() for c in ("partition_path", "name", "size")), strict=True)
        if p in set(partitions)
    ) == sorted((p, e.name, e.size) for p, entries in record_wise.items() for e in entries)

    # the scan of the whole partition gives the partition list too
    scanned = hudi_md.open_table(str(path)).metadata_table
    assert scanned.files.files_table() is not None
    assert scanned.files._partition_array.to_pylist() == record_wise_partitions(mdt)

    monkeypatch.setattr(planner, "COLUMNAR_MIN_PARTITIONS", 0)
    fresh = hudi_md.open_table(str(path))
    plan = fresh.plan(None)
    assert plan._rows is not None  # the column-wise path ran
    want = slices_to_arrow(view.latest_file_slices(partitions))
    assert plan.rows.equals(want)
    assert latest_slices_table(
        view, files.filter(pa.compute.is_in(files["partition_path"], pa.array(partitions)))
    ).equals(want)
    # and hudi-rs agrees (the oracle)
    builder = hudi.HudiTableBuilder.from_base_uri(str(path)).with_option("hoodie.metadata.enable", "true")
    theirs = sorted(
        (s.partition_path, s.file_id, s.base_file_name, tuple(sorted(s.log_file_names)))
        for s in builder.build().get_file_slices()
    )
    ours = sorted(
        (
            r["partition_path"],
            r["file_id"],
            Path(r["base_file"] or "").name,
            tuple(sorted(Path(x).name for x in r["log_files"])),
        )
        for r in fresh.file_slices().to_pylist()
    )
    assert ours == theirs


def test_hudi_md_table_with_cleans_overwrites_and_dropped_partitions(tmp_path: Path, monkeypatch) -> None:
    """Files replaced, cleaned (tombstones in the files partition), a partition dropped: the
    column-wise plan equals the record-wise one and hudi-rs's slices."""
    path = str(tmp_path / "t")
    options = {
        "hoodie.table.name": "t",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "p",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.clean.commits.retained": "1",
        "hoodie.metadata.index.column.stats.enable": "true",
    }
    rows = pa.table(
        {
            "id": [f"k{i}" for i in range(400)],
            "p": [f"p{i % 40:02d}" for i in range(400)],
            "ts": list(range(400)),
        }
    )
    hudi_md.write(rows, path, operation="insert", options=options)
    for n in range(3):
        hudi_md.write(rows.slice(n * 50, 60), path, operation="upsert", options=options)
    hudi_md.write(
        rows.filter(pa.compute.equal(rows["p"], "p03")), path, operation="insert_overwrite", options=options
    )
    drop = {**options, "hoodie.datasource.write.partitions.to.delete": "p07"}
    hudi_md.write(rows.slice(0, 0), path, operation="delete_partition", options=drop)

    record_wise = hudi_md.open_table(path)
    listed = record_wise.metadata_table.files._all_partitions_columns()
    assert listed.to_pylist() == record_wise_partitions(record_wise.metadata_table)
    view = record_wise.state.file_system_view(None)
    want = slices_to_arrow(view.latest_file_slices(record_wise.partitions()))
    monkeypatch.setattr(planner, "COLUMNAR_MIN_PARTITIONS", 0)
    table = hudi_md.open_table(path)
    files = table.metadata_table.files.files_table()
    assert files is not None
    # the partition list taken from that scan equals the record-wise one (which still lists the
    # dropped partition: hudi-md never marks it deleted; its files are gone from the plan below)
    scanned = table.metadata_table.files._partition_array
    assert scanned.to_pylist() == record_wise_partitions(record_wise.metadata_table)
    plan = table.plan(None)
    assert plan._rows is not None
    assert plan.rows.equals(want)
    theirs = sorted(
        (s.partition_path, s.file_id, s.base_file_name)
        for s in hudi.HudiTableBuilder.from_base_uri(path).build().get_file_slices()
    )
    ours = sorted(
        (r["partition_path"], r["file_id"], Path(r["base_file"]).name) for r in plan.rows.to_pylist()
    )
    assert ours == theirs
    assert {r["partition_path"] for r in plan.rows.to_pylist()} == {f"p{i:02d}" for i in range(40)} - {"p07"}


@pytest.mark.parametrize("seed", range(4))
def test_strings_gathered_from_byte_positions(seed: int) -> None:
    """formats.arrow_buffers.strings_at: in buffer order (one Arrow take) or not (a gather)."""
    from hudi_md.formats.arrow_buffers import strings_at

    rng = random.Random(seed)
    text = "".join(rng.choice("abcé€😀/_=") for _ in range(400)).encode()
    buf = np.frombuffer(text + bytes(16), np.uint8)
    # character boundaries, so every span is UTF-8
    cuts = sorted({i for i in range(len(text) + 1) if i == len(text) or (text[i] & 0xC0) != 0x80})
    spans = []
    for _ in range(rng.randrange(1, 60)):
        a, b = sorted(rng.sample(cuts, 2)) if rng.random() < 0.9 else (cuts[3], cuts[3])
        spans.append((a, b - a))
    disjoint = [(cuts[i], cuts[i + rng.randrange(0, 3)] - cuts[i]) for i in range(0, len(cuts) - 3, 3)]
    for ordered in (disjoint, sorted(spans), spans):
        starts = np.array([s for s, _ in ordered], np.int64)
        lengths = np.array([n for _, n in ordered], np.int64)
        got = strings_at(buf, starts, lengths).to_pylist()
        assert got == [text[s : s + n].decode() for s, n in ordered]
    with pytest.raises(ValueError, match="UTF"):
        strings_at(buf, np.array([text.index("é".encode()) + 1], np.int64), np.array([1], np.int64))
