"""File groups and file slices, built from a listing source and the timeline.

Slicing follows Hudi: a v6 log file names the base instant of its slice; a v8+ log file names the
deltacommit that wrote it and joins the slice with the largest base instant at or before that
deltacommit's *completion* time. Files of uncommitted instants and of replaced file groups are
never visible.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from hudi_md.table.config import TableConfig
from hudi_md.table.filenames import BaseFileName, LogFileName, LogSortKey
from hudi_md.table.listing import FileEntry, ListingSource
from hudi_md.table.timeline import COMPACTION, LOG_COMPACTION, Timeline


@dataclass(frozen=True)
class BaseFile:
    partition_path: str
    name: str
    size: int
    file_id: str
    instant: str

    @property
    def path(self) -> str:
        return posixpath.join(self.partition_path, self.name) if self.partition_path else self.name


@dataclass(frozen=True)
class LogFile:
    partition_path: str
    name: str
    size: int
    file_id: str
    instant: str
    version: int
    write_token: str

    @property
    def path(self) -> str:
        return posixpath.join(self.partition_path, self.name) if self.partition_path else self.name

    def sort_key(self) -> LogSortKey | tuple[str, int, str]:
        parsed = LogFileName.parse(self.name)
        return parsed.sort_key() if parsed else (self.instant, self.version, self.write_token)


@dataclass(frozen=True)
class FileSlice:
    partition_path: str
    file_id: str
    base_instant: str
    base_file: BaseFile | None
    log_files: tuple[LogFile, ...] = ()

    @property
    def is_base_only(self) -> bool:
        return not self.log_files

    @property
    def total_size(self) -> int:
        return (self.base_file.size if self.base_file else 0) + sum(lf.size for lf in self.log_files)


@dataclass
class FileGroup:
    partition_path: str
    file_id: str
    slices: dict[str, _SliceBuilder] = field(default_factory=dict)


@dataclass
class _SliceBuilder:
    base_file: BaseFile | None = None
    log_files: list[LogFile] = field(default_factory=list)


class FileSystemView:
    """Visible file slices of a table as of an instant.

    ``timeline`` is the table's whole active timeline (all states); ``as_of`` limits it for time
    travel. The view is built lazily per partition and cached.
    """

    def __init__(
        self,
        config: TableConfig,
        timeline: Timeline,
        listing: ListingSource,
        *,
        as_of: str | None = None,
    ) -> None:
        self.config = config
        self.listing = listing
        self.as_of = as_of
        self._full_timeline = timeline
        visible = timeline.until(as_of)
        self.visible_timeline = visible
        writes = visible.write_timeline()
        self._committed = {i.requested_time: i for i in writes}
        all_writes = [i for i in timeline if i.action in ("commit", "deltacommit", "replacecommit")]
        # Files older than the active timeline were committed by archived instants.
        self._timeline_start = min((i.requested_time for i in all_writes), default=None)
        self._replaced = visible.replaced_file_ids()
        # Compactions requested but not completed (as of `as_of`) open a new slice without a base.
        self._pending_compactions = {
            i.requested_time
            for i in visible
            if not i.is_completed and i.action in (COMPACTION, LOG_COMPACTION)
        } | {
            i.requested_time
            for i in timeline
            if i.is_completed
            and i.action == "commit"
            and as_of is not None
            and i.requested_time <= as_of
            and i.completion_time is not None
            and i.completion_time > as_of
        }
        self._groups: dict[str, list[FileGroup]] = {}
        self._latest: dict[str, list[FileSlice]] = {}  # latest merged slices, per partition

    # --- visibility --------------------------------------------------------------------------------

    def _is_committed(self, instant: str) -> bool:
        if instant in self._committed:
            return True
        if self.as_of is not None and instant > self.as_of:
            return False
        return self._timeline_start is not None and instant < self._timeline_start

    def _completion_time(self, instant: str) -> str:
        i = self._committed.get(instant)
        return (i.completion_time or i.requested_time) if i else instant

    @property
    def committed_instants(self) -> frozenset[str]:
        """Write instants visible in this view (completed, and as of ``as_of``)."""
        return frozenset(self._committed)

    @property
    def timeline_start(self) -> str | None:
        """The first write instant of the active timeline: files of older instants were committed
        by archived instants."""
        return self._timeline_start

    @property
    def replaced_file_ids(self) -> frozenset[tuple[str, str]]:
        """(partition path, file id) of the file groups replaced as of this view."""
        return frozenset(self._replaced)

    def latest_slices_of_entries(self, partition: str, entries: Iterable[FileEntry]) -> list[FileSlice]:
        """:meth:`latest_file_slices` of one partition whose files a caller has listed already."""
        known = self._latest.get(partition)
        if known is None:
            groups = self._groups.get(partition)
            if groups is None:
                groups = self._groups[partition] = self._build(partition, entries)
            known = self._latest[partition] = [s for s in map(self._latest_merged, groups) if s is not None]
        return list(known)

    # --- building --------------------------------------------------------------------------------

    def partitions(self) -> list[str]:
        return self.listing.all_partitions()

    def file_groups(self, partitions: Sequence[str] | None = None) -> dict[str, list[FileGroup]]:
        wanted = list(partitions) if partitions is not None else self.partitions()
        missing = [p for p in wanted if p not in self._groups]
        if missing:
            for p, entries in self.listing.files_in_partitions(missing).items():
                self._groups[p] = self._build(p, entries)
        return {p: self._groups.get(p, []) for p in wanted}

    def _build(self, partition: str, entries: Iterable[FileEntry]) -> list[FileGroup]:
        groups: dict[str, FileGroup] = {}
        v6 = self.config.table_version < 8
        bases: list[BaseFile] = []
        logs: list[LogFile] = []
        for e in entries:
            if e.name.startswith("."):
                log = LogFileName.parse(e.name)
                if log is None or log.is_cdc:
                    continue
                logs.append(
                    LogFile(partition, e.name, e.size, log.file_id, log.instant, log.version, log.write_token)
                )
            else:
                base = BaseFileName.parse(e.name)
                if base is None:
                    continue
                if self._is_committed(base.instant):
                    bases.append(BaseFile(partition, e.name, e.size, base.file_id, base.instant))
        for b in bases:
            if (partition, b.file_id) in self._replaced:
                continue
            g = groups.setdefault(b.file_id, FileGroup(partition, b.file_id))
            s = g.slices.setdefault(b.instant, _SliceBuilder())
            # Two committed base files of one slice cannot both be valid; keep Hudi's choice of the
            # one it would see last (lexicographic write token order is as good as any listing).
            if s.base_file is None or b.name > s.base_file.name:
                s.base_file = b
        for lf in logs:
            if (partition, lf.file_id) in self._replaced:
                continue
            g = groups.setdefault(lf.file_id, FileGroup(partition, lf.file_id))
            if v6:
                # The log names its slice; blocks are filtered by instant when read.
                if not (self._is_committed(lf.instant) or lf.instant in self._pending_compactions):
                    continue
                slice_instant = lf.instant
            else:
                if not self._is_committed(lf.instant):
                    continue
                completed_at = self._completion_time(lf.instant)
                candidates = [t for t in [*g.slices, *self._pending_compactions] if t <= completed_at]
                slice_instant = max(candidates) if candidates else lf.instant
            g.slices.setdefault(slice_instant, _SliceBuilder()).log_files.append(lf)
        out = []
        for g in groups.values():
            if not g.slices:
                continue
            out.append(g)
        out.sort(key=lambda g: g.file_id)
        return out

    def visible_files(self, partitions: Sequence[str]) -> dict[str, dict[str, int]]:
        """Name → size of every file of every visible slice (not only the latest), per partition."""
        out: dict[str, dict[str, int]] = {}
        for p, groups in self.file_groups(partitions).items():
            files: dict[str, int] = {}
            for g in groups:
                for s in g.slices.values():
                    if s.base_file is not None:
                        files[s.base_file.name] = s.base_file.size
                    for lf in s.log_files:
                        files[lf.name] = lf.size
            out[p] = files
        return out

    # --- slices ----------------------------------------------------------------------------------

    def latest_file_slices(self, partitions: Sequence[str] | None = None) -> list[FileSlice]:
        """The latest merged slice of every file group (a slice under pending compaction is
        merged with the one before it, as Hudi's snapshot reads do)."""
        out: list[FileSlice] = []
        known = self._latest
        for p, groups in self.file_groups(partitions).items():
            slices = known.get(p)
            if slices is None:
                slices = known[p] = [s for s in map(self._latest_merged, groups) if s is not None]
            out.extend(slices)
        return out

    def latest_base_files(self, partitions: Sequence[str] | None = None) -> list[FileSlice]:
        """Read-optimized view: the latest slice that has a base file, without its log files."""
        out: list[FileSlice] = []
        for p, groups in self.file_groups(partitions).items():
            for g in groups:
                for instant in sorted(g.slices, reverse=True):
                    base = g.slices[instant].base_file
                    if base is not None:
                        out.append(FileSlice(p, g.file_id, instant, base, ()))
                        break
        return out

    def _latest_merged(self, g: FileGroup) -> FileSlice | None:
        instants = sorted(g.slices)
        # Drop trailing empty slices (a pending compaction nobody wrote to yet).
        while instants and g.slices[instants[-1]].base_file is None and not g.slices[instants[-1]].log_files:
            instants.pop()
        if not instants:
            return None
        latest = instants[-1]
        s = g.slices[latest]
        logs = sorted(s.log_files, key=LogFile.sort_key)
        base = s.base_file
        base_instant = latest
        if base is None and latest in self._pending_compactions and len(instants) > 1:
            prev = instants[-2]
            ps = g.slices[prev]
            base = ps.base_file
            base_instant = prev
            logs = sorted(ps.log_files, key=LogFile.sort_key) + logs
        return FileSlice(g.partition_path, g.file_id, base_instant, base, tuple(logs))
