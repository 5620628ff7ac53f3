"""Async-indexing benchmark (issue 13): a writer's throughput while record_index is built.

    .venv/bin/python benchmarks/indexing_bench.py --rows 10000000 --seconds 600 --snapshot
    .venv/bin/python benchmarks/indexing_bench.py --rows 10000000 --seconds 240 --snapshot \
        --scenarios undisturbed,async,async@10,undisturbed      # async@10: the indexer at nice 10

A writer process makes back-to-back 100k-row upserts (90% updates of keys drawn from the base
table's newest 10%, 10% new keys) on a copy of one base table, in three scenarios:

  a) undisturbed: the writer alone;
  b) async: ``hudi_md.schedule_indexing(path, ["record_index"])`` then ``hudi_md.run_indexing``
     in a separate process, while the writer writes (RFC-45);
  c) blocking: ``hudi-md metadata create PATH --partitions record_index`` in a separate process,
     which holds the table lock for the whole build: the writer's commits wait behind it.

By default the order is a, b, c, a: the reference rate is the mean of the two undisturbed runs,
which also shows how far the machine's load drifted over the run.

The figure is the ratio of the writer's commits per minute in b (and c) to a, over the index
build (from the indexer's start to its exit) and over the whole window. The window is
``--seconds`` from the writer's first commit, stretched in b and c to the end of the build so it
always covers it; the indexer starts ``--lead`` seconds into the window. Commits are counted
fractionally: a commit attempt spanning [s, e] adds the share of [s, e] that falls inside the
interval measured (one commit every 6 s gives 10/min over any interval, not 8 or 12 depending on
where the interval cuts). Whole commits completed are reported too, and every attempt's start,
end, CPU time and time spent acquiring the table lock (``attempts*``). A second pair of ratios
("same commits") compares the time the undisturbed writer took for the same commits (the
writer's commits grow costlier with the commits before them: same_commits_ratios).

The build figure is the one the issue's goal (b/a >= 0.8) is about. A window that runs past the
build also holds the writer's first MDT compaction with the record index in it (every
``hoodie.metadata.compact.max.delta.commits`` = 10 MDT deltacommits, i.e. 5 upserts with their
cleans): it rewrites the whole index inline, in one writer commit of minutes, in b and c alike.

Writers and the indexer use optimistic concurrency control (hudi-md's lock file is taken only to
start and to commit an instant). ``hoodie.write.lock.wait_time_ms`` is set to 2 h so a writer
waiting behind ``metadata create`` in c waits instead of failing after Hudi's default 60 s.

Base table: ``--rows`` rows in 20 partitions (``city``), written by 10 bulk inserts of
``rows/10`` (so each partition has file groups of contiguous key ranges: keys are zero-padded,
footer key ranges prune the tagging of an upsert of recent keys to the newest file groups, as in
an append-mostly table with late updates). MDT ``files`` partition only (no record index, column
stats or partition stats). Cached under build/indexing_bench/ keyed by its parameters and copied
(shutil.copytree) for each scenario, so every scenario starts from the same bytes. ``--snapshot``
runs HEAD's committed python/ (git archive under build/) rather than the working tree, which
others may be editing; the commit recorded says which.

At the end of b and c, ``validate_metadata_table`` must return no difference and the record index
must hold every key (the base rows plus the writer's inserts). Results are appended to
benchmarks/results/indexing_bench.jsonl with the git commit, machine cores and the load average
(``uptime``) before and after, since other work may share the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "build" / "indexing_bench"
RESULTS = Path(__file__).parent / "results" / "indexing_bench.jsonl"
DATA_VERSION = 1  # bump when make_rows or the base table's layout changes (invalidates the cache)
KEY_WIDTH = 12
LOCK_WAIT_MS = 2 * 3600 * 1000


def options(table_type: str, partitions: int) -> dict[str, str]:
    return {
        "hoodie.table.name": "indexing_bench",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.metadata.enable": "true",
        "hoodie.metadata.record.index.enable": "false",
        "hoodie.metadata.index.column.stats.enable": "false",
        "hoodie.metadata.index.partition.stats.enable": "false",
        "hoodie.write.concurrency.mode": "optimistic_concurrency_control",
        "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.InProcessLockProvider",
        "hoodie.write.lock.wait_time_ms": str(LOCK_WAIT_MS),
    }


def make_rows(ids: np.ndarray, ts: int, partitions: int) -> pa.Table:
    """Rows of ``ids``: zero-padded string keys, ``city_NN`` by ``id % partitions``."""
    ids = np.asarray(ids, np.int64)
    ids_arr = pa.array(ids)
    city_no = pc.utf8_lpad(pc.cast(pa.array(ids % partitions), pa.string()), 2, "0")
    return pa.table(
        {
            "id": pc.utf8_lpad(pc.cast(ids_arr, pa.string()), KEY_WIDTH, "0"),
            "city": pc.binary_join_element_wise("city_", city_no, ""),
            "ts": pa.array(np.full(len(ids), ts, np.int64)),
            "fare": pc.multiply(pc.cast(ids_arr, pa.float64()), 0.01 * ts),
            "rider": pc.binary_join_element_wise(
                "rider-", pc.cast(pc.bit_wise_and(ids_arr, 1023), pa.string()), ""
            ),
        }
    )


# --- the base table ----------------------------------------------------------------------------


def base_table(args: argparse.Namespace) -> tuple[Path, dict[str, Any]]:
    """The cached base table (built when missing) and its build record."""
    key = f"rows{args.rows}_p{args.partitions}_{args.table_type.lower()}_v{DATA_VERSION}"
    folder = CACHE / key
    done = folder / "done.json"
    if done.exists():
        return folder / "t", {**json.loads(done.read_text()), "cached": True}
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    import hudi_md

    opts = options(args.table_type, args.partitions)
    chunks = 10 if args.rows >= 10 else 1
    step = -(-args.rows // chunks)
    start = time.monotonic()
    for lo in range(0, args.rows, step):
        hi = min(args.rows, lo + step)
        t0 = time.monotonic()
        data = make_rows(np.arange(lo, hi), 1, args.partitions)
        hudi_md.write(data, str(folder / "t"), operation="bulk_insert", options=opts)
        print(f"base table: rows {lo}..{hi} in {time.monotonic() - t0:.1f}s", file=sys.stderr, flush=True)
    record = {
        "build_s": round(time.monotonic() - start, 1),
        "chunks": chunks,
        "bytes": du(folder / "t"),
        "built_with": git_commit(),
    }
    done.write_text(json.dumps(record))
    return folder / "t", {**record, "cached": False}


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


# --- the child processes ---------------------------------------------------------------------------


def writer_role(spec: dict[str, Any]) -> None:
    """Back-to-back upserts until ``stop`` exists; one JSON line per attempt in ``log``."""
    import hudi_md

    rng = np.random.default_rng(spec["seed"])
    next_id, n = spec["rows"], spec["upsert_rows"]
    hot_ids = np.arange(spec["rows"] - spec["hot_rows"], spec["rows"])
    n_ins = round(n * spec["insert_fraction"])
    stop = Path(spec["stop"])
    waited = _time_lock_waits()
    profiler = _profiler(spec)
    with open(spec["log"], "a") as log:
        log.write(json.dumps({"ready": time.monotonic()}) + "\n")
        log.flush()
        k = 0
        while not stop.exists():
            updates = rng.choice(hot_ids, size=min(n - n_ins, len(hot_ids)), replace=False)
            ids = np.concatenate([updates, np.arange(next_id, next_id + n_ins)])
            data = make_rows(ids, 2 + k, spec["partitions"])
            waited[0] = 0.0
            rec: dict[str, Any] = {"k": k, "start": time.monotonic(), "cpu0": time.process_time()}
            try:
                rec["instant"] = hudi_md.write(
                    data, spec["path"], operation="upsert", options=spec["options"]
                )
                rec["ok"], rec["inserts"] = True, n_ins
                next_id += n_ins
            except Exception as e:  # reported, counted as a failed attempt
                rec["ok"], rec["error"] = False, f"{type(e).__name__}: {e}"[:500]
            rec["end"], rec["cpu"] = time.monotonic(), time.process_time() - rec.pop("cpu0")
            rec["lock_wait"] = waited[0]
            log.write(json.dumps(rec) + "\n")
            log.flush()
            k += 1
    _dump(profiler, spec)


def _time_lock_waits() -> list[float]:
    """Measure, in this (writer) process, the time spent acquiring the table lock: the writer
    waits there while ``metadata create`` or the indexer's completion holds it. Wraps
    ``TableLock.acquire``; the product code is unchanged."""
    from hudi_md.write.lock import TableLock

    waited = [0.0]
    real = TableLock.acquire

    def acquire(self: Any) -> None:
        t = time.monotonic()
        try:
            real(self)
        finally:
            waited[0] += time.monotonic() - t

    TableLock.acquire = acquire  # type: ignore[method-assign]
    return waited


def indexer_role(spec: dict[str, Any]) -> None:
    """Scenario b's indexer: schedule then run, in this process; prints the step times."""
    if spec.get("nice"):
        os.nice(spec["nice"])
    import hudi_md

    profiler = _profiler(spec)
    t0 = time.monotonic()
    instant = hudi_md.schedule_indexing(spec["path"], ["record_index"], options=spec["options"])
    t1 = time.monotonic()
    hudi_md.run_indexing(spec["path"], options=spec["options"])
    t2 = time.monotonic()
    _dump(profiler, spec)
    print(json.dumps({"instant": instant, "start": t0, "scheduled": t1, "end": t2}), flush=True)


