"""Randomised write sequences against an in-memory model of the expected rows.

After every step, three readers must return exactly the model's rows: hudi-md, hudi-rs (the `hudi`
package, which lists v9 tables through our MDT `files` partition) and, for COW tables, pyarrow's
Parquet reader over the latest base files; and `metadata validate` must pass.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import hudi_md
from hudi_md.metadata.validate import validate_metadata_table
from hudi_md.write.writer import Crash, HudiWriter
from table_model import Model, assert_readers, assert_record_index_matches, triples

LAYOUTS = {
    "partitioned": ["city"],
    "multi_level": ["city", "day"],
    "non_partitioned": [],
}
CITIES = ["sf", "nyc", "sao_paulo"]
DAYS = ["2024-01-01", "2024-01-02"]


def _options(table_type: str, partitions: list[str], **extra: str) -> dict[str, str]:
    opts = {
        "hoodie.table.name": "model",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": ",".join(partitions),
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.metadata.record.index.enable": "true",
        "hoodie.cleaner.commits.retained": "3",
        "hoodie.metadata.compact.max.delta.commits": "4",
    }
    opts.update(extra)
    return opts


def _rows(rng: random.Random, ids: list[int], ts: int) -> list[dict[str, Any]]:
    return [
        {
            "id": f"id-{i:04d}",
            "city": rng.choice(CITIES),
            "day": rng.choice(DAYS),
            "ts": ts + rng.randint(0, 3),
            "fare": round(rng.uniform(1, 100), 2),
        }
        for i in ids
    ]


def _table(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.table(
        {
            "id": pa.array([r["id"] for r in rows], pa.string()),
            "city": pa.array([r["city"] for r in rows], pa.string()),
            "day": pa.array([r["day"] for r in rows], pa.string()),
            "ts": pa.array([r["ts"] for r in rows], pa.int64()),
            "fare": pa.array([r["fare"] for r in rows], pa.float64()),
        }
    )


def check_readers(path: Path, model: Model, table_type: str) -> None:
    expected = model.expected()
    table, rs = assert_readers(str(path), expected)
    if table_type == "COPY_ON_WRITE":
        files = [path / r["base_file"] for r in table.file_slices().to_pylist()]
        parquet = (
            pa.concat_tables([pq.read_table(f, columns=["id", "ts", "fare"]) for f in files])
            if files
            else pa.table({"id": [], "ts": [], "fare": []})
        )
        assert triples(parquet) == expected, "parquet over latest base files"
    if table.state.uses_metadata_table:
        diffs = validate_metadata_table(table)
        assert not diffs, [d.describe() for d in diffs]
        check_indexes(path, table, rs, table_type)


def check_indexes(path: Path, table: Any, snapshot: pa.Table, table_type: str) -> None:
    """The record index holds exactly the snapshot's keys at the file groups hudi-rs read them
    from; partition stats are tight: (COW) equal to the Parquet footers of the latest base files
    as pyarrow reads them, (MOR) the merge of the column stats of the latest slices' files."""
    from hudi_md.metadata import keys as K

    mdt = table.metadata_table
    if K.RECORD_INDEX in mdt.available_partitions and snapshot.num_rows:
        assert_record_index_matches(table, snapshot)
    if K.PARTITION_STATS not in mdt.available_partitions:
        return
    columns = ["id", "ts", "fare"]
    slices = table.state.file_system_view().latest_file_slices(table.partitions())
    expected: dict[tuple[str, str], tuple] = {}
    if table_type == "COPY_ON_WRITE":
        per: dict[tuple[str, str], list[tuple]] = {}
        for s in slices:
            meta = pq.read_metadata(path / s.partition_path / s.base_file.name)
            for rg in range(meta.num_row_groups):
                group = meta.row_group(rg)
                for i in range(group.num_columns):
                    col = group.column(i)
                    if col.path_in_schema in columns:
                        st = col.statistics
                        # An empty file (every row of the group deleted) has no statistics; Hudi
                        # reads parquet-mr's primitive defaults as the range of a numeric column
                        # (0, 0.0; seen on Hudi 1.2's own column stats), null for a string.
                        stub = {"INT32": 0, "INT64": 0, "FLOAT": 0.0, "DOUBLE": 0.0}.get(col.physical_type)
                        value = (
                            (st.min, st.max, group.num_rows, st.null_count)
                            if group.num_rows
                            else (stub, stub, 0, 0)
                        )
                        per.setdefault((s.partition_path, col.path_in_schema), []).append(value)
    else:
        names = {(s.partition_path, n) for s in slices for n in _slice_files(s)}
        per = {}
        for st in mdt.stats.column_stats(columns=columns):
            if (st.partition_path, st.file_name) in names:
                per.setdefault((st.partition_path, st.column_name), []).append(
                    (st.min_value, st.max_value, st.value_count, st.null_count)
                )
    for key, vals in per.items():
        mins = [v[0] for v in vals if v[0] is not None]
        maxs = [v[1] for v in vals if v[1] is not None]
        expected[key] = (
            min(mins, default=None),
            max(maxs, default=None),
            sum(v[2] for v in vals),
            sum(v[3] for v in vals),
        )
    got_stats = {
        (st.partition_path, st.column_name): (st.min_value, st.max_value, st.value_count, st.null_count)
        for st in mdt.stats.partition_stats(columns=columns)
        if st.partition_path in {s.partition_path for s in slices}
    }
    assert got_stats == expected, "partition stats"
    assert all(st.is_tight_bound for st in mdt.stats.partition_stats(columns=columns)), "tight bounds"


