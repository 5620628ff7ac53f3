"""The keys of ``hoodie.properties`` (the table config) that hudi-md reads or writes.

Apache Hudi writes them when it creates a table; hudi-md reads them with
:class:`hudi_md.table.config.TableConfig`, whose defaults these are. Several are also write options
(a new table takes them from the writer; an existing table's own win).
"""

from __future__ import annotations

from hudi_md.config.option import boolean, enum, integer, register_prefix, string, string_list

TABLE = ("table",)
TABLE_WRITE = ("table", "write")

TABLE_NAME = string(
    "hoodie.table.name",
    None,
    hudi=None,
    scopes=("table", "write", "metastore"),
    doc="The table's name. Required to create a table; a write to an existing table may leave it unset "
    "(a different name is refused).",
)
DATABASE_NAME = string(
    "hoodie.database.name",
    "default",
    hudi=None,
    scopes=("table", "write", "metastore"),
    differs_from_hudi=True,
    doc="The database the table belongs to. A table created without one records `default` (Apache "
    "Hudi records none): the metastore registers the table under that name.",
)
TABLE_TYPE = enum(
    "hoodie.table.type",
    "COPY_ON_WRITE",
    ("COPY_ON_WRITE", "MERGE_ON_READ"),
    hudi="COPY_ON_WRITE",
    scopes=TABLE,
    doc="COPY_ON_WRITE or MERGE_ON_READ, as the table was created (the write option is "
    "hoodie.datasource.write.table.type).",
)
TABLE_VERSION = integer(
    "hoodie.table.version",
    9,
    hudi=9,
    scopes=TABLE,
    doc="The table's format version. hudi-md reads versions 6, 8 and 9, and creates and writes 9.",
)
INITIAL_VERSION = integer(
    "hoodie.table.initial.version",
    9,
    hudi=9,
    scopes=TABLE,
    doc="The version the table was created with.",
)
RECORD_KEY_FIELDS = string_list(
    "hoodie.table.recordkey.fields",
    None,
    hudi=None,
    scopes=TABLE,
    doc="The record key columns (comma-separated); none: the table's keys are generated.",
)
PARTITION_FIELDS = string_list(
    "hoodie.table.partition.fields",
    None,
    hudi=None,
    scopes=TABLE,
    doc="The partition columns (comma-separated; CustomKeyGenerator's `field:TYPE` form too).",
)
PRECOMBINE_FIELD = string_list(
    "hoodie.table.precombine.field",
    None,
    hudi=None,
    scopes=TABLE,
    doc="The ordering field of tables written before Apache Hudi 1.1 (read when "
    "hoodie.table.ordering.fields is not set).",
)
ORDERING_FIELDS = string_list(
    "hoodie.table.ordering.fields",
    None,
    hudi=None,
    scopes=TABLE_WRITE,
    doc="The ordering (event time) columns: of two records with the same key, the one with the "
    "larger value wins under EVENT_TIME_ORDERING.",
)
KEYGEN_CLASS = string(
    "hoodie.table.keygenerator.class",
    None,
    hudi=None,
    scopes=TABLE,
    doc="The key generator class of tables written before version 8.",
)
KEYGEN_TYPE = string(
    "hoodie.table.keygenerator.type",
    None,
    hudi=None,
    scopes=TABLE,
    doc="The key generator (SIMPLE, COMPLEX, NON_PARTITION, CUSTOM, TIMESTAMP, ...); unset, it follows "
    "hoodie.table.keygenerator.class, else the partition fields.",
)
HIVE_STYLE_PARTITIONING = boolean(
    "hoodie.datasource.write.hive_style_partitioning",
    False,
    hudi=False,
    scopes=TABLE_WRITE,
    doc="Partition paths as `column=value` (true) or the value alone (false).",
)
URL_ENCODE_PARTITIONING = boolean(
    "hoodie.datasource.write.partitionpath.urlencode",
    False,
    hudi=False,
    scopes=TABLE_WRITE,
    doc="URL-encode partition values in paths (a value holding `/` stays one directory).",
)
DROP_PARTITION_COLUMNS = boolean(
    "hoodie.datasource.write.drop.partition.columns",
    False,
    hudi=False,
    scopes=TABLE,
    doc="Whether the data files leave the partition columns out (hudi-md writes them in).",
)
BASE_FILE_FORMAT = string(
    "hoodie.table.base.file.format",
    "PARQUET",
    hudi="PARQUET",
    scopes=TABLE,
    doc="The base files' format; hudi-md reads and writes PARQUET.",
)
TIMELINE_LAYOUT_VERSION = integer(
    "hoodie.timeline.layout.version",
    2,
    hudi=2,
    scopes=TABLE,
    doc="The timeline's layout: 2 for tables of version 8 and later (hudi-md creates those), 1 before; "
    "unset in a table's config, it follows the table version.",
)
TIMELINE_PATH = string(
    "hoodie.timeline.path",
    "timeline",
    hudi="timeline",
    scopes=TABLE,
    doc="The active timeline's folder under .hoodie (tables of version 8 and later).",
)
TIMELINE_HISTORY_PATH = string(
    "hoodie.timeline.history.path",
    "history",
    hudi="history",
    scopes=TABLE,
    doc="The archived (LSM) timeline's folder under the active timeline's folder.",
)
ARCHIVELOG_FOLDER = string(
    "hoodie.archivelog.folder",
    "archived",
    hudi="archived",
    scopes=TABLE,
    doc="The archived timeline's folder under .hoodie (tables before version 8).",
)
METADATA_PARTITIONS = string_list(
    "hoodie.table.metadata.partitions",
    None,
    hudi=None,
    scopes=TABLE,
    doc="The metadata table's partitions readers may use (files, column_stats, ...).",
)
METADATA_PARTITIONS_INFLIGHT = string_list(
    "hoodie.table.metadata.partitions.inflight",
    None,
    hudi=None,
    scopes=TABLE,
    doc="The metadata table's partitions being built (not yet readable).",
)
RECORD_MERGE_MODE = enum(
    "hoodie.record.merge.mode",
    None,
    ("EVENT_TIME_ORDERING", "COMMIT_TIME_ORDERING", "CUSTOM"),
    hudi=None,
    scopes=TABLE_WRITE,
    doc="How records with the same key merge: EVENT_TIME_ORDERING (the larger ordering value wins) or "
    "COMMIT_TIME_ORDERING (the later write wins). Unset: event time when the table has ordering fields.",
)
PAYLOAD_CLASS = string(
    "hoodie.compaction.payload.class",
    None,
    hudi=None,
    scopes=TABLE,
    doc="The record payload class of tables written before version 8, from which the merge mode "
    "follows; a payload hudi-md cannot map onto a merge mode is refused.",
)
LEGACY_PAYLOAD_CLASS = string(
    "hoodie.table.legacy.payload.class",
    None,
    hudi=None,
    scopes=TABLE,
    doc="The payload class of a table upgraded to version 9 (read like hoodie.compaction.payload.class).",
)
MERGE_STRATEGY_ID = string(
    "hoodie.record.merge.strategy.id",
    None,
    hudi=None,
    scopes=TABLE,
    alternatives=("hoodie.compaction.record.merger.strategy",),
    doc="The record merger's strategy id; only Hudi's built-in event-time, commit-time and "
    "payload-based strategies are read.",
)
PARTIAL_UPDATE_MODE = string(
    "hoodie.table.partial.update.mode",
    None,
    hudi=None,
    scopes=TABLE,
    doc="Partial updates; a table using them is refused (hudi-md merges whole records).",
)
POPULATE_META_FIELDS = boolean(
    "hoodie.populate.meta.fields",
    True,
    hudi=True,
    scopes=TABLE,
    doc="Whether records carry the _hoodie_* meta columns; hudi-md writes only tables that do.",
)
CREATE_SCHEMA = string(
    "hoodie.table.create.schema",
    None,
    hudi=None,
    scopes=TABLE,
    doc="The Avro schema the table was created with (before any commit recorded one).",
)
TIMELINE_TIMEZONE = enum(
    "hoodie.table.timeline.timezone",
    "LOCAL",
    ("LOCAL", "UTC"),
    hudi="LOCAL",
    scopes=TABLE,
    doc="The time zone of the table's instant times.",
)
CDC_ENABLED = boolean(
    "hoodie.table.cdc.enabled",
    False,
    hudi=False,
    scopes=TABLE,
    doc="Change data capture logs; hudi-md does not write them, so it refuses to write such a table.",
)
CHECKSUM = integer(
    "hoodie.table.checksum",
    None,
    hudi=None,
    scopes=TABLE,
    long=True,
    doc="CRC32 of `<database>.<table>`, checked on every read of hoodie.properties.",
)
TABLE_FORMAT = string(
    "hoodie.table.format",
    "native",
    hudi="native",
    scopes=TABLE,
    doc="The table's format; hudi-md creates `native` Hudi tables.",
)
INDEX_DEFS_PATH = string(
    "hoodie.table.index.defs.path",
    None,
    hudi=None,
    scopes=TABLE,
    doc="Where the index definitions (index.json) live, relative to the table.",
)
PAYLOAD_DELETE_FIELD = string(
    "hoodie.payload.delete.field",
    None,
    hudi=None,
    scopes=TABLE,
    doc="A column that marks a record deleted when it holds hoodie.payload.delete.marker (Apache "
    "Hudi's custom delete marker).",
)
PAYLOAD_DELETE_MARKER = string(
    "hoodie.payload.delete.marker",
    None,
    hudi=None,
    scopes=TABLE,
    doc="The value of hoodie.payload.delete.field that marks a record deleted.",
)
# Table configs of version 9 store merge properties under this prefix
# (hoodie.record.merge.property.hoodie.payload.delete.field).
MERGE_PROPERTY_PREFIX = register_prefix(
    "hoodie.record.merge.property.",
    "Merge properties a version-9 table config stores (e.g. its custom delete marker).",
)