def _profiler(spec: dict[str, Any]) -> Any:
    if not spec.get("profile"):
        return None
    import cProfile

    p = cProfile.Profile()
    p.enable()
    return p


def _dump(profiler: Any, spec: dict[str, Any]) -> None:
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(spec["profile"])


# --- a scenario ----------------------------------------------------------------------------------


class Child:
    """A child process whose CPU time is read when it is reaped (os.wait4)."""

    def __init__(self, argv: list[str], out: Path, nice: int = 0) -> None:
        self.out, self.err = out.with_suffix(".out"), out.with_suffix(".err")
        with open(self.out, "w") as so, open(self.err, "w") as se:
            pre = (lambda: os.nice(nice)) if nice else None
            self.proc = subprocess.Popen(argv, stdout=so, stderr=se, preexec_fn=pre, cwd=ROOT)
        self.start = time.monotonic()
        self.end: float | None = None
        self.rc: int | None = None
        self.cpu_s: float | None = None

    def poll(self) -> bool:
        if self.rc is None:
            pid, status, usage = os.wait4(self.proc.pid, os.WNOHANG)
            if pid:
                self._reaped(status, usage)
        return self.rc is not None

    def wait(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not self.poll():
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.proc.args} did not end in {timeout}s")
            time.sleep(0.1)

    def _reaped(self, status: int, usage: Any) -> None:
        self.end = time.monotonic()
        self.rc = os.waitstatus_to_exitcode(status)
        self.proc.returncode = self.rc
        self.cpu_s = round(usage.ru_utime + usage.ru_stime, 1)

    def tail(self, n: int = 2000) -> str:
        return self.err.read_text()[-n:]


