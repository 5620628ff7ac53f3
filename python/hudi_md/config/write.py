"""Write options: Apache Hudi's data source keys (the table a write creates, the operation, the
records' keys and ordering), file sizing, schema evolution and concurrency."""

from __future__ import annotations

from hudi_md.config.option import boolean, double, enum, integer, string, string_list

WRITE = ("write",)

OPERATIONS = (
    "insert",
    "bulk_insert",
    "upsert",
    "delete",
    "insert_overwrite",
    "insert_overwrite_table",
    "delete_partition",
)
MERGE_MODES = ("EVENT_TIME_ORDERING", "COMMIT_TIME_ORDERING", "CUSTOM")

OPERATION = enum(
    "hoodie.datasource.write.operation",
    "upsert",
    OPERATIONS,
    hudi="upsert",
    scopes=WRITE,
    doc="The write operation (as the `operation` argument of hudi_md.write): " + ", ".join(OPERATIONS) + ".",
)
RECORD_KEY = string_list(
    "hoodie.datasource.write.recordkey.field",
    None,
    hudi=None,
    scopes=WRITE,
    doc="The record key columns of a new table (comma-separated). Unset: a table without record keys, "
    "whose keys are generated.",
)
PARTITION_PATH = string_list(
    "hoodie.datasource.write.partitionpath.field",
    None,
    hudi=None,
    scopes=WRITE,
    doc="The partition columns of a new table (comma-separated; `field:SIMPLE` for CustomKeyGenerator). "
    "Unset: not partitioned.",
)
PRECOMBINE = string_list(
    "hoodie.datasource.write.precombine.field",
    None,
    hudi=None,
    scopes=WRITE,
    alternatives=("hoodie.datasource.write.ordering.fields",),
    doc="The ordering columns of a new table (as hoodie.table.ordering.fields, which wins): of two "
    "records with the same key the one with the larger value wins under EVENT_TIME_ORDERING.",
)
TABLE_TYPE = enum(
    "hoodie.datasource.write.table.type",
    "COPY_ON_WRITE",
    ("COPY_ON_WRITE", "MERGE_ON_READ"),
    hudi="COPY_ON_WRITE",
    scopes=WRITE,
    doc="The type of a new table: COPY_ON_WRITE (updates rewrite base files) or MERGE_ON_READ (updates go "
    "to log files, merged on read and by compaction).",
)
KEYGEN_TYPE = string(
    "hoodie.datasource.write.keygenerator.type",
    None,
    hudi="SIMPLE",
    scopes=WRITE,
    differs_from_hudi=True,
    doc="The key generator: SIMPLE, COMPLEX, NON_PARTITION or CUSTOM (with SIMPLE fields). Unset: inferred "
    "from the key and partition fields as Apache Hudi infers its key generator (NON_PARTITION without "
    "partition fields, COMPLEX with several key or partition fields, else SIMPLE, Hudi's declared "
    "default).",
)
KEYGEN_CLASS = string(
    "hoodie.datasource.write.keygenerator.class",
    None,
    hudi="org.apache.hudi.keygen.SimpleKeyGenerator",
    scopes=WRITE,
    differs_from_hudi=True,
    doc="The key generator by class: SimpleKeyGenerator, ComplexKeyGenerator, NonpartitionedKeyGenerator "
    "or CustomKeyGenerator. Unset: inferred as for hoodie.datasource.write.keygenerator.type (Apache Hudi "
    "infers it the same way; SimpleKeyGenerator is its declared default).",
)
WRITE_MERGE_MODE = enum(
    "hoodie.write.record.merge.mode",
    None,
    MERGE_MODES,
    hudi=None,
    scopes=WRITE,
    doc="The merge mode of a new table (wins over hoodie.record.merge.mode): EVENT_TIME_ORDERING or "
    "COMMIT_TIME_ORDERING; CUSTOM mergers are Java code hudi-md cannot run.",
)
MAX_FILE_SIZE = integer(
    "hoodie.parquet.max.file.size",
    120 * 1024 * 1024,
    hudi=120 * 1024 * 1024,
    scopes=WRITE,
    long=True,
    doc="The target size of a base file in bytes: inserts fill file groups up to it, then start new ones.",
)
# Small-file handling (Apache Hudi's UpsertPartitioner): where insert and upsert put new records.
SMALL_FILE_LIMIT = integer(
    "hoodie.parquet.small.file.limit",
    100 * 1024 * 1024,
    hudi=100 * 1024 * 1024,
    scopes=WRITE,
    doc="insert and upsert: a file group whose latest base file is smaller than this (bytes) takes the "
    "write's new records of its partition first, up to hoodie.parquet.max.file.size (on MERGE_ON_READ "
    "only groups without log files, hoodie.merge.small.file.group.candidates.limit of them, each then "
    "written as a new base file). 0 turns it off: new records always start new file groups.",
)
SMALL_FILE_GROUP_CANDIDATES_LIMIT = integer(
    "hoodie.merge.small.file.group.candidates.limit",
    1,
    hudi=1,
    scopes=WRITE,
    doc="MERGE_ON_READ: how many small file groups of a partition (without log files, smallest base "
    "file first) may take the write's new records.",
)
RECORD_SIZE_ESTIMATE = integer(
    "hoodie.copyonwrite.record.size.estimate",
    1024,
    hudi=1024,
    scopes=WRITE,
    doc="The bytes a record is taken to need in a base file when no recent commit wrote enough to "
    "measure it (hoodie.record.size.estimation.threshold): it sizes how many new records a small file "
    "and a new file group take.",
)
RECORD_SIZE_ESTIMATION_THRESHOLD = double(
    "hoodie.record.size.estimation.threshold",
    1.0,
    hudi=1.0,
    scopes=WRITE,
    doc="A recent commit measures the record size (its base files' bytes over their records) when it "
    "wrote more than this times hoodie.parquet.small.file.limit bytes; the newest such commit decides.",
)
RECORD_SIZE_ESTIMATOR_MAX_COMMITS = integer(
    "_hoodie.record.size.estimator.max.commits",
    5,
    hudi=5,
    scopes=WRITE,
    doc="How many of the newest commits and deltacommits are read to measure the record size.",
)
RECORD_SIZE_ESTIMATOR_METADATA_SIZE = integer(
    "hoodie.record.size.estimator.average.metadata.size",
    0,
    hudi=0,
    scopes=WRITE,
    long=True,
    doc="Bytes of each base file that are not records (its footer), left out when the record size is "
    "measured.",
)
INSERT_AUTO_SPLIT = boolean(
    "hoodie.copyonwrite.insert.auto.split",
    True,
    hudi=True,
    scopes=WRITE,
    doc="New file groups of insert and upsert take hoodie.parquet.max.file.size over the record size "
    "records each; false: hoodie.copyonwrite.insert.split.size each.",
)
INSERT_SPLIT_SIZE = integer(
    "hoodie.copyonwrite.insert.split.size",
    500000,
    hudi=500000,
    scopes=WRITE,
    doc="The records of each new file group when hoodie.copyonwrite.insert.auto.split is false.",
)
ALLOW_DUPLICATE_ON_INSERTS = boolean(
    "hoodie.merge.allow.duplicate.on.inserts",
    True,
    hudi=True,
    scopes=WRITE,
    doc="insert: records that go into a small file group are appended to its stored rows as they are "
    "(a key it holds is then held twice, as when an insert starts a new file group); false: they are "
    "merged with the stored rows by key, as an upsert's are.",
)
LOG_BLOCK_FORMAT = enum(
    "hoodie.logfile.data.block.format",
    "avro",
    ("avro", "parquet"),
    hudi=None,
    scopes=WRITE,
    differs_from_hudi=True,
    doc="The format of data blocks in MERGE_ON_READ log files: avro or parquet. Apache Hudi declares no "
    "default and writes avro for tables with Parquet base files, as hudi-md does.",
)
PARQUET_BLOOM_FILTER = boolean(
    "hoodie.parquet.bloom.filter.enabled",
    True,
    hudi=True,
    scopes=WRITE,
    doc="Write a bloom filter of the record keys into each base file's footer.",
)
COMBINE_BEFORE_INSERT = boolean(
    "hoodie.combine.before.insert",
    False,
    hudi=False,
    scopes=WRITE,
    doc="insert and bulk_insert: merge records with the same key within the batch first.",
)
COMMIT_METADATA_KEY_PREFIX = string(
    "hoodie.datasource.write.commitmeta.key.prefix",
    "_",
    hudi="_",
    scopes=WRITE,
    doc="Options whose keys start with this prefix are recorded in the commit's extraMetadata.",
)
PARTITIONS_TO_DELETE = string_list(
    "hoodie.datasource.write.partitions.to.delete",
    None,
    hudi=None,
    scopes=WRITE,
    doc="delete_partition: the partition paths to delete (comma-separated).",
)
STATIC_OVERWRITE_PARTITIONS = string_list(
    "hoodie.static.overwrite.partition.paths",
    (),
    hudi=(),
    scopes=WRITE,
    doc="insert_overwrite: partition paths replaced whether or not rows go there (Spark SQL's static "
    "INSERT OVERWRITE ... PARTITION (...); Apache Hudi's internal key).",
)
SET_NULL_FOR_MISSING = boolean(
    "hoodie.write.set.null.for.missing.columns",
    False,
    hudi=False,
    scopes=WRITE,
    doc="Records lacking some of the table's columns: write nulls into them (instead of refusing the write).",
)
RECONCILE_SCHEMA = boolean(
    "hoodie.datasource.write.reconcile.schema",
    False,
    hudi=False,
    scopes=WRITE,
    doc="Keep the table's schema when the records lack some of its columns and add none (nulls written).",
)
ALLOW_COLUMN_DROP = boolean(
    "hoodie.datasource.write.schema.allow.auto.evolution.column.drop",
    False,
    hudi=False,
    scopes=WRITE,
    doc="Records lacking some of the table's columns: drop those columns from the table's schema.",
)
BASE_PATH = string(
    "hoodie.base.path",
    None,
    hudi=None,
    scopes=WRITE,
    doc="The table's base path; the writer sets it (an absolute hoodie.write.lock.filesystem.path is "
    "resolved against it).",
)
CONCURRENCY_MODE = enum(
    "hoodie.write.concurrency.mode",
    "SINGLE_WRITER",
    ("SINGLE_WRITER", "OPTIMISTIC_CONCURRENCY_CONTROL", "NON_BLOCKING_CONCURRENCY_CONTROL"),
    hudi="SINGLE_WRITER",
    scopes=WRITE,
    doc="SINGLE_WRITER refuses a second writer while one writes; OPTIMISTIC_CONCURRENCY_CONTROL (with a "
    "hoodie.write.lock.provider) lets writers of different file groups run together. "
    "NON_BLOCKING_CONCURRENCY_CONTROL is not implemented.",
)
LOCK_PROVIDER = string(
    "hoodie.write.lock.provider",
    None,
    hudi=None,
    scopes=WRITE,
    doc="The lock of optimistic concurrency control: org.apache.hudi.client.transaction.lock."
    "FileSystemBasedLockProvider (Hudi's lock file, shared with Apache Hudi writers) or "
    "InProcessLockProvider (hudi-md's own lock file).",
)
LOCK_WAIT_TIME_MS = integer(
    "hoodie.write.lock.wait_time_ms",
    60_000,
    hudi=60_000,
    scopes=WRITE,
    doc="How long a writer waits for the table lock, in milliseconds.",
)
FS_LOCK_PATH = string(
    "hoodie.write.lock.filesystem.path",
    None,
    hudi=None,
    scopes=WRITE,
    doc="FileSystemBasedLockProvider: the folder of the lock file, inside the table. Unset: .hoodie.",
)
FS_LOCK_EXPIRE = integer(
    "hoodie.write.lock.filesystem.expire",
    0,
    hudi=0,
    scopes=WRITE,
    doc="FileSystemBasedLockProvider: minutes after which an Apache Hudi writer's lock file may be broken; "
    "0 never.",
)
HEARTBEAT_INTERVAL_MS = integer(
    "hoodie.client.heartbeat.interval_in_ms",
    60_000,
    hudi=60_000,
    scopes=WRITE,
    doc="How often a writer's heartbeat (and lock) is renewed, in milliseconds.",
)
HEARTBEAT_TOLERABLE_MISSES = integer(
    "hoodie.client.heartbeat.tolerable.misses",
    2,
    hudi=2,
    scopes=WRITE,
    doc="Heartbeats a writer may miss before its pending instant (or lock) counts as abandoned.",
)
