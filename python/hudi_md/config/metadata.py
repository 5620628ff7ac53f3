"""The metadata table's options (``hoodie.metadata.*``): whether readers and writers use it, and
which indexes writers keep in it."""

from __future__ import annotations

from hudi_md.config.option import boolean, integer, string_list

READ_WRITE = ("read", "write")
WRITE = ("write",)

METADATA_ENABLE = boolean(
    "hoodie.metadata.enable",
    True,
    hudi=True,
    scopes=READ_WRITE,
    doc="Use the metadata table. Readers: unset, they use it when the table has one and list storage "
    "if it cannot be read; true makes such a failure an error; false lists storage. Writers: false "
    "deletes the metadata table.",
)
COLUMN_STATS_ENABLE = boolean(
    "hoodie.metadata.index.column.stats.enable",
    True,
    hudi=True,
    scopes=WRITE,
    doc="Keep the column_stats index (per-file column ranges, for data skipping). True is Apache Hudi's "
    "default for Spark writers (its engine-neutral default is false).",
)
COLUMN_STATS_COLUMNS = string_list(
    "hoodie.metadata.index.column.stats.column.list",
    None,
    hudi=None,
    scopes=WRITE,
    doc="The columns column_stats indexes (comma-separated). Unset: those the table's index.json names, "
    "else the first hoodie.metadata.index.column.stats.max.columns.to.index columns.",
)
COLUMN_STATS_MAX_COLUMNS = integer(
    "hoodie.metadata.index.column.stats.max.columns.to.index",
    32,
    hudi=32,
    scopes=WRITE,
    doc="How many leading columns column_stats indexes when no column list is given.",
)
PARTITION_STATS_ENABLE = boolean(
    "hoodie.metadata.index.partition.stats.enable",
    None,
    hudi=None,
    scopes=WRITE,
    doc="Keep the partition_stats index (per-partition column ranges). Unset: as "
    "hoodie.metadata.index.column.stats.enable, which Apache Hudi 1.2 always follows; false keeps "
    "column_stats without it.",
)
RECORD_INDEX_ENABLE = boolean(
    "hoodie.metadata.global.record.level.index.enable",
    False,
    hudi=False,
    scopes=READ_WRITE,
    alternatives=("hoodie.metadata.record.index.enable",),
    doc="Keep the record index (key to file group). Readers: true prunes by it, false never does; unset, "
    "it prunes when every write on the active timeline looked its keys up (no duplicate keys).",
)
BLOOM_INDEX_ENABLE = boolean(
    "hoodie.metadata.index.bloom.filter.enable",
    False,
    hudi=False,
    scopes=WRITE,
    doc="Keep the bloom_filters index (each base file's bloom filter of record keys).",
)
COMPACT_MAX_DELTA_COMMITS = integer(
    "hoodie.metadata.compact.max.delta.commits",
    10,
    hudi=10,
    scopes=WRITE,
    doc="Compact the metadata table after this many of its delta commits.",
)
COLUMN_STATS_FILE_GROUP_COUNT = integer(
    "hoodie.metadata.index.column.stats.file.group.count",
    2,
    hudi=2,
    scopes=WRITE,
    doc="File groups of the column_stats partition, fixed when it is built.",
)
PARTITION_STATS_FILE_GROUP_COUNT = integer(
    "hoodie.metadata.index.partition.stats.file.group.count",
    1,
    hudi=1,
    scopes=WRITE,
    doc="File groups of the partition_stats partition, fixed when it is built.",
)
BLOOM_FILTER_FILE_GROUP_COUNT = integer(
    "hoodie.metadata.index.bloom.filter.file.group.count",
    4,
    hudi=4,
    scopes=WRITE,
    doc="File groups of the bloom_filters partition, fixed when it is built.",
)
RECORD_INDEX_MIN_FILE_GROUP_COUNT = integer(
    "hoodie.metadata.global.record.level.index.min.filegroup.count",
    10,
    hudi=10,
    scopes=WRITE,
    alternatives=("hoodie.metadata.record.index.min.filegroup.count",),
    doc="File groups of the record_index partition, fixed when it is built.",
)
INDEX_CHECK_TIMEOUT = integer(
    "hoodie.metadata.index.check.timeout.seconds",
    900,
    hudi=900,
    scopes=WRITE,
    doc="How long an indexer waits for writes that began before its schedule, in seconds; then the "
    "indexing is rolled back.",
)
