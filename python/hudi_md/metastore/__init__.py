"""The metastore (RFC-36): the HTTP API's contract (:mod:`~hudi_md.metastore.protocol`) and the
client readers and writers use when ``hoodie.metaserver.enabled`` is set. The server is
``hudi_md.metastore_server``."""
