"""Every error hudi-md raises on purpose derives from :class:`HudiMdError`, and every one is
defined here, so that ``hudi_md.errors`` (and ``hudi_md``) name them all: a caller catches any of
them without importing the module that raises it (which may be the write side or Spark, loaded on
first use). ``tests/test_api_surface.py`` checks that no module defines another."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "ClusteringError",
    "CommitCompletedError",
    "CommitMetadataError",
    "CommitStateUnknownError",
    "CorruptFileError",
    "EngineJobError",
    "EngineUnavailableError",
    "HFileFormatError",
    "HeartbeatExpiredError",
    "HudiMdError",
    "IncompatibleSchemaChangeError",
    "IndexingTimeoutError",
    "InvalidOptionError",
    "LockError",
    "LockLostError",
    "LockTimeoutError",
    "LogFormatError",
    "MetadataRequiredError",
    "MetadataTableError",
    "MetastoreError",
    "MissingExtraError",
    "MissingSchemaFieldError",
    "ParquetFileError",
    "PendingClusteringError",
    "RecordMergeError",
    "SchemaEvolutionError",
    "StorageError",
    "StorageLayoutError",
    "TableConfigError",
    "TableExistsError",
    "TableNotFoundError",
    "UnknownOptionWarning",
    "UnsupportedFeatureError",
    "UnsupportedSparkVersionError",
    "WriteConflictError",
]


class HudiMdError(Exception):
    """Root of hudi-md's errors."""


class CorruptFileError(HudiMdError):
    """A file's bytes do not follow the format they claim; ``path`` names the file."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class HFileFormatError(CorruptFileError):
    """An HFile is truncated, corrupted or uses a feature we do not read."""


class LogFormatError(CorruptFileError):
    """A Hudi log file is truncated or corrupted."""


class ParquetFileError(CorruptFileError):
    """A Parquet file (base file or log-block content) cannot be read: truncated, corrupted, or not
    Parquet at all."""


class CommitMetadataError(CorruptFileError):
    """A timeline instant file (commit, clean, rollback, ...) cannot be decoded."""


class TableConfigError(CorruptFileError):
    """``hoodie.properties`` is missing, unreadable or fails its checksum."""


class UnsupportedFeatureError(HudiMdError):
    """The table or file uses a Hudi feature hudi-md refuses to read rather than guess at."""


class InvalidOptionError(HudiMdError, ValueError):
    """An option or argument passed by the caller is not valid; the message names it."""


class MetadataTableError(HudiMdError):
    """The metadata table cannot be used to answer a request."""


class TableNotFoundError(HudiMdError, FileNotFoundError):
    """No Hudi table at the given location."""


class MetadataRequiredError(MetadataTableError):
    """A table whose data files a federated storage strategy spreads over the storage path can only
    be listed through its metadata table: reading it with ``hoodie.metadata.enable=false``, or
    without a readable MDT, would find no data file under the table path."""


class StorageLayoutError(InvalidOptionError):
    """A table's storage layout cannot be what was asked: a table cannot switch its storage
    strategy or storage path after creation (its files would not be where the layout says)."""


class StorageError(HudiMdError, OSError):
    """A storage request failed: ``op`` on ``url``, after ``attempts`` tries; ``transient`` says
    whether the last failure looked temporary (the request was retried until the policy ran out)."""

    def __init__(self, op: str, url: str, cause: BaseException, *, transient: bool, attempts: int) -> None:
        kind = "transient failure, retries exhausted" if transient else "failed"
        super().__init__(f"{op} {url}: {kind} after {attempts} attempt(s): {type(cause).__name__}: {cause}")
        self.op = op
        self.url = url
        self.transient = transient
        self.attempts = attempts


class MissingExtraError(HudiMdError, ImportError):
    """A package hudi-md needs for what was asked is not installed: ``extra`` names the hudi-md
    extra that installs it (``pip install 'hudi-md[<extra>]'``), None when none does. An
    ``ImportError`` too, so code that caught the package's own ImportError still catches it."""

    def __init__(self, message: str, extra: str | None = None) -> None:
        super().__init__(message)
        self.extra = extra


class TableExistsError(HudiMdError, FileExistsError):
    """A Hudi table exists at the location a write must not find one (save mode errorifexists)."""


