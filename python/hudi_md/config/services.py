"""Table services run by writers: clean, compaction (MERGE_ON_READ) and timeline archival
(Apache Hudi's keys; the older ``hoodie.cleaner.*`` names are read too)."""

from __future__ import annotations

from hudi_md.config.option import boolean, enum, integer, string, string_list

WRITE = ("write",)

CLEAN_AUTOMATIC = boolean(
    "hoodie.clean.automatic",
    True,
    hudi=True,
    scopes=WRITE,
    doc="Clean after each commit: delete file versions the cleaner policy no longer keeps.",
)
CLEANER_POLICY = enum(
    "hoodie.clean.policy",
    "KEEP_LATEST_COMMITS",
    ("KEEP_LATEST_COMMITS", "KEEP_LATEST_FILE_VERSIONS", "KEEP_LATEST_BY_HOURS"),
    hudi="KEEP_LATEST_COMMITS",
    scopes=WRITE,
    alternatives=("hoodie.cleaner.policy",),
    doc="What the cleaner keeps: the file versions the last hoodie.clean.commits.retained commits read "
    "(KEEP_LATEST_COMMITS) or the last hoodie.clean.fileversions.retained versions of each file group "
    "(KEEP_LATEST_FILE_VERSIONS). KEEP_LATEST_BY_HOURS is not implemented.",
)
CLEANER_COMMITS_RETAINED = integer(
    "hoodie.clean.commits.retained",
    10,
    hudi=10,
    scopes=WRITE,
    alternatives=("hoodie.cleaner.commits.retained",),
    doc="KEEP_LATEST_COMMITS: how many commits' readers the cleaner keeps files for.",
)
CLEANER_FILE_VERSIONS_RETAINED = integer(
    "hoodie.clean.fileversions.retained",
    3,
    hudi=3,
    scopes=WRITE,
    alternatives=("hoodie.cleaner.fileversions.retained",),
    doc="KEEP_LATEST_FILE_VERSIONS: how many versions of each file group the cleaner keeps.",
)
CLEANER_HOURS_RETAINED = integer(
    "hoodie.clean.hours.retained",
    24,
    hudi=24,
    scopes=WRITE,
    alternatives=("hoodie.cleaner.hours.retained",),
    doc="KEEP_LATEST_BY_HOURS: the hours of file versions kept (an argument of the run_clean procedure).",
)
CLEAN_TRIGGER_STRATEGY = enum(
    "hoodie.clean.trigger.strategy",
    "NUM_COMMITS",
    ("NUM_COMMITS",),
    hudi="NUM_COMMITS",
    scopes=WRITE,
    doc="When a scheduled clean runs: after hoodie.clean.trigger.max.commits commits (the only strategy).",
)
CLEAN_MAX_COMMITS = integer(
    "hoodie.clean.trigger.max.commits",
    1,
    hudi=1,
    scopes=WRITE,
    alternatives=("hoodie.clean.max.commits",),
    doc="NUM_COMMITS: commits since the last clean before a clean runs.",
)
COMPACT_INLINE = boolean(
    "hoodie.compact.inline",
    False,
    hudi=False,
    scopes=WRITE,
    doc="MERGE_ON_READ: compact after a commit once hoodie.compact.inline.max.delta.commits delta commits "
    "have accumulated.",
)
COMPACT_INLINE_MAX_DELTA_COMMITS = integer(
    "hoodie.compact.inline.max.delta.commits",
    5,
    hudi=5,
    scopes=WRITE,
    doc="MERGE_ON_READ: delta commits since the last compaction before one is due.",
)
COMPACT_TRIGGER_STRATEGY = enum(
    "hoodie.compact.inline.trigger.strategy",
    "NUM_COMMITS",
    ("NUM_COMMITS", "NUM_COMMITS_AFTER_LAST_REQUEST", "TIME_ELAPSED", "NUM_AND_TIME", "NUM_OR_TIME"),
    hudi="NUM_COMMITS",
    scopes=WRITE,
    doc="When compaction is due; hudi-md implements NUM_COMMITS only.",
)
ARCHIVE_AUTOMATIC = boolean(
    "hoodie.archive.automatic",
    True,
    hudi=True,
    scopes=WRITE,
    doc="Archive the timeline after each commit: move the oldest instants to the archived timeline.",
)
KEEP_MIN_COMMITS = integer(
    "hoodie.keep.min.commits",
    20,
    hudi=20,
    scopes=WRITE,
    doc="Archival keeps at least this many commits on the active timeline.",
)
KEEP_MAX_COMMITS = integer(
    "hoodie.keep.max.commits",
    30,
    hudi=30,
    scopes=WRITE,
    doc="Archival runs once the active timeline holds more than this many commits.",
)

