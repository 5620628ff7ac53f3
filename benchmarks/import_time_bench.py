"""Import time benchmark (issue 39): what ``import hudi_md`` costs, against ``import pyarrow`` in the
same run (the goal: under 0.5 s, and not far from pyarrow's, which every use of hudi-md pays anyway).

    .venv/bin/python benchmarks/import_time_bench.py [--runs 5]

Each case runs in a fresh interpreter, ``--runs`` times, the cases taking turns so load drifts hit
them alike; the figure is the median of the time the import statement takes inside the process
(interpreter start-up excluded), and how many modules it adds to ``sys.modules``. The cases:
``import pyarrow``; ``import hudi_md``; ``import hudi_md; hudi_md.open_table`` (the read API, on
first use); ``import hudi_md; hudi_md.write`` (the write side). After a bare ``import hudi_md`` it
records whether pandas, PySpark or any ``hudi_md.write`` module was loaded (none should be).

Bytecode is compiled once into a scratch ``PYTHONPYCACHEPREFIX`` (an unmeasured first run of each
case), as an installed package has it; the repository's own ``__pycache__`` is neither used nor
written. Results are appended to benchmarks/results/import_time_bench.jsonl.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

CASES = {
    "pyarrow": "import pyarrow",
    "hudi_md": "import hudi_md",
    "hudi_md_open_table": "import hudi_md; hudi_md.open_table",
    "hudi_md_write": "import hudi_md; hudi_md.write",
}

# Runs one case; prints the time of its statement, the modules it added and which of the modules
# the import must not load are loaded.
PROBE = """
import sys, time, json
before = set(sys.modules)
t0 = time.perf_counter()
exec(compile(sys.argv[1], "<case>", "exec"))
elapsed = time.perf_counter() - t0
added = set(sys.modules) - before
print(json.dumps({
    "s": elapsed,
    "modules": len(added),
    "hudi_md_modules": sum(1 for m in added if m == "hudi_md" or m.startswith("hudi_md.")),
    "pandas": "pandas" in sys.modules,
    "pyspark": "pyspark" in sys.modules,
    "hudi_md_write": sorted(m for m in sys.modules if m == "hudi_md.write" or m.startswith("hudi_md.write.")),
}))
"""


def run_case(statement: str, env: dict[str, str]) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, statement],
        capture_output=True,
        text=True,
        env=env,
        cwd=tempfile.gettempdir(),  # not the repository: its build/ directory would shadow packages
        check=True,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5, help="measured runs per case (median)")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="import-bench-pycache-") as pycache:
        env = dict(os.environ)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = pycache
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO / "python"), env.get("PYTHONPATH")) if p)
        for statement in CASES.values():  # compiles the bytecode; not measured
            run_case(statement, env)
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in CASES}
        for _ in range(args.runs):
            for name, statement in CASES.items():
                runs[name].append(run_case(statement, env))

    def median_s(name: str) -> float:
        return statistics.median(r["s"] for r in runs[name])

    cases = {
        name: {
            "median_s": round(median_s(name), 4),
            "runs_s": [round(r["s"], 4) for r in runs[name]],
            "modules": statistics.median(r["modules"] for r in runs[name]),
            "hudi_md_modules": statistics.median(r["hudi_md_modules"] for r in runs[name]),
            "pandas_loaded": any(r["pandas"] for r in runs[name]),
        }
        for name in CASES
    }
    bare = runs["hudi_md"]
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO
    ).stdout.strip()
    dirty = bool(
        subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, cwd=REPO
        ).stdout.strip()
    )
    result = {
        "commit": commit,
        "dirty": dirty,
        "python": sys.version.split()[0],
        "cores": os.cpu_count(),
        "load": os.getloadavg(),
        "runs": args.runs,
        "ratio_hudi_md_over_pyarrow": round(median_s("hudi_md") / median_s("pyarrow"), 4),
        "ratio_open_table_over_pyarrow": round(median_s("hudi_md_open_table") / median_s("pyarrow"), 4),
        "after_import_hudi_md": {
            "pandas": any(r["pandas"] for r in bare),
            "pyspark": any(r["pyspark"] for r in bare),
            "hudi_md_write": sorted({m for r in bare for m in r["hudi_md_write"]}),
        },
        "cases": cases,
    }
    print(json.dumps(result, indent=2))
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    with open(out / "import_time_bench.jsonl", "a") as f:
        f.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