class UnsupportedSparkVersionError(HudiMdError, ValueError):
    """The Spark (PySpark) version has no ``hudi-md`` shim; ``supported`` lists the Spark lines."""

    def __init__(self, version: str, supported: tuple[str, ...]) -> None:
        super().__init__(f"hudi-md's Spark shim supports Spark {', '.join(supported)}, not Spark {version}")
        self.version = version
        self.supported = supported


class CommitStateUnknownError(HudiMdError):
    """Writing an instant's completed file failed and reading it back failed too: the commit may or
    may not have happened (Iceberg's "commit state unknown"). Read the timeline before writing again;
    the next writer resolves a commit that did not happen by rolling it back."""

    def __init__(self, instant_time: str, action: str, path: str, cause: BaseException) -> None:
        super().__init__(
            f"commit state unknown for {action} {instant_time}: writing {path} failed ({cause}) and "
            "reading it back failed too; check the timeline before retrying"
        )
        self.instant_time = instant_time
        self.action = action
        self.path = path


class CommitCompletedError(HudiMdError):
    """The write's commit completed (its rows are in the table), but something after it failed
    (an inline table service); ``instant`` is the completed commit."""

    def __init__(self, instant: str, message: str) -> None:
        super().__init__(message)
        self.instant = instant


class LockError(HudiMdError):
    """The table lock could not be acquired, kept or released."""


class LockTimeoutError(LockError):
    """The table lock could not be acquired in time (another live writer holds it)."""


class LockLostError(LockError):
    """This writer no longer holds the table lock (it was broken as stale, or its file changed)."""


class WriteConflictError(HudiMdError):
    """Optimistic concurrency control: another writer's commit (or a pending compaction or
    clustering) changed file groups this write also changed, after this write started. This write
    was rolled back and left nothing behind; retry it."""

    def __init__(
        self, instant_time: str, other_instant: str, other_action: str, file_groups: list[tuple[str, str]]
    ) -> None:
        shown = ", ".join(f"{p or '<root>'}/{fid}" for p, fid in file_groups[:5])
        more = f" and {len(file_groups) - 5} more" if len(file_groups) > 5 else ""
        super().__init__(
            f"write conflict: instant {instant_time} and {other_action} {other_instant} both changed "
            f"file group(s) {shown}{more}; {instant_time} was not committed (rolled back), retry the write"
        )
        self.instant_time = instant_time
        self.other_instant = other_instant
        self.other_action = other_action
        self.file_groups = file_groups


class HeartbeatExpiredError(HudiMdError):
    """Optimistic concurrency control: this write's instant was rolled back by another writer,
    or its heartbeat expired (``hoodie.client.heartbeat.*``), so that another writer may roll it
    back at any moment. Nothing was committed; retry the write."""

    def __init__(self, instant_time: str, reason: str) -> None:
        super().__init__(f"instant {instant_time} was not committed: {reason}; retry the write")
        self.instant_time = instant_time


class PendingClusteringError(HudiMdError):
    """A write would update file groups that a pending clustering reads: refused, as Apache
    Hudi's ``SparkRejectUpdateStrategy`` refuses it. Run the clustering first (``hudi-md
    clustering run``, or Apache Hudi); inserts are not affected."""

    def __init__(self, clustering_instant: str, file_groups: list[tuple[str, str]]) -> None:
        shown = ", ".join(f"{p or '<root>'}/{fid}" for p, fid in file_groups[:5])
        more = f" and {len(file_groups) - 5} more" if len(file_groups) > 5 else ""
        super().__init__(
            f"file group(s) {shown}{more} are in pending clustering {clustering_instant}; updates to "
            "them are refused until it completes (run it: 'hudi-md clustering run PATH'; Apache "
            "Hudi's SparkRejectUpdateStrategy)"
        )
        self.clustering_instant = clustering_instant
        self.file_groups = file_groups


class ClusteringError(HudiMdError):
    """A clustering plan that cannot run: a file it reads is gone, it names a file that is not
    Hudi's, or the instant asked for is no pending clustering."""


