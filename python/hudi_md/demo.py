"""The README's demo: read a real Apache Hudi table through hudi-md and show what planning cost.

Until the Spark writer and plugin land, the demo table is one written by Apache Hudi 1.1.1 on Spark
(a v9 MOR table with a metadata table, from the project's shared fixtures).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import zipfile
from pathlib import Path

import hudi_md

DEFAULT_ARCHIVE = (
    Path(__file__).resolve().parents[3]
    / "shared/fixtures/hudi-rs/sample_table/mor/avro/v9_txns_simple_meta.zip"
)


def _unpack(archive: Path, dest: Path) -> Path:
    with zipfile.ZipFile(archive) as zf:
        zf.extractall(dest, members=[m for m in zf.namelist() if not m.startswith("__MACOSX")])
    (table,) = [p for p in dest.iterdir() if p.is_dir()]
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("table", nargs="?", help="a Hudi table path/URL (default: the demo table)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        if args.table:
            path = args.table
        else:
            if not DEFAULT_ARCHIVE.exists():
                print(f"demo table archive not found at {DEFAULT_ARCHIVE}", file=sys.stderr)
                return 2
            path = str(_unpack(DEFAULT_ARCHIVE, Path(tmp)))
        table = hudi_md.open_table(path)
        print(f"table {table.table_name}: version {table.table_version}, {table.table_type}")
        mdt_partitions = ", ".join(table.config.metadata_partitions)
        print(f"metadata table used: {table.uses_metadata_table} ({mdt_partitions})")
        print(f"partitions: {table.partitions()}")
        before = table.storage_stats()["requests"]
        filters = (
            [("region", "=", "us"), ("amount", ">", 100)] if "region" in table.partition_fields else None
        )
        plan = table.plan(filters)
        print(f"plan for {filters}: {plan.counters}")
        print(f"storage requests to plan: {table.storage_stats()['requests'] - before}")
        rows = table.read(filters=filters)
        print(f"{rows.num_rows} rows:")
        shown = [c for c in rows.column_names if not c.startswith("_hoodie")][:6]
        print(rows.select(shown).slice(0, 10).to_string(preview_cols=6))
        print(f"storage: {table.storage_stats()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
