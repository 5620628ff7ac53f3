"""The metastore server (RFC-36): tables, partitions, timeline and file snapshots in an RDBMS,
served over HTTP (the contract: :mod:`hudi_md.metastore.protocol`)."""
