"""The metastore's relational schema: RFC-36's tables (its "Storage Schema" section), as SQLAlchemy
Core tables, plus the API tokens.

RFC-36 names the tables and their unique keys; the types are mapped to what both SQLite and
PostgreSQL hold well: ids are 64-bit (``INTEGER`` on SQLite, where only that type auto-increments),
instant times ``VARCHAR(17)`` (Hudi's ``yyyyMMddHHmmss[SSS]``), metadata ``BLOB``/``BYTEA``,
heartbeat times epoch milliseconds. Where hudi-md needs more than the RFC lists, the extra
columns are named here:

* ``tbl``: ``location_key`` (the location normalised, for look-ups by location), ``table_type``
  and ``record_key_fields`` (Hudi's metaserver dropped the type on the floor), ``partition_fields``
  (a copy of the partition rows of ``schema`` as JSON, so one row answers what every request
  needs), ``schema_json`` (the latest Avro schema) and ``version`` (completed instants so far:
  the RFC's table version, advanced by compare-and-set);
* ``partitions``: ``created_instant`` / ``updated_instant``;
* ``partition_key_val``: ``part_key_num`` (the value as a number, for numeric partition columns:
  pruning compares numbers as numbers), ``position`` (the level in the path) and ``part_key_int``
  (the value as an exact 64-bit integer for integer, date and timestamp partition columns: days
  or the timestamp's epoch count; added by migration ``0002_typed_partition_keys``);
* ``instant``: ``completion_ts`` (Hudi 1.x's completion time) and ``base_version`` (the table
  version when the instant was created: the conflict check's "completed since you started");
* ``tbl_version``: ``ts`` / ``completion_ts`` of the instant (kept when a rolled-back instant is
  removed) and ``message`` (why a sync failed);
* ``files``: ``file_id``, ``instant`` (the instant that wrote it), ``deleted_instant`` (the clean
  or rollback that removed it: time travel before it still sees the file) and
  ``replaced_instant`` (the replacecommit that replaced its file group).

The Alembic migrations (``migrations/versions/``: ``0001_initial.py``, then
``0002_typed_partition_keys.py``) create exactly these; ``tests/metastore/test_server_schema.py``
checks the two agree.
"""

from __future__ import annotations

import sqlalchemy as sa

# SQLite auto-increments only an `INTEGER PRIMARY KEY`; everywhere else ids are BIGINT.
Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
InstantTime = sa.String(17)
Timestamp = sa.DateTime(timezone=True)

metadata = sa.MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

# sqlite_autoincrement: ids are never reused after a delete (a dropped and re-created table is a
# new table to every client that cached its id).
db = sa.Table(
    "db",
    metadata,
    sa.Column("db_id", Id, primary_key=True, autoincrement=True),
    sa.Column("desc", sa.Text),
    sa.Column("location_uri", sa.Text),
    sa.Column("name", sa.String(128), nullable=False),
    sa.Column("owner_name", sa.String(128)),
    sa.Column("owner_type", sa.String(32)),
    sa.Column("create_time", Timestamp, nullable=False),
    sa.Column("update_time", Timestamp, nullable=False),
    sa.UniqueConstraint("name"),
    sqlite_autoincrement=True,
)

db_params = sa.Table(
    "db_params",
    metadata,
    sa.Column("db_id", Id, sa.ForeignKey("db.db_id"), nullable=False),
    sa.Column("param_key", sa.String(256), nullable=False),
    sa.Column("param_value", sa.Text, nullable=False),
    sa.PrimaryKeyConstraint("db_id", "param_key"),
)

tbl = sa.Table(
    "tbl",
    metadata,
    sa.Column("tbl_id", Id, primary_key=True, autoincrement=True),
    sa.Column("db_id", Id, sa.ForeignKey("db.db_id"), nullable=False),
    sa.Column("name", sa.String(128), nullable=False),
    sa.Column("create_time", Timestamp, nullable=False),
    sa.Column("update_time", Timestamp, nullable=False),
    sa.Column("owner", sa.String(128)),
    sa.Column("location", sa.Text, nullable=False),
    sa.Column("location_key", sa.Text, nullable=False),
    sa.Column("table_type", sa.String(32), nullable=False),
    sa.Column("record_key_fields", sa.Text, nullable=False),
    sa.Column("partition_fields", sa.Text, nullable=False),
    sa.Column("schema_json", sa.Text),
    sa.Column("version", sa.BigInteger, nullable=False),
    sa.UniqueConstraint("db_id", "name"),
    sa.Index(None, "location_key"),
    sqlite_autoincrement=True,
)

