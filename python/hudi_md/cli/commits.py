"""``hudi-md commits show``: what each completed write did (hudi-cli's ``commits show``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click

from hudi_md.cli.common import emit, handle_errors, json_option, open_cli_state, option_flag


@click.group("commits")
def commits() -> None:
    """Commit-level commands (hudi-cli's `commits ...`)."""


_COLUMNS = (
    ("instant_time", "instant"),
    ("action", "action"),
    ("operation", "operation"),
    ("partitions_written", "partitions"),
    ("files_added", "files+"),
    ("files_updated", "files~"),
    ("records_written", "written"),
    ("records_inserted", "inserted"),
    ("records_updated", "updated"),
    ("records_deleted", "deleted"),
    ("bytes_written", "bytes"),
    ("errors", "errors"),
)


@commits.command("show")
@click.argument("path")
@option_flag
@json_option(
    "a list, newest first, of {instant_time, completion_time, action, operation, partitions_written, "
    "files_added, files_updated, records_written, records_inserted, records_updated, records_deleted, "
    "bytes_written, errors}"
)
@click.option("--limit", type=int, default=-1, show_default=True, help="newest N commits (-1: all)")
@handle_errors
def commits_show(path: str, options: tuple[str, ...], limit: int) -> None:
    """Per completed write instant, newest first: operation, partitions and files written, records
    inserted / updated / deleted, bytes written and write errors, from the commit's write stats."""
    from hudi_md.formats.commit_metadata import CommitMetadata

    t = open_cli_state(path, options)
    instants = list(t.timeline.write_timeline())[::-1]
    if limit >= 0:
        instants = instants[:limit]
    rows = []
    for instant in instants:
        metadata = CommitMetadata(t.timeline.metadata(instant), instant.file_name)
        stats = metadata.write_stats()
        rows.append(
            {
                "instant_time": instant.requested_time,
                "completion_time": instant.completion_time,
                "action": instant.action,
                "operation": metadata.operation_type,
                "partitions_written": len({s.partition_path for s in stats}),
                # As hudi-cli counts them: a stat without a previous commit wrote a new file group.
                "files_added": sum(1 for s in stats if s.prev_commit is None),
                "files_updated": sum(1 for s in stats if s.prev_commit is not None),
                "records_written": sum(s.num_writes for s in stats),
                "records_inserted": sum(s.num_inserts for s in stats),
                "records_updated": sum(s.num_update_writes for s in stats),
                "records_deleted": sum(s.num_deletes for s in stats),
                "bytes_written": sum(s.total_write_bytes for s in stats),
                "errors": _write_errors(metadata.raw),
            }
        )
    emit(rows, _table_text)


def _write_errors(raw: Mapping[str, Any]) -> int:
    # WriteStat does not carry totalWriteErrors (hudi-md never writes a failed record), so read it
    # from the stats as Hudi recorded them.
    total = 0
    for stats in (raw.get("partitionToWriteStats") or {}).values():
        for stat in stats or ():
            if isinstance(stat, Mapping):
                total += int(stat.get("totalWriteErrors") or 0)
    return total


def _table_text(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "(no completed commits)"
    cells = [[title for _, title in _COLUMNS]]
    cells += [["" if r[key] is None else str(r[key]) for key, _ in _COLUMNS] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(_COLUMNS))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells
    )