def _slice_files(s: Any) -> list[str]:
    return ([s.base_file.name] if s.base_file else []) + [lf.name for lf in s.log_files]


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_random_operation_sequences(table_type: str, layout: str, tmp_path: Path) -> None:
    rng = random.Random(f"{table_type}-{layout}")
    partitions = LAYOUTS[layout]
    model = Model(partitions)
    path = tmp_path / "t"
    opts = _options(table_type, partitions)
    next_id = 0
    ts = 0
    for step in range(14):
        ts += 10
        existing = [r for r in model.rows.values()]
        op = (
            "insert"
            if step == 0
            else rng.choice(
                [
                    "insert",
                    "upsert",
                    "upsert",
                    "delete",
                    "insert_overwrite",
                    "clean",
                    "compaction",
                    "rollback",
                    "clustering",
                ]
            )
        )
        if op == "insert":
            rows = _rows(rng, list(range(next_id, next_id + 6)), ts)
            next_id += 6
            hudi_md.write(_table(rows), str(path), operation="insert", options=opts)
            model.insert(rows)
        elif op == "upsert":
            updates = [
                dict(r, ts=r["ts"] + rng.choice([-5, 1, 2]), fare=round(rng.uniform(1, 100), 2))
                for r in rng.sample(existing, min(3, len(existing)))
            ]
            fresh = _rows(rng, [next_id, next_id + 1], ts)
            next_id += 2
            hudi_md.write(_table(updates + fresh), str(path), operation="upsert", options=opts)
            model.upsert(updates + fresh)
        elif op == "delete" and existing:
            doomed = rng.sample(existing, min(2, len(existing)))
            hudi_md.write(_table(doomed), str(path), operation="delete", options=opts)
            model.delete(doomed)
        elif op == "insert_overwrite":
            rows = _rows(rng, list(range(next_id, next_id + 3)), ts)
            next_id += 3
            whole = not partitions
            hudi_md.write(
                _table(rows),
                str(path),
                operation="insert_overwrite_table" if whole else "insert_overwrite",
                options=opts,
            )
            model.overwrite(rows, whole_table=whole)
        elif op == "clean":
            from hudi_md.storage import Storage
            from hudi_md.table.config import TableConfig
            from hudi_md.write import services
            from hudi_md.write.config import WriteConfig

            w = HudiWriter(str(path), opts)
            services.clean(w, WriteConfig.from_options(opts, TableConfig.load(Storage(str(path)))))
        elif op == "compaction":
            from hudi_md.write import services

            services.compact(HudiWriter(str(path), opts))
        elif op == "clustering":
            from hudi_md.write import services

            # sorted by fare on odd steps; a third of the clusterings are rolled back again
            sort = {"hoodie.clustering.plan.strategy.sort.columns": "fare"} if step % 2 else {}
            w = HudiWriter(str(path), {**opts, **sort})
            done = services.cluster(w)
            if done and rng.random() < 0.3:
                HudiWriter(str(path), opts).rollback_commit(done[-1].instant)
        elif op == "rollback":
            # write something, then roll it back: the model is unchanged
            rows = _rows(rng, [next_id], ts)
            next_id += 1
            instant = hudi_md.write(_table(rows), str(path), operation="upsert", options=opts)
            HudiWriter(str(path), opts).rollback_commit(instant)
        check_readers(path, model, table_type)
        if table_type == "COPY_ON_WRITE":
            # small-file handling: new records go into the partition's small file group, so a
            # partition of a few rows keeps one (an overwrite or a clustering replaces it by one)
            groups = hudi_md.open_table(str(path)).file_slices().column("partition_path").to_pylist()
            assert len(groups) == len(set(groups)), f"step {step} ({op}): {sorted(groups)}"


@pytest.mark.parametrize("step", ["after_data_files", "after_mdt_commit", "before_complete"])
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_crash_at_each_commit_step_leaves_readers_correct(step: str, table_type: str, tmp_path: Path) -> None:
    rng = random.Random(step)
    path = tmp_path / "t"
    opts = _options(table_type, ["city"])
    model = Model(["city"])
    rows = _rows(rng, list(range(8)), 10)
    hudi_md.write(_table(rows), str(path), operation="insert", options=opts)
    model.insert(rows)
    writer = HudiWriter(str(path), opts)
    writer.crash_at = step
    update = [dict(r, ts=r["ts"] + 5, fare=-1.0) for r in rows[:4]] + _rows(rng, [100, 101], 20)
    with pytest.raises(Crash):
        writer.write(_table(update), "upsert")
    # a killed process would leave its lock behind; remove it as lock expiry would
    from hudi_md.write.lock import LOCK_FILE

    (path / LOCK_FILE).unlink(missing_ok=True)
    check_readers(path, model, table_type)
    # the next writer rolls the failed instant back and commits cleanly
    more = _rows(rng, [200], 30)
    hudi_md.write(_table(more), str(path), operation="upsert", options=opts)
    model.upsert(more)
    check_readers(path, model, table_type)
    timeline = hudi_md.open_table(str(path)).timeline
    assert not [i for i in timeline.pending() if i.action in ("commit", "deltacommit")]
    assert timeline.completed().of_actions("rollback")


