"""The metastore client's options: Apache Hudi's ``hoodie.metaserver.*`` keys (RFC-36), and hudi-md's
own where Hudi has none."""

from __future__ import annotations

from hudi_md.config.option import NOT_IN_HUDI, boolean, double, string

METASTORE = ("metastore", "read", "write")

METASERVER_ENABLED = boolean(
    "hoodie.metaserver.enabled",
    False,
    hudi=False,
    scopes=METASTORE,
    doc="Read the table's timeline and listings from the metastore, and record every commit there.",
)
METASERVER_URIS = string(
    "hoodie.metaserver.uris",
    None,
    hudi="thrift://localhost:9090",
    scopes=METASTORE,
    differs_from_hudi=True,
    doc="The metastore server (the first of a comma-separated list), e.g. http://host:9090. No default: "
    "hudi-md's metastore speaks HTTP(S), not the Thrift of Apache Hudi's default.",
)
METASERVER_TOKEN = string(
    "hoodie.metaserver.token",
    None,
    hudi=NOT_IN_HUDI,
    scopes=METASTORE,
    doc="The bearer token sent to the metastore (writes need one; reads when the server asks).",
)
METASERVER_TIMEOUT = double(
    "hoodie.metaserver.request.timeout.seconds",
    30.0,
    hudi=NOT_IN_HUDI,
    scopes=METASTORE,
    doc="How long a metastore request may wait for its answer, in seconds; raise it for commits of "
    "very many files.",
)
