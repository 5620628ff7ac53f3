"""The options that turn the metastore client on (Apache Hudi's keys, ``HoodieMetaserverConfig``),
readable without the client's dependencies."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from hudi_md.config import metastore as MS
from hudi_md.errors import InvalidOptionError

METASERVER_ENABLED = MS.METASERVER_ENABLED.key
METASERVER_URIS = MS.METASERVER_URIS.key
# hudi-md's: the bearer token for writes (and reads, when the server wants one).
METASERVER_TOKEN = MS.METASERVER_TOKEN.key
# hudi-md's: how long a request may wait for the server's answer (a commit of 10^5 files waits for
# the snapshot sync of the commit before it, which holds the table for as long as it writes)
METASERVER_TIMEOUT = MS.METASERVER_TIMEOUT.key
DEFAULT_TIMEOUT_S = MS.METASERVER_TIMEOUT.default


def metaserver_timeout(options: Mapping[str, Any]) -> float:
    option = MS.METASERVER_TIMEOUT
    value = option.get(options)
    if not value > 0:
        raise option.invalid(option.raw(options), "not a positive number of seconds")
    return value


def metaserver_uri(options: Mapping[str, Any]) -> str | None:
    """The server the options point at (``hoodie.metaserver.enabled`` and the first of
    ``hoodie.metaserver.uris``), None when the metastore is not on."""
    if not MS.METASERVER_ENABLED.get(options):
        return None
    uris = (MS.METASERVER_URIS.get(options) or "").strip()
    if not uris:
        raise InvalidOptionError(f"{METASERVER_ENABLED}=true needs {METASERVER_URIS} (e.g. http://host:9090)")
    uri = uris.split(",")[0].strip()
    if not uri.startswith(("http://", "https://")):
        raise InvalidOptionError(f"{METASERVER_URIS}: hudi-md's metastore speaks HTTP(S), got {uri!r}")
    return uri.rstrip("/")


C = TypeVar("C")
# a process's clients, one per (class, server, token, timeout)
_SHARED: dict[tuple[type, str, str | None, float], Any] = {}
_SHARED_LOCK = threading.Lock()


def shared_client(
    kind: type[C], options: Mapping[str, Any], make: Callable[[str, str | None, float], C]
) -> C | None:
    """The process's ``kind`` client of the server the options name (``make(uri, token,
    timeout_s)`` the first time; one connection pool per server and token), None when the
    metastore is not on."""
    uri = metaserver_uri(options)
    if uri is None:
        return None
    token = MS.METASERVER_TOKEN.get(options)
    key = (kind, uri, str(token) if token else None, metaserver_timeout(options))
    with _SHARED_LOCK:
        client = _SHARED.get(key)
        if client is None:
            client = _SHARED[key] = make(*key[1:])
    return client


def shared_clients(kind: type[C]) -> list[C]:
    with _SHARED_LOCK:
        return [c for k, c in _SHARED.items() if k[0] is kind]
