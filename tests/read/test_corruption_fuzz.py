"""Corrupt input gives a typed error naming the file, or the right answer; never a wrong answer or
an untyped exception (issue 11).

Seeded byte mutations (a flipped bit, a truncation, 256 zeroed bytes, appended garbage) of one file
at a time of a MOR table with an MDT (files, column_stats, partition_stats, record_index) that has
seen inserts, upserts into log files, deletes and a replacecommit: instants, ``hoodie.properties``,
MDT HFiles and logs, data logs and Parquet files. After each mutation the table is read with the MDT
and by listing; the outcome is *correct* (the unmutated rows), *typed* (a ``HudiMdError``) or a
failure. ``HUDI_MD_FUZZ_TRIALS`` sets the number of mutations (CI: 150; ``scripts/fuzz`` runs
thousands).

Not detectable by any reader, and so not generated: a changed value inside the record bytes of an
uncompressed Avro log block (Hudi's log format carries no checksum) — such blocks are excluded from
the bit-flip and zero-fill targets; truncations and appended bytes of them are still tried.
"""

from __future__ import annotations

import collections
import os
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import hudi_md
from hudi_md.errors import CommitMetadataError, HudiMdError, ParquetFileError

TRIALS = int(os.environ.get("HUDI_MD_FUZZ_TRIALS", "150"))
SEED = int(os.environ.get("HUDI_MD_FUZZ_SEED", "11"))

OPTIONS = {
    "hoodie.table.name": "fuzz",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.partitionpath.field": "p",
    "hoodie.datasource.write.table.type": "MERGE_ON_READ",
    "hoodie.metadata.record.index.enable": "true",
}


def _rows(keys: range, version: int) -> pa.Table:
    ks = list(keys)
    return pa.table(
        {
            "id": [f"k{i:03d}" for i in ks],
            "ts": [version * 100 + i for i in ks],
            "fare": [i * 1.5 + version for i in ks],
            "p": [("a", "b", "c")[i % 3] for i in ks],
        }
    )


def make_table(path: str) -> None:
    hudi_md.write(_rows(range(60), 1), path, operation="insert", options=OPTIONS)
    hudi_md.write(_rows(range(0, 60, 2), 2), path, operation="upsert", options=OPTIONS)
    hudi_md.write(_rows(range(0, 60, 3), 3), path, operation="upsert", options=OPTIONS)
    hudi_md.write(_rows(range(0, 20, 5), 4), path, operation="delete", options=OPTIONS)
    again = _rows(range(100, 110), 5).set_column(3, "p", pa.array(["c"] * 10))
    hudi_md.write(again, path, operation="insert_overwrite", options=OPTIONS)


def read_all(path: str) -> list[list[tuple]]:
    out = []
    for metadata in ("true", "false"):
        t = hudi_md.open_table(path, {"hoodie.metadata.enable": metadata})
        rows = t.read(columns=["id", "ts", "fare", "p"])
        out.append(sorted(zip(*(rows.column(c).to_pylist() for c in rows.column_names), strict=True)))
    return out


def _value_bytes_undetectable(path: str) -> bool:
    """A data table's log file: its Avro record bytes carry no checksum (see module docstring)."""
    return ".log." in os.path.basename(path) and "/.hoodie/" not in path


def mutate(data: bytes, rnd: random.Random, *, values_unprotected: bool) -> tuple[str, bytes]:
    kinds = ["truncate", "append"] if values_unprotected else ["flip", "truncate", "zero", "append"]
    kind = rnd.choice(kinds)
    b = bytearray(data)
    if kind == "flip":
        i = rnd.randrange(len(b))
        b[i] ^= 1 << rnd.randrange(8)
    elif kind == "truncate":
        b = b[: rnd.randrange(len(b))]
    elif kind == "zero":
        i = rnd.randrange(len(b))
        n = min(256, len(b) - i)
        b[i : i + n] = bytes(n)
    else:
        b += bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 64)))
    return kind, bytes(b)


