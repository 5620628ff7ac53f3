"""Many processes writing one table under optimistic concurrency control (``scripts/occ-stress``;
a few seeds run in ``tests/write/test_occ.py``).

Each trial (one seed) creates a table (COW or MOR, record index on or off, Hudi's
FileSystemBasedLockProvider or InProcessLockProvider), seeded with 60 keys in 3 partitions and
several file groups per partition. Then PROCS worker processes start at the same moment and each
upserts WRITES times: existing keys of one or two partitions (so writers overlap on some file
groups and not on others) and new keys of their own. A fault hook sleeps a little before every
storage mutation, widening the windows between the protocol's steps.

Checked after every trial:

* no lost update: the table equals the seed rows with every commit that returned success applied
  in completion order, and no row of a write that raised ``WriteConflictError`` (for hudi-md
  through the MDT and by listing, and for hudi-rs);
* only typed errors (``HudiMdError``); a conflicted write left no file, instant, marker or
  heartbeat behind; no instant is left pending; validate finds no difference.

Prints outcome counts per class and one JSON line with the totals (``--json``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

LOCKS = "org.apache.hudi.client.transaction.lock."
CITIES = ["sf", "nyc", "la"]
SEED_KEYS = 60


def table_options(spec: dict[str, Any]) -> dict[str, str]:
    return {
        "hoodie.table.name": "stress",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.table.type": spec["table_type"],
        "hoodie.metadata.record.index.enable": str(spec["rli"]).lower(),
        "hoodie.write.concurrency.mode": "optimistic_concurrency_control",
        "hoodie.write.lock.provider": LOCKS + spec["provider"],
        "hoodie.parquet.max.file.size": "700",  # a few rows per file group
        "hoodie.metadata.compact.max.delta.commits": "4",
        "hoodie.cleaner.commits.retained": "2",
        "hoodie.keep.min.commits": "3",
        "hoodie.keep.max.commits": "5",
    }


def _rows(pairs: list[tuple[str, str, str]]) -> Any:
    import pyarrow as pa

    return pa.table(
        {
            "id": pa.array([p[0] for p in pairs], pa.string()),
            "city": pa.array([p[1] for p in pairs], pa.string()),
            "v": pa.array([p[2] for p in pairs], pa.string()),
        }
    )


def seed_rows() -> list[tuple[str, str, str]]:
    return [(f"k{i:03d}", CITIES[i % 3], "seed") for i in range(SEED_KEYS)]


# --- a worker process --------------------------------------------------------------------------------


def worker(args: dict[str, Any]) -> list[dict[str, Any]]:
    from hudi_md.errors import HudiMdError, WriteConflictError
    from hudi_md.storage import set_fault_hook
    from hudi_md.write.writer import HudiWriter

    rng = random.Random(args["seed"] * 1000 + args["worker"])
    set_fault_hook(lambda kind, path: time.sleep(rng.uniform(0, args["jitter"])))
    opts = table_options(args["spec"])
    out = []
    delay = args["start_at"] - time.time()
    if delay > 0:
        time.sleep(delay)
    for j in range(args["writes"]):
        time.sleep(rng.uniform(0, 0.05))
        pairs = []
        for city in rng.sample(range(3), rng.choice([1, 1, 2])):
            keys = [i for i in range(SEED_KEYS) if i % 3 == city]
            for i in rng.sample(keys, rng.randint(1, 3)):
                pairs.append((f"k{i:03d}", CITIES[city], f"w{args['worker']}-{j}"))
        if rng.random() < 0.5:
            for k in range(rng.randint(1, 3)):
                pairs.append((f"n{args['worker']}-{j}-{k}", rng.choice(CITIES), f"w{args['worker']}-{j}"))
        record: dict[str, Any] = {"rows": {p[0]: p[2] for p in pairs}, "worker": args["worker"], "write": j}
        try:
            result = HudiWriter(args["path"], opts).write(_rows(pairs), "upsert")
            record.update(status="committed", instant=result.instant)
        except WriteConflictError as e:
            record.update(status="conflict", instant=e.instant_time)
        except HudiMdError as e:
            record.update(
                status=_snake(type(e).__name__), instant=getattr(e, "instant_time", None), error=str(e)
            )
        except Exception as e:  # an untyped error is a failure of the trial
            record.update(status="untyped", error=f"{type(e).__name__}: {e}", trace=traceback.format_exc())
        out.append(record)
    return out


def _snake(name: str) -> str:
    name = name.removesuffix("Error")
    return "".join(f"_{c.lower()}" if c.isupper() and i else c.lower() for i, c in enumerate(name))


# --- one trial -----------------------------------------------------------------------------------------


def trial(seed: int, base: Path, procs: int, writes: int) -> dict[str, Any]:
    import hudi
    import pyarrow as pa

    import hudi_md
    from hudi_md.metadata.validate import validate_metadata_table
    from hudi_md.storage import Storage
    from hudi_md.table.archived import read_archived_rows
    from hudi_md.table.timeline import Timeline
    from hudi_md.write.writer import HudiWriter

    rng = random.Random(seed)
    spec = {
        "table_type": rng.choice(["COPY_ON_WRITE", "MERGE_ON_READ"]),
        "rli": rng.random() < 0.5,
        "provider": rng.choice(["FileSystemBasedLockProvider", "InProcessLockProvider"]),
    }
    path = base / f"t{seed}"
    shutil.rmtree(path, ignore_errors=True)
    HudiWriter(str(path), table_options(spec)).write(_rows(seed_rows()), "insert")
    start_at = time.time() + 2.5  # after every worker imported its modules
    children = []
    for w in range(procs):
        arg = {
            "seed": seed,
            "worker": w,
            "path": str(path),
            "spec": spec,
            "writes": writes,
            "start_at": start_at,
            "jitter": 0.004,
        }
        children.append(
            subprocess.Popen(
                [sys.executable, __file__, "--worker", json.dumps(arg)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    records: list[dict[str, Any]] = []
    problems: list[str] = []
    for c in children:
        out, err = c.communicate(timeout=600)
        if c.returncode != 0:
            problems.append(f"worker exited {c.returncode}: {err[-2000:]}")
            continue
        records.extend(json.loads(out.strip().splitlines()[-1]))
    outcomes = Counter(r["status"] for r in records)
    for r in records:
        if r["status"] not in ("committed", "conflict"):
            problems.append(f"{r['status']}: {r.get('error')}\n{r.get('trace', '')}")
    storage = Storage(str(path))
    timeline = Timeline.load(storage, ".hoodie/timeline", 2)
    completion = {i.requested_time: i.completion_time for i in timeline.completed()}
    for row in read_archived_rows(storage):  # archival may have run meanwhile
        completion.setdefault(row.requested_time, row.completion_time)
    model = {k: v for k, _, v in seed_rows()}
    committed = [r for r in records if r["status"] == "committed"]
    for r in committed:
        if not completion.get(r["instant"]):
            problems.append(f"commit {r['instant']} returned success but is not completed on the timeline")
    committed.sort(key=lambda r: completion.get(r["instant"]) or "")
    for r in committed:
        model.update(r["rows"])
    expected = sorted(model.items())

    def pairs(t: Any) -> list[tuple[str, str]]:
        return sorted(zip(t.column("id").to_pylist(), t.column("v").to_pylist(), strict=True))

    try:
        table = hudi_md.open_table(str(path))
        reads = {
            "hudi-md": table.read(columns=["id", "v"]),
            "hudi-md (listing)": hudi_md.open_table(str(path), {"hoodie.metadata.enable": "false"}).read(
                columns=["id", "v"]
            ),
            "hudi-rs": pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(str(path)).build().read()),
        }
        for who, got in reads.items():
            got_pairs = pairs(got)
            if got_pairs != expected:
                lost = sorted(set(expected) - set(got_pairs))[:5]
                extra = sorted(set(got_pairs) - set(expected))[:5]
                problems.append(f"{who}: rows differ from the model (missing {lost}, unexpected {extra})")
        diffs = validate_metadata_table(table)
        problems += [f"validate: {d.describe()}" for d in diffs]
    except Exception as e:
        problems.append(f"reading failed: {type(e).__name__}: {e}\n{traceback.format_exc()}")
    pending = [str(i) for i in timeline.pending()]
    if pending and all(r["status"] in ("committed", "conflict") for r in records):
        problems.append(f"pending instants left: {pending}")
    for r in records:
        if r["status"] == "conflict":
            left = [
                os.path.relpath(os.path.join(root, n), path)
                for root, dirs, files in os.walk(path)
                for n in dirs + files
                if r["instant"] in n
            ]
            if left:
                problems.append(f"conflicted instant {r['instant']} left {left}")
    return {
        "seed": seed,
        "spec": spec,
        "outcomes": dict(outcomes),
        "commits": len(committed),
        "conflicts": outcomes.get("conflict", 0),
        "problems": problems,
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--seeds", type=int, default=50, help="trials (seeds 0..N-1)")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--procs", type=int, default=3, help="writer processes per trial")
    parser.add_argument("--writes", type=int, default=4, help="upserts per writer process")
    parser.add_argument("--dir", help="where trial tables go (default: a temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the tables of failed trials")
    parser.add_argument("--json", action="store_true", help="end with one JSON line of totals")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return 0
    base = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="occ-stress-"))
    base.mkdir(parents=True, exist_ok=True)
    totals: Counter[str] = Counter()
    commits = conflicts = 0
    failed = []
    t0 = time.time()
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        res = trial(seed, base, args.procs, args.writes)
        totals.update(res["outcomes"])
        commits += res["commits"]
        conflicts += res["conflicts"]
        spec = res["spec"]
        flag = "FAIL" if res["problems"] else "ok"
        print(
            f"seed {seed:4d} {spec['table_type'][:3]} rli={int(spec['rli'])} "
            f"{spec['provider'][:10]}: {dict(res['outcomes'])} {flag}",
            flush=True,
        )
        if res["problems"]:
            failed.append(res)
            for p in res["problems"]:
                print("    " + p.replace("\n", "\n    "), flush=True)
        elif not args.keep:
            shutil.rmtree(base / f"t{seed}", ignore_errors=True)
    print(
        f"trials: {args.seeds}; writes: {sum(totals.values())}; outcomes: {dict(totals)}; "
        f"commits: {commits}; conflicts: {conflicts}; failed trials: {len(failed)}; "
        f"{time.time() - t0:.0f}s"
    )
    if args.json:
        print(
            json.dumps(
                {
                    "trials": args.seeds,
                    "outcomes": dict(totals),
                    "commits": commits,
                    "conflicts": conflicts,
                    "failures": len(failed),
                }
            )
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