def share(attempts: list[dict[str, Any]], lo: float, hi: float) -> float:
    """Commits done in [lo, hi]: each successful attempt counts for the share of it inside."""
    total = 0.0
    for a in attempts:
        if a["ok"]:
            overlap = min(hi, a["end"]) - max(lo, a["start"])
            if overlap > 0:
                total += overlap / max(1e-9, a["end"] - a["start"])
    return total


def work_done(attempts: list[list[Any]], t: float) -> float:
    """Commits done by ``t`` (seconds from the window's start), fractionally; ``attempts`` as
    recorded: ``[start, end, ok]``."""
    return sum(min(1.0, max(0.0, (t - s) / max(1e-9, e - s))) for s, e, ok in attempts if ok)


def undisturbed_time(refs: list[list[list[Any]]], work: float) -> float:
    """Seconds the undisturbed writer took for its first ``work`` commits (fractional, mean over
    the undisturbed runs; past a run's last commit, at that commit's pace)."""
    out = []
    for attempts in refs:
        ends = [0.0] + [e for _, e, ok in attempts if ok]
        whole = int(work)
        if whole + 1 < len(ends):
            out.append(ends[whole] + (work - whole) * (ends[whole + 1] - ends[whole]))
        else:
            pace = ends[-1] - ends[-2] if len(ends) > 1 else float("nan")
            out.append(ends[-1] + (work - (len(ends) - 1)) * pace)
    return float(np.mean(out))