class IndexingTimeoutError(HudiMdError):
    """The indexer waited ``hoodie.metadata.index.check.timeout.seconds`` for writes that began
    before its schedule, and they did not finish. The indexing was rolled back whole (no pending
    instant, no partition left behind); schedule it again when they are done."""

    def __init__(
        self, instant: str, waiting_for: Sequence[str], timeout_s: float, uri: str, option: str
    ) -> None:
        super().__init__(
            f"indexing {instant} of {uri} timed out after {timeout_s:g} s ({option}) waiting "
            f"for write(s) {', '.join(waiting_for)} that began before it was scheduled; it was rolled "
            "back: schedule it again (hudi-md index schedule) once they complete"
        )
        self.instant = instant
        self.waiting_for = list(waiting_for)


class MetastoreError(HudiMdError):
    """The metastore server refused a request or could not be reached; ``code`` is its error code
    (``hudi_md.metastore.protocol.ErrorCode``: invalid, unauthorized, not_found, exists, conflict,
    too_large, internal) or ``unreachable``."""

    def __init__(self, message: str, code: str, status: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.status = status


class EngineUnavailableError(HudiMdError):
    """A plan's column_stats pruning was to run on the engine (Spark: Hudi's
    ``hoodie.metadata.index.column.stats.*`` rule, or ``hudi_md.planner.column.stats.memory.budget``)
    and none could be used: no session was given, or the planner could not attach to the driver.
    Raised only when reading the stats in process instead would exceed the memory budget (otherwise
    the planner reads them itself and its counters say ``column_stats_distributed: 0``)."""


class EngineJobError(HudiMdError):
    """The Spark job of a distributed plan failed or was cancelled (``cancelled``: the query's
    jobs were cancelled, e.g. its job group or tags); the message holds Spark's reason."""

    def __init__(self, message: str, cancelled: bool = False) -> None:
        super().__init__(message)
        self.cancelled = cancelled


class SchemaEvolutionError(HudiMdError, ValueError):
    """A write's records do not fit the table's schema as Apache Hudi 1.2 evolves it: a column's
    type changes in a way Hudi does not promote, a new column is not nullable, or a value cannot
    be converted to the column's type. Nothing was written."""


class MissingSchemaFieldError(SchemaEvolutionError):
    """The records lack columns the table has (Apache Hudi's ``MissingSchemaFieldException``);
    ``fields`` names them (nested ones dotted). Nothing was written. Hudi's opt-ins fill them with
    nulls instead (``hoodie.write.set.null.for.missing.columns=true``) or drop them from the table
    (``hoodie.datasource.write.schema.allow.auto.evolution.column.drop=true``)."""

    def __init__(self, table: str, fields: Sequence[str]) -> None:
        super().__init__(
            f"{table}: the records lack the table's column(s) {', '.join(fields)}; a write must carry "
            "every column of the table (set hoodie.write.set.null.for.missing.columns=true to write "
            "nulls into them instead). Nothing was written"
        )
        self.table = table
        self.fields = list(fields)


class IncompatibleSchemaChangeError(SchemaEvolutionError):
    """A column's type in the records cannot become the table's type or replace it; ``column``,
    ``table_type`` and ``incoming_type`` name them. Nothing was written."""

    def __init__(
        self, table: str, column: str, table_type: str, incoming_type: str, reason: str = ""
    ) -> None:
        super().__init__(
            f"{table}: column {column} is {table_type} in the table and {incoming_type} in the records; "
            + (reason or "Apache Hudi promotes neither type to the other")
            + ". Nothing was written"
        )
        self.table = table
        self.column = column
        self.table_type = table_type
        self.incoming_type = incoming_type


class RecordMergeError(HudiMdError, ValueError):
    """Records cannot be merged by the table's rules, where Apache Hudi 1.2 fails on the same input:
    under ``EVENT_TIME_ORDERING`` a record with a null ordering value meets another version of
    its key (in the batch or in the table). ``keys`` names some of them. Nothing was written."""

    def __init__(self, message: str, keys: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.keys = list(keys)


class UnknownOptionWarning(UserWarning):
    """An option key that looks like hudi-md's or Apache Hudi's (``hoodie.*``, ``hudi_md.*``) but is
    neither: most likely misspelt, and ignored. The message names the nearest known key. Warned once
    per key per process (:func:`hudi_md.config.check_options`)."""
