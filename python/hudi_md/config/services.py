"""Table services run by writers: clean, compaction (MERGE_ON_READ) and timeline archival
(Apache Hudi's keys; the older ``hoodie.cleaner.*`` names are read too)."""

from __future__ import annotations

from hudi_md.config.option import boolean, enum, integer

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
