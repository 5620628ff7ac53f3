"""Table services as a writer or the CLI runs them: each under the table lock, after finishing what
dead writers left (:mod:`hudi_md.write.recovery`), each its own transaction reflected in the MDT
like any commit. Inline after a commit (:func:`run_inline`): MOR compaction when due, clustering
when due (:mod:`hudi_md.write.clustering`), clean, MDT compaction, then archival (last: it is
gated by the MDT's latest compaction).
"""

from __future__ import annotations

from collections.abc import Mapping

from hudi_md.config import metadata as M
from hudi_md.errors import ClusteringError
from hudi_md.table.config import TableConfig
from hudi_md.table.timeline import COMMIT, DELTA_COMMIT, Instant
from hudi_md.write import clean as cleaner
from hudi_md.write import clustering, compaction
from hudi_md.write.archival import archive, archive_metadata_table
from hudi_md.write.compaction import compact_metadata_table
from hudi_md.write.config import WriteConfig
from hudi_md.write.recovery import resolve_pending_services
from hudi_md.write.result import WriteResult
from hudi_md.write.transaction import WritableTable

__all__ = [
    "archive_timeline",
    "clean",
    "cluster",
    "compact",
    "compact_metadata_table",
    "run_inline",
    "schedule_clustering",
]


def run_inline(table: WritableTable, cfg: WriteConfig) -> None:
    if cfg.is_mor and cfg.compact_inline:
        timeline = table.timeline().completed()
        last = timeline.of_actions(COMMIT).last()
        since = [
            i
            for i in timeline.of_actions(DELTA_COMMIT)
            if last is None or i.requested_time > last.requested_time
        ]
        if len(since) >= cfg.compact_inline_max_delta_commits:
            compact(table)
    cluster_opts = clustering.ClusteringOptions.from_options(cfg.options)
    if cfg.archive_automatic:
        clustering.warn_if_never_due(cluster_opts, cfg.keep_max_commits, table.storage.uri())
    clustering.run_inline(table, cluster_opts)
    if cfg.clean_automatic:
        clean(table, cfg)
    compact_metadata_table(table)
    # Last: archival is gated by the MDT's latest compaction, which may just have happened.
    if cfg.archive_automatic:
        archive_timeline(table, cfg)


def clean(table: WritableTable, cfg: WriteConfig) -> WriteResult | None:
    """Delete file slices no query of the retained commits can need; returns what the clean
    recorded (:class:`~hudi_md.write.result.WriteResult`: the clean instant and the files it
    deleted), None when there was nothing to clean."""
    with table.lock():
        resolve_pending_services(table)
        table.finish_mdt_rebuild()
        return cleaner.clean(table, cfg)


def compact(table: WritableTable) -> WriteResult | None:
    """Schedule and run a compaction of every MOR file slice that has log files (after finishing
    any compaction or clean a failed writer left pending); returns what the compaction's commit
    recorded (:class:`~hudi_md.write.result.WriteResult`), None when there was nothing to
    compact."""
    with table.lock():
        resolve_pending_services(table)
        table.finish_mdt_rebuild()
        return compaction.compact(table)


def cluster(
    table: WritableTable, options: Mapping[str, str] | None = None, *, instant: str | None = None
) -> list[WriteResult]:
    """Run the pending clusterings (``instant``: only that one), or, when none is pending,
    schedule one of the table's small file groups and run it; returns what each clustering's
    replacecommit recorded (empty: nothing to cluster)."""
    opts = clustering.ClusteringOptions.from_options(table.options if options is None else options)
    with table.lock():
        resolve_pending_services(table, clusterings=False)
        table.finish_mdt_rebuild()
        pending = clustering.pending_clusterings(table.storage, table.timeline())
        if instant is not None:
            wanted = [i for i in pending if i.requested_time == instant]
            if not wanted:
                raise ClusteringError(
                    f"no pending clustering {instant} on {table.storage.uri()} "
                    f"(pending: {', '.join(i.requested_time for i in pending) or 'none'})"
                )
            return [clustering.run(table, wanted[0], opts)]
        return clustering.cluster(table, opts)


def schedule_clustering(table: WritableTable, options: Mapping[str, str] | None = None) -> str | None:
    """Write a clustering plan of the table's small file groups (for ``cluster`` or Apache Hudi to
    run); its instant, or None when nothing qualifies."""
    opts = clustering.ClusteringOptions.from_options(table.options if options is None else options)
    with table.lock():
        return clustering.schedule(table, opts)


def archive_timeline(table: WritableTable, cfg: WriteConfig) -> list[Instant]:
    """Archive the MDT's timeline, then the data timeline; returns the data instants archived."""
    with table.lock():
        config = TableConfig.load(table.storage)
        if config.table_version < 8:
            return []
        if config.metadata_partitions:
            archive_metadata_table(
                table.storage,
                keep_min_commits=cfg.keep_min_commits,
                keep_max_commits=cfg.keep_max_commits,
                compact_max_delta_commits=M.COMPACT_MAX_DELTA_COMMITS.get(table.options),
            )
        return archive(
            table.storage,
            keep_min_commits=cfg.keep_min_commits,
            keep_max_commits=cfg.keep_max_commits,
            cleaner_policy=cfg.cleaner_policy,
            cleaner_commits_retained=cfg.commits_retained,
            compact_max_delta_commits=cfg.compact_inline_max_delta_commits,
            metadata_enabled=cfg.metadata_enabled,
        )
