"""Apache Hudi's own answers about a table, through py4j into the Hudi Spark bundle.

``Hudi`` gives what Hudi returns for partitions, latest file slices, column/partition stats,
record-index lookups and snapshot rows. ``Hudi.validate`` re-runs the checks of Hudi's
``HoodieMetadataTableValidator`` (hudi-utilities) with Hudi's own classes from the Spark bundle:
Maven Central, as reached here, does not serve ``hudi-utilities(-slim)-bundle`` (see README.md), so
the validator's checks are re-implemented on the same Hudi APIs it calls:

* partitions: ``FSUtils.getAllPartitionPaths`` from the MDT vs from a storage listing (partitions
  whose ``.hoodie_partition_metadata`` names an instant that is not completed are ignored, as the
  validator does);
* ``--validate-latest-file-slices`` / ``--validate-latest-base-files``: an MDT-backed and a
  listing-backed ``HoodieTableFileSystemView``, per partition, compared slice by slice (file group,
  base instant, base file name and size, log files);
* ``--validate-all-column-stats``: ``HoodieTableMetadata.getColumnStats`` for the latest files vs the
  ranges Hudi reads from the files themselves (Parquet footers via ``FileFormatUtils``, log files via
  ``HoodieTableMetadataUtil.getLogFileColumnRangeMetadata``), for every indexed column;
* ``--validate-partition-stats``: every ``partition_stats`` record equals the merge of the MDT column
  stats of the partition's latest slices (and, stricter than the validator, no partition of the
  table lacks one);
* ``--validate-record-index-count`` / ``--validate-record-index-content``: the record index read
  through Hudi's MDT reader (``type = 5`` rows, locations decoded by
  ``HoodieTableMetadataUtil.getLocationFromRecordIndexInfo``) vs the snapshot's
  ``_hoodie_record_key``/``_hoodie_partition_path``/file id, full outer join.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import json
import os
from dataclasses import dataclass
from typing import Any

from py4j.java_gateway import JavaObject

META_COLUMNS = (
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
)


@dataclass(frozen=True, order=True)
class Slice:
    partition: str
    file_id: str
    base_instant: str
    base_file: str | None
    base_file_size: int | None
    log_files: tuple[str, ...]


@dataclass(frozen=True)
class Stat:
    """One column range (a column_stats or partition_stats entry), values as Python objects."""

    partition: str
    file_name: str
    column: str
    min_value: Any
    max_value: Any
    null_count: int
    value_count: int
    total_size: int
    total_uncompressed_size: int

    def key(self) -> tuple[str, str, str]:
        return (self.partition, self.file_name, self.column)


def to_python(v: Any) -> Any:
    """A Java stat value as a Python one (LocalDate → date, Instant → aware datetime, ...)."""
    if v is None or isinstance(v, (bool, int, float, str, decimal.Decimal, bytes, bytearray)):
        return bytes(v) if isinstance(v, bytearray) else v
    if isinstance(v, JavaObject):
        cls = v.getClass().getName()
        if cls == "java.time.LocalDate":
            return datetime.date.fromisoformat(v.toString())
        if cls == "java.time.Instant":
            micros = v.getEpochSecond() * 1_000_000 + v.getNano() // 1000
            return datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(
                microseconds=micros
            )
        if cls == "java.time.LocalDateTime":
            return datetime.datetime.fromisoformat(v.toString())
        if cls == "java.nio.HeapByteBuffer" or cls.endswith("ByteBuffer"):
            return bytes(v.array())
        if cls == "org.apache.avro.util.Utf8":
            return v.toString()
        return v.toString()
    return v


class Hudi:
    """Apache Hudi (the Spark bundle) on the running SparkSession."""

    def __init__(self, spark: Any) -> None:
        self.spark = spark
        self.jvm = spark._jvm
        self.jsc = spark._jsc
        self.ctx = self.jvm.org.apache.hudi.client.common.HoodieSparkEngineContext(self.jsc)
        self.version = self.jvm.org.apache.hudi.common.table.HoodieTableVersion.current().versionCode()

    # --- plumbing -----------------------------------------------------------------------------------

    def _list(self, items: Any) -> Any:
        out = self.jvm.java.util.ArrayList()
        for i in items:
            out.add(i)
        return out

    def _stream(self, stream: Any) -> list[Any]:
        return list(stream.collect(self.jvm.java.util.stream.Collectors.toList()))

    def meta_client(self, path: str) -> Any:
        conf = self.jvm.org.apache.hudi.storage.hadoop.HadoopStorageConfiguration(
            self.jsc.hadoopConfiguration()
        )
        return (
            self.jvm.org.apache.hudi.common.table.HoodieTableMetaClient.builder()
            .setConf(conf)
            .setBasePath(str(path))
            .setLoadActiveTimelineOnLoad(True)
            .build()
        )

    def metadata_config(self, enable: bool) -> Any:
        return self.jvm.org.apache.hudi.common.config.HoodieMetadataConfig.newBuilder().enable(enable).build()

    def table_metadata(self, path: str, mc: Any | None = None) -> Any:
        mc = mc or self.meta_client(path)
        return self.jvm.org.apache.hudi.metadata.HoodieBackedTableMetadata(
            self.ctx, mc.getStorage(), self.metadata_config(True), str(path)
        )

    def file_system_view(self, mc: Any, metadata: bool) -> Any:
        return self.jvm.org.apache.hudi.common.table.view.FileSystemViewManager.createInMemoryFileSystemView(
            self.ctx, mc, self.metadata_config(metadata)
        )

    # --- partitions and file slices ------------------------------------------------------------------

    def partitions(self, path: str, *, metadata: bool = True, mc: Any | None = None) -> list[str]:
        mc = mc or self.meta_client(path)
        fs_utils = self.jvm.org.apache.hudi.common.fs.FSUtils
        return sorted(str(p) for p in fs_utils.getAllPartitionPaths(self.ctx, mc, metadata))

    def _slice(self, fs: Any) -> Slice:
        bf = fs.getBaseFile()
        base = bf.get() if bf.isPresent() else None
        logs = tuple(sorted(str(lf.getFileName()) for lf in self._stream(fs.getLogFiles())))
        return Slice(
            str(fs.getPartitionPath()),
            str(fs.getFileId()),
            str(fs.getBaseInstantTime()),
            str(base.getFileName()) if base is not None else None,
            int(base.getFileSize()) if base is not None else None,
            logs,
        )

    def latest_file_slices(self, path: str, *, metadata: bool = True) -> list[Slice]:
        mc = self.meta_client(path)
        view = self.file_system_view(mc, metadata)
        try:
            out = []
            for p in self.partitions(path, metadata=metadata, mc=mc):
                out.extend(self._slice(fs) for fs in self._stream(view.getLatestFileSlices(p)))
            return sorted(out)
        finally:
            view.close()

    # --- column stats, partition stats, record index -----------------------------------------------------

    def indexed_columns(self, path: str) -> list[str]:
        """Source fields of the ``column_stats`` index definition (``.hoodie/.index_defs``)."""
        defs_path = os.path.join(str(path), ".hoodie", ".index_defs", "index.json")
        if not os.path.exists(defs_path):
            return []
        with open(defs_path) as f:
            defs = json.load(f).get("indexDefinitions", {})
        return list((defs.get("column_stats") or {}).get("sourceFields") or [])

    def columns_to_validate(self, path: str, mc: Any | None = None) -> list[str]:
        """The index definition's source fields; when it names none, the columns Hudi 1.2 indexes
        by default: ``_hoodie_commit_time``, ``_hoodie_partition_path``, ``_hoodie_record_key`` and
        the table schema's top-level fields (at most 32 in all)."""
        declared = self.indexed_columns(path)
        if declared:
            return declared
        mc = mc or self.meta_client(path)
        schema = self.jvm.org.apache.hudi.common.table.TableSchemaResolver(mc).getTableSchema(False)
        fields = [str(f.name()) for f in schema.getAvroSchema().getFields()]
        data = [f for f in fields if f not in META_COLUMNS]
        return (["_hoodie_commit_time", "_hoodie_partition_path", "_hoodie_record_key", *data])[:32]

    def _stat(self, partition: str, s: Any) -> Stat:
        rng = self.jvm.org.apache.hudi.stats.HoodieColumnRangeMetadata.fromColumnStats(s)
        return self._range(partition, str(s.getFileName()), rng)

    def _range(self, partition: str, file_name: str, rng: Any) -> Stat:
        return Stat(
            partition,
            file_name,
            str(rng.getColumnName()),
            to_python(rng.getMinValue()),
            to_python(rng.getMaxValue()),
            int(rng.getNullCount()),
            int(rng.getValueCount()),
            int(rng.getTotalSize()),
            int(rng.getTotalUncompressedSize()),
        )

    def column_stats(
        self, path: str, files: list[tuple[str, str]], columns: list[str], md: Any | None = None
    ) -> dict[tuple[str, str, str], Stat]:
        """``HoodieTableMetadata.getColumnStats`` for ``(partition, file name)`` pairs."""
        md = md or self.table_metadata(path)
        pair = self.jvm.org.apache.hudi.common.util.collection.Pair
        pairs = self._list(pair.of(p, f) for p, f in files)
        out: dict[tuple[str, str, str], Stat] = {}
        if not files or not columns:
            return out
        result = md.getColumnStats(pairs, self._list(columns))
        for entry in result.entrySet():
            partition = str(entry.getKey().getLeft())
            for s in entry.getValue():
                st = self._stat(partition, s)
                out[st.key()] = st
        return out

    def _prefix_records(self, md: Any, mdt_partition: str, raw_keys: list[Any]) -> list[Any]:
        if not raw_keys:
            return []
        data = self.jvm.org.apache.hudi.common.data.HoodieListData.eager(self._list(raw_keys))
        return list(md.getRecordsByKeyPrefixes(data, mdt_partition, True).collectAsList())

    def all_column_stats(
        self, path: str, columns: list[str], partitions: list[str], md: Any | None = None
    ) -> dict[tuple[str, str, str], Stat]:
        """Every live ``column_stats`` entry of these columns × partitions (key-prefix scans)."""
        md = md or self.table_metadata(path)
        raw = self.jvm.org.apache.hudi.metadata.ColumnStatsIndexPrefixRawKey
        out: dict[tuple[str, str, str], Stat] = {}
        for p in partitions:
            keys = [raw(c, p if p else ".") for c in columns]
            for rec in self._prefix_records(md, "column_stats", keys):
                payload = rec.getData()
                cs = payload.getColumnStatMetadata()
                if not cs.isPresent() or cs.get().getIsDeleted():
                    continue
                st = self._stat(p, cs.get())
                out[st.key()] = st
        return out

    def partition_stats(
        self, path: str, columns: list[str], md: Any | None = None
    ) -> dict[tuple[str, str], Stat]:
        """Every live ``partition_stats`` entry of these columns: ``(partition, column) -> Stat``."""
        md = md or self.table_metadata(path)
        raw = self.jvm.org.apache.hudi.metadata.ColumnStatsIndexPrefixRawKey
        out: dict[tuple[str, str], Stat] = {}
        for rec in self._prefix_records(md, "partition_stats", [raw(c) for c in columns]):
            cs = rec.getData().getColumnStatMetadata()
            if not cs.isPresent() or cs.get().getIsDeleted():
                continue
            s = cs.get()
            partition = str(s.getFileName())
            partition = "" if partition == "." else partition
            st = self._stat(partition, s)
            st = dataclasses.replace(st, file_name=partition)
            out[(st.partition, st.column)] = st
        return out

    def record_index(self, path: str, keys: list[str], md: Any | None = None) -> dict[str, tuple[str, str]]:
        """``readRecordIndexLocationsWithKeys``: key → (partition path, file id)."""
        md = md or self.table_metadata(path)
        data = self.jvm.org.apache.hudi.common.data.HoodieListData.eager(self._list(keys))
        out = {}
        for pr in md.readRecordIndexLocationsWithKeys(data).collectAsList():
            loc = pr.getValue()
            out[str(pr.getKey())] = (str(loc.getPartitionPath()), str(loc.getFileId()))
        return out

    def record_index_entries(self, path: str) -> dict[str, tuple[str, str]]:
        """Every record-index entry, read as the validator reads it (MDT rows of type 5)."""
        mdt = os.path.join(str(path), ".hoodie", "metadata")
        rows = (
            self.spark.read.format("hudi")
            .load(mdt)
            .filter("type = 5")
            .selectExpr(
                "key",
                "recordIndexMetadata.partitionName as partitionName",
                "recordIndexMetadata.fileIdEncoding as fileIdEncoding",
                "recordIndexMetadata.fileIdHighBits as hi",
                "recordIndexMetadata.fileIdLowBits as lo",
                "recordIndexMetadata.fileIndex as fileIndex",
                "recordIndexMetadata.fileId as fileId",
                "recordIndexMetadata.instantTime as instantTime",
            )
            .collect()
        )
        util = self.jvm.org.apache.hudi.metadata.HoodieTableMetadataUtil
        out = {}
        for r in rows:
            loc = util.getLocationFromRecordIndexInfo(
                r.partitionName,
                int(r.fileIdEncoding),
                int(r.hi or 0),
                int(r.lo or 0),
                int(r.fileIndex or 0),
                r.fileId,
                self.jvm.java.lang.Long.valueOf(str(r.instantTime)) if r.instantTime is not None else None,
            )
            out[r.key] = (str(loc.getPartitionPath()), str(loc.getFileId()))
        return out

    def file_id(self, file_name: str) -> str:
        return str(self.jvm.org.apache.hudi.common.fs.FSUtils.getFileId(file_name))

    # --- rows -----------------------------------------------------------------------------------------

    def read_df(self, path: str, *, metadata: bool = True, query_type: str = "snapshot") -> Any:
        return (
            self.spark.read.format("hudi")
            .option("hoodie.metadata.enable", "true" if metadata else "false")
            .option("hoodie.datasource.query.type", query_type)
            .load(str(path))
        )

    def rows(self, path: str, *, metadata: bool = True, query_type: str = "snapshot") -> list[dict[str, Any]]:
        """Rows as dicts; timestamps as UTC micros (no local-time conversion on the way)."""
        from pyspark.sql import functions as F
        from pyspark.sql.types import TimestampNTZType, TimestampType

        df = self.read_df(path, metadata=metadata, query_type=query_type)
        cols = []
        for f in df.schema.fields:
            if isinstance(f.dataType, (TimestampType, TimestampNTZType)):
                cols.append(F.unix_micros(F.col(f.name).cast("timestamp")).alias(f.name))
            else:
                cols.append(F.col(f.name))
        return [r.asDict() for r in df.select(*cols).collect()]

    def query(self, path: str, where: str, *, data_skipping: bool) -> tuple[list[str], int]:
        """A filtered snapshot query (MDT on, ``hoodie.enable.data.skipping`` as given): the record
        keys it returns and how many files Spark's scan read (see :func:`scanned_files`)."""
        df = (
            self.spark.read.format("hudi")
            .option("hoodie.metadata.enable", "true")
            .option("hoodie.enable.data.skipping", "true" if data_skipping else "false")
            .load(str(path))
            .filter(where)
        )
        keys = sorted(r["_hoodie_record_key"] for r in df.select("_hoodie_record_key").collect())
        return keys, scanned_files(df.select("_hoodie_record_key"))

    # --- HoodieMetadataTableValidator's checks ----------------------------------------------------------

    def validate(
        self,
        path: str,
        *,
        latest_file_slices: bool = True,
        latest_base_files: bool = True,
        column_stats: bool = True,
        partition_stats: bool = True,
        record_index_count: bool = True,
        record_index_content: bool = True,
    ) -> list[str]:
        """The validator's checks; returns the failures (empty: validation passed)."""
        path = str(path)
        errors: list[str] = []
        mc = self.meta_client(path)
        table_config = mc.getTableConfig()
        mdt_partitions = {str(p) for p in table_config.getMetadataPartitions()}
        if "files" not in mdt_partitions:
            return [f"{path}: no metadata table (hoodie.table.metadata.partitions={sorted(mdt_partitions)})"]
        completed = mc.getCommitsTimeline().filterCompletedInstants()
        if completed.countInstants() == 0:
            return []

        # partitions
        from_fs = []
        for p in self.partitions(path, metadata=False, mc=mc):
            pm = self.jvm.org.apache.hudi.common.model.HoodiePartitionMetadata(
                mc.getStorage(), self.jvm.org.apache.hudi.common.fs.FSUtils.constructAbsolutePath(path, p)
            )
            created = pm.readPartitionCreatedCommitTime()
            if not created.isPresent():
                continue
            if completed.containsOrBeforeTimelineStarts(created.get()):
                from_fs.append(p)
        from_mdt = self.partitions(path, metadata=True, mc=mc)
        if sorted(from_fs) != sorted(from_mdt):
            errors.append(
                f"partitions: listing has {sorted(set(from_fs) - set(from_mdt))} not in the MDT, "
                f"MDT has {sorted(set(from_mdt) - set(from_fs))} not in the listing"
            )
        partitions = sorted(from_mdt)

        mdt_view = self.file_system_view(mc, True)
        fs_view = self.file_system_view(mc, False)
        md = self.table_metadata(path, mc)
        columns = self.columns_to_validate(path, mc) if "column_stats" in mdt_partitions else []
        fs_latest: dict[str, list[Any]] = {}
        try:
            for p in partitions:
                fs_slices = sorted(
                    self._stream(fs_view.getLatestFileSlices(p)),
                    key=lambda s: f"{s.getPartitionPath()}{s.getFileId()}{s.getBaseInstantTime()}",
                )
                md_slices = sorted(
                    self._stream(mdt_view.getLatestFileSlices(p)),
                    key=lambda s: f"{s.getPartitionPath()}{s.getFileId()}{s.getBaseInstantTime()}",
                )
                fs_latest[p] = fs_slices
                if latest_file_slices:
                    a = [self._slice(s) for s in md_slices]
                    b = [self._slice(s) for s in fs_slices]
                    if a != b:
                        errors.append(f"latest file slices of {p!r}: MDT-based {a} != listing-based {b}")
                if latest_base_files:
                    a2 = sorted(
                        (str(f.getFileName()), int(f.getFileSize()))
                        for f in self._stream(mdt_view.getLatestBaseFiles(p))
                    )
                    b2 = sorted(
                        (str(f.getFileName()), int(f.getFileSize()))
                        for f in self._stream(fs_view.getLatestBaseFiles(p))
                    )
                    if a2 != b2:
                        errors.append(f"latest base files of {p!r}: MDT-based {a2} != listing-based {b2}")
                if column_stats and columns:
                    errors.extend(self._validate_column_stats(path, mc, md, p, fs_slices, columns))
            if partition_stats and "partition_stats" in mdt_partitions and columns:
                errors.extend(self._validate_partition_stats(path, md, partitions, mdt_view, columns))
        finally:
            mdt_view.close()
            fs_view.close()
        if "record_index" in mdt_partitions and (record_index_count or record_index_content):
            errors.extend(self._validate_record_index(path, record_index_count, record_index_content))
        return errors

    def _files_of(self, slices: list[Any]) -> list[str]:
        names = []
        for s in slices:
            bf = s.getBaseFile()
            if bf.isPresent():
                names.append(str(bf.get().getFileName()))
            names.extend(str(lf.getFileName()) for lf in self._stream(s.getLogFiles()))
        return names

    def _validate_column_stats(
        self, path: str, mc: Any, md: Any, partition: str, fs_slices: list[Any], columns: list[str]
    ) -> list[str]:
        jvm = self.jvm
        names = self._files_of(fs_slices)
        from_mdt = self.column_stats(path, [(partition, n) for n in names], columns, md)
        index_version = jvm.org.apache.hudi.metadata.HoodieTableMetadataUtil.existingIndexVersionOrDefault(
            "column_stats", mc
        )
        storage = mc.getStorage()
        parquet = jvm.org.apache.hudi.io.storage.HoodieIOFactory.getIOFactory(storage).getFileFormatUtils(
            jvm.org.apache.hudi.common.model.HoodieFileFormat.PARQUET
        )
        from_files: dict[tuple[str, str, str], Stat] = {}
        part_path = jvm.org.apache.hudi.common.fs.FSUtils.constructAbsolutePath(path, partition)
        schema = None
        for n in names:
            file_path = jvm.org.apache.hudi.storage.StoragePath(part_path, n)
            if n.endswith(".parquet"):
                ranges = parquet.readColumnStatsFromMetadata(
                    storage, file_path, self._list(columns), index_version
                )
            else:
                if schema is None:
                    schema = jvm.org.apache.hudi.common.table.TableSchemaResolver(mc).getTableSchema()
                ranges = jvm.org.apache.hudi.metadata.HoodieTableMetadataUtil.getLogFileColumnRangeMetadata(
                    file_path.toString(),
                    partition,
                    mc,
                    self._list(columns),
                    jvm.org.apache.hudi.common.util.Option.of(schema),
                    16 * 1024 * 1024,
                )
            for rng in ranges:
                st = self._range(partition, n, rng)
                from_files[st.key()] = st
        errors = []
        for key in sorted(set(from_mdt) | set(from_files)):
            a, b = from_mdt.get(key), from_files.get(key)
            if a != b and not (_empty(a) and _empty(b)):
                errors.append(f"column stats of {key}: MDT {a} != from the file {b}")
        return errors

    def _validate_partition_stats(
        self, path: str, md: Any, partitions: list[str], mdt_view: Any, columns: list[str]
    ) -> list[str]:
        stored = self.partition_stats(path, columns, md)
        expected: dict[tuple[str, str], Stat] = {}
        for p in partitions:
            slices = [s for s in self._stream(mdt_view.getLatestFileSlices(p)) if s.getBaseFile().isPresent()]
            stats = self.column_stats(path, [(p, n) for n in self._files_of(slices)], columns, md)
            for st in stats.values():
                cur = expected.get((p, st.column))
                expected[(p, st.column)] = merge_stats(cur, st, p)
        errors = []
        for key, st in sorted(stored.items()):
            if key[0] not in partitions:
                continue  # a deleted partition's stats: not validated by Hudi either
            exp = expected.get(key)
            if exp != st and not (_empty(exp) and _empty(st)):
                sound = "a sound (loose) bound" if covers(st, exp) else "UNSOUND: excludes live values"
                errors.append(f"partition stats of {key}: MDT {st} != merged column stats {exp} [{sound}]")
        for key in sorted(k for k in set(expected) - set(stored) if not _empty(expected[k])):
            errors.append(
                f"partition stats of {key}: missing from the MDT (merged column stats {expected[key]})"
            )
        return errors

    def _validate_record_index(self, path: str, count: bool, content: bool) -> list[str]:
        rows = (
            self.read_df(path)
            .select("_hoodie_record_key", "_hoodie_partition_path", "_hoodie_file_name")
            .collect()
        )
        file_ids: dict[str, str] = {}
        on_fs: dict[str, tuple[str, str]] = {}
        for r in rows:
            name = r["_hoodie_file_name"]
            if name not in file_ids:
                file_ids[name] = self.file_id(name)
            on_fs[r["_hoodie_record_key"]] = (r["_hoodie_partition_path"], file_ids[name])
        in_index = self.record_index_entries(path)
        errors = []
        if count and len(rows) != len(in_index):
            errors.append(f"record index count: {len(in_index)} entries, {len(rows)} keys in the table")
        if content:
            wrong = [
                f"{k}: table {on_fs.get(k)}, record index {in_index.get(k)}"
                for k in sorted(set(on_fs) | set(in_index))
                if on_fs.get(k) != in_index.get(k)
            ]
            if wrong:
                errors.append(f"record index content: {len(wrong)} keys differ, e.g. {wrong[:10]}")
        return errors