def same_commits_ratios(results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Throughput ratios that compare the same commits: the time the undisturbed writer took for
    the commits b (or c) made over the build (and the window), over the time b (c) took. The
    writer's commits grow costlier as the table gains file groups (each upsert's inserts make
    new ones), so a plain rate ratio between runs that made different numbers of commits leans
    towards the run with fewer; this one does not."""
    refs = [r["attempts"] for k, r in results.items() if k.split("#")[0] == "undisturbed"]
    out: dict[str, Any] = {}
    if not refs:
        return out
    for name, r in results.items():
        if "build_end_s" not in r:
            continue
        att, b0, b1, win = r["attempts"], r["build_start_s"], r["build_end_s"], r["window_s"]
        w0, w1, ww = work_done(att, b0), work_done(att, b1), work_done(att, win)
        ref_build = undisturbed_time(refs, w1) - undisturbed_time(refs, w0)
        out[f"ratio_{name}_over_undisturbed_build_same_commits"] = round(ref_build / (b1 - b0), 3)
        out[f"ratio_{name}_over_undisturbed_window_same_commits"] = round(undisturbed_time(refs, ww) / win, 3)
        beyond = max(len([a for a in ref if a[2]]) for ref in refs) < ww
        out[f"{name}_same_commits_extrapolated"] = beyond
    return out


def per_min(commits: float, seconds: float) -> float | None:
    return round(commits * 60.0 / seconds, 3) if seconds > 0 else None


def run_scenario(spec_name: str, folder: Path, base: Path, args: argparse.Namespace) -> dict[str, Any]:
    """One scenario on a fresh copy of the base table; ``spec_name``: undisturbed, async or
    blocking, optionally ``@N``: the indexer's os.nice increment (default ``--indexer-nice``)."""
    name, _, nice_text = spec_name.partition("@")
    if name not in ("undisturbed", "async", "blocking"):
        raise SystemExit(f"unknown scenario {spec_name!r}")
    nice = int(nice_text) if nice_text else args.indexer_nice
    folder.mkdir()
    path = folder / "t"
    t_copy = time.monotonic()
    shutil.copytree(base, path)
    copy_s = time.monotonic() - t_copy
    opts = options(args.table_type, args.partitions)
    spec = {
        "path": str(path),
        "options": opts,
        "rows": args.rows,
        "partitions": args.partitions,
        "upsert_rows": args.upsert_rows,
        "insert_fraction": args.insert_fraction,
        "hot_rows": hot_rows(args),
        "seed": args.seed,
        "stop": str(folder / "stop"),
        "log": str(folder / "writer.jsonl"),
        "profile": str(folder / "writer.prof") if args.profile else None,
    }
    load_before = os.getloadavg()
    me = [sys.executable, str(Path(__file__).resolve())]
    writer = Child([*me, "--role", "writer", json.dumps(spec)], folder / "writer")
    ready = None
    while ready is None:
        if writer.poll():
            raise RuntimeError(f"the writer ended before its first commit: {writer.tail()}")
        lines = Path(spec["log"]).read_text().splitlines() if Path(spec["log"]).exists() else []
        ready = json.loads(lines[0])["ready"] if lines else None
        time.sleep(0.05)
    indexer: Child | None = None
    if name != "undisturbed":
        time.sleep(max(0.0, ready + args.lead - time.monotonic()))
        if name == "async":
            ispec = {
                **spec,
                "nice": nice,
                "profile": str(folder / "indexer.prof") if args.profile else None,
            }
            indexer = Child([*me, "--role", "indexer", json.dumps(ispec)], folder / "indexer")
        else:
            cli = str(Path(sys.executable).with_name("hudi-md"))
            argv = [cli, "metadata", "create", str(path), "--partitions", "record_index", "--no-progress"]
            for k, v in opts.items():
                argv += ["-o", f"{k}={v}"]
            indexer = Child(argv, folder / "indexer", nice=nice)
    while True:
        if writer.poll():
            raise RuntimeError(f"the writer ended early (rc {writer.rc}): {writer.tail()}")
        done = indexer is None or indexer.poll()
        if done and time.monotonic() >= ready + args.seconds:
            break
        time.sleep(0.1)
    window_end = max(ready + args.seconds, indexer.end if indexer else 0.0)
    Path(spec["stop"]).write_text("stop")
    writer.wait(timeout=3600)
    load_after = os.getloadavg()
    attempts = [json.loads(x) for x in Path(spec["log"]).read_text().splitlines()[1:]]
    ok = [a for a in attempts if a["ok"]]
    window_s = window_end - ready
    out: dict[str, Any] = {
        "window_s": round(window_s, 1),
        "commits_per_min_window": per_min(share(attempts, ready, window_end), window_s),
        "commits_completed_in_window": sum(1 for a in ok if a["end"] <= window_end),
        "failed_attempts": [a["error"] for a in attempts if not a["ok"]][:5],
        "commit_s_mean": round(float(np.mean([a["end"] - a["start"] for a in ok])), 2) if ok else None,
        "commit_s_max": round(max(a["end"] - a["start"] for a in ok), 2) if ok else None,
        "writer_cpu_s_per_commit": round(float(np.mean([a["cpu"] for a in ok])), 2) if ok else None,
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in load_after],
        "copy_s": round(copy_s, 1),
        # every attempt as [start, end, ok] in seconds from the window's start (the raw figures)
        "attempts": [[round(a["start"] - ready, 2), round(a["end"] - ready, 2), a["ok"]] for a in attempts],
        "attempts_cpu_s": [round(a["cpu"], 1) for a in attempts],
        "attempts_lock_wait_s": [round(a["lock_wait"], 2) for a in attempts],
    }
    if indexer is not None:
        assert indexer.end is not None
        build_s = indexer.end - indexer.start
        during = [a for a in ok if a["start"] < indexer.end and a["end"] > indexer.start]
        out.update(
            {
                "indexer": "hudi_md.schedule_indexing + run_indexing"
                if name == "async"
                else "hudi-md metadata create --partitions record_index",
                "indexer_nice": nice,
                "indexer_rc": indexer.rc,
                "indexer_error": indexer.tail() if indexer.rc else None,
                "build_start_s": round(indexer.start - ready, 2),
                "build_end_s": round(indexer.end - ready, 2),
                "build_s": round(build_s, 1),
                "indexer_cpu_s": indexer.cpu_s,
                "commits_per_min_build": per_min(share(attempts, indexer.start, indexer.end), build_s),
                "commits_completed_in_build": sum(1 for a in ok if indexer.start <= a["end"] <= indexer.end),
                "writer_cpu_s_per_commit_build": round(float(np.mean([a["cpu"] for a in during])), 2)
                if during
                else None,
            }
        )
        if name == "async" and indexer.rc == 0:
            steps = json.loads(indexer.out.read_text().splitlines()[-1])
            out["schedule_s"] = round(steps["scheduled"] - steps["start"], 2)
            out["run_s"] = round(steps["end"] - steps["scheduled"], 1)
        out["verify"] = verify(path, args.rows + sum(a["inserts"] for a in ok))
    print(f"{name}: {json.dumps(out)}", file=sys.stderr, flush=True)
    if not args.keep:
        shutil.rmtree(path, ignore_errors=True)
    return out


