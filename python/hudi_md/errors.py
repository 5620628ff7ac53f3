"""Every error hudi-md raises on purpose derives from :class:`HudiMdError`."""

from __future__ import annotations


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


class UnsupportedSparkVersionError(HudiMdError, ValueError):
    """The Spark (PySpark) version has no ``hudi-md`` shim; ``supported`` lists the Spark lines."""

    def __init__(self, version: str, supported: tuple[str, ...]) -> None:
        super().__init__(
            f"hudi-md's Spark shim supports Spark {' and '.join(supported)}, not Spark {version}"
        )
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