tbl_params = sa.Table(
    "tbl_params",
    metadata,
    sa.Column("tbl_id", Id, sa.ForeignKey("tbl.tbl_id"), nullable=False),
    sa.Column("param_key", sa.String(256), nullable=False),
    sa.Column("param_value", sa.Text, nullable=False),
    sa.PrimaryKeyConstraint("tbl_id", "param_key"),
)

# One row per column per schema version (version: the table version the schema took effect at, 0
# at registration). Data columns carry their Avro type, partition columns the Arrow type name the
# partition service compares by.
schema = sa.Table(
    "schema",
    metadata,
    sa.Column("col_id", Id, primary_key=True, autoincrement=True),
    sa.Column("tbl_id", Id, sa.ForeignKey("tbl.tbl_id"), nullable=False),
    sa.Column("version", sa.BigInteger, nullable=False),
    sa.Column("name", sa.String(256), nullable=False),
    sa.Column("type", sa.Text, nullable=False),
    sa.Column("is_partition_col", sa.Boolean, nullable=False),
    sa.Column("comment", sa.Text),
    sa.Column("position", sa.Integer, nullable=False),
    sa.UniqueConstraint("tbl_id", "version", "name"),
)

partitions = sa.Table(
    "partitions",
    metadata,
    sa.Column("part_id", Id, primary_key=True, autoincrement=True),
    sa.Column("tbl_id", Id, sa.ForeignKey("tbl.tbl_id"), nullable=False),
    sa.Column("part_name", sa.Text, nullable=False),
    sa.Column("create_time", Timestamp, nullable=False),
    sa.Column("update_time", Timestamp, nullable=False),
    sa.Column("created_instant", InstantTime, nullable=False),
    sa.Column("updated_instant", InstantTime, nullable=False),
    sa.Column("is_deleted", sa.Boolean, nullable=False),
    sa.UniqueConstraint("tbl_id", "part_name"),
)

partition_params = sa.Table(
    "partition_params",
    metadata,
    sa.Column("part_id", Id, sa.ForeignKey("partitions.part_id"), nullable=False),
    sa.Column("tbl_id", Id, sa.ForeignKey("tbl.tbl_id"), nullable=False),
    sa.Column("param_key", sa.String(256), nullable=False),
    sa.Column("param_value", sa.Text, nullable=False),
    sa.PrimaryKeyConstraint("part_id", "param_key"),
)

partition_key_val = sa.Table(
    "partition_key_val",
    metadata,
    sa.Column("part_id", Id, sa.ForeignKey("partitions.part_id"), nullable=False),
    sa.Column("tbl_id", Id, sa.ForeignKey("tbl.tbl_id"), nullable=False),
    sa.Column("part_key_name", sa.String(256), nullable=False),
    sa.Column("part_key_val", sa.Text),
    sa.Column("part_key_num", sa.Double),
    sa.Column("position", sa.Integer, nullable=False),
    sa.Column("part_key_int", sa.BigInteger),
    sa.PrimaryKeyConstraint("part_id", "part_key_name"),
    sa.Index(None, "tbl_id", "part_key_name", "part_key_val"),
    sa.Index(None, "tbl_id", "part_key_name", "part_key_num"),
    sa.Index(None, "tbl_id", "part_key_name", "part_key_int"),
)

tbl_timestamp = sa.Table(
    "tbl_timestamp",
    metadata,
    sa.Column("tbl_id", Id, sa.ForeignKey("tbl.tbl_id"), primary_key=True, autoincrement=False),
    sa.Column("ts", InstantTime, nullable=False),
)

instant = sa.Table(
    "instant",
    metadata,
    sa.Column("instant_id", Id, primary_key=True, autoincrement=True),
    sa.Column("tbl_id", Id, sa.ForeignKey("tbl.tbl_id"), nullable=False),
    sa.Column("ts", InstantTime, nullable=False),
    sa.Column("action", sa.SmallInteger, nullable=False),
    sa.Column("state", sa.SmallInteger, nullable=False),
    sa.Column("duration", sa.Integer),  # heartbeat allowance, milliseconds
    sa.Column("start_ts", sa.BigInteger),  # last heartbeat, epoch milliseconds
    sa.Column("completion_ts", InstantTime),
    sa.Column("base_version", sa.BigInteger, nullable=False),
    sa.UniqueConstraint("tbl_id", "ts"),
    sa.Index(None, "tbl_id", "state"),
    sqlite_autoincrement=True,
)

