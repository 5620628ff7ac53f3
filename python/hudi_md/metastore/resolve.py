"""A registered table by name or location, through the full client (writers and administration;
readers open tables with one request, :mod:`hudi_md.metastore.source`)."""

from __future__ import annotations

from dataclasses import dataclass

from hudi_md.errors import InvalidOptionError, MetastoreError
from hudi_md.metastore import protocol as P
from hudi_md.metastore.client import MetastoreClient


@dataclass(frozen=True)
class TableRef:
    db: str
    table: str
    location: str


def resolve_table(client: MetastoreClient, name_or_location: str) -> TableRef | None:
    """The registered table named ``db.table``, or registered at a location; None when the
    location has no registered table."""
    db, dot, table = name_or_location.partition(".")
    if dot and "/" not in name_or_location and ":" not in name_or_location:
        t = client.table(db, table)
        return TableRef(t.db, t.name, t.location)
    found = client.tables_at(name_or_location.rstrip("/"))
    if not found:
        # Spark's data source qualifies a name it was given as a path (file:/<cwd>/db.table)
        base = name_or_location.rstrip("/").rsplit("/", 1)[-1]
        db, dot, table = base.partition(".")
        if dot and P.NAME_RE.match(db) and P.NAME_RE.match(table):
            try:
                t = client.table(db, table)
            except MetastoreError as e:
                if e.code != P.ErrorCode.not_found.value:
                    raise
                return None
            return TableRef(t.db, t.name, t.location)
        return None
    if len(found) > 1:
        names = ", ".join(f"{t.db}.{t.name}" for t in found)
        raise InvalidOptionError(f"{name_or_location} is registered as several tables ({names}): name one")
    return TableRef(found[0].db, found[0].name, found[0].location)