# Clustering (Apache Hudi's SparkSizeBasedClusteringPlanStrategy and SparkSortAndSizeExecutionStrategy):
# rewrites a partition's small file groups into few, sorted ones, as a replacecommit.
CLUSTERING_INLINE = boolean(
    "hoodie.clustering.inline",
    False,
    hudi=False,
    scopes=WRITE,
    alternatives=("hoodie.datasource.clustering.inline.enable",),
    doc="Cluster after a commit once hoodie.clustering.inline.max.commits commits have completed since the "
    "last clustering (pending clustering plans run first).",
)
CLUSTERING_INLINE_MAX_COMMITS = integer(
    "hoodie.clustering.inline.max.commits",
    4,
    hudi=4,
    scopes=WRITE,
    doc="Inline clustering: completed commits since the last clustering before one is scheduled.",
)
CLUSTERING_SCHEDULE_INLINE = boolean(
    "hoodie.clustering.schedule.inline",
    False,
    hudi=False,
    scopes=WRITE,
    doc="Schedule (not run) a clustering after a commit when one is due, for another job to run "
    "(hudi-md clustering run, or Apache Hudi).",
)
CLUSTERING_SMALL_FILE_LIMIT = integer(
    "hoodie.clustering.plan.strategy.small.file.limit",
    300 * 1024 * 1024,
    hudi=300 * 1024 * 1024,
    scopes=WRITE,
    long=True,
    doc="Only file slices whose base file is smaller than this (bytes) are clustered.",
)
CLUSTERING_TARGET_FILE_MAX_BYTES = integer(
    "hoodie.clustering.plan.strategy.target.file.max.bytes",
    1024 * 1024 * 1024,
    hudi=1024 * 1024 * 1024,
    scopes=WRITE,
    long=True,
    doc="The size of the files clustering writes: a group of N bytes of input is written as "
    "ceil(N / this) file groups.",
)
CLUSTERING_MAX_BYTES_PER_GROUP = integer(
    "hoodie.clustering.plan.strategy.max.bytes.per.group",
    2 * 1024 * 1024 * 1024,
    hudi=2 * 1024 * 1024 * 1024,
    scopes=WRITE,
    long=True,
    doc="The input bytes of one clustering group (a base file's size; a slice without one counts as "
    "hoodie.parquet.max.file.size): larger inputs are split into more groups.",
)
CLUSTERING_MAX_NUM_GROUPS = integer(
    "hoodie.clustering.plan.strategy.max.num.groups",
    30,
    hudi=30,
    scopes=WRITE,
    doc="At most this many clustering groups in one plan (per partition and overall).",
)
CLUSTERING_SINGLE_GROUP = boolean(
    "hoodie.clustering.plan.strategy.single.group.clustering.enabled",
    True,
    hudi=True,
    scopes=WRITE,
    doc="Whether a partition's last group of a single file slice is clustered too (rewritten alone).",
)
CLUSTERING_SORT_COLUMNS = string_list(
    "hoodie.clustering.plan.strategy.sort.columns",
    None,
    hudi=None,
    scopes=WRITE,
    doc="Columns clustering sorts records by (recorded in the plan), in the order of "
    "hoodie.layout.optimize.strategy.",
)
CLUSTERING_PARTITION_SELECTED = string_list(
    "hoodie.clustering.plan.strategy.partition.selected",
    None,
    hudi=None,
    scopes=WRITE,
    doc="Only these partitions (comma-separated paths) are clustered.",
)
CLUSTERING_PARTITION_REGEX = string(
    "hoodie.clustering.plan.strategy.partition.regex.pattern",
    None,
    hudi=None,
    scopes=WRITE,
    doc="Only partitions whose path matches this regular expression (whole) are clustered.",
)
LAYOUT_OPTIMIZE_STRATEGY = string(
    "hoodie.layout.optimize.strategy",
    "LINEAR",
    hudi="LINEAR",
    scopes=WRITE,
    doc="How clustering orders records by the sort columns: LINEAR (lexicographic), ZORDER (z-order "
    "curve; also z-order) or HILBERT (Hilbert curve).",
)
CLUSTERING_ASYNC = boolean(
    "hoodie.clustering.async.enabled",
    False,
    hudi=False,
    scopes=WRITE,
    alternatives=("hoodie.datasource.clustering.async.enable",),
    doc="Another job runs clustering plans (Apache Hudi's async clustering): writers leave pending "
    "clusterings to it, and their updates of file groups a pending plan reads are refused. Otherwise "
    "a writer first runs the clusterings left pending (scheduled, or a run that died).",
)