def verify(path: Path, expected_keys: int) -> dict[str, Any]:
    """``validate_metadata_table`` finds no difference and the record index holds every key."""
    import hudi_md
    from hudi_md.metadata.validate import validate_metadata_table

    t0 = time.monotonic()
    table = hudi_md.open_table(str(path))
    available = list(table.state.config.metadata_partitions)
    diffs = validate_metadata_table(table)
    mdt = table.metadata_table
    indexed = len(mdt.record_index.locations()) if mdt is not None and "record_index" in available else None
    return {
        "ok": not diffs and indexed == expected_keys,
        "mdt_partitions": available,
        "differences": len(diffs),
        "first_differences": [d.describe() for d in diffs[:5]],
        "record_index_keys": indexed,
        "expected_keys": expected_keys,
        "verify_s": round(time.monotonic() - t0, 1),
    }


def hot_rows(args: argparse.Namespace) -> int:
    """Updates are drawn from the base table's newest keys: 10% of it, at least twice an upsert's
    updates. Not from the writer's own inserts: hudi-md has no small-file handling, so each
    upsert's inserts make one new file group per partition, and updating them too made every
    commit rewrite all of them (a commit's cost grew with the number of commits before it, and a
    rate over runs of different commit counts would not compare)."""
    return min(args.rows, max(args.rows // 10, 2 * args.upsert_rows))


# --- main ----------------------------------------------------------------------------------------


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, cwd=ROOT, check=True).stdout.strip()


def snapshot_and_reexec() -> None:
    """Run on the committed code: extract HEAD's python/ (git archive) under build/ and run this
    script again with it first on PYTHONPATH, for every process of the run (the writer, the
    indexer and the ``hudi-md`` CLI inherit it). Others may be editing the working tree."""
    sha = _git("rev-parse", "HEAD")
    src = CACHE / f"src-{sha[:12]}"
    if not (src / "python" / "hudi_md" / "__init__.py").exists():
        src.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "archive", sha, "python"], cwd=ROOT, capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(src)], input=archive.stdout, check=True)
    env = {**os.environ, "PYTHONPATH": str(src / "python"), "INDEXING_BENCH_SRC": sha}
    os.execve(sys.executable, [sys.executable, str(Path(__file__).resolve()), *sys.argv[1:]], env)


