"""Compare what the MDT says with what storage holds (hudi-cli's ``metadata validate-files``), and
check its indexes against the table's files (the record index and partition stats checks of
Hudi's ``HoodieMetadataTableValidator``, as far as they decide whether reads can be trusted), the
index definitions against the indexes, and the table's schema against its earlier commits'."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa

from hudi_md.errors import CommitMetadataError
from hudi_md.formats.avro_arrow import META_COLUMNS
from hudi_md.metadata.indexing import IndexingState
from hudi_md.storage.federated import FederatedStorage
from hudi_md.table.fs_view import FileSlice, FileSystemView
from hudi_md.table.layout import storage_listing
from hudi_md.table.schema import parse_embedded_schema
from hudi_md.table.state import TableState


class HasState(Protocol):
    """What holds a table's state: ``hudi_md.open_table``'s ``Table`` (a layer above this one)."""

    @property
    def state(self) -> TableState: ...


# Differences of the whole table, not of a partition: described by their kind.
TABLE_KINDS = frozenset(["metadata_table_missing", "index_dropped", "schema_narrowed", "unreadable_file"])


@dataclass(frozen=True)
class Difference:
    kind: str  # partition_only_in_mdt | partition_only_in_storage | file_only_in_mdt | ...
    partition_path: str
    file_name: str = ""
    mdt_size: int | None = None
    storage_size: int | None = None
    detail: str = ""

    def describe(self) -> str:
        if self.kind in TABLE_KINDS:
            return f"{self.kind}: {self.detail}"
        where = self.partition_path or "<non-partitioned>"
        if self.detail:
            return f"{where}: {self.detail}"
        if self.kind.startswith("partition"):
            side = "MDT" if self.kind == "partition_only_in_mdt" else "storage"
            return f"partition {where!r} only in {side}"
        if self.kind == "size_mismatch":
            return f"{where}/{self.file_name}: size {self.mdt_size} in MDT, {self.storage_size} in storage"
        side = "MDT" if self.kind == "file_only_in_mdt" else "storage"
        return f"{where}/{self.file_name}: only in {side}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "partition_path": self.partition_path,
            "file_name": self.file_name,
            "mdt_size": self.mdt_size,
            "storage_size": self.storage_size,
            "detail": self.detail,
            "message": self.describe(),
        }


def validate_metadata_table(
    table: TableState | HasState, *, indexes: bool = True, progress: Callable[[str], None] | None = None
) -> list[Difference]:
    """Differences between the MDT-based and the listing-based view of committed files and, with
    ``indexes``, between the MDT's record index / partition stats and the latest file slices.

    Both sides go through the same timeline filtering, so files of inflight or failed instants
    (which the MDT rightly does not list) are not reported. Log file sizes are compared only when
    both are known: the MDT records sizes as of each commit, and v6 logs can grow by appends.

    The table's schema is checked too: a field an earlier completed commit's schema had and the
    latest one's lacks is a difference (``schema_narrowed``, :func:`_schema_narrowed_differences`).

    A file that cannot be read (a corrupt or torn instant, log or base file: the typed
    :class:`~hudi_md.errors.CorruptFileError`) is a difference naming it (``unreadable_file``), so
    ``metadata validate`` answers (exit 1) instead of failing.

    ``table``: a table state, or the ``Table`` of ``hudi_md.open_table``. ``progress`` is told
    each step as it starts (``metadata validate`` prints them on stderr).
    """
    from hudi_md.errors import CorruptFileError

    state = table if isinstance(table, TableState) else table.state
    say = progress or (lambda _step: None)
    try:
        diffs = _validate(state, indexes, say)
        say("comparing the table's schema with its earlier commits'")
        return [*diffs, *_schema_narrowed_differences(state)]
    except CorruptFileError as e:
        return [Difference("unreadable_file", "", detail=f"cannot validate: {e}")]


def _validate(table: TableState, indexes: bool, say: Callable[[str], None]) -> list[Difference]:
    mdt = table.metadata_table
    if mdt is None:
        # A table whose first writer died before creating the MDT, or with the MDT turned off:
        # an answer (a difference), not a crash.
        return [
            Difference(
                "metadata_table_missing",
                "",
                detail=f"{table.uri} has no readable metadata table (hoodie.table.metadata.partitions="
                f"{','.join(table.config.metadata_partitions) or 'none'}); "
                "`hudi-md metadata create` builds one",
            )
        ]
    listing = storage_listing(table.storage, table.config.to_dict())
    listed = table.storage.data if isinstance(table.storage, FederatedStorage) else table.storage
    say(f"comparing the MDT's files with a listing of {listed.uri()}")
    diffs: list[Difference] = []
    mdt_parts = set(mdt.files.all_partitions())
    storage_parts = set(listing.all_partitions())
    for p in sorted(mdt_parts - storage_parts):
        diffs.append(Difference("partition_only_in_mdt", p))
    storage_only = sorted(storage_parts - mdt_parts)
    visible = FileSystemView(table.config, table.timeline, listing).visible_files(storage_only)
    for p in storage_only:
        # A partition directory without any committed file (e.g. left by a failed first write)
        # is not data the MDT is missing.
        if visible.get(p):
            diffs.append(Difference("partition_only_in_storage", p))
    common = sorted(mdt_parts & storage_parts)
    mdt_files = FileSystemView(table.config, table.timeline, mdt.files).visible_files(common)
    storage_files = FileSystemView(table.config, table.timeline, listing).visible_files(common)
    for p in common:
        a, b = mdt_files.get(p, {}), storage_files.get(p, {})
        for name in sorted(set(a) - set(b)):
            diffs.append(Difference("file_only_in_mdt", p, name, mdt_size=a[name]))
        for name in sorted(set(b) - set(a)):
            diffs.append(Difference("file_only_in_storage", p, name, storage_size=b[name]))
        for name in sorted(set(a) & set(b)):
            if a[name] != b[name] and not name.startswith("."):
                diffs.append(Difference("size_mismatch", p, name, mdt_size=a[name], storage_size=b[name]))
    diffs.extend(_partition_path_differences(table, sorted(mdt_parts)))
    say("looking for files no instant wrote")
    diffs.extend(_foreign_file_differences(table, sorted(mdt_parts | storage_parts)))
    diffs.extend(_dropped_index_differences(table))
    if indexes and not diffs:
        slices = table.file_system_view().latest_file_slices(table.partitions())
        say(f"checking the record index and partition stats against {len(slices)} file slices")
        diffs.extend(_record_index_differences(table, slices))
        diffs.extend(_partition_stats_differences(table, slices))
    return diffs


def _dropped_index_differences(table: TableState) -> list[Difference]:
    """Indexes ``index.json`` defines that the table config lists neither as available nor as
    being built (nor a pending ``indexing`` instant plans), but that were in use once: a writer
    dropped them without their definition, as Apache Hudi 1.2's writers do with
    ``hoodie.metadata.auto.delete.partitions`` when their options do not enable an index
    (the table config entry and the MDT folder go, the definition stays); readers no longer use it.

    A definition no writer ever used is not a dropped index: Apache Hudi 1.2's ``CREATE INDEX
    record_index`` on a table without column stats defines ``column_stats`` too, and builds its
    MDT partition without ever listing it in the table config (:func:`_ever_in_use`)."""
    from hudi_md.metadata.indexing import indexing_state, planned_partitions
    from hudi_md.metadata.lifecycle import index_definitions

    defined = index_definitions(table.storage)
    if not defined:
        return []
    config = table.config
    kept = set(config.metadata_partitions) | set(config.metadata_partitions_inflight)
    missing = sorted(set(defined) - kept)
    if missing:
        state = indexing_state(table.storage, config, table.timeline)
        missing = sorted(set(missing) - planned_partitions(state.pending))
        if missing:
            indexed = _indexed_partitions(state)
            written = _mdt_writes(table)
            missing = [
                name
                for name in missing
                if _ever_in_use(name, indexed, written, table.storage.exists(f".hoodie/metadata/{name}"))
            ]
    return [
        Difference(
            "index_dropped",
            "",
            detail=f"index.json defines {name} but hoodie.table.metadata.partitions does not list it: a "
            "writer dropped the index (Apache Hudi 1.2 does when its options do not enable it: "
            "hoodie.metadata.auto.delete.partitions); build it again with `hudi-md index schedule` "
            "and `hudi-md index run`, or drop it with `hudi-md index drop`",
        )
        for name in missing
    ]


# an MDT partition any indexing instant planned: all of them when a plan cannot be read
_ANY = "*"


def _indexed_partitions(state: IndexingState) -> set[str]:
    """The MDT partitions the ``indexing`` instants of the active timeline (pending or
    completed) planned to build."""
    out: set[str] = set()
    plans = [p.plan for p in state.pending] + [plan for _, plan in state.completed]
    for plan in plans:
        out.update(plan.partition_names if plan is not None else (_ANY,))
    return out


def _mdt_writes(table: TableState) -> dict[str, bool]:
    """MDT partition -> whether an MDT deltacommit other than a partition's initialisation wrote
    it (or a replacecommit dropped its file groups), over the completed instants of the MDT's
    active timeline (absent: none wrote it; ``*``: an instant that cannot be read, which may
    have written any). MDT compactions do not count: they compact what is there, built or not."""
    from hudi_md.errors import CorruptFileError
    from hudi_md.metadata.writer import INIT_INSTANT_PREFIX
    from hudi_md.table.timeline import DELTA_COMMIT, REPLACE_COMMIT

    mdt = table.metadata_table
    out: dict[str, bool] = {}
    if mdt is None:
        return out
    for instant in mdt.timeline.completed().of_actions(DELTA_COMMIT, REPLACE_COMMIT):
        try:
            meta = mdt.timeline.metadata(instant)
        except CorruptFileError:
            out[_ANY] = True
            continue
        if instant.action == REPLACE_COMMIT:
            for partition in meta.get("partitionToReplaceFileIds") or {}:
                out[partition] = True
            continue
        # initialisations: hudi-md's and Hudi 1.x's 00000000000000NNN instants, or an older
        # Hudi's bulk insert of the partition's records
        init = instant.requested_time.startswith(INIT_INSTANT_PREFIX) or str(
            meta.get("operationType") or ""
        ).startswith("BULK_INSERT")
        for partition in meta.get("partitionToWriteStats") or {}:
            out[partition] = out.get(partition, False) or not init
    return out


def _ever_in_use(name: str, indexed: set[str], written: dict[str, bool], folder_exists: bool) -> bool:
    """Whether the MDT partition ``name`` was ever in the table config (available or being
    built), as far as storage shows it. It was when an ``indexing`` instant planned it, or when
    an MDT instant other than its initialisation wrote it (writers write only the partitions the
    table config lists), or when it was built and its folder is gone (dropping removes it).
    Not when nothing built it (a definition alone), nor when only its initialisation did and
    its folder is still there: a build the config never took (Apache Hudi 1.2's ``CREATE INDEX
    record_index`` builds column_stats that way, and leaves its definition)."""
    if name in indexed or _ANY in indexed or written.get(_ANY):
        return True
    if name not in written:
        return False
    return written[name] or not folder_exists


def _record_index_differences(table: TableState, slices: Sequence[FileSlice]) -> list[Difference]:
    """Every key of the latest slices is in the record index at (one of) its file groups, and the
    index holds no other key."""
    from hudi_md.metadata import keys as K
    from hudi_md.read.slice_reader import SliceRowReader

    mdt = table.metadata_table
    if mdt is None or K.RECORD_INDEX not in mdt.available_partitions:
        return []
    if "_hoodie_record_key" not in table.schema.names:
        return []
    reader = SliceRowReader(table)
    where: dict[str, set[tuple[str, str]]] = {}
    for s in slices:
        for k in reader.keys(s).to_pylist():
            where.setdefault(k, set()).add((s.partition_path, s.file_id))
    locations = mdt.record_index.locations()  # every indexed key, one scan
    out = []
    for k in sorted(where):
        loc = locations.get(k)
        if loc is None:
            p = sorted(where[k])[0][0]
            out.append(Difference("record_index_missing", p, detail=f"key {k!r} is not in the record index"))
        elif (loc.partition_path, loc.file_id) not in where[k]:
            out.append(
                Difference(
                    "record_index_location",
                    loc.partition_path,
                    detail=f"key {k!r} indexed at file group {loc.file_id}, stored in {sorted(where[k])}",
                )
            )
    for k in sorted(set(locations) - set(where)):
        loc = locations[k]
        out.append(
            Difference(
                "record_index_extra",
                loc.partition_path,
                detail=f"key {k!r} is indexed (file group {loc.file_id}) but not in the table",
            )
        )
    return out


def _partition_stats_differences(table: TableState, slices: Sequence[FileSlice]) -> list[Difference]:
    """Each partition's stats cover the column stats of the files of its latest slices (min no
    higher, max no lower): unsound stats would prune a partition that holds matching rows. Wider
    stats are allowed (Hudi 1.2 itself keeps replaced file groups' ranges until the next commit)."""
    from hudi_md.metadata import keys as K

    mdt = table.metadata_table
    if mdt is None or not {K.PARTITION_STATS, K.COLUMN_STATS} <= set(mdt.available_partitions):
        return []
    live = {(s.partition_path, n) for s in slices for n in _file_names(s)}
    ranges: dict[tuple[str, str], list[Any]] = {}
    for file_stat in mdt.stats.column_stats():
        if (file_stat.partition_path, file_stat.file_name) in live:
            ranges.setdefault((file_stat.partition_path, file_stat.column_name), []).append(file_stat)
    stats = {(st.partition_path, st.column_name): st for st in mdt.stats.partition_stats()}
    out = []
    for (p, col), files in sorted(ranges.items()):
        mins = [f.min_value for f in files if f.min_value is not None]
        maxs = [f.max_value for f in files if f.max_value is not None]
        if not mins and not maxs:
            continue
        st = stats.get((p, col))
        if st is None:
            out.append(Difference("partition_stats_missing", p, detail=f"no partition stats for {col}"))
            continue
        # A missing bound prunes nothing (sound) unless the stats say the partition holds only
        # nulls, which prunes every comparison.
        only_nulls = (
            st.null_count is not None and st.value_count is not None and st.null_count >= st.value_count
        )
        try:
            low_ok = not mins or (not only_nulls if st.min_value is None else st.min_value <= min(mins))
            high_ok = not maxs or (not only_nulls if st.max_value is None else st.max_value >= max(maxs))
            files_range = f"[{min(mins, default=None)}, {max(maxs, default=None)}]"
        except TypeError:
            continue  # values of different kinds (schema evolution): not comparable, not judged
        if not (low_ok and high_ok):
            out.append(
                Difference(
                    "partition_stats_unsound",
                    p,
                    detail=f"partition stats of {col} [{st.min_value}, {st.max_value}] do not cover the "
                    f"latest files' {files_range}",
                )
            )
    return out


def _file_names(s: FileSlice) -> list[str]:
    return ([s.base_file.name] if s.base_file else []) + [lf.name for lf in s.log_files]


def _partition_path_differences(table: TableState, partitions: Sequence[str]) -> list[Difference]:
    """Partitions holding live files whose path is not what Apache Hudi 1.2 writes for the values it
    stands for (tables written by hudi-md before 0.2 percent-encoded space, ``+`` and non-ASCII
    with URL encoding on): Hudi reads other values from them and its upserts of their keys land in
    other partitions. docs/reference/format-notes.md, "Partition paths", says how to rewrite such a
    table."""
    from hudi_md.table.partitions import PartitionScheme

    scheme = PartitionScheme(table.config)
    if not scheme.is_identity:
        return []
    suspect: dict[str, str] = {}
    for p in partitions:
        values = scheme.parse(p)
        if values is None:
            continue  # a path that does not carry its values (e.g. a value holding `/`)
        expected = scheme.path_of(values)
        if expected != p:
            suspect[p] = expected
    if not suspect:
        return []
    live = {s.partition_path for s in table.file_system_view().latest_file_slices(sorted(suspect))}
    rule = (
        "with hoodie.datasource.write.partitionpath.urlencode=true Hudi escapes only Hive's special "
        "characters (%XX for control characters and \" # % ' * / : = ? [ \\ ] ^ {), and writes space, "
        "+ and non-ASCII as they are"
        if scheme.url_encoded
        else "without URL encoding Hudi writes values as they are, null and empty as "
        "__HIVE_DEFAULT_PARTITION__"
    )
    return [
        Difference(
            "partition_path_encoding",
            p,
            detail=f"partition path {p!r} is not what Apache Hudi 1.2 writes for its values "
            f"({expected!r}; rule: {rule}); rewrite the table "
            "(docs/reference/format-notes.md, 'Partition paths')",
        )
        for p, expected in sorted(suspect.items())
        if p in live
    ]


def _foreign_file_differences(table: TableState, partitions: Sequence[str]) -> list[Difference]:
    """Data files under the table's directories that no instant wrote: what a writer other than
    Hudi leaves behind (Spark's ``part-*.parquet`` and ``_SUCCESS`` after ``INSERT INTO`` through
    a generic file source, copies, ...). No reader sees them, so their rows are silently missing.

    Every directory but ``.hoodie`` and hidden ones is walked (a foreign writer also creates new
    partition directories, without ``.hoodie_partition_metadata``). A file is foreign when its name
    is neither a Hudi base file nor a log file, or names an instant that is not on the active
    timeline in any state and is not older than it (older instants may be archived). Files of
    pending or failed instants are left to rollback; ``.hoodie_partition_metadata*``, other hidden
    files (Hadoop's ``.crc`` checksums) and CDC logs are not judged.

    A federated table (RFC-60) keeps its data files under the storage path: there a data file
    under the table path is foreign, and the storage path's folders of this table
    (:func:`_federated_foreign_files`) are judged by the same rule."""
    from hudi_md.table.filenames import BaseFileName, LogFileName

    judge = _instant_rule(table)
    out: list[Difference] = []
    pending = [""]
    while pending:
        directory = pending.pop()
        for e in table.storage.list(directory):
            name = e.path.rsplit("/", 1)[-1]
            if e.is_dir:
                if not name.startswith("."):
                    pending.append(e.path)
                continue
            if table.is_federated and (BaseFileName.parse(name) or LogFileName.parse(name)):
                reason: str | None = (
                    "a data file under the table path, where this table's storage strategy never puts one"
                )
            else:
                reason = judge(name)
            if reason is not None:
                out.append(_foreign(directory, name, e.size, e.path, reason))
    if isinstance(table.storage, FederatedStorage):
        out.extend(_federated_foreign_files(table, table.storage, partitions, judge))
    return sorted(out, key=lambda d: (d.partition_path, d.file_name))


def _foreign(partition: str, name: str, size: int | None, where: str, reason: str) -> Difference:
    """``where``: the file's path under the table path, or its URI under a storage path."""
    return Difference(
        "foreign_file",
        partition,
        name,
        storage_size=size,
        detail=f"{where}: no instant wrote this file ({reason}); another writer put it into the table "
        "and no reader sees its rows (write with hudi_md.write)",
    )


def _instant_rule(table: TableState) -> Callable[[str], str | None]:
    """Why a file named ``name`` in a partition is foreign, or None when an instant may have
    written it (or it is not judged: partition metadata, hidden files, CDC logs)."""
    from hudi_md.table.filenames import BaseFileName, LogFileName
    from hudi_md.table.listing import PARTITION_METAFILE_PREFIX

    instants = table.timeline.times()
    # Older writes may be archived: older than the first write on the active timeline. Not the
    # first instant of any action: an indexing instant stays on the active timeline while the
    # commits after it are archived (their files are still live).
    first = min((i.requested_time for i in table.timeline.write_timeline()), default=None)

    def why(name: str) -> str | None:
        if name.startswith(PARTITION_METAFILE_PREFIX):
            return None
        if name.startswith("."):
            log = LogFileName.parse(name)
            if log is None or log.is_cdc:
                return None  # hidden, not a log file: checksums, temporary files
            instant = log.instant
        else:
            base = BaseFileName.parse(name)
            if base is None:
                return "not a Hudi base or log file name"
            instant = base.instant
        if instant in instants or (first is not None and instant < first):
            return None
        return f"names instant {instant}, which is not on the timeline"

    return why


def _federated_foreign_files(
    table: TableState,
    storage: FederatedStorage,
    partitions: Sequence[str],
    judge: Callable[[str], str | None],
) -> list[Difference]:
    """Foreign files among the storage path's files of a federated table.

    The storage path may hold other tables' files, so only this table's folders are judged: the
    folders its storage strategy puts a file group of one of its ``partitions`` in, found from the
    files there whose file id the strategy places in their folder. Each file of such a folder
    is judged as in the default layout (:func:`_instant_rule`), and is foreign too when the
    strategy would put its file group in another folder (no reader looks for it there)."""
    from hudi_md.table.filenames import parse_data_file
    from hudi_md.table.layout import strategy_of

    strategy = strategy_of(table.config.to_dict())
    by_folder: dict[str, list[tuple[str, int | None, str | None]]] = {}
    for f in storage.data_files():
        folder, _, name = f.path.rpartition("/")
        parsed = parse_data_file(name)
        by_folder.setdefault(folder, []).append((name, f.size, parsed.file_id if parsed else None))

    def partition_of(folder: str, file_id: str) -> str | None:
        # most strategies end a file group's folder with its partition path: try those first
        likely = [p for p in partitions if folder == p or folder.endswith(f"/{p}") or not p]
        tried = set(likely)
        for p in [*likely, *(p for p in partitions if p not in tried)]:
            if strategy.storage_location(p, file_id).strip("/") == folder:
                return p
        return None

    out: list[Difference] = []
    for folder, files in sorted(by_folder.items()):
        placed = {fid: partition_of(folder, fid) for _, _, fid in files if fid is not None}
        owners = sorted({p for p in placed.values() if p is not None})
        if not owners:
            continue  # no file group of this table here: another table's folder
        for name, size, fid in files:
            reason = judge(name)
            partition = placed.get(fid) if fid is not None else None
            if reason is None and fid is not None and partition is None:
                reason = f"the table's storage strategy puts file group {fid} in another folder"
            if reason is not None:
                # a folder of one partition (as the strategies lay them out) names it
                where = partition if partition is not None else owners[0] if len(owners) == 1 else ""
                out.append(_foreign(where, name, size, storage.data.uri(f"{folder}/{name}"), reason))
    return out


# Written by the writers into every row, not part of a writer's schema.
_META_FIELDS = frozenset([*META_COLUMNS, "_hoodie_operation"])


def _schema_narrowed_differences(table: TableState) -> list[Difference]:
    """Fields the schema of the latest completed commit lacks that an earlier completed commit's
    recorded schema had (top-level columns, and fields of struct columns): reads of the table
    no longer have them. One difference per commit that dropped fields, naming them, that
    commit (the first whose schema lacks them) and the last commit that still had them (a read
    as of it has their values). Commits that recorded no schema are skipped; archived instants
    are not examined. A drop made on purpose (Apache Hudi's opt-in
    ``hoodie.datasource.write.schema.allow.auto.evolution.column.drop``) narrows the table too
    and is reported the same way."""
    timeline = table.timeline
    history: list[tuple[str, set[str]]] = []
    for instant in timeline.write_timeline():
        text = (timeline.metadata(instant).get("extraMetadata") or {}).get("schema")
        if not text:
            continue
        schema = parse_embedded_schema(text, CommitMetadataError, f"{timeline.name}/{instant.file_name}")
        history.append((instant.requested_time, _field_paths(schema)))
    if len(history) < 2:
        return []
    latest = history[-1][1]
    last_had: dict[str, int] = {}  # field -> index in history of the last commit with it
    for n, (_, had_fields) in enumerate(history[:-1]):
        for f in had_fields - latest:
            last_had[f] = n
    gone = {f: n for f, n in last_had.items() if _parent(f) not in last_had}
    by_drop: dict[int, list[str]] = {}
    for f, n in gone.items():
        by_drop.setdefault(n, []).append(f)
    out = []
    for n in sorted(by_drop):
        had, dropped_by = history[n][0], history[n + 1][0]
        fields = sorted(by_drop[n])
        them = "it" if len(fields) == 1 else "them"
        out.append(
            Difference(
                "schema_narrowed",
                "",
                detail=f"the table's schema lost {', '.join(fields)}: commit {dropped_by} is the first "
                f"whose schema lacks {them} (the last with {them}: {had}), nor has the latest "
                f"commit's ({history[-1][0]}), so reads no longer return {them}. Reported also when "
                "the drop was asked for (hoodie.datasource.write.schema.allow.auto.evolution.column"
                f".drop=true), as information. A read as of {had} has the values "
                "(docs/guide/writes.md, 'Restoring columns a write dropped')",
            )
        )
    return out


def _field_paths(schema: pa.Schema) -> set[str]:
    """Dotted paths of the schema's fields (the meta columns left out), struct fields included."""
    out: set[str] = set()

    def walk(prefix: str, t: pa.DataType) -> None:
        if pa.types.is_struct(t):
            for i in range(t.num_fields):
                child = t.field(i)
                out.add(prefix + child.name)
                walk(f"{prefix}{child.name}.", child.type)

    for f in schema:
        if f.name in _META_FIELDS:
            continue
        out.add(f.name)
        walk(f"{f.name}.", f.type)
    return out


def _parent(path: str) -> str:
    return path.rpartition(".")[0]
