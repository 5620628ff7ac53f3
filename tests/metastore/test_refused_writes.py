"""A write the metastore refuses leaves storage byte for byte as it was (issue 37): with
``hoodie.metaserver.enabled`` the writer asks the server (and checks the names it would register)
before its first byte (the table lock, ``hoodie.properties``, a requested instant): a missing token
(a reader's access: reads are open, writes are not), a wrong or revoked token, a database or table
name the protocol refuses, a name registered at another location; for a new table, a table written
without the metastore and a registered one; writes, ``delete_partition`` and ``CREATE TABLE``. On
SQLite and PostgreSQL, through a real ``hudi-md metastore serve``."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from server_helpers import ServerProcess, engine_of, token_for

import hudi_md
from hudi_md.errors import HudiMdError, InvalidOptionError, MetastoreError
from hudi_md.metastore.client import MetastoreClient
from hudi_md.metastore_server import schema as S
from hudi_md.write.writer import HudiWriter

OPTS = {
    "hoodie.table.name": "trips",
    "hoodie.database.name": "lake",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "city",
    "hoodie.datasource.write.precombine.field": "ts",
}


def _rows(n: int, ts: int = 1) -> pa.Table:
    return pa.table(
        {
            "id": [f"k{i}" for i in range(n)],
            "city": [["sf", "nyc"][i % 2] for i in range(n)],
            "ts": [ts] * n,
            "v": list(range(n)),
        }
    )


def storage_state(root: Path) -> dict[str, Any]:
    """Every file and directory under ``root``: path -> (size, sha256) or "dir"; {} when absent."""
    out: dict[str, Any] = {}
    if not root.exists():
        return out
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            out[os.path.relpath(os.path.join(dirpath, d), root)] = "dir"
        for f in filenames:
            data = Path(dirpath, f).read_bytes()
            out[os.path.relpath(os.path.join(dirpath, f), root)] = (
                len(data),
                hashlib.sha256(data).hexdigest(),
            )
    return out


@pytest.fixture
def server(db_url: str, servers: list[ServerProcess], tmp_path: Path) -> dict[str, str]:
    token = token_for(db_url)
    s = ServerProcess(db_url, tmp_path, "--sync-interval", "0.2")
    servers.append(s)
    s.wait_ready()
    return {"url": s.url, "token": token, "db_url": db_url}


def _ms(server: dict[str, str], token: str | None) -> dict[str, str]:
    out = {"hoodie.metaserver.enabled": "true", "hoodie.metaserver.uris": server["url"]}
    if token is not None:
        out["hoodie.metaserver.token"] = token
    return out


def _revoked_token(server: dict[str, str]) -> str:
    from hudi_md.metastore_server.auth import create_token

    engine = engine_of(server["db_url"])
    token = create_token(engine, "revoked")
    key_id = token.split("_")[1]
    with engine.begin() as conn:
        conn.execute(S.api_token.update().where(S.api_token.c.key_id == key_id).values(revoked=True))
    engine.dispose()
    return token


BAD_TOKENS: dict[str, Callable[[dict[str, str]], str | None]] = {
    "missing token": lambda s: None,
    "wrong token": lambda s: s["token"][:-4] + ("AAAA" if not s["token"].endswith("AAAA") else "BBBB"),
    "not a token": lambda s: "nonsense",
    "revoked token": _revoked_token,
}

WRITES: dict[str, Callable[[str, dict[str, str]], Any]] = {
    "upsert": lambda path, opts: hudi_md.write(_rows(6, 2), path, options=opts, operation="upsert"),
    "delete_partition": lambda path, opts: HudiWriter(path, opts).delete_partitions(["nyc"]),
    "create table": lambda path, opts: HudiWriter(path, opts).create(_rows(1).schema),
}


def _refused(path: Path, write: Callable[[], Any], error: type[HudiMdError], code: str | None) -> None:
    before = storage_state(path)
    with pytest.raises(HudiMdError) as e:
        write()
    assert isinstance(e.value, error), repr(e.value)
    if code is not None:
        assert isinstance(e.value, MetastoreError) and e.value.code == code, repr(e.value)
    assert storage_state(path) == before


@pytest.mark.parametrize("bad", list(BAD_TOKENS))
def test_a_refused_token_writes_nothing(server: dict[str, str], tmp_path: Path, bad: str) -> None:
    token = BAD_TOKENS[bad](server)
    refused = {**OPTS, **_ms(server, token)}
    new = tmp_path / "new"
    for name, write in WRITES.items():
        if name == "delete_partition":
            continue  # needs a table
        _refused(new, lambda write=write: write(str(new), refused), MetastoreError, "unauthorized")
        assert not new.exists(), name
    # a table written without the metastore (not registered), then one written through it
    plain = tmp_path / "plain"
    hudi_md.write(_rows(4), str(plain), options=OPTS, operation="insert")
    registered = tmp_path / "registered"
    good = {**OPTS, "hoodie.table.name": "registered", **_ms(server, server["token"])}
    hudi_md.write(_rows(4), str(registered), options=good, operation="insert")
    for path, opts in ((plain, refused), (registered, {**refused, "hoodie.table.name": "registered"})):
        for name, write in WRITES.items():
            if name == "create table":  # the table exists: nothing to write, nothing asked
                before = storage_state(path)
                write(str(path), opts)
                assert storage_state(path) == before
                continue
            _refused(path, lambda w=write, p=path, o=opts: w(str(p), o), MetastoreError, "unauthorized")
    # nothing reached the server either
    client = MetastoreClient(server["url"], server["token"])
    assert [t.name for t in client.tables("lake")] == ["registered"]
    assert len(client.instants("lake", "registered")) == 1
    # the good token still writes: the checks change nothing a write they pass does
    HudiWriter(str(registered), good).delete_partitions(["nyc"])
    assert [i.state for i in client.instants("lake", "registered")] == ["completed", "completed"]
    assert [d.name for d in client.databases()] == ["lake"]


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("hoodie.database.name", "../evil"),
        ("hoodie.database.name", ".."),
        ("hoodie.database.name", "a/b"),
        ("hoodie.database.name", "x" * 129),
        ("hoodie.database.name", "lake\n"),
        ("hoodie.table.name", "trips-2024"),
        ("hoodie.table.name", "../../etc"),
    ],
)
def test_a_name_the_metastore_refuses_writes_nothing(
    server: dict[str, str], tmp_path: Path, option: str, value: str
) -> None:
    opts = {**OPTS, option: value, **_ms(server, server["token"])}
    new = tmp_path / "new"
    for name, write in WRITES.items():
        if name == "delete_partition":
            continue  # needs a table
        _refused(new, lambda write=write: write(str(new), opts), InvalidOptionError, None)
        assert not new.exists()
    assert not (tmp_path / "evil").exists()
    plain = tmp_path / "plain"
    hudi_md.write(_rows(4), str(plain), options={**OPTS, option: value}, operation="insert")  # no metastore
    for name, write in WRITES.items():
        if name != "create table":  # the table exists: nothing to write, nothing asked
            _refused(plain, lambda write=write: write(str(plain), opts), InvalidOptionError, None)
    assert MetastoreClient(server["url"]).databases() == []


def test_a_name_registered_elsewhere_writes_nothing(server: dict[str, str], tmp_path: Path) -> None:
    ms = _ms(server, server["token"])
    hudi_md.write(_rows(4), str(tmp_path / "first"), options={**OPTS, **ms}, operation="insert")
    other = tmp_path / "second"
    for write in WRITES.values():
        if write is WRITES["delete_partition"]:
            continue
        _refused(other, lambda write=write: write(str(other), {**OPTS, **ms}), MetastoreError, "exists")
        assert not other.exists()
