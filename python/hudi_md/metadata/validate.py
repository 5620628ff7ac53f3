"""Compare what the MDT says with what storage holds (hudi-cli's ``metadata validate-files``), and
check its indexes against the table's files (the record index and partition stats checks of
Hudi's ``HoodieMetadataTableValidator``, as far as they decide whether reads can be trusted)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hudi_md.table.fs_view import FileSlice, FileSystemView
from hudi_md.table.layout import storage_listing
from hudi_md.table.state import TableState


@dataclass(frozen=True)
class Difference:
    kind: str  # partition_only_in_mdt | partition_only_in_storage | file_only_in_mdt | ...
    partition_path: str
    file_name: str = ""
    mdt_size: int | None = None
    storage_size: int | None = None
    detail: str = ""

    def describe(self) -> str:
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


def validate_metadata_table(table: TableState, *, indexes: bool = True) -> list[Difference]:
    """Differences between the MDT-based and the listing-based view of committed files and, with
    ``indexes``, between the MDT's record index / partition stats and the latest file slices.

    Both sides go through the same timeline filtering, so files of inflight or failed instants
    (which the MDT rightly does not list) are not reported. Log file sizes are compared only when
    both are known: the MDT records sizes as of each commit, and v6 logs can grow by appends.

    A file that cannot be read (a corrupt or torn instant, log or base file: the typed
    :class:`~hudi_md.errors.CorruptFileError`) is a difference naming it (``unreadable_file``), so
    ``metadata validate`` answers (exit 1) instead of failing.
    """
    from hudi_md.errors import CorruptFileError

    try:
        return _validate(table, indexes)
    except CorruptFileError as e:
        return [Difference("unreadable_file", "", detail=f"cannot validate: {e}")]


def _validate(table: TableState, indexes: bool) -> list[Difference]:
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
    diffs: list[Difference] = []
    mdt_parts = set(mdt.all_partitions())
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
    mdt_files = FileSystemView(table.config, table.timeline, mdt).visible_files(common)
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
    diffs.extend(_foreign_file_differences(table))
    diffs.extend(_dropped_index_differences(table))
    if indexes and not diffs:
        slices = table.file_system_view().latest_file_slices(table.partitions())
        diffs.extend(_record_index_differences(table, slices))
        diffs.extend(_partition_stats_differences(table, slices))
    return diffs


def _dropped_index_differences(table: TableState) -> list[Difference]:
    """Indexes ``index.json`` defines that the table config lists neither as available nor as
    being built (nor a pending ``indexing`` instant plans): a writer dropped them without their
    definition, as Apache Hudi 1.2's writers do with ``hoodie.metadata.auto.delete.partitions``
    when their options do not enable an index; readers no longer use it."""
    from hudi_md.metadata.indexing import indexing_state, planned_partitions
    from hudi_md.metadata.lifecycle import index_definitions

    defined = index_definitions(table.storage)
    if not defined:
        return []
    config = table.config
    kept = set(config.metadata_partitions) | set(config.metadata_partitions_inflight)
    missing = sorted(set(defined) - kept)
    if missing:
        missing = sorted(
            set(missing) - planned_partitions(indexing_state(table.storage, config, table.timeline).pending)
        )
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


def _record_index_differences(table: TableState, slices: Sequence[FileSlice]) -> list[Difference]:
    """Every key of the latest slices is in the record index at (one of) its file groups, and the
    index holds no other key."""
    from hudi_md.metadata import keys as K
    from hudi_md.read.slice_reader import SliceRowReader

    mdt = table.metadata_table
    if K.RECORD_INDEX not in mdt.available_partitions or "_hoodie_record_key" not in table.schema.names:
        return []
    reader = SliceRowReader(table)
    where: dict[str, set[tuple[str, str]]] = {}
    for s in slices:
        for k in reader.keys(s).to_pylist():
            where.setdefault(k, set()).add((s.partition_path, s.file_id))
    locations = mdt.record_index()  # every indexed key, one scan
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
    if K.PARTITION_STATS not in mdt.available_partitions or K.COLUMN_STATS not in mdt.available_partitions:
        return []
    live = {(s.partition_path, n) for s in slices for n in _file_names(s)}
    ranges: dict[tuple[str, str], list[Any]] = {}
    for st in mdt.column_stats():
        if (st.partition_path, st.file_name) in live:
            ranges.setdefault((st.partition_path, st.column_name), []).append(st)
    stats = {(st.partition_path, st.column_name): st for st in mdt.partition_stats()}
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
        try:
            low_ok = not mins or (st.min_value is not None and st.min_value <= min(mins))
            high_ok = not maxs or (st.max_value is not None and st.max_value >= max(maxs))
        except TypeError:
            continue  # values of different kinds (schema evolution): not comparable, not judged
        if not (low_ok and high_ok):
            out.append(
                Difference(
                    "partition_stats_unsound",
                    p,
                    detail=f"partition stats of {col} [{st.min_value}, {st.max_value}] do not cover the "
                    f"latest files' [{min(mins, default=None)}, {max(maxs, default=None)}]",
                )
            )
    return out


def _file_names(s: FileSlice) -> list[str]:
    return ([s.base_file.name] if s.base_file else []) + [lf.name for lf in s.log_files]


def _partition_path_differences(table: TableState, partitions: Sequence[str]) -> list[Difference]:
    """Partitions holding live files whose path is not what Apache Hudi 1.2 writes for the values it
    stands for (tables written by hudi-md before 0.2 percent-encoded space, ``+`` and non-ASCII
    with URL encoding on): Hudi reads other values from them and its upserts of their keys land in
    other partitions. README, "Partition paths", says how to rewrite such a table."""
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
            f"({expected!r}; rule: {rule}); rewrite the table (README, 'Partition paths')",
        )
        for p, expected in sorted(suspect.items())
        if p in live
    ]


def _foreign_file_differences(table: TableState) -> list[Difference]:
    """Data files under the table's directories that no instant wrote: what a writer other than
    Hudi leaves behind (Spark's ``part-*.parquet`` and ``_SUCCESS`` after ``INSERT INTO`` through
    a generic file source, copies, ...). No reader sees them, so their rows are silently missing.

    Every directory but ``.hoodie`` and hidden ones is walked (a foreign writer also creates new
    partition directories, without ``.hoodie_partition_metadata``). A file is foreign when its name
    is neither a Hudi base file nor a log file, or names an instant that is not on the active
    timeline in any state and is not older than it (older instants may be archived). Files of
    pending or failed instants are left to rollback; ``.hoodie_partition_metadata*``, other hidden
    files (Hadoop's ``.crc`` checksums) and CDC logs are not judged."""
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
        if table.is_federated and (BaseFileName.parse(name) or LogFileName.parse(name)):
            return "a data file under the table path, where this table's storage strategy never puts one"
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
            reason = why(name)
            if reason is not None:
                out.append(
                    Difference(
                        "foreign_file",
                        directory,
                        name,
                        storage_size=e.size,
                        detail=f"{e.path}: no instant wrote this file ({reason}); another writer put it "
                        "into the table and no reader sees its rows (write with hudi_md.write)",
                    )
                )
    return sorted(out, key=lambda d: (d.partition_path, d.file_name))
