"""`hudi-md metastore register | sync | ls` with `--json` (issue 39): the JSON carries the facts the
text states and the server holds; register and sync report progress on stderr, silenced by
`--quiet` and `--json`. Against a `hudi-md metastore serve` process on SQLite."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner, Result
from server_helpers import ServerProcess, token_for

import hudi_md
from hudi_md.cli import main

OPTIONS = {
    "hoodie.table.name": "trips",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "city",
    "hoodie.datasource.write.precombine.field": "ts",
}


def _rows(ids: range, ts: int) -> pa.Table:
    return pa.table(
        {"id": [f"k{i}" for i in ids], "city": ["sf" if i % 2 else "la" for i in ids], "ts": [ts] * len(ids)}
    )


@pytest.fixture
def server(tmp_path: Path) -> Iterator[dict[str, str]]:
    db_url = f"sqlite:///{tmp_path / 'metastore.db'}"
    token = token_for(db_url)
    process = ServerProcess(db_url, tmp_path)
    try:
        process.wait_ready()
        yield {"uri": process.url, "token": token}
    finally:
        process.stop()


def cli(server: dict[str, str], *args: str) -> Result:
    full = ["metastore", *args, "--uri", server["uri"], "--token", server["token"]]
    result = CliRunner().invoke(main, full, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def test_register_sync_ls_json(server: dict[str, str], tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    for path in (a, b):
        hudi_md.write(_rows(range(6), 1), str(path), operation="insert", options=OPTIONS)

    text = cli(server, "register", str(a), "--db", "lake", "--table", "a")
    assert text.stdout == f"registered {hudi_md.open_table(str(a)).uri} as lake.a: 1 instants recorded\n"
    assert text.stderr.startswith("registering ") and text.stderr.rstrip().endswith(" s")
    registered = cli(server, "register", str(b), "--db", "lake", "--table", "b", "--json")
    assert registered.stderr == ""
    assert json.loads(registered.stdout) == {
        "db": "lake",
        "table": "b",
        "location": hudi_md.open_table(str(b)).uri,
        "instants_recorded": 1,
    }

    for path in (a, b):
        hudi_md.write(_rows(range(3, 9), 2), str(path), operation="upsert", options=OPTIONS)
    text = cli(server, "sync", "lake.a")
    assert text.stdout == "lake.a: 1 instants recorded, 2 transitions, 0 removed\n" and text.stderr
    synced = cli(server, "sync", "lake.b", "--json")
    assert synced.stderr == ""
    assert json.loads(synced.stdout) == {
        "db": "lake",
        "table": "b",
        "instants_recorded": 1,
        "transitions": 2,
        "removed": 0,
        "partition_types_corrected": 0,
    }
    assert cli(server, "sync", "lake.a", "--quiet").stderr == ""

    databases = json.loads(cli(server, "ls", "--json").stdout)
    assert [d["database"] for d in databases] == ["lake"]
    assert cli(server, "ls").stdout == "".join(
        "  ".join(f"{k}={v}" for k, v in d.items()) + "\n" for d in databases
    )
    tables = json.loads(cli(server, "ls", "lake", "--json").stdout)
    assert [(t["table"], t["pending"]) for t in tables] == [("lake.a", 0), ("lake.b", 0)]
    assert all(isinstance(t["pending"], int) for t in tables)
    text_rows = cli(server, "ls", "lake").stdout.splitlines()
    assert text_rows == ["  ".join(f"{k}={v}" for k, v in t.items()) for t in tables]
