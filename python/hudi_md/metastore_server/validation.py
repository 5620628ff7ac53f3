"""What the server accepts as names, table locations, instant times and request text.

Names are the protocol's ``[A-Za-z0-9_]{1,128}``. A location is an absolute URI with an allowed
scheme (a bare absolute path is a ``file`` URI), without a ``..`` segment (also when percent-encoded),
query, fragment or control character. Locations are compared by a normal form (:func:`location_key`):
``s3a://`` and ``s3n://`` are ``s3://``, ``/p``, ``file:/p`` and ``file:///p`` are one place, and a
trailing ``/`` does not count.

Every request is checked before a route sees it (:func:`request_problem`): no text in its path,
query or JSON body may hold NUL or a lone UTF-16 surrogate (``"\\ud800"`` is valid JSON but not
Unicode text: neither database can store it, nor can the answer be encoded), and a JSON body has
no ``NaN`` or ``Infinity`` (not JSON, though Python's parser takes them) nor a number too large
for a double.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

from hudi_md.metastore.protocol import NAME_PATTERN, NAME_RE
from hudi_md.metastore_server.errors import invalid

DEFAULT_SCHEMES = ("file", "s3", "s3a", "gs", "abfs", "abfss", "hdfs")
MAX_LOCATION = 4096
INSTANT_RE = re.compile(r"^\d{14,17}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_SAME_STORE = {"s3a": "s3", "s3n": "s3"}


def check_name(kind: str, name: str) -> str:
    if not NAME_RE.fullmatch(name):
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


# --- request text ---------------------------------------------------------------------------------

MAX_KEY = 256  # parameter keys and column names (the schema's VARCHAR(256) columns)


def text_problem(value: str) -> str | None:
    """Why ``value`` is not text the metastore stores (NUL, a lone UTF-16 surrogate), or None."""
    if "\x00" in value:
        return "holds a NUL character"
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "holds a lone UTF-16 surrogate (not Unicode text)"
    return None


class _NotJson(ValueError):
    pass


def _refuse_constant(name: str) -> Any:
    raise _NotJson(f"{name} is not JSON (numbers are finite)")


def json_problem(body: bytes) -> str | None:
    """Why a JSON request body is refused before its route parses it, or None (also when it does
    not parse at all: the route answers that)."""
    try:
        value = json.loads(body, parse_constant=_refuse_constant)
    except _NotJson as e:
        return str(e)
    except (ValueError, RecursionError):
        return None
    stack: list[Any] = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            problem = text_problem(v)
            if problem is not None:
                return f"a string {problem}"
        elif isinstance(v, float):
            if not math.isfinite(v):
                return "a number is too large for a double"
        elif isinstance(v, Mapping):
            for k, item in v.items():
                problem = text_problem(k)
                if problem is not None:
                    return f"a key {problem}"
                stack.append(item)
        elif isinstance(v, list):
            stack.extend(v)
    return None


def request_problem(path: str, query: bytes, content_type: str | None, body: bytes) -> str | None:
    """Why a request is refused (400) before any route runs, or None."""
    problem = text_problem(path)
    if problem is not None:
        return f"the path {problem}"
    if b"%00" in query.lower() or b"\x00" in query:
        return "the query string holds a NUL character"
    if body and (content_type is None or "json" in content_type.lower()):
        problem = json_problem(body)
        if problem is not None:
            return f"the JSON body: {problem}"
    return None


def check_keys(what: str, keys: Iterable[str]) -> None:
    """Keys (parameter names, column names) are 1 to :data:`MAX_KEY` characters."""
    for k in keys:
        if not 0 < len(k) <= MAX_KEY:
            raise invalid(f"{what} are 1 to {MAX_KEY} characters; got one of {len(k)}")
