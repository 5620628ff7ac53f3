"""The options that turn the metastore client on (Apache Hudi's keys, ``HoodieMetaserverConfig``),
readable without the client's dependencies."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hudi_md.errors import InvalidOptionError

METASERVER_ENABLED = "hoodie.metaserver.enabled"
METASERVER_URIS = "hoodie.metaserver.uris"
# hudi-md's: the bearer token for writes (and reads, when the server wants one).
METASERVER_TOKEN = "hoodie.metaserver.token"


def metaserver_uri(options: Mapping[str, Any]) -> str | None:
    """The server the options point at (``hoodie.metaserver.enabled`` and the first of
    ``hoodie.metaserver.uris``), None when the metastore is not on."""
    if str(options.get(METASERVER_ENABLED, "false")).lower() != "true":
        return None
    uris = str(options.get(METASERVER_URIS) or "").strip()
    if not uris:
        raise InvalidOptionError(f"{METASERVER_ENABLED}=true needs {METASERVER_URIS} (e.g. http://host:9090)")
    uri = uris.split(",")[0].strip()
    if not uri.startswith(("http://", "https://")):
        raise InvalidOptionError(f"{METASERVER_URIS}: hudi-md's metastore speaks HTTP(S), got {uri!r}")
    return uri.rstrip("/")
