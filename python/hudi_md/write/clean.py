"""Data clean (Hudi's ``KEEP_LATEST_COMMITS`` / ``KEEP_LATEST_FILE_VERSIONS``): a plan of the file
slices no query of the retained commits can need, then a transaction that deletes them and records
the deletions in the MDT like any commit.

File groups a pending compaction or clustering reads are left alone (Hudi's cleaner excludes them),
the empty slice a pending compaction opens is never counted as a retained version, and slices a
savepoint holds are kept.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from hudi_md.errors import CommitMetadataError
from hudi_md.formats.commit_metadata import parse_instant_metadata
from hudi_md.formats.commit_metadata_writer import (
    clean_metadata_record,
    cleaner_plan_record,
    serialize_instant_metadata,
)
from hudi_md.metadata import keys as K
from hudi_md.metadata.column_ranges import columns_to_index
from hudi_md.metadata.lifecycle import indexed_columns
from hudi_md.metadata.records_builder import (
    ColumnRange,
    MdtRecord,
    all_partitions_record,
    column_stats_record,
    delete_partition_record,
    files_record,
)
from hudi_md.storage import Storage
from hudi_md.table.config import TableConfig
from hudi_md.table.filenames import BaseFileName, parse_data_file
from hudi_md.table.fs_view import FileSystemView
from hudi_md.table.listing import PARTITION_METAFILE_PREFIX
from hudi_md.table.state import TableState
from hudi_md.table.timeline import CLEAN, COMPACTION, SAVEPOINT
from hudi_md.write.config import WriteConfig
from hudi_md.write.plans import pending_clustering_file_groups, pending_compaction_file_groups
from hudi_md.write.result import WriteResult, log_commit
from hudi_md.write.transaction import Transaction, WritableTable


def plan_clean(storage: Storage, state: TableState, cfg: WriteConfig) -> dict[str, Any] | None:
    """The cleaner plan (``HoodieCleanerPlan``) for the table as it is, or None: nothing to clean."""
    commits = list(state.timeline.write_timeline())
    if cfg.cleaner_policy == "KEEP_LATEST_COMMITS" and len(commits) <= cfg.commits_retained:
        return None
    earliest = (
        commits[-cfg.commits_retained].requested_time if cfg.cleaner_policy == "KEEP_LATEST_COMMITS" else None
    )
    pending_compactions = {i.requested_time for i in state.timeline.pending().of_actions(COMPACTION)}
    busy = pending_compaction_file_groups(storage, state.timeline)
    # Hudi's cleaner also keeps every file group a pending clustering reads.
    busy.update(pending_clustering_file_groups(storage, state.timeline))
    view = state.file_system_view()
    to_delete: dict[str, list[tuple[str, int]]] = defaultdict(list)
    replaced = state.timeline.write_timeline().replaced_file_ids()
    savepointed = savepointed_slices(storage, state)
    for partition, groups in view.file_groups(state.partitions()).items():
        for g in groups:
            if (partition, g.file_id) in busy:
                continue
            # A pending compaction's slice without a base file continues the slice before it.
            instants = sorted(
                (t for t in g.slices if not (t in pending_compactions and g.slices[t].base_file is None)),
                reverse=True,
            )
            if cfg.cleaner_policy == "KEEP_LATEST_FILE_VERSIONS":
                doomed = instants[cfg.file_versions_retained :]
            else:
                # keep slices at/after `earliest`, and the newest slice before it
                older = [t for t in instants if earliest is not None and t < earliest]
                doomed = older[1:]
            for t in doomed:
                s = g.slices[t]
                if (partition, g.file_id, t) in savepointed:
                    continue
                if s.base_file is not None:
                    to_delete[partition].append((s.base_file.name, s.base_file.size))
                for lf in s.log_files:
                    to_delete[partition].append((lf.name, lf.size))
    # file groups replaced before the retained window: all their files go
    cleaned: set[tuple[str, str]] = set()
    for (partition, file_id), at in replaced.items():
        if earliest is not None and at < earliest and (partition, file_id) not in busy:
            if any(k[:2] == (partition, file_id) for k in savepointed):
                continue
            for e in state.listing.files_in_partitions([partition]).get(partition, []):
                if e.name.lstrip(".").startswith(file_id):
                    to_delete[partition].append((e.name, e.size))
                    cleaned.add((partition, file_id))
    if not any(to_delete.values()):
        return None
    return cleaner_plan_record(
        earliest_to_retain=earliest,
        last_completed=commits[-1].requested_time,
        policy=cfg.cleaner_policy,
        file_uris={
            p: [storage.uri(f"{p}/{n}" if p else n) for n, _ in sorted(set(files))]
            for p, files in to_delete.items()
        },
        partitions_to_delete=_partitions_left_empty(storage, state, view, set(replaced), cleaned),
    )


def _partitions_left_empty(
    storage: Storage,
    state: TableState,
    view: FileSystemView,
    replaced: set[tuple[str, str]],
    cleaned: set[tuple[str, str]],
) -> list[str]:
    """The partitions this clean leaves without a file (Apache Hudi's ``partitionsToBeDeleted``,
    ``CleanPlanner``): the clean deletes replaced file groups there (a ``delete_partition``, an
    overwrite that wrote nothing there), no live file group is left, no other replaced file
    group still has files (replaced at or after the earliest retained commit, kept for a pending
    plan or a savepoint) and no other data file is in the directory (a pending write's). The
    clean deletes the partition's directory and marks it deleted in the MDT's partition list."""
    cleaned_ids: dict[str, set[str]] = defaultdict(set)
    for partition, file_id in cleaned:
        cleaned_ids[partition].add(file_id)
    out = []
    for partition, ids in sorted(cleaned_ids.items()):
        if not partition or view.file_groups([partition]).get(partition):
            continue  # not partitioned, or live file groups left
        others = {fid for p, fid in replaced if p == partition} - ids
        listed = state.listing.files_in_partitions([partition]).get(partition, [])
        if any(e.name.lstrip(".").startswith(fid) for e in listed for fid in others):
            continue  # another replaced file group keeps files
        pending = False
        for e in storage.list(partition):
            if e.name.startswith(PARTITION_METAFILE_PREFIX) or e.name.endswith(".crc"):
                continue
            parsed = parse_data_file(e.name)
            if e.is_dir or parsed is None or parsed.file_id not in ids:
                pending = True
                break
        if not pending:
            out.append(partition)
    return out


def clean(table: WritableTable, cfg: WriteConfig) -> WriteResult | None:
    """Plan and run a clean of the table as it is (the caller holds the lock and has resolved
    pending services); returns what it recorded (the clean instant; None: nothing to clean)."""
    state = table.state()
    plan = plan_clean(table.storage, state, cfg)
    if plan is None:
        return None
    txn = Transaction.request(table, CLEAN, serialize_instant_metadata("cleaner_plan", plan))
    return execute_clean(txn, state, plan)


def savepointed_slices(storage: Storage, state: TableState) -> set[tuple[str, str, str]]:
    """(partition, file id, base instant) of every file slice a completed savepoint holds: a
    restore to the savepoint needs them, so the cleaner keeps them (Hudi's CleanPlanner). A
    savepoint lists the base files of its slices (``HoodieSavepointMetadata.partitionMetadata``)."""
    out: set[tuple[str, str, str]] = set()
    for sp in state.timeline.completed().of_actions(SAVEPOINT):
        path = f"{state.config.timeline_path}/{sp.file_name}"
        meta = parse_instant_metadata(storage.read_bytes(path), storage.uri(path))
        for partition, pm in (meta.get("partitionMetadata") or {}).items():
            for name in (pm or {}).get("savepointDataFile") or []:
                parsed = BaseFileName.parse(name.rsplit("/", 1)[-1])
                if parsed is None:
                    raise CommitMetadataError(
                        storage.uri(path), f"savepointed file {name!r} is not a base file"
                    )
                out.add((partition, parsed.file_id, parsed.instant))
    return out


def execute_clean(txn: Transaction, state: TableState, plan: Mapping[str, Any]) -> WriteResult:
    """Run the requested clean ``txn`` (again, after a crash): delete the plan's files still there
    and the directories of the partitions it deletes (``partitionsToBeDeleted``, when nothing but
    their partition metadata is left), record the deletions in the MDT, complete it; returns what
    it recorded."""
    storage = txn.table.storage
    txn.start(serialize_instant_metadata("cleaner_plan", dict(plan)))
    earliest = (plan.get("earliestInstantToRetain") or {}).get("timestamp")
    files: dict[str, list[str]] = defaultdict(list)
    for p, entries in (plan.get("filePathsToBeDeletedPerPartition") or {}).items():
        files[p] += [e["filePath"].rsplit("/", 1)[-1] for e in entries or ()]
    for p, names in (plan.get("filesToBeDeletedPerPartition") or {}).items():
        files[p] += [n.rsplit("/", 1)[-1] for n in names or ()]
    deleted: dict[str, list[str]] = defaultdict(list)
    for p, names in files.items():
        for name in sorted(set(names)):
            path = f"{p}/{name}" if p else name
            if storage.exists(path):
                storage.delete(path)
            deleted[p].append(name)
    dropped = [
        p for p in plan.get("partitionsToBeDeleted") or () if p and _delete_partition_directory(storage, p)
    ]
    config = TableConfig.load(storage)
    mdt_started = time.perf_counter()
    if config.metadata_partitions:
        txn.write_metadata(config, _clean_records(config, state, deleted, dropped))
    mdt_seconds = time.perf_counter() - mdt_started if config.metadata_partitions else 0.0
    meta = clean_metadata_record(
        instant=txn.instant,
        earliest_to_retain=earliest,
        last_completed=plan.get("lastCompletedCommitTimestamp") or "",
        policy=plan.get("policy") or "KEEP_LATEST_COMMITS",
        deleted=deleted,
        partitions_deleted=dropped,
    )
    txn.complete(serialize_instant_metadata("clean", meta))
    return log_commit(WriteResult.of_clean(txn.instant, meta, mdt_seconds=mdt_seconds), storage.uri())


def _delete_partition_directory(storage: Storage, partition: str) -> bool:
    """Delete a partition's directory the clean empties (Hudi's cleaner deletes it whole);
    whether it is gone. A directory holding anything but its partition metadata (a write that
    started since the plan) is left, and the partition with it."""
    entries = storage.list(partition)
    if any(not e.name.startswith(PARTITION_METAFILE_PREFIX) and not e.name.endswith(".crc") for e in entries):
        return False
    if entries:
        storage.delete(partition, recursive=True)
    return True


def _clean_records(
    config: TableConfig,
    state: TableState,
    deleted: Mapping[str, list[str]],
    dropped: Sequence[str] = (),
) -> list[MdtRecord]:
    """The MDT records of a clean: the files deleted, and their column stats. A partition the
    clean deletes is marked deleted in ``__all_partitions__`` and its ``files`` record is deleted,
    as Apache Hudi 1.x's cleaner writes them."""
    records = [files_record(p, {}, names) for p, names in deleted.items() if p not in dropped]
    if dropped:
        records.append(all_partitions_record([], deleted=dropped))
        records.extend(delete_partition_record(p) for p in dropped)
    if K.COLUMN_STATS in config.metadata_partitions_inflight:
        # Being built by an indexer, so not readable: delete every indexed column's entry of the
        # files (a delete of an entry never written is a no-op when merged).
        types = {f.name: f.type for f in state.schema}
        columns = columns_to_index(state.schema, column_list=indexed_columns(state.storage), missing_ok=True)
        for p, names in deleted.items():
            for n in names:
                for col in columns:
                    if col in types:
                        rng = ColumnRange(col, None, None, 0, 0, 0, 0)
                        records.append(column_stats_record(p, n, rng, types[col], is_deleted=True))
    elif K.COLUMN_STATS in config.metadata_partitions:
        mdt = state.metadata_table
        types = {f.name: f.type for f in state.schema}
        # the stats the deleted files have, of any top-level column (not only the indexed ones:
        # the list may have changed since they were written)
        stats = mdt.stats.column_stats_of_files(deleted, sorted(types)) if mdt is not None else []
        doomed = {(p, n) for p, names in deleted.items() for n in names}
        for s in stats:
            if (s.partition_path, s.file_name) in doomed and s.column_name in types:
                rng = ColumnRange(
                    s.column_name, s.min_value, s.max_value, s.null_count or 0, s.value_count or 0, 0, 0
                )
                records.append(
                    column_stats_record(
                        s.partition_path, s.file_name, rng, types[s.column_name], is_deleted=True
                    )
                )
    return records
