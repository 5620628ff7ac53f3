"""``hoodie.properties``: the table config, with Hudi's checksum and backup-file protocol."""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone

from hudi_md.config import table as T
from hudi_md.config.option import ConfigOption
from hudi_md.errors import TableConfigError, TableNotFoundError
from hudi_md.storage import Storage

PROPERTIES_FILE = ".hoodie/hoodie.properties"
PROPERTIES_BACKUP_FILE = ".hoodie/hoodie.properties.backup"

# The keys (hudi_md.config.table declares them; their defaults are Hudi 1.x's). The file is read
# with Hudi's own leniency (a boolean is true when it says "true"), not as the options are.
TABLE_NAME = T.TABLE_NAME.key
DATABASE_NAME = T.DATABASE_NAME.key
TABLE_TYPE = T.TABLE_TYPE.key
TABLE_VERSION = T.TABLE_VERSION.key
INITIAL_VERSION = T.INITIAL_VERSION.key
RECORD_KEY_FIELDS = T.RECORD_KEY_FIELDS.key
PARTITION_FIELDS = T.PARTITION_FIELDS.key
PRECOMBINE_FIELD = T.PRECOMBINE_FIELD.key
ORDERING_FIELDS = T.ORDERING_FIELDS.key
KEYGEN_CLASS = T.KEYGEN_CLASS.key
KEYGEN_TYPE = T.KEYGEN_TYPE.key
HIVE_STYLE_PARTITIONING = T.HIVE_STYLE_PARTITIONING.key
URL_ENCODE_PARTITIONING = T.URL_ENCODE_PARTITIONING.key
DROP_PARTITION_COLUMNS = T.DROP_PARTITION_COLUMNS.key
BASE_FILE_FORMAT = T.BASE_FILE_FORMAT.key
TIMELINE_LAYOUT_VERSION = T.TIMELINE_LAYOUT_VERSION.key
TIMELINE_PATH = T.TIMELINE_PATH.key
TIMELINE_HISTORY_PATH = T.TIMELINE_HISTORY_PATH.key
ARCHIVELOG_FOLDER = T.ARCHIVELOG_FOLDER.key
METADATA_PARTITIONS = T.METADATA_PARTITIONS.key
METADATA_PARTITIONS_INFLIGHT = T.METADATA_PARTITIONS_INFLIGHT.key
RECORD_MERGE_MODE = T.RECORD_MERGE_MODE.key
PAYLOAD_CLASS = T.PAYLOAD_CLASS.key
LEGACY_PAYLOAD_CLASS = T.LEGACY_PAYLOAD_CLASS.key
MERGE_STRATEGY_ID = T.MERGE_STRATEGY_ID.key
PARTIAL_UPDATE_MODE = T.PARTIAL_UPDATE_MODE.key
POPULATE_META_FIELDS = T.POPULATE_META_FIELDS.key
CREATE_SCHEMA = T.CREATE_SCHEMA.key
TIMELINE_TIMEZONE = T.TIMELINE_TIMEZONE.key
CDC_ENABLED = T.CDC_ENABLED.key
CHECKSUM = T.CHECKSUM.key
TABLE_FORMAT = T.TABLE_FORMAT.key
INDEX_DEFS_PATH = T.INDEX_DEFS_PATH.key

SUPPORTED_VERSIONS = (6, 8, 9)


def compute_checksum(database: str, table: str) -> int:
    """Hudi's ``hoodie.table.checksum``: CRC32 of ``"<database>.<table>"``."""
    return zlib.crc32(f"{database}.{table}".encode())