def test_restore_to_an_earlier_instant(tmp_path: Path) -> None:
    rng = random.Random(7)
    path = tmp_path / "t"
    opts = _options("MERGE_ON_READ", ["city"])
    model = Model(["city"])
    first = _rows(rng, list(range(5)), 10)
    i1 = hudi_md.write(_table(first), str(path), operation="insert", options=opts)
    model.insert(first)
    for k in range(3):
        hudi_md.write(_table(_rows(rng, [50 + k], 20 + k)), str(path), operation="upsert", options=opts)
    HudiWriter(str(path), opts).restore(i1)
    check_readers(path, model, "MERGE_ON_READ")


def test_metadata_disable_deletes_the_mdt(tmp_path: Path) -> None:
    path = tmp_path / "t"
    opts = _options("COPY_ON_WRITE", ["city"])
    rng = random.Random(3)
    hudi_md.write(_table(_rows(rng, [1, 2], 10)), str(path), operation="insert", options=opts)
    assert (path / ".hoodie/metadata").exists()
    hudi_md.write(
        _table(_rows(rng, [3], 20)),
        str(path),
        operation="upsert",
        options={**opts, "hoodie.metadata.enable": "false"},
    )
    assert not (path / ".hoodie/metadata").exists()
    table = hudi_md.open_table(str(path))
    assert table.state.config.metadata_partitions == []
    assert table.read().num_rows == 3


def test_mdt_compaction_and_clean_keep_the_mdt_bounded(tmp_path: Path) -> None:
    rng = random.Random(11)
    path = tmp_path / "t"
    opts = _options("MERGE_ON_READ", ["city"], **{"hoodie.metadata.compact.max.delta.commits": "5"})
    model = Model(["city"])
    rows = _rows(rng, list(range(10)), 1)
    hudi_md.write(_table(rows), str(path), operation="insert", options=opts)
    model.insert(rows)
    for step in range(22):
        batch = [
            dict(r, ts=r["ts"] + step + 1, fare=float(step)) for r in rng.sample(list(model.rows.values()), 2)
        ]
        hudi_md.write(_table(batch), str(path), operation="upsert", options=opts)
        model.upsert(batch)
    table = hudi_md.open_table(str(path))
    mdt = table.metadata_table
    compactions = mdt.timeline.completed().of_actions("commit")
    assert len(compactions) >= 4
    assert mdt.timeline.completed().of_actions("clean")
    from hudi_md.metadata.stats import metadata_stats

    stats = metadata_stats(table.state, mdt)
    assert stats["deltacommits_since_last_compaction"] < 5
    for name, part in stats["partitions"].items():
        assert part["max_log_files_per_file_group"] <= 6, name
    # at most two slices of any MDT file group remain on storage
    for part in (path / ".hoodie/metadata").iterdir():
        if part.name.startswith("."):
            continue
        bases = [f for f in part.iterdir() if f.suffix == ".hfile"]
        groups = {f.name.split("_")[0] for f in bases}
        assert len(bases) <= 2 * len(groups), part.name
    check_readers(path, model, "MERGE_ON_READ")


def test_tagging_without_record_index_reads_only_candidate_file_groups(tmp_path: Path) -> None:
    """Footer key ranges and bloom filters rule out file groups before any key is read."""
    path = tmp_path / "t"
    # without small-file handling each insert starts a file group of its own
    extra = {"hoodie.metadata.record.index.enable": "false", "hoodie.parquet.small.file.limit": "0"}
    opts = _options("COPY_ON_WRITE", ["city"], **extra)
    model = Model(["city"])
    for i in range(4):  # four inserts → four file groups per partition, disjoint key ranges
        rows = [
            {"id": f"id-{i}{j:03d}", "city": "sf", "day": DAYS[0], "ts": 1, "fare": float(j)}
            for j in range(20)
        ]
        hudi_md.write(_table(rows), str(path), operation="insert", options=opts)
        model.insert(rows)
    update = [dict(next(r for r in model.rows.values() if r["id"] == "id-2005"), ts=9, fare=-1.0)]
    writer = HudiWriter(str(path), opts)
    writer.write(_table(update), "upsert")
    model.upsert(update)
    assert writer.tagging_stats == {"slices": 4, "slices_read": 1}
    check_readers(path, model, "COPY_ON_WRITE")
