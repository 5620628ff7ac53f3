"""MDT health figures: file groups, files and sizes per MDT partition, compaction lag."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hudi_md.metadata import metrics
from hudi_md.table.state import TableState
from hudi_md.table.timeline import COMMIT, DELTA_COMMIT

if TYPE_CHECKING:
    from hudi_md.metadata.reader import MetadataTable


def metadata_stats(table: TableState, mdt: MetadataTable) -> dict[str, Any]:
    completed = mdt.timeline.completed()
    last_compaction = completed.of_actions(COMMIT).last()
    deltacommits = completed.of_actions(DELTA_COMMIT)
    since = [
        i
        for i in deltacommits
        if last_compaction is None or i.requested_time > last_compaction.requested_time
    ]
    partitions: dict[str, Any] = {}
    for name in sorted(mdt.available_partitions):
        slices = mdt.file_slices(name)
        partitions[name] = {
            "file_groups": len(slices),
            "base_files": sum(1 for s in slices if s.base_file is not None),
            "log_files": sum(len(s.log_files) for s in slices),
            "max_log_files_per_file_group": max((len(s.log_files) for s in slices), default=0),
            "total_size": sum(s.total_size for s in slices),
        }
    return {
        "path": table.uri,
        "metadata_path": mdt.storage.uri(),
        "table_version": mdt.config.table_version,
        "available_partitions": sorted(mdt.available_partitions),
        "inflight_partitions": table.config.metadata_partitions_inflight,
        "mdt_instants": len(mdt.timeline),
        "latest_mdt_instant": last.requested_time if (last := completed.last()) else None,
        "last_mdt_compaction": last_compaction.requested_time if last_compaction else None,
        "deltacommits_since_last_compaction": len(since),
        "valid_instants": len(mdt.valid_instants),
        "partition_count": len(mdt.files.all_partitions()),
        "partitions": partitions,
        "reader_metrics": dict(mdt.read_counters),
        "metrics": metrics.snapshot(),
        "storage": table.storage_stats(),
    }