# --- Java properties text ----------------------------------------------------------------------


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java ``Properties.store`` output (comments, escapes, continuation lines)."""
    out: dict[str, str] = {}
    logical: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].lstrip()
        i += 1
        if not line or line[0] in "#!":
            continue
        # A line ending in an odd number of backslashes continues on the next line.
        while _continues(line) and i < len(lines):
            line = line[:-1] + lines[i].lstrip()
            i += 1
        logical.append(line)
    for line in logical:
        key, value = _split_key_value(line)
        out[_unescape(key)] = _unescape(value)
    return out


def _continues(line: str) -> bool:
    n = len(line) - len(line.rstrip("\\"))
    return n % 2 == 1


def _split_key_value(line: str) -> tuple[str, str]:
    i = 0
    while i < len(line):
        c = line[i]
        if c == "\\":
            i += 2
            continue
        if c in "=: \t\f":
            key = line[:i]
            rest = line[i:].lstrip(" \t\f")
            if rest and rest[0] in "=:" and c in " \t\f":
                rest = rest[1:].lstrip(" \t\f")
            elif c in "=:":
                rest = line[i + 1 :].lstrip(" \t\f")
            return key, rest
        i += 1
    return line, ""


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(s: str) -> str:
    if "\\" not in s:
        return s
    out: list[str] = []
    i = 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            n = s[i + 1]
            if n == "u" and i + 6 <= len(s):
                out.append(chr(int(s[i + 2 : i + 6], 16)))
                i += 6
                continue
            out.append(_ESCAPES.get(n, n))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _escape(s: str, *, is_key: bool) -> str:
    out: list[str] = []
    for i, c in enumerate(s):
        if c == "\\":
            out.append("\\\\")
        elif c in "=:#!":
            out.append("\\" + c)
        elif c == " " and (is_key or i == 0):
            out.append("\\ ")
        elif c in "\t\n\r\f":
            out.append("\\" + {"\t": "t", "\n": "n", "\r": "r", "\f": "f"}[c])
        elif ord(c) > 0x7E or ord(c) < 0x20:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(c)
    return "".join(out)


def format_properties(props: Mapping[str, str], *, now: datetime | None = None) -> str:
    """Serialise as Hudi does: two comment lines, then ``key=value`` lines (sorted, for stable diffs)."""
    now = now or datetime.now(timezone.utc)
    lines = [
        f"#Updated at {now.strftime('%Y-%m-%dT%H:%M:%S.%fZ')}",
        f"#{now.strftime('%a %b %d %H:%M:%S UTC %Y')}",
    ]
    lines += [f"{_escape(k, is_key=True)}={_escape(v, is_key=False)}" for k, v in sorted(props.items())]
    return "\n".join(lines) + "\n"


# --- the table config ---------------------------------------------------------------------------


@dataclass(frozen=True)
class TableConfig:
    """The parsed ``hoodie.properties`` of a table (data table or MDT)."""

    props: Mapping[str, str]
    source: str = ""
    warnings: tuple[str, ...] = field(default=())
    # the file's bytes, when parsed from them (a later read of the same bytes is this config)
    data: bytes = field(default=b"", compare=False, repr=False)

    @classmethod
    def load(cls, storage: Storage, known: TableConfig | None = None) -> TableConfig:
        """Read ``.hoodie/hoodie.properties``, falling back to the backup as Hudi does.

        The checksum (when present) must match; a file that fails it is only replaced by a
        backup that passes, otherwise :class:`TableConfigError` names the file. ``known``: a
        config loaded before, returned itself when the file read holds the bytes it was parsed
        from (a table kept open checks its config at every request; parsing is most of that).
        """
        problems: list[str] = []
        for path in (PROPERTIES_FILE, PROPERTIES_BACKUP_FILE):
            try:
                data = storage.read_bytes(path)
            except FileNotFoundError:
                problems.append(f"{storage.uri(path)}: missing")
                continue
            if known is not None and known.data and data == known.data and known.source == storage.uri(path):
                return known
            try:
                config = cls.from_bytes(data, storage.uri(path))
            except TableConfigError as e:
                problems.append(str(e))
                continue
            return config
        if all(p.endswith(": missing") for p in problems):
            raise TableNotFoundError(
                f"no Hudi table at {storage.uri()}: {storage.uri(PROPERTIES_FILE)} not found"
            )
        raise TableConfigError(storage.uri(PROPERTIES_FILE), "; ".join(problems))

    @classmethod
    def from_bytes(cls, data: bytes, source: str = "<bytes>") -> TableConfig:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            try:
                text = data.decode("latin-1")
            except UnicodeDecodeError as e:  # pragma: no cover - latin-1 decodes anything
                raise TableConfigError(source, f"not text: {e}") from e
        props = parse_properties(text)
        if TABLE_NAME not in props:
            raise TableConfigError(source, f"no {TABLE_NAME} (not a hoodie.properties file, or truncated)")
        if CHECKSUM in props:
            try:
                stored = int(props[CHECKSUM])
            except ValueError as e:
                raise TableConfigError(source, f"{CHECKSUM} is not a number: {props[CHECKSUM]!r}") from e
            expected = compute_checksum(props.get(DATABASE_NAME, ""), props[TABLE_NAME])
            if stored != expected:
                raise TableConfigError(
                    source, f"checksum mismatch: stored {stored}, computed {expected} (file corrupted?)"
                )
        version = props.get(TABLE_VERSION)
        if version is None or not version.isdigit():
            raise TableConfigError(source, f"{TABLE_VERSION} missing or not a number: {version!r}")
        return cls(props=props, source=source, data=data)

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.props.get(key, default)

    def get_bool(self, key: str, default: bool) -> bool:
        value = self.props.get(key)
        return default if value is None or value == "" else value.strip().lower() == "true"

    def get_list(self, key: str) -> list[str]:
        value = self.props.get(key, "")
        return [v.strip() for v in value.split(",") if v.strip()]

    # Typed views of the keys readers need.

    @property
    def table_name(self) -> str:
        return self.props[TABLE_NAME]

    @property
    def database_name(self) -> str:
        return self.props.get(DATABASE_NAME, "")

    @property
    def table_version(self) -> int:
        return int(self.props[TABLE_VERSION])

    @property
    def table_type(self) -> str:
        return self.props.get(TABLE_TYPE, T.TABLE_TYPE.default)

    @property
    def is_mor(self) -> bool:
        return self.table_type == "MERGE_ON_READ"

    @property
    def record_key_fields(self) -> list[str]:
        return self.get_list(RECORD_KEY_FIELDS)

    @property
    def partition_specs(self) -> list[str]:
        """The partition fields as stored (v8+ CustomKeyGenerator's `field:TYPE` included)."""
        return self.get_list(PARTITION_FIELDS)

    @property
    def partition_fields(self) -> list[str]:
        # v8+ CustomKeyGenerator stores `field:TYPE`; the type is not part of the column name.
        return [f.split(":", 1)[0] for f in self.partition_specs]

    @property
    def ordering_fields(self) -> list[str]:
        fields = self.get_list(ORDERING_FIELDS)
        return fields or self.get_list(PRECOMBINE_FIELD)

    @property
    def keygen(self) -> str:
        """Key generator type, normalised to v8+'s names (SIMPLE, COMPLEX, TIMESTAMP, ...)."""
        if KEYGEN_TYPE in self.props:
            return self.props[KEYGEN_TYPE]
        cls_name = self.props.get(KEYGEN_CLASS, "")
        short = cls_name.rsplit(".", 1)[-1]
        mapping = {
            "SimpleKeyGenerator": "SIMPLE",
            "ComplexKeyGenerator": "COMPLEX",
            "TimestampBasedKeyGenerator": "TIMESTAMP",
            "CustomKeyGenerator": "CUSTOM",
            "NonpartitionedKeyGenerator": "NON_PARTITION",
            "GlobalDeleteKeyGenerator": "GLOBAL_DELETE",
            "HoodieTableMetadataKeyGenerator": "HOODIE_TABLE_METADATA",
        }
        if short in mapping:
            return mapping[short]
        if not cls_name:
            return "NON_PARTITION" if not self.partition_fields else "SIMPLE"
        return short

    @property
    def hive_style_partitioning(self) -> bool:
        return self.get_bool(HIVE_STYLE_PARTITIONING, T.HIVE_STYLE_PARTITIONING.default)

    @property
    def url_encode_partitioning(self) -> bool:
        return self.get_bool(URL_ENCODE_PARTITIONING, T.URL_ENCODE_PARTITIONING.default)

    @property
    def drop_partition_columns(self) -> bool:
        return self.get_bool(DROP_PARTITION_COLUMNS, T.DROP_PARTITION_COLUMNS.default)

    @property
    def base_file_format(self) -> str:
        return self.props.get(BASE_FILE_FORMAT, T.BASE_FILE_FORMAT.default).upper()

    @property
    def timeline_layout_version(self) -> int:
        value = self.props.get(TIMELINE_LAYOUT_VERSION)
        if value:
            return int(value)
        return 2 if self.table_version >= 8 else 1

    @property
    def timeline_path(self) -> str:
        """Folder of the active timeline, relative to the table base path."""
        if self.timeline_layout_version >= 2 and self.table_version >= 8:
            return ".hoodie/" + self.timeline_folder
        return ".hoodie"

    @property
    def timeline_folder(self) -> str:
        """``hoodie.timeline.path``: the active timeline's folder under ``.hoodie`` (v8+)."""
        return self.props.get(TIMELINE_PATH) or T.TIMELINE_PATH.default

    @property
    def timeline_history_path(self) -> str:
        """Folder of the archived (LSM) timeline, relative to :attr:`timeline_path` (v8+)."""
        return self.props.get(TIMELINE_HISTORY_PATH) or T.TIMELINE_HISTORY_PATH.default

    @property
    def archivelog_folder(self) -> str:
        """Folder of the archived timeline under ``.hoodie`` (tables before version 8)."""
        return self.props.get(ARCHIVELOG_FOLDER) or T.ARCHIVELOG_FOLDER.default

    @property
    def metadata_partitions(self) -> list[str]:
        return self.get_list(METADATA_PARTITIONS)

    @property
    def metadata_partitions_inflight(self) -> list[str]:
        return self.get_list(METADATA_PARTITIONS_INFLIGHT)

    @property
    def record_merge_mode(self) -> str:
        mode = self.props.get(RECORD_MERGE_MODE)
        if mode:
            return mode
        # v6 tables: the default payload (OverwriteWithLatestAvroPayload before 0.14's
        # DefaultHoodieRecordPayload) orders by the precombine field when there is one.
        payload = self.props.get(PAYLOAD_CLASS, "") or self.props.get(LEGACY_PAYLOAD_CLASS, "")
        if payload.endswith("OverwriteWithLatestAvroPayload"):
            return "COMMIT_TIME_ORDERING"
        return "EVENT_TIME_ORDERING" if self.ordering_fields else "COMMIT_TIME_ORDERING"

    @property
    def stored_record_merge_mode(self) -> str | None:
        """``hoodie.record.merge.mode`` as stored (None: not stored; see :attr:`record_merge_mode`)."""
        return self.props.get(RECORD_MERGE_MODE) or None

    @property
    def payload_class(self) -> str | None:
        """The record payload class (``hoodie.compaction.payload.class``, else the legacy one)."""
        return self.props.get(PAYLOAD_CLASS) or self.props.get(LEGACY_PAYLOAD_CLASS) or None

    @property
    def merge_strategy_id(self) -> str | None:
        """The record merger's strategy id (its v6 key, ``hoodie.compaction.record.merger.strategy``,
        too)."""
        return next((self.props[k] for k in T.MERGE_STRATEGY_ID.keys if self.props.get(k)), None)

    @property
    def partial_update_mode(self) -> str | None:
        return self.props.get(PARTIAL_UPDATE_MODE) or None

    def merge_property(self, option: ConfigOption[str | None]) -> str | None:
        """A merge property (the custom delete marker's field and value): stored under its key, or
        (v9) under ``hoodie.record.merge.property.<key>``."""
        for key in (option.key, T.MERGE_PROPERTY_PREFIX + option.key):
            if self.props.get(key):
                return self.props[key]
        return None

    @property
    def populate_meta_fields(self) -> bool:
        return self.get_bool(POPULATE_META_FIELDS, T.POPULATE_META_FIELDS.default)

    @property
    def create_schema(self) -> str | None:
        return self.props.get(CREATE_SCHEMA)

    @property
    def timeline_timezone(self) -> str:
        return self.props.get(TIMELINE_TIMEZONE, T.TIMELINE_TIMEZONE.default)

    @property
    def cdc_enabled(self) -> bool:
        return self.get_bool(CDC_ENABLED, T.CDC_ENABLED.default)

    def to_dict(self) -> dict[str, str]:
        return dict(self.props)


def write_table_config(storage: Storage, props: Mapping[str, str]) -> TableConfig:
    """Write ``hoodie.properties`` with its checksum, as ``HoodieTableConfig.modify`` does:
    backup first, then the new file, re-read and verify, then drop the backup. Each file is
    written whole (temporary name and rename where that is atomic), and :meth:`TableConfig.load`
    falls back to the backup while the main file is missing or fails its checksum."""
    props = dict(props)
    props[CHECKSUM] = str(compute_checksum(props.get(DATABASE_NAME, ""), props[TABLE_NAME]))
    data = format_properties(props).encode("utf-8")
    if storage.exists(PROPERTIES_FILE):
        storage.write_atomic(PROPERTIES_BACKUP_FILE, storage.read_bytes(PROPERTIES_FILE))
    storage.write_atomic(PROPERTIES_FILE, data)
    config = TableConfig.from_bytes(storage.read_bytes(PROPERTIES_FILE), storage.uri(PROPERTIES_FILE))
    if storage.exists(PROPERTIES_BACKUP_FILE):
        storage.delete(PROPERTIES_BACKUP_FILE)
    return config


def update_table_config(storage: Storage, updates: Mapping[str, str | None]) -> TableConfig:
    """Set (or with ``None`` remove) keys of an existing table's config."""
    props = dict(TableConfig.load(storage).props)
    for k, v in updates.items():
        if v is None:
            props.pop(k, None)
        else:
            props[k] = v
    return write_table_config(storage, props)