def run_trials(table: str, trials: int, seed: int) -> dict[str, Any]:
    expected = read_all(table)
    files = sorted(
        os.path.join(d, f)
        for d, _, names in os.walk(table)
        for f in names
        if ".locks" not in d and os.path.getsize(os.path.join(d, f)) > 0
    )
    rnd = random.Random(seed)
    outcomes: collections.Counter[str] = collections.Counter()
    failures: list[str] = []
    for _ in range(trials):
        f = rnd.choice(files)
        with open(f, "rb") as fh:
            original = fh.read()
        kind, data = mutate(original, rnd, values_unprotected=_value_bytes_undetectable(f))
        if data == original:
            continue
        rel = os.path.relpath(f, table)
        with open(f, "wb") as fh:
            fh.write(data)
        try:
            got = read_all(table)
            outcome = "correct" if got == expected else "wrong"
            detail = "rows differ"
        except HudiMdError as e:
            outcome, detail = "typed", f"{type(e).__name__}: {e}"
            if rel.split("/")[-1] not in str(e) and os.path.basename(os.path.dirname(f)) not in str(e):
                outcome, detail = "unnamed", f"{type(e).__name__} does not name the file: {e}"
        except Exception as e:
            outcome, detail = "untyped", f"{type(e).__name__}: {str(e)[:200]}"
        finally:
            with open(f, "wb") as fh:
                fh.write(original)
        outcomes[outcome] += 1
        if outcome not in ("correct", "typed"):
            failures.append(f"{outcome}: {kind} of {rel}: {detail[:300]}")
    return {"outcomes": dict(outcomes), "failures": failures}


def test_mutations_give_the_right_rows_or_a_typed_error(tmp_path: Path) -> None:
    table = str(tmp_path / "t")
    make_table(table)
    result = run_trials(table, TRIALS, SEED)
    print(f"\nfuzz: {TRIALS} mutations, seed {SEED}: {result['outcomes']}")
    assert not result["failures"], "\n".join(result["failures"][:30])
    assert read_all(table)  # every file restored


def _instant(table: str, action: str) -> str:
    timeline = os.path.join(table, ".hoodie", "timeline")
    names = sorted(n for n in os.listdir(timeline) if n.endswith(f".{action}") and "_" in n)
    return os.path.join(timeline, names[-1])


def test_zeroed_bytes_in_a_replacecommit_are_an_error_not_fewer_replaced_groups(tmp_path: Path) -> None:
    """256 zeroed bytes inside a completed replacecommit still decode as Avro records (with no
    replaced file groups): the replaced groups came back as live slices. Now an error."""
    table = str(tmp_path / "t")
    make_table(table)
    path = _instant(table, "replacecommit")
    with open(path, "rb") as fh:
        data = bytearray(fh.read())
    sync = bytes(data[-16:])
    start = data.index(sync) + 16 + 8  # past the header and the block's record count and size
    n = min(256, len(data) - 16 - start)
    data[start : start + n] = bytes(n)
    with open(path, "wb") as fh:
        fh.write(bytes(data))
    for metadata in ("true", "false"):
        with pytest.raises(CommitMetadataError, match=os.path.basename(path)):
            hudi_md.open_table(table, {"hoodie.metadata.enable": metadata}).file_slices()


def test_corrupt_parquet_is_an_error_naming_the_file(tmp_path: Path) -> None:
    table = str(tmp_path / "t")
    make_table(table)
    t = hudi_md.open_table(table).state
    base = next(s.base_file for s in t.file_system_view().latest_file_slices(t.partitions()) if s.base_file)
    full = os.path.join(table, base.path)
    with open(full, "rb") as fh:
        data = fh.read()
    with open(full, "wb") as fh:
        fh.write(data[: len(data) // 2])
    with pytest.raises(ParquetFileError, match=os.path.basename(full)):
        hudi_md.open_table(table, {"hoodie.metadata.enable": "false"}).read()
