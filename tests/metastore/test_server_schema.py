"""The metastore's database schema: Alembic's initial migration creates exactly the tables of
``metastore_server/schema.py`` (RFC-36's tables with their unique keys, and the API tokens), the
server migrates an empty database at start, and running the migrations again (or from two
processes at once) changes nothing."""

from __future__ import annotations

import subprocess

import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from server_helpers import HUDI_MD, engine_of

from hudi_md.metastore_server import schema as S
from hudi_md.metastore_server.db import migrate

RFC_TABLES = {
    "db",
    "db_params",
    "tbl",
    "tbl_params",
    "schema",
    "partitions",
    "partition_params",
    "partition_key_val",
    "tbl_timestamp",
    "instant",
    "instant_meta",
    "tbl_version",
    "files",
}
# RFC-36's unique keys (the "unique key" line of each table), as column sets.
RFC_UNIQUE = {
    "db": {("name",)},
    "db_params": {("db_id", "param_key")},
    "tbl": {("db_id", "name")},
    "tbl_params": {("tbl_id", "param_key")},
    "partitions": {("tbl_id", "part_name")},
    "partition_params": {("part_id", "param_key")},
    "partition_key_val": {("part_id", "part_key_name")},
    "tbl_timestamp": {("tbl_id",)},
    "instant": {("tbl_id", "ts")},
    "instant_meta": {("tbl_id", "ts", "action", "state")},
    "files": {("part_id", "name")},
}


def test_migration_creates_the_model(db_url: str) -> None:
    engine = engine_of(db_url)
    # two servers starting at once: both migrate, one waits for the other
    procs = [
        subprocess.Popen(
            [str(HUDI_MD), "metastore", "token", "create", "--db", db_url], stdout=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    tokens = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert [p.returncode for p in procs] == [0, 0] and all(t.startswith("hmd_") for t in tokens)
    migrate(engine)
    with engine.connect() as conn:
        context = MigrationContext.configure(conn)
        assert context.get_current_revision() == "0002_typed_partition_keys"
        assert compare_metadata(context, S.metadata) == []
        inspector = sa.inspect(conn)
        tables = set(inspector.get_table_names())
        assert RFC_TABLES | {"api_token", "alembic_version"} == tables
        for table, keys in RFC_UNIQUE.items():
            found = {tuple(sorted(u["column_names"])) for u in inspector.get_unique_constraints(table)}
            pk = inspector.get_pk_constraint(table)["constrained_columns"]
            found.add(tuple(sorted(pk)))
            assert {tuple(sorted(k)) for k in keys} <= found, (table, found)
    engine.dispose()
