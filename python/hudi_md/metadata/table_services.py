"""The MDT's own table services: compaction (every file group's latest slice merged into a new
base HFile), clean (older slices deleted), and dropping what a dead writer left of them. Each is an
instant on the MDT's timeline, written through :class:`~hudi_md.table.timeline_writer.PendingInstant`.
The caller holds the data table's lock.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import Any

from hudi_md.config import metadata as M
from hudi_md.formats.commit_metadata import WriteStat
from hudi_md.metadata import metrics
from hudi_md.metadata.compaction_columns import compacted_cells
from hudi_md.metadata.reader import MetadataTable
from hudi_md.metadata.records_builder import MdtRecord
from hudi_md.metadata.writer import (
    INIT_INSTANT_PREFIX,
    WRITE_TOKEN,
    MetadataTableWriter,
    mdt_write_stat,
)
from hudi_md.table.config import TableConfig
from hudi_md.table.fs_view import FileSlice
from hudi_md.table.timeline import COMMIT, COMPACTION, DELTA_COMMIT
from hudi_md.table.timeline_writer import PendingInstant, new_instant_time

log = logging.getLogger(__name__)


def deltacommits_since_compaction(writer: MetadataTableWriter) -> int:
    tl = writer.timeline().completed()
    last = tl.of_actions(COMMIT).last()
    return sum(
        1
        for i in tl.of_actions(DELTA_COMMIT)
        if (last is None or i.requested_time > last.requested_time)
        and not i.requested_time.startswith(INIT_INSTANT_PREFIX)
    )


def resolve_pending_services(writer: MetadataTableWriter) -> list[str]:
    """Drop the MDT compaction or clean a dead writer left pending (the caller holds the
    table lock): a compaction's new base files and its instant files go (readers never used
    them: its instant is not completed; the next due compaction merges the same slices), a
    clean's instant files go (what it deleted was superseded; the next clean finds the rest).
    MDT deltacommits are the data instants' and are undone with them. Returns the instants."""
    from hudi_md.table.timeline import CLEAN

    done = []
    for instant in writer.timeline().pending():
        t = instant.requested_time
        if instant.action == COMPACTION:
            for part in writer.storage.list(""):
                if not part.is_dir or part.name.startswith("."):
                    continue
                for e in writer.storage.list(part.name):
                    if e.name.endswith(f"_{t}.hfile"):
                        writer.storage.delete(e.path)
        elif instant.action != CLEAN:
            continue
        log.warning("dropping MDT %s %s left pending by a failed writer", instant.action, t)
        # inflight first: a requested instant alone is still a pending plan
        for state in ("inflight", "requested"):
            name = f".hoodie/timeline/{t}.{instant.action}.{state}"
            if writer.storage.exists(name):
                writer.storage.delete(name)
        done.append(t)
    return done


def compact_if_due(writer: MetadataTableWriter, reader: MetadataTable) -> str | None:
    limit = M.COMPACT_MAX_DELTA_COMMITS.get(writer.options)
    if deltacommits_since_compaction(writer) < limit:
        return None
    return compact(writer, reader)


def compact(writer: MetadataTableWriter, reader: MetadataTable) -> str:
    """Merge every file group's latest slice into a new base HFile (all logs valid by now)."""
    with metrics.timed("compaction"):
        instant = _compact(writer, reader)
    clean(writer)
    return instant


def clean(writer: MetadataTableWriter, keep_slices: int = 2) -> str | None:
    """Delete MDT file slices older than the latest ``keep_slices`` of each file group (the
    newest base and the one before it, for readers that planned on it), as an MDT clean."""
    from hudi_md.formats.commit_metadata_writer import (
        clean_metadata_record,
        cleaner_plan_record,
        serialize_instant_metadata,
    )
    from hudi_md.table.fs_view import FileSystemView
    from hudi_md.table.listing import StorageListing
    from hudi_md.table.timeline import CLEAN

    config = TableConfig.load(writer.storage)
    timeline = writer.timeline()
    view = FileSystemView(config, timeline, StorageListing(writer.storage))
    partitions = [e.name for e in writer.storage.list("") if e.is_dir and not e.name.startswith(".")]
    doomed: dict[str, list[str]] = defaultdict(list)
    for p, groups in view.file_groups(partitions).items():
        for g in groups:
            for t in sorted(g.slices, reverse=True)[keep_slices:]:
                s = g.slices[t]
                if s.base_file is not None:
                    doomed[p].append(s.base_file.name)
                doomed[p].extend(lf.name for lf in s.log_files)
    if not doomed:
        return None
    last = timeline.last()
    instant = new_instant_time(after=last.requested_time if last else None)
    last_time = last.requested_time if last else ""
    policy = "KEEP_LATEST_FILE_VERSIONS"
    plan = cleaner_plan_record(
        earliest_to_retain=None,
        last_completed=last_time,
        policy=policy,
        file_uris={p: [writer.storage.uri(f"{p}/{n}") for n in names] for p, names in doomed.items()},
    )
    plan_bytes = serialize_instant_metadata("cleaner_plan", plan)
    pending = PendingInstant.begin(writer.timeline_writer(), instant, CLEAN, plan_bytes, inflight=plan_bytes)
    for p, names in doomed.items():
        for n in names:
            if writer.storage.exists(f"{p}/{n}"):
                writer.storage.delete(f"{p}/{n}")
    meta = clean_metadata_record(
        instant=instant, earliest_to_retain=None, last_completed=last_time, policy=policy, deleted=doomed
    )
    pending.complete(serialize_instant_metadata("clean", meta))
    return instant