instant_meta = sa.Table(
    "instant_meta",
    metadata,
    sa.Column("commit_id", Id, primary_key=True, autoincrement=True),
    sa.Column("tbl_id", Id, sa.ForeignKey("tbl.tbl_id"), nullable=False),
    sa.Column("ts", InstantTime, nullable=False),
    sa.Column("action", sa.SmallInteger, nullable=False),
    sa.Column("state", sa.SmallInteger, nullable=False),
    sa.Column("data", sa.LargeBinary, nullable=False),
    sa.Column("create_time", Timestamp, nullable=False),
    sa.UniqueConstraint("tbl_id", "ts", "action", "state"),
)

tbl_version = sa.Table(
    "tbl_version",
    metadata,
    sa.Column("tbl_id", Id, sa.ForeignKey("tbl.tbl_id"), nullable=False),
    sa.Column("version", sa.BigInteger, nullable=False),
    sa.Column("instant_id", Id, sa.ForeignKey("instant.instant_id")),
    sa.Column("ts", InstantTime, nullable=False),
    sa.Column("completion_ts", InstantTime, nullable=False),
    sa.Column("snapshot_status", sa.SmallInteger, nullable=False),
    sa.Column("message", sa.Text),
    sa.Column("create_time", Timestamp, nullable=False),
    sa.Column("update_time", Timestamp, nullable=False),
    sa.PrimaryKeyConstraint("tbl_id", "version"),
    sa.Index(None, "tbl_id", "snapshot_status"),
)

files = sa.Table(
    "files",
    metadata,
    sa.Column("id", Id, primary_key=True, autoincrement=True),
    sa.Column("tbl_id", Id, sa.ForeignKey("tbl.tbl_id"), nullable=False),
    sa.Column("part_id", Id, sa.ForeignKey("partitions.part_id"), nullable=False),
    sa.Column("version", sa.BigInteger, nullable=False),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("size", sa.BigInteger, nullable=False),
    sa.Column("file_id", sa.String(128), nullable=False),
    sa.Column("instant", InstantTime, nullable=False),
    sa.Column("is_deleted", sa.Boolean, nullable=False),
    sa.Column("deleted_instant", InstantTime),
    sa.Column("replaced_instant", InstantTime),
    sa.Column("create_time", Timestamp, nullable=False),
    sa.Column("update_time", Timestamp, nullable=False),
    sa.UniqueConstraint("part_id", "name"),
    sa.Index(None, "tbl_id", "instant"),
    sa.Index(None, "part_id", "file_id"),
)

# Bearer tokens: `hmd_<key_id>_<secret>`; only a salted hash of the secret is stored.
api_token = sa.Table(
    "api_token",
    metadata,
    sa.Column("token_id", Id, primary_key=True, autoincrement=True),
    sa.Column("key_id", sa.String(32), nullable=False),
    sa.Column("name", sa.String(128), nullable=False),
    sa.Column("salt", sa.String(64), nullable=False),
    sa.Column("hash", sa.String(128), nullable=False),
    sa.Column("create_time", Timestamp, nullable=False),
    sa.Column("revoked", sa.Boolean, nullable=False),
    sa.UniqueConstraint("key_id"),
)

# RFC-36's codes (the metaserver IDL's TAction / TState), extended by the actions Hudi 1.x added.
ACTION_CODES = {
    "commit": 1,
    "deltacommit": 2,
    "clean": 3,
    "rollback": 4,
    "savepoint": 5,
    "replacecommit": 6,
    "compaction": 7,
    "restore": 8,
    "clustering": 9,
    "logcompaction": 10,
    "indexing": 11,
    "schemacommit": 12,
}
ACTION_NAMES = {v: k for k, v in ACTION_CODES.items()}
STATE_CODES = {"requested": 1, "inflight": 2, "completed": 3}
STATE_NAMES = {v: k for k, v in STATE_CODES.items()}

# tbl_version.snapshot_status
SYNC_PENDING = 0
SYNC_DONE = 1
SYNC_FAILED = 2