def scanned_files(df: Any) -> int:
    """Runs ``df`` and returns the ``numFiles`` metric of its file scan (V1, or hudi-md's V2): the files
    (for Hudi's file-group reader, the file slices) left to read after Hudi's ``HoodieFileIndex``
    pruned partitions and skipped data with the MDT's indexes."""
    df.collect()
    found: list[int] = []

    def walk(node: Any) -> None:
        name = node.getClass().getSimpleName()
        if name == "AdaptiveSparkPlanExec":
            walk(node.executedPlan())
            return
        if name in ("FileSourceScanExec", "BatchScanExec"):  # V1 file scans, hudi-md's V2 scan
            found.append(int(node.metrics().apply("numFiles").value()))
        children = node.children()
        for i in range(children.size()):
            walk(children.apply(i))

    walk(df._jdf.queryExecution().executedPlan())
    if len(found) != 1:
        raise AssertionError(f"expected one file scan in the plan, found {len(found)}")
    return found[0]


def summarize(errors: list[str], examples: int = 2) -> str:
    """Validation failures grouped by check: a count per check, then a few examples of each."""
    groups: dict[str, list[str]] = {}
    for e in errors:
        kind = next(
            (
                k
                for k in (
                    "partitions",
                    "latest file slices",
                    "latest base files",
                    "column stats",
                    "partition stats",
                    "record index count",
                    "record index content",
                )
                if e.startswith(k)
            ),
            "other",
        )
        groups.setdefault(kind, []).append(e)
    head = "; ".join(f"{k}: {len(v)} failure(s)" for k, v in groups.items())
    body = "\n".join(f"  {e[:600]}" for v in groups.values() for e in v[:examples])
    return f"{head}\n{body}"


