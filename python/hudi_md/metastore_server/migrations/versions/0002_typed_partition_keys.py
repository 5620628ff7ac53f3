"""Typed partition keys: ``partition_key_val.part_key_int``, the value as an exact 64-bit integer
for integer, date and timestamp partition columns (``hudi_md.metastore_server.partitions``), and
its index. Rows written before stay without it and compare as before (numbers as doubles, dates
and timestamps as text) until ``hudi-md metastore sync`` re-types their table.

Revision ID: 0002_typed_partition_keys
Revises: 0001_initial
Create Date: 2026-01-20
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_typed_partition_keys"
down_revision = "0001_initial"
branch_labels = None
depends_on = None

_INDEX = "ix_partition_key_val_tbl_id_part_key_name_part_key_int"


def upgrade() -> None:
    op.add_column("partition_key_val", sa.Column("part_key_int", sa.BigInteger))
    op.create_index(_INDEX, "partition_key_val", ["tbl_id", "part_key_name", "part_key_int"])


def downgrade() -> None:
    op.drop_index(_INDEX, table_name="partition_key_val")
    with op.batch_alter_table("partition_key_val") as batch:
        batch.drop_column("part_key_int")
