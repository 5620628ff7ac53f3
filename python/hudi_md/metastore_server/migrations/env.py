"""Alembic's environment for the metastore: always run from
:func:`hudi_md.metastore_server.db.migrate`, which hands over an open connection."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context

config = context.config
connection = config.attributes["connection"]
# transactional_ddl: the whole upgrade is one transaction on SQLite too (Alembic assumes SQLite
# cannot), so a second server starting meanwhile waits for it and then finds the schema at head.
context.configure(connection=connection, transactional_ddl=True, render_as_batch=True)
with context.begin_transaction():
    if connection.dialect.name == "postgresql":
        connection.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": config.attributes["lock_key"]})
    context.run_migrations()
