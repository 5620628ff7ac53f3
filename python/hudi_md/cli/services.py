"""``hudi-md clean | compaction | clustering | rollback | restore``: table services run by hand."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from hudi_md.cli.common import (
    InputError,
    cli_writer,
    command_progress,
    emit,
    handle_errors,
    json_option,
    option_flag,
    progress_option,
)

if TYPE_CHECKING:
    from hudi_md.write.writer import HudiWriter


def _instant_summary(writer: HudiWriter, instant: str, action: str) -> dict[str, Any]:
    """The completed instant's metadata, for the result's figures; empty if unreadable (the
    service is done either way, a summary must not turn it into a failure)."""
    try:
        timeline = writer.timeline().completed()
        found = timeline.get(instant, action)
        return timeline.metadata(found) if found is not None else {}
    except Exception:
        return {}


@click.command("clean")
@click.argument("path")
@option_flag
@json_option("an object {instant: the clean instant, or null when nothing was cleaned, files_deleted}")
@progress_option
@handle_errors
def clean_cmd(path: str, options: tuple[str, ...]) -> None:
    """Delete file slices outside the retained commits (hoodie.cleaner.* options)."""
    from hudi_md.table.config import TableConfig
    from hudi_md.write import services
    from hudi_md.write.config import WriteConfig

    w = cli_writer(path, options)
    cfg = WriteConfig.from_options(w.options, TableConfig.load(w.storage))
    deleted: int | None = 0
    with command_progress() as progress:
        progress.say(
            f"cleaning {w.storage.uri()}: planning which file slices the retained commits no longer need..."
        )
        instant = services.clean(w, cfg)
        if instant:
            found = _instant_summary(w, instant, "clean").get("totalFilesDeleted")
            deleted = int(found) if found is not None else None
            progress.say(
                f"clean {instant} completed" + (f": {deleted} files deleted" if deleted is not None else "")
            )
        progress.done()
    emit(
        {"instant": instant, "files_deleted": deleted},
        lambda d: f"clean {d['instant']}" if d["instant"] else "nothing to clean",
    )


@click.command("compaction")
@click.argument("path")
@option_flag
@json_option(
    "an object {instant: the compaction instant, or null when nothing was compacted, file_groups_compacted}"
)
@progress_option
@handle_errors
def compaction_cmd(path: str, options: tuple[str, ...]) -> None:
    """Schedule and run a MOR compaction of every slice with log files."""
    from hudi_md.write import services

    w = cli_writer(path, options)
    groups = 0
    with command_progress() as progress:
        progress.say(f"compacting {w.storage.uri()}: scheduling every file slice with log files...")
        instant = services.compact(w)
        if instant:
            groups = sum(len(s or ()) for s in _partition_stats(_instant_summary(w, instant, "commit")))
            progress.say(f"compaction {instant} completed: {groups} file groups compacted")
        progress.done()
    emit(
        {"instant": instant, "file_groups_compacted": groups},
        lambda d: f"compaction {d['instant']}" if d["instant"] else "nothing to compact",
    )


def _partition_stats(metadata: dict[str, object]) -> list[list[object]]:
    stats = metadata.get("partitionToWriteStats")
    return [list(v) for v in stats.values() if isinstance(v, list)] if isinstance(stats, dict) else []


def _check_write_instant(writer: HudiWriter, instant: str) -> None:
    """Refuse an INSTANT that is no completed write before reporting any progress (the writer
    checks it again under the table lock)."""
    if writer.timeline().write_timeline().get(instant) is None:
        raise InputError(
            f"no completed write instant {instant} in {writer.storage.uri()}",
            "'hudi-md commits show PATH' lists them",
        )


@click.command("rollback")
@click.argument("path")
@click.argument("instant")
@option_flag
@json_option("an object {instant: the rollback instant, rolled_back: INSTANT}")
@progress_option
@handle_errors
def rollback_cmd(path: str, instant: str, options: tuple[str, ...]) -> None:
    """Roll back the latest completed write INSTANT."""
    w = cli_writer(path, options)
    _check_write_instant(w, instant)
    with command_progress() as progress:
        progress.say(f"rolling back {instant} of {w.storage.uri()}...")
        done = w.rollback_commit(instant)
        progress.done()
    emit({"instant": done, "rolled_back": instant}, lambda d: f"rollback {d['instant']}")


@click.command("restore")
@click.argument("path")
@click.argument("instant")
@option_flag
@json_option(
    "an object {restored_to: INSTANT, rollback_instants: [one rollback per later write, newest first]}"
)
@progress_option
@handle_errors
def restore_cmd(path: str, instant: str, options: tuple[str, ...]) -> None:
    """Restore the table to its state right after INSTANT."""
    w = cli_writer(path, options)
    _check_write_instant(w, instant)
    with command_progress() as progress:
        progress.say(f"restoring {w.storage.uri()} to {instant}: rolling back every later write...")
        done = w.restore(instant)
        progress.done()
    emit(
        {"restored_to": instant, "rollback_instants": done},
        lambda d: f"restored to {d['restored_to']}: {len(d['rollback_instants'])} rollbacks",
    )


@click.group("clustering")
def clustering_group() -> None:
    """Clustering: rewrite small file groups into few, sorted ones (hoodie.clustering.* options)."""


def _clustering_summary(w: HudiWriter, instant: str) -> dict[str, Any]:
    meta = _instant_summary(w, instant, "replacecommit")
    replaced = meta.get("partitionToReplaceFileIds") or {}
    written = _partition_stats(meta)
    return {
        "instant": instant,
        "file_groups_replaced": sum(len(v) for v in replaced.values()),
        "file_groups_written": sum(len(v) for v in written),
    }


@clustering_group.command("schedule")
@click.argument("path")
@option_flag
@json_option(
    "an object {instant: the clustering plan's instant, or null when nothing qualifies, file_groups}"
)
@progress_option
@handle_errors
def clustering_schedule_cmd(path: str, options: tuple[str, ...]) -> None:
    """Write a clustering plan of PATH's small file groups (run it with 'hudi-md clustering run')."""
    from hudi_md.write import services
    from hudi_md.write.clustering import plan_groups
    from hudi_md.write.plans import read_plan

    w = cli_writer(path, options)
    groups = 0
    with command_progress() as progress:
        progress.say(f"planning a clustering of {w.storage.uri()}'s small file groups...")
        instant = services.schedule_clustering(w)
        if instant:
            found = w.timeline().get(instant)
            plan = read_plan(w.storage, instant, found.action) if found else None
            groups = sum(len(g.slices) for g in plan_groups(w.storage, plan or {}))
        progress.done()
    emit(
        {"instant": instant, "file_groups": groups},
        lambda d: (
            f"clustering {d['instant']} scheduled: {d['file_groups']} file groups"
            if d["instant"]
            else "nothing to cluster"
        ),
    )


@clustering_group.command("run")
@click.argument("path")
@click.option("--instant", default=None, help="run only this pending clustering")
@option_flag
@json_option(
    "an object {clusterings: [{instant, file_groups_replaced, file_groups_written}, one per "
    "clustering run (empty: nothing to cluster)]}"
)
@progress_option
@handle_errors
def clustering_run_cmd(path: str, instant: str | None, options: tuple[str, ...]) -> None:
    """Run PATH's pending clusterings (Apache Hudi's too), or schedule one and run it."""
    from hudi_md.write import services

    w = cli_writer(path, options)
    with command_progress() as progress:
        progress.say(f"clustering {w.storage.uri()}...")
        done = services.cluster(w, instant=instant)
        summaries = [_clustering_summary(w, r.instant) for r in done]
        progress.done()
    emit(
        {"clusterings": summaries},
        lambda d: (
            "\n".join(
                f"clustering {s['instant']}: {s['file_groups_replaced']} file groups into "
                f"{s['file_groups_written']}"
                for s in d["clusterings"]
            )
            or "nothing to cluster"
        ),
    )
