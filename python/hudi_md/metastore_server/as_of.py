"""Answers as of a table version: the pin of a plan (:class:`~hudi_md.metastore.protocol.TableTimeline`).

A table's version counts the instants the server completed (one ``tbl_version`` row each, in
completion order). A plan reads the timeline together with the version it is as of, then asks every
later question (partitions, slices) as of that version, so all of its answers are of one state of
the table while other instants complete. The snapshot keeps what that takes (a file row names the
instant that wrote it and the clean or rollback that deleted it), so as of version ``V``:

* an instant completed after ``V`` (its ``tbl_version`` row is later) is pending, as it was then:
  its files are not committed, a compaction is pending, a replacecommit replaces nothing yet;
* a file is live when an instant up to ``V`` wrote it and it is not deleted, or an instant
  completed after ``V`` deleted it;
* a partition is listed when it is not deleted, or an instant completed after ``V`` deleted files
  of it (a ``delete_partition`` cleaned since).

A completed instant that a rollback removed since ``V`` is gone from the answers: they are the state
after that rollback, which a reader starting then reads too. The snapshot must have applied every
version up to ``V`` (a read syncs pending versions first): a version it failed to apply is refused
with 409 ``conflict``, and the client plans from the table's own metadata instead.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from hudi_md.metastore_server import schema as S
from hudi_md.metastore_server.catalog import TableRow
from hudi_md.metastore_server.errors import conflict, invalid


def check_version(table: TableRow, version: int | None) -> None:
    """Refuse a version the table has not reached (400) or the snapshot has not applied (409)."""
    if version is None:
        return
    if version > table.version:
        raise invalid(
            f"{table.db}.{table.name} has no version {version} yet (it is at version {table.version})"
        )
    if table.synced_version < version:
        raise conflict(
            f"the snapshot of {table.db}.{table.name} has not applied version {version} (it applied up "
            f"to {table.synced_version}; see its snapshot status): plan from the table's own metadata"
        )


def later_instants(table: TableRow, version: int | None) -> sa.Select[Any] | None:
    """The requested times of the instants completed after ``version``, as a subquery; None when
    none can be (no version given, or the table is still at it)."""
    if version is None or version >= table.version:
        return None
    v = S.tbl_version.c
    return sa.select(v.ts).where(v.tbl_id == table.tbl_id, v.version > version)


def later_set(conn: Connection, later: sa.Select[Any] | None) -> frozenset[str]:
    return frozenset() if later is None else frozenset(conn.execute(later).scalars())


def partition_live(later: sa.Select[Any] | None) -> sa.ColumnElement[bool]:
    """Whether a ``partitions`` row is listed (as of the version ``later`` follows)."""
    p = S.partitions.c
    live = p.is_deleted == sa.false()
    if later is None:
        return live
    f = S.files.alias("removed_since").c  # an alias: the outer query may join files too
    removed_since = sa.select(f.id).where(f.part_id == p.part_id, f.deleted_instant.in_(later)).exists()
    return sa.or_(live, removed_since)


def file_live(later: sa.Select[Any] | None, as_of: str | None = None) -> sa.ColumnElement[bool]:
    """Whether a ``files`` row is live (as of the version ``later`` follows; ``as_of``: also those
    an instant requested after it deleted, for time travel)."""
    f = S.files.c
    alive = [f.is_deleted == sa.false()]
    if as_of is not None:
        alive.append(f.deleted_instant > as_of)
    if later is None:
        return sa.or_(*alive) if len(alive) > 1 else alive[0]
    alive.append(f.deleted_instant.in_(later))
    return sa.and_(sa.or_(*alive), f.instant.not_in(later))
