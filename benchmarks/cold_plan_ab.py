"""Cold plans of two (or more) hudi-md versions, interleaved, against one S3 copy of a scale table.

The machine's speed moves more between runs than a small change does; this copies the table's
``.hoodie/`` to a moto server once, then runs the versions' cold plans round after round, each
in a fresh process (``PYTHONPATH`` pointing at that version's ``python/``), with every storage
request waiting ``--latency-ms`` first, and reports per version the median cold plan, its ratio to
re-reading the same MDT bytes one request at a time, and its CPU time.

    git worktree add /tmp/old <commit>
    .venv/bin/python benchmarks/cold_plan_ab.py --rounds 6 old=/tmp/old/python new=python

A version's process runs this file with ``--child``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

QUERIES = ("none", "eq")  # the default --queries


def child(
    uri: str, options: str, cold_repeats: int, partitions: int, latency_ms: float, names: list[str]
) -> None:
    import plan_scale_bench as b

    qs = [q for q in b.queries(partitions) if q.name in names]
    b.REQUEST_LATENCY_S = latency_ms / 1000
    with b.RequestLatency():
        out = b.hudi_md_plans(uri, qs, 1, json.loads(options), cold_repeats)
    print(json.dumps({q: {k: out[q][k] for k in ("cold_s", "mdt_read_s", "cold_cpu_s")} for q in out}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("versions", nargs="*", help="name=path of a version's python/ directory")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--cold-repeats", type=int, default=5)
    ap.add_argument("--partitions", type=int, default=100_000)
    ap.add_argument("--latency-ms", type=float, default=20.0)
    ap.add_argument("--queries", default=",".join(QUERIES), help="query names, comma-separated")
    ap.add_argument("--child", nargs=2, metavar=("URI", "OPTIONS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(*args.child, args.cold_repeats, args.partitions, args.latency_ms, args.queries.split(","))
        return

    import plan_scale_bench as b
    import scale_tables
    from plan_bench import S3Server

    versions = dict(v.split("=", 1) for v in args.versions)
    if len(versions) < 2:
        ap.error("name two versions or more: name=path/to/python")
    s3 = S3Server()
    try:
        table = scale_tables.table_path(scale_tables.DEFAULT_ROOT, args.partitions)
        uri = b.s3_copy(s3, table, args.partitions)
        options = json.dumps(s3.storage_options())
        runs: dict[str, list[dict]] = {v: [] for v in versions}
        for r in range(args.rounds):
            for name, python_dir in versions.items():
                cmd = [sys.executable, __file__, "--child", uri, options]
                cmd += ["--cold-repeats", str(args.cold_repeats), "--partitions", str(args.partitions)]
                cmd += ["--latency-ms", str(args.latency_ms), "--queries", args.queries]
                env = {**os.environ, "PYTHONPATH": str(Path(python_dir).resolve())}
                done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
                got = json.loads(done.stdout.strip().splitlines()[-1])
                runs[name].append(got)
                print(json.dumps({"round": r, "version": name, **got}), flush=True)
        for name, got in runs.items():
            for q in args.queries.split(","):
                ratios = [g[q]["cold_s"] / g[q]["mdt_read_s"] for g in got]
                summary = {
                    "version": name,
                    "query": q,
                    "cold_s_median": round(statistics.median(g[q]["cold_s"] for g in got), 3),
                    "ratio_median": round(statistics.median(ratios), 2),
                    "ratios": [round(x, 2) for x in ratios],
                    "cpu_s_median": round(statistics.median(g[q]["cold_cpu_s"] for g in got), 3),
                }
                print(json.dumps(summary), flush=True)
    finally:
        s3.stop()


if __name__ == "__main__":
    main()
