"""The metastore protocol's names and routes, without its bodies: what the read path needs before
(and without) the pydantic models of :mod:`hudi_md.metastore.protocol`."""

from __future__ import annotations

import re

from hudi_md.errors import InvalidOptionError

API_PREFIX = "/v1"
NAME_PATTERN = r"^[A-Za-z0-9_]{1,128}$"
NAME_RE = re.compile(NAME_PATTERN)
INSTANT_TIME_PATTERN = r"^\d{14,17}$"
NON_PARTITIONED = "__NONE__"


def table_route(db: str, table: str) -> str:
    """The route of ``db.table``; a name that is not the protocol's is refused
    (:class:`~hudi_md.errors.InvalidOptionError`) before it becomes part of a URL."""
    for name in (db, table):
        if not NAME_RE.fullmatch(name):
            raise InvalidOptionError(f"metastore names are {NAME_PATTERN}; got {name!r}")
    return f"{API_PREFIX}/databases/{db}/tables/{table}"


def partition_segment(path: str) -> str:
    return path if path else NON_PARTITIONED


def partition_of_segment(segment: str) -> str:
    return "" if segment == NON_PARTITIONED else segment
