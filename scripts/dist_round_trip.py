"""The round trip of an installed hudi-md, run by the python of a fresh venv that holds the built
wheel, from a directory outside the repository (scripts/build-dist; tests/test_dist.py, once per
extra). It writes a partitioned MERGE_ON_READ table with its metadata table from pyarrow tables (an
insert, then an upsert of some of the rows and some new ones), reads it back with
``hudi_md.open_table(...).read()`` and prints one JSON line: the rows read and the rows expected,
where ``hudi_md`` was imported from, ``sys.path``, and whether pandas is installed and was loaded.
Exits 1, after the JSON line, when the rows differ.

    python dist_round_trip.py PATH [--options JSON] [--open-as NAME]

``--options``: storage or metastore options for the writes and the read (e.g. s3fs's endpoint, or
``hoodie.metaserver.*``); ``--open-as``: what the read opens instead of PATH (``db.table`` through
the metastore).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import sys

import pyarrow as pa

import hudi_md

COLUMNS = ["id", "city", "ts", "fare", "paid", "day"]
HOODIE = {
    "hoodie.table.name": "dist_round_trip",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "city",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.table.type": "MERGE_ON_READ",
    "hoodie.metadata.enable": "true",
}


def rows(ids: range, ts: int) -> list[tuple]:
    day = datetime.date(2024, 1, 1)
    return [
        (
            f"id-{i:03d}",
            ("sf", "nyc", "chennai")[i % 3],
            ts,
            i * 10.5 + ts,
            i % 2 == 0,
            day + datetime.timedelta(i),
        )
        for i in ids
    ]


def arrow(batch: list[tuple]) -> pa.Table:
    schema = pa.schema(
        [
            ("id", pa.string()),
            ("city", pa.string()),
            ("ts", pa.int64()),
            ("fare", pa.float64()),
            ("paid", pa.bool_()),
            ("day", pa.date32()),
        ]
    )
    return pa.Table.from_pylist([dict(zip(COLUMNS, r, strict=True)) for r in batch], schema=schema)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path")
    parser.add_argument("--options", default="{}")
    parser.add_argument("--open-as", default=None)
    args = parser.parse_args()
    options = json.loads(args.options)

    first, second = rows(range(0, 20), 1), rows(range(15, 25), 2)
    hudi_md.write(arrow(first), args.path, operation="insert", options={**HOODIE, **options})
    hudi_md.write(arrow(second), args.path, operation="upsert", options={**HOODIE, **options})
    expected = sorted({r[0]: r for r in first + second}.values())

    table = hudi_md.open_table(args.open_as or args.path, options)
    read = table.read(columns=COLUMNS)
    got = sorted(tuple(r[c] for c in COLUMNS) for r in read.to_pylist())
    result = {
        "hudi_md": hudi_md.__file__,
        "version": hudi_md.__version__,
        "sys_path": sys.path,
        "rows": [[*r[:5], r[5].isoformat()] for r in got],
        "expected": [[*r[:5], r[5].isoformat()] for r in expected],
        "partitions": sorted(table.partitions()),
        "pandas_installed": importlib.util.find_spec("pandas") is not None,
        "pandas_loaded": "pandas" in sys.modules,
    }
    print(json.dumps(result))
    if got != expected:
        print(
            f"dist_round_trip: the {len(got)} rows read differ from the {len(expected)} written",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