def _empty(s: Stat | None) -> bool:
    """No range at all: absent, or Hudi's empty range (a log file of delete blocks only: no values,
    no min/max). The file side reads nothing for such a file, the MDT side stores an empty range;
    both say the same."""
    return s is None or (s.value_count == 0 and s.min_value is None and s.max_value is None)


def covers(bound: Stat, exact: Stat | None) -> bool:
    """Whether ``bound``'s range contains every value of ``exact``'s (what pruning needs)."""
    if exact is None or exact.value_count == exact.null_count:
        return True
    if bound.min_value is None or bound.max_value is None:
        return False
    return bound.min_value <= exact.min_value and bound.max_value >= exact.max_value


def merge_stats(a: Stat | None, b: Stat, partition: str) -> Stat:
    """``HoodieColumnRangeMetadata.merge``: min of mins, max of maxes (nulls ignored), sums."""
    if a is None:
        return Stat(
            partition,
            partition,
            b.column,
            b.min_value,
            b.max_value,
            b.null_count,
            b.value_count,
            b.total_size,
            b.total_uncompressed_size,
        )

    def pick(x: Any, y: Any, f: Any) -> Any:
        if x is None:
            return y
        if y is None:
            return x
        return f(x, y)

    return Stat(
        partition,
        partition,
        a.column,
        pick(a.min_value, b.min_value, min),
        pick(a.max_value, b.max_value, max),
        a.null_count + b.null_count,
        a.value_count + b.value_count,
        a.total_size + b.total_size,
        a.total_uncompressed_size + b.total_uncompressed_size,
    )
