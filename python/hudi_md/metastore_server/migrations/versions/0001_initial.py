"""The initial schema: RFC-36's tables and the API tokens (``hudi_md.metastore_server.schema``
describes each; a migration keeps its own copy of the definitions, so later model changes never
rewrite history).

Revision ID: 0001_initial
Revises:
Create Date: 2025-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001_initial"
down_revision = None
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
InstantTime = sa.String(17)
Timestamp = sa.DateTime(timezone=True)


def _fk(table: str, column: str, target: str, target_column: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        [column], [f"{target}.{target_column}"], name=f"fk_{table}_{column}_{target}"
    )


def upgrade() -> None:
    op.create_table(
        "db",
        sa.Column("db_id", Id, autoincrement=True, nullable=False),
        sa.Column("desc", sa.Text),
        sa.Column("location_uri", sa.Text),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("owner_name", sa.String(128)),
        sa.Column("owner_type", sa.String(32)),
        sa.Column("create_time", Timestamp, nullable=False),
        sa.Column("update_time", Timestamp, nullable=False),
        sa.PrimaryKeyConstraint("db_id", name="pk_db"),
        sa.UniqueConstraint("name", name="uq_db_name"),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "db_params",
        sa.Column("db_id", Id, nullable=False),
        sa.Column("param_key", sa.String(256), nullable=False),
        sa.Column("param_value", sa.Text, nullable=False),
        sa.PrimaryKeyConstraint("db_id", "param_key", name="pk_db_params"),
        _fk("db_params", "db_id", "db", "db_id"),
    )
    op.create_table(
        "tbl",
        sa.Column("tbl_id", Id, autoincrement=True, nullable=False),
        sa.Column("db_id", Id, nullable=False),
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
        sa.PrimaryKeyConstraint("tbl_id", name="pk_tbl"),
        sa.UniqueConstraint("db_id", "name", name="uq_tbl_db_id_name"),
        _fk("tbl", "db_id", "db", "db_id"),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_tbl_location_key", "tbl", ["location_key"])
    op.create_table(
        "tbl_params",
        sa.Column("tbl_id", Id, nullable=False),
        sa.Column("param_key", sa.String(256), nullable=False),
        sa.Column("param_value", sa.Text, nullable=False),
        sa.PrimaryKeyConstraint("tbl_id", "param_key", name="pk_tbl_params"),
        _fk("tbl_params", "tbl_id", "tbl", "tbl_id"),
    )
    op.create_table(
        "schema",
        sa.Column("col_id", Id, autoincrement=True, nullable=False),
        sa.Column("tbl_id", Id, nullable=False),
        sa.Column("version", sa.BigInteger, nullable=False),
        sa.Column("name", sa.String(256), nullable=False),
        sa.Column("type", sa.Text, nullable=False),
        sa.Column("is_partition_col", sa.Boolean, nullable=False),
        sa.Column("comment", sa.Text),
        sa.Column("position", sa.Integer, nullable=False),
        sa.PrimaryKeyConstraint("col_id", name="pk_schema"),
        sa.UniqueConstraint("tbl_id", "version", "name", name="uq_schema_tbl_id_version_name"),
        _fk("schema", "tbl_id", "tbl", "tbl_id"),
    )
    op.create_table(
        "partitions",
        sa.Column("part_id", Id, autoincrement=True, nullable=False),
        sa.Column("tbl_id", Id, nullable=False),
        sa.Column("part_name", sa.Text, nullable=False),
        sa.Column("create_time", Timestamp, nullable=False),
        sa.Column("update_time", Timestamp, nullable=False),
        sa.Column("created_instant", InstantTime, nullable=False),
        sa.Column("updated_instant", InstantTime, nullable=False),
        sa.Column("is_deleted", sa.Boolean, nullable=False),
        sa.PrimaryKeyConstraint("part_id", name="pk_partitions"),
        sa.UniqueConstraint("tbl_id", "part_name", name="uq_partitions_tbl_id_part_name"),
        _fk("partitions", "tbl_id", "tbl", "tbl_id"),
    )
    op.create_table(
        "partition_params",
        sa.Column("part_id", Id, nullable=False),
        sa.Column("tbl_id", Id, nullable=False),
        sa.Column("param_key", sa.String(256), nullable=False),
        sa.Column("param_value", sa.Text, nullable=False),
        sa.PrimaryKeyConstraint("part_id", "param_key", name="pk_partition_params"),
        _fk("partition_params", "part_id", "partitions", "part_id"),
        _fk("partition_params", "tbl_id", "tbl", "tbl_id"),
    )
    op.create_table(
        "partition_key_val",
        sa.Column("part_id", Id, nullable=False),
        sa.Column("tbl_id", Id, nullable=False),
        sa.Column("part_key_name", sa.String(256), nullable=False),
        sa.Column("part_key_val", sa.Text),
        sa.Column("part_key_num", sa.Double),
        sa.Column("position", sa.Integer, nullable=False),
        sa.PrimaryKeyConstraint("part_id", "part_key_name", name="pk_partition_key_val"),
        _fk("partition_key_val", "part_id", "partitions", "part_id"),
        _fk("partition_key_val", "tbl_id", "tbl", "tbl_id"),
    )
    op.create_index(
        "ix_partition_key_val_tbl_id_part_key_name_part_key_val",
        "partition_key_val",
        ["tbl_id", "part_key_name", "part_key_val"],
    )
    op.create_index(
        "ix_partition_key_val_tbl_id_part_key_name_part_key_num",
        "partition_key_val",
        ["tbl_id", "part_key_name", "part_key_num"],
    )
    op.create_table(
        "tbl_timestamp",
        sa.Column("tbl_id", Id, autoincrement=False, nullable=False),
        sa.Column("ts", InstantTime, nullable=False),
        sa.PrimaryKeyConstraint("tbl_id", name="pk_tbl_timestamp"),
        _fk("tbl_timestamp", "tbl_id", "tbl", "tbl_id"),
    )
    op.create_table(
        "instant",
        sa.Column("instant_id", Id, autoincrement=True, nullable=False),
        sa.Column("tbl_id", Id, nullable=False),
        sa.Column("ts", InstantTime, nullable=False),
        sa.Column("action", sa.SmallInteger, nullable=False),
        sa.Column("state", sa.SmallInteger, nullable=False),
        sa.Column("duration", sa.Integer),
        sa.Column("start_ts", sa.BigInteger),
        sa.Column("completion_ts", InstantTime),
        sa.Column("base_version", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("instant_id", name="pk_instant"),
        sa.UniqueConstraint("tbl_id", "ts", name="uq_instant_tbl_id_ts"),
        _fk("instant", "tbl_id", "tbl", "tbl_id"),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_instant_tbl_id_state", "instant", ["tbl_id", "state"])
    op.create_table(
        "instant_meta",
        sa.Column("commit_id", Id, autoincrement=True, nullable=False),
        sa.Column("tbl_id", Id, nullable=False),
        sa.Column("ts", InstantTime, nullable=False),
        sa.Column("action", sa.SmallInteger, nullable=False),
        sa.Column("state", sa.SmallInteger, nullable=False),
        sa.Column("data", sa.LargeBinary, nullable=False),
        sa.Column("create_time", Timestamp, nullable=False),
        sa.PrimaryKeyConstraint("commit_id", name="pk_instant_meta"),
        sa.UniqueConstraint("tbl_id", "ts", "action", "state", name="uq_instant_meta_tbl_id_ts_action_state"),
        _fk("instant_meta", "tbl_id", "tbl", "tbl_id"),
    )
    op.create_table(
        "tbl_version",
        sa.Column("tbl_id", Id, nullable=False),
        sa.Column("version", sa.BigInteger, nullable=False),
        sa.Column("instant_id", Id),
        sa.Column("ts", InstantTime, nullable=False),
        sa.Column("completion_ts", InstantTime, nullable=False),
        sa.Column("snapshot_status", sa.SmallInteger, nullable=False),
        sa.Column("message", sa.Text),
        sa.Column("create_time", Timestamp, nullable=False),
        sa.Column("update_time", Timestamp, nullable=False),
        sa.PrimaryKeyConstraint("tbl_id", "version", name="pk_tbl_version"),
        _fk("tbl_version", "tbl_id", "tbl", "tbl_id"),
        _fk("tbl_version", "instant_id", "instant", "instant_id"),
    )
    op.create_index("ix_tbl_version_tbl_id_snapshot_status", "tbl_version", ["tbl_id", "snapshot_status"])
    op.create_table(
        "files",
        sa.Column("id", Id, autoincrement=True, nullable=False),
        sa.Column("tbl_id", Id, nullable=False),
        sa.Column("part_id", Id, nullable=False),
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
        sa.PrimaryKeyConstraint("id", name="pk_files"),
        sa.UniqueConstraint("part_id", "name", name="uq_files_part_id_name"),
        _fk("files", "tbl_id", "tbl", "tbl_id"),
        _fk("files", "part_id", "partitions", "part_id"),
    )
    op.create_index("ix_files_tbl_id_instant", "files", ["tbl_id", "instant"])
    op.create_index("ix_files_part_id_file_id", "files", ["part_id", "file_id"])
    op.create_table(
        "api_token",
        sa.Column("token_id", Id, autoincrement=True, nullable=False),
        sa.Column("key_id", sa.String(32), nullable=False),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("salt", sa.String(64), nullable=False),
        sa.Column("hash", sa.String(128), nullable=False),
        sa.Column("create_time", Timestamp, nullable=False),
        sa.Column("revoked", sa.Boolean, nullable=False),
        sa.PrimaryKeyConstraint("token_id", name="pk_api_token"),
        sa.UniqueConstraint("key_id", name="uq_api_token_key_id"),
    )


def downgrade() -> None:
    for table in (
        "api_token",
        "files",
        "tbl_version",
        "instant_meta",
        "instant",
        "tbl_timestamp",
        "partition_key_val",
        "partition_params",
        "partitions",
        "schema",
        "tbl_params",
        "tbl",
        "db_params",
        "db",
    ):
        op.drop_table(table)