def _compact(writer: MetadataTableWriter, reader: MetadataTable) -> str:
    from hudi_md.formats.commit_metadata_writer import commit_metadata_record, serialize_instant_metadata

    last = writer.timeline().last()
    instant = new_instant_time(after=last.requested_time if last else None)
    operations: list[dict[str, Any]] = []
    slices_by_partition = {p: reader.file_slices(p) for p in sorted(reader.available_partitions)}
    for p, slices in slices_by_partition.items():
        for s in slices:
            operations.append(
                {
                    "baseInstantTime": s.base_instant,
                    "deltaFilePaths": [lf.name for lf in s.log_files],
                    "dataFilePath": s.base_file.name if s.base_file else None,
                    "fileId": s.file_id,
                    "partitionPath": p,
                    "metrics": {},
                    "bootstrapFilePath": None,
                }
            )
    plan = {
        "operations": operations,
        "extraMetadata": None,
        "version": 1,
        "strategy": None,
        "preserveHoodieMetadata": None,
    }
    pending = PendingInstant.begin(
        writer.timeline_writer(), instant, COMPACTION, serialize_instant_metadata("compaction_plan", plan)
    )
    stats: dict[str, list[WriteStat]] = {}
    for p, slices in slices_by_partition.items():
        for s in slices:
            data, count = _compacted_base_file(writer, reader, p, s)
            name = f"{s.file_id}_{WRITE_TOKEN}_{instant}.hfile"
            writer.storage.write_bytes(f"{p}/{name}", data)
            stats.setdefault(p, []).append(mdt_write_stat(p, s.file_id, name, len(data), count, log=False))
    meta = commit_metadata_record(
        stats,
        operation_type="COMPACT",
        extra_metadata={"schema": writer.commit_schema_json},
        compacted=True,
    )
    pending.complete(serialize_instant_metadata("commit", meta))
    return instant


def _compacted_base_file(
    writer: MetadataTableWriter, reader: MetadataTable, partition: str, file_slice: FileSlice
) -> tuple[bytes, int]:
    """The new base HFile of one MDT file slice and its record count: column-wise (a record
    copied as it is unless its key has several events to merge), or record by record when the
    column-wise merge declines."""
    found = compacted_cells(
        reader.record_index.slice_events(file_slice),
        partition,
        writer.record_schema_json,
        lambda record: writer.encode(to_payload(record)),
    )
    if found is not None:
        keys, values = found
        return writer.hfile_of_columns(partition, keys, values, base_file=True), len(keys)
    merged = reader.read_slice_records(file_slice)
    live = [
        MdtRecord(partition, k, to_payload(v))
        for k, v in sorted(merged.items(), key=lambda kv: kv[0].encode("utf-8"))
        if v is not None and keep_after_compaction(v)
    ]
    return writer.hfile_bytes(partition, live, base_file=True), len(live)


def keep_after_compaction(record: dict[str, Any]) -> bool:
    from hudi_md.metadata.records import is_live

    return is_live(record)


def to_payload(record: dict[str, Any]) -> dict[str, Any]:
    """A reader-normalised record back into a writable payload (re-wrapping stat values)."""
    from hudi_md.metadata.records_builder import empty_payload, wrap_typed_stat

    payload = empty_payload(record["type"])
    for name in (
        "filesystemMetadata",
        "BloomFilterMetadata",
        "recordIndexMetadata",
        "SecondaryIndexMetadata",
    ):
        payload[name] = record.get(name)
    cs = record.get("ColumnStatsMetadata")
    if cs is not None:
        value_type = cs.get("valueType")
        payload["ColumnStatsMetadata"] = {
            **cs,
            "minValue": wrap_typed_stat(cs.get("minValue"), value_type),
            "maxValue": wrap_typed_stat(cs.get("maxValue"), value_type),
        }
    return payload
