"""The metastore server (RFC-36): tables, partitions, timeline and file snapshots in an RDBMS,
served over HTTP (the contract: :mod:`hudi_md.metastore.protocol`).

* ``schema`` (the tables), ``db`` (engines, transactions, migrations; ``migrations/`` Alembic's);
* the services: ``catalog`` (databases, tables), ``timeline`` (instant times, states, heartbeats,
  conflicts), ``partitions`` (pruning in SQL), ``snapshot`` (the sync, the file-system view);
* ``auth`` (tokens), ``validation`` (names, locations), ``errors``;
* ``app`` (the FastAPI app), ``cli`` (``hudi-md metastore serve | token create``);
* ``hms`` (the Hive metastore Thrift API over the same services, ``serve --thrift-port``).

Every piece of state is in the database: any number of server processes may share one.
"""
