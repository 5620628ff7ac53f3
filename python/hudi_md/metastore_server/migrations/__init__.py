"""Alembic migrations of the metastore's database (``hudi_md.metastore_server.db.migrate``)."""