def git_commit() -> str:
    import hudi_md

    snap = os.environ.get("INDEXING_BENCH_SRC")
    if snap:
        assert Path(hudi_md.__file__).is_relative_to(CACHE), hudi_md.__file__
        return f"{snap[:7]} (HEAD's python/ via git archive)"
    head = _git("rev-parse", "--short", "HEAD")
    dirty = _git("status", "--porcelain", "--untracked-files=no", "python")
    return head + (" (python/ modified)" if dirty else "")


def ratio(x: float | None, y: float | None) -> float | None:
    return round(x / y, 3) if x is not None and y else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--partitions", type=int, default=20)
    ap.add_argument("--table-type", default="COPY_ON_WRITE")
    ap.add_argument("--seconds", type=float, default=120.0, help="writer window (stretched to cover a build)")
    ap.add_argument("--lead", type=float, default=10.0, help="seconds the writer runs before the indexer")
    ap.add_argument("--upsert-rows", type=int, default=100_000)
    ap.add_argument("--insert-fraction", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument(
        "--scenarios",
        default="undisturbed,async,blocking,undisturbed",
        help="in this order; the reference is the mean of the undisturbed runs; async@10: that scenario's "
        "indexer at os.nice(10)",
    )
    ap.add_argument("--indexer-nice", type=int, default=0, help="os.nice increment of the indexer (b and c)")
    ap.add_argument("--profile", action="store_true", help="cProfile the writer and indexer (not recorded)")
    ap.add_argument(
        "--snapshot",
        action="store_true",
        help="run HEAD's committed python/ (git archive), not the working tree",
    )
    ap.add_argument("--keep", action="store_true", help="keep the scenarios' tables")
    ap.add_argument("--no-record", action="store_true", help="do not append to the results file")
    ap.add_argument("--role", help=argparse.SUPPRESS)
    ap.add_argument("spec", nargs="?", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.role == "writer":
        return writer_role(json.loads(args.spec))
    if args.role == "indexer":
        return indexer_role(json.loads(args.spec))
    if args.snapshot and not os.environ.get("INDEXING_BENCH_SRC"):
        return snapshot_and_reexec()

    load_start = uptime()
    base, base_record = base_table(args)
    work = Path(tempfile.mkdtemp(prefix="indexing-bench-", dir=CACHE))
    names = args.scenarios.split(",")
    results: dict[str, dict[str, Any]] = {}
    try:
        for name in names:
            key = (
                name if name not in results else f"{name}#{sum(k.split('#')[0] == name for k in results) + 1}"
            )
            results[key] = run_scenario(name, work / key, base, args)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    # the reference: the mean of the undisturbed runs (one before and one after b and c by default,
    # so a drift of the machine's load over the run shows and is split evenly)
    refs = [r["commits_per_min_window"] for k, r in results.items() if k.split("#")[0] == "undisturbed"]
    a = round(float(np.mean(refs)), 3) if refs else None
    summary = {
        "bench": "indexing",
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "commit": git_commit(),
        "rows": args.rows,
        "partitions": args.partitions,
        "table_type": args.table_type,
        "upsert_rows": args.upsert_rows,
        "insert_fraction": args.insert_fraction,
        "hot_rows": hot_rows(args),
        "seconds": args.seconds,
        "lead_s": args.lead,
        "indexer_nice": args.indexer_nice,
        "profiled": args.profile,
        "cores": os.cpu_count(),
        "machine": platform.machine(),
        "python": platform.python_version(),
        "uptime_before": load_start,
        "uptime_after": uptime(),
        "base_table": base_record,
        "scenarios": results,
        "undisturbed_commits_per_min": a,
    }
    for key, r in results.items():
        if "build_end_s" in r:  # ratio_async_over_undisturbed_build, ratio_blocking@10_over_..., ...
            summary[f"ratio_{key}_over_undisturbed_build"] = ratio(r["commits_per_min_build"], a)
            summary[f"ratio_{key}_over_undisturbed_window"] = ratio(r["commits_per_min_window"], a)
    summary.update(same_commits_ratios(results))
    for key in results:
        if key.split("#")[0].partition("@")[0] == "async":
            g = summary[f"ratio_{key}_over_undisturbed_build"]
            summary[f"goal_{key}_build_ratio_ge_0_8"] = None if g is None else g >= 0.8
    if not args.no_record and not args.profile:
        RESULTS.parent.mkdir(exist_ok=True)
        with open(RESULTS, "a") as f:
            f.write(json.dumps(summary) + "\n")
    print_table(summary)
    if args.profile:
        print(f"profiles: {work} (kept)" if args.keep else "profiles need --keep", file=sys.stderr)


def print_table(s: dict[str, Any]) -> None:
    print(f"\nrows {s['rows']:,}  cores {s['cores']}  commit {s['commit']}  indexer nice {s['indexer_nice']}")
    print(f"load before: {s['uptime_before']}\nload after:  {s['uptime_after']}")
    print("ratios: to the mean undisturbed rate; 'same': the same commits' undisturbed time (docstring)")
    cols = ["scenario", "window s", "c/min win", "c/min build", "build s", "ratio build", "ratio win"]
    cols += ["same build", "same win", "verified"]
    print(f"{cols[0]:<14}" + "".join(f"{c:>12}" for c in cols[1:]))
    a = s["undisturbed_commits_per_min"]
    for name, r in s["scenarios"].items():
        v = r.get("verify", {}).get("ok")
        cells = [
            r["window_s"],
            r["commits_per_min_window"],
            r.get("commits_per_min_build"),
            r.get("build_s"),
            ratio(r.get("commits_per_min_build"), a),
            ratio(r["commits_per_min_window"], a),
            s.get(f"ratio_{name}_over_undisturbed_build_same_commits"),
            s.get(f"ratio_{name}_over_undisturbed_window_same_commits"),
            v,
        ]
        print(f"{name:<14}" + "".join(f"{'-' if c is None else c!s:>12}" for c in cells))


if __name__ == "__main__":
    main()
