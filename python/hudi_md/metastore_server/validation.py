"""What the server accepts as names, table locations and instant times.

Names are the protocol's ``[A-Za-z0-9_]{1,128}``. A location is an absolute URI with an allowed
scheme (a bare absolute path is a ``file`` URI), without a ``..`` segment (also when percent-encoded),
query, fragment or control character. Locations are compared by a normal form (:func:`location_key`):
``s3a://`` and ``s3n://`` are ``s3://``, ``/p``, ``file:/p`` and ``file:///p`` are one place, and a
trailing ``/`` does not count.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

from hudi_md.metastore.protocol import NAME_PATTERN, NAME_RE
from hudi_md.metastore_server.errors import invalid

DEFAULT_SCHEMES = ("file", "s3", "s3a", "gs", "abfs", "abfss", "hdfs")
MAX_LOCATION = 4096
INSTANT_RE = re.compile(r"^\d{14,17}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_SAME_STORE = {"s3a": "s3", "s3n": "s3"}


def check_name(kind: str, name: str) -> str:
    if not NAME_RE.match(name):
        raise invalid(f"{kind} name {name!r} is not {NAME_PATTERN}")
    return name


def check_instant_time(what: str, value: str) -> str:
    if not INSTANT_RE.match(value):
        raise invalid(f"{what} {value!r} is not an instant time (14 to 17 digits, yyyyMMddHHmmss[SSS])")
    return value


def location_key(location: str, allowed_schemes: tuple[str, ...] = DEFAULT_SCHEMES) -> str:
    """The normal form of a valid table location; :class:`ApiError` (400) for any other."""
    if not location or len(location) > MAX_LOCATION:
        raise invalid(f"a location is 1 to {MAX_LOCATION} characters")
    if _CONTROL.search(location):
        raise invalid("a location holds no control characters")
    if location.startswith("/"):
        scheme, netloc, path = "file", "", location
    else:
        try:
            parts = urlsplit(location)
        except ValueError as e:
            raise invalid(f"location {location!r} is not a URI: {e}") from e
        if parts.query or parts.fragment or "?" in location or "#" in location:
            raise invalid(f"location {location!r} has a query or fragment")
        scheme, netloc, path = parts.scheme.lower(), parts.netloc, parts.path
        if not scheme:
            raise invalid(f"location {location!r} is neither an absolute path nor a URI with a scheme")
    if scheme not in allowed_schemes:
        raise invalid(f"location scheme {scheme!r} is not allowed (allowed: {', '.join(allowed_schemes)})")
    if scheme == "file":
        if netloc not in ("", "localhost"):
            raise invalid(f"a file location names no host: {location!r}")
        netloc = ""
    elif not netloc:
        raise invalid(f"location {location!r} names no bucket, container or host")
    if not path.startswith("/"):
        raise invalid(f"location {location!r} is not absolute")
    for segment in path.split("/"):
        if unquote(segment) in ("..",) or segment == "..":
            raise invalid(f"location {location!r} has a '..' segment")
    path = path.rstrip("/") or "/"
    return f"{_SAME_STORE.get(scheme, scheme)}://{netloc}{path}"
