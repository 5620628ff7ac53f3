"""Plots and tables of benchmarks/REPORT.md from benchmarks/results/plan_scale_bench.jsonl.

    .venv/bin/pip install -e '.[bench]'   # matplotlib
    .venv/bin/python benchmarks/plan_scale_report.py [--commit C]

Takes, per table size, the last record (of ``--commit`` when given), writes the figures to
benchmarks/figures/ and prints the Markdown tables REPORT.md quotes.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "plan_scale_bench.jsonl"
FIGURES = HERE / "figures"
QUERIES = ("eq", "eq_first", "range", "none", "data_1pct")
SPARK_SYSTEMS = (("hudi_md", "hudi-md"), ("hudi", "Apache Hudi 1.2"), ("spark", "Spark listing"))


def load(commit: str | None) -> list[dict[str, Any]]:
    by_size: dict[int, dict[str, Any]] = {}
    for line in RESULTS.read_text().splitlines():
        rec = json.loads(line)
        if commit is None or rec.get("commit") == commit:
            by_size[rec["partitions"]] = rec
    return [by_size[n] for n in sorted(by_size)]


def series(records: list[dict[str, Any]], get: Any) -> tuple[list[int], list[float]]:
    xs, ys = [], []
    for rec in records:
        try:
            value = get(rec)
        except (KeyError, TypeError):
            continue
        if value is not None:
            xs.append(rec["partitions"])
            ys.append(value)
    return xs, ys


def plot_requests(records: list[dict[str, Any]]) -> Path:
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for q in QUERIES:
        xs, ys = series(records, lambda r, q=q: r["hudi_md"][q]["requests"])
        left.plot(xs, ys, marker="o", label=q)
        xs, ys = series(records, lambda r, q=q: r["hudi_md"][q]["mdt_bytes"] / 1e6)
        right.plot(xs, ys, marker="o", label=q)
    xs, ys = series(records, lambda r: r["build"]["mdt_bytes"] / 1e6)
    right.plot(xs, ys, color="grey", linestyle="--", label="whole MDT")
    left.axhline(16, color="red", linestyle=":", label="target (16)")
    left.set(xscale="log", xlabel="partitions", ylabel="storage requests per cold plan", ylim=(0, None))
    left.set_title("hudi-md: requests per plan (open + plan)")
    right.set(xscale="log", yscale="log", xlabel="partitions", ylabel="MB of the MDT read")
    right.set_title("hudi-md: MDT bytes read per cold plan")
    for ax in (left, right):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    out = FIGURES / "plan_requests.png"
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def plot_times(records: list[dict[str, Any]]) -> Path:
    import matplotlib.pyplot as plt

    shown = ("eq", "range", "none", "data_1pct")
    fig, axes = plt.subplots(2, len(shown), figsize=(16, 7.5), sharex=True)
    for col, q in enumerate(shown):
        for row, kind in enumerate(("cold_s", "warm_s")):
            ax = axes[row][col]
            for key, label in SPARK_SYSTEMS:
                xs, ys = series(records, lambda r, key=key, q=q, kind=kind: r["spark"][key][q][kind])
                ax.plot(xs, ys, marker="o", label=f"{label} (Spark)")
            xs, ys = series(records, lambda r, q=q, kind=kind: r["hudi_rs"][q][kind])
            ax.plot(xs, ys, marker="s", label="hudi-rs get_file_slices")
            xs, ys = series(records, lambda r, q=q, kind=kind: r["hudi_md"][q][kind])
            ax.plot(xs, ys, marker="^", linestyle="--", label="hudi-md planner alone")
            ax.set(xscale="log", yscale="log", title=f"{q}: {kind[:-2]}")
            ax.grid(True, which="both", alpha=0.3)
            if row == 1:
                ax.set_xlabel("partitions")
            if col == 0:
                ax.set_ylabel("seconds")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    out = FIGURES / "plan_time.png"
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def plot_skipping(records: list[dict[str, Any]]) -> Path:
    import matplotlib.pyplot as plt

    # bars, not lines: the systems that skip select the same files, and lines would hide each other
    systems = [
        ("hudi-md", lambda r: r["hudi_md"]["data_1pct"]["files"]),
        ("Apache Hudi 1.2 (data skipping on)", lambda r: r["spark"]["hudi"]["data_1pct"]["files"]),
        ("hudi-rs (footer stats)", lambda r: r["hudi_rs"]["data_1pct"]["files"]),
        ("Spark listing", lambda r: r["spark"]["spark"]["data_1pct"]["files"]),
    ]
    fig, ax = plt.subplots(figsize=(7, 4))
    width = 0.8 / len(systems)
    for i, (label, files) in enumerate(systems):
        xs, ys = [], []
        for slot, rec in enumerate(records):
            try:
                value = files(rec)
            except (KeyError, TypeError):
                continue
            xs.append(slot + (i - (len(systems) - 1) / 2) * width)
            ys.append(100 * value / rec["partitions"])
        bars = ax.bar(xs, ys, width, label=label)
        ax.bar_label(bars, fmt="%.1f", fontsize=7)
    ax.axhline(2, color="red", linestyle=":", label="target (2 %)")
    ax.set_xticks(range(len(records)), [f"{r['partitions']:,}" for r in records])
    ax.set(yscale="log", xlabel="partitions", ylabel="% of files scanned", ylim=(0.5, 3000))
    ax.set_title("v >= x selecting 1 % of rows (clustered column)")
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    out = FIGURES / "data_skipping.png"
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        if v < 0.1:
            return f"{v:.4f}"
        return f"{v:.3f}" if v < 10 else f"{v:.1f}"
    return str(v)


def tables(records: list[dict[str, Any]]) -> str:
    lines = ["### hudi-md planner (in process): requests, bytes, time per plan", ""]
    lines.append(
        "| partitions | query | requests | MDT requests | MDT KB | all KB | cold s | warm s | "
        "MDT re-read s | files |"
    )
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    for r in records:
        for q in QUERIES:
            m = r["hudi_md"].get(q)
            if not m:
                continue
            lines.append(
                f"| {r['partitions']} | {q} | {m['requests']} | {m['mdt_requests']} | "
                f"{m['mdt_bytes'] / 1024:.0f} | {m['bytes'] / 1024:.0f} | {fmt(m['cold_s'])} | "
                f"{fmt(m['warm_s'])} | {fmt(m['mdt_read_s'])} | {m['files']} |"
            )
    lines += [
        "",
        "### hudi-md planner against S3 (moto on loopback): cold plan vs re-reading its MDT bytes",
        "",
    ]
    lines.append(
        "| partitions | query | requests | MDT KB | cold s | warm s | MDT re-read s | cold / MDT re-read "
        "| all re-read s | cold / all re-read |"
    )
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    for r in records:
        for q in QUERIES:
            m = r.get("hudi_md_s3", {}).get(q)
            if not m:
                continue
            ratio = f"{m['cold_s'] / m['mdt_read_s']:.1f}" if m["mdt_read_s"] else "-"
            ratio_all = f"{m['cold_s'] / m['all_reads_s']:.1f}" if m["all_reads_s"] else "-"
            lines.append(
                f"| {r['partitions']} | {q} | {m['requests']} | {m['mdt_bytes'] / 1024:.0f} | "
                f"{fmt(m['cold_s'])} | {fmt(m['warm_s'])} | {fmt(m['mdt_read_s'])} | {ratio} | "
                f"{fmt(m['all_reads_s'])} | {ratio_all} |"
            )
    lines += ["", "### hudi-md planner vs hudi-rs get_file_slices (both in process, seconds)", ""]
    lines.append(
        "| partitions | query | hudi-md cold / warm | hudi-rs cold / warm | ratio cold | ratio warm |"
    )
    lines.append("|---|---|---|---|---|---|")
    for r in records:
        for q in QUERIES:
            m, rs = r["hudi_md"].get(q), r.get("hudi_rs", {}).get(q)
            if not m or not rs or "cold_s" not in rs:
                continue
            lines.append(
                f"| {r['partitions']} | {q} | {fmt(m['cold_s'])} / {fmt(m['warm_s'])} | "
                f"{fmt(rs['cold_s'])} / {fmt(rs['warm_s'])} | {m['cold_s'] / rs['cold_s']:.2f} | "
                f"{m['warm_s'] / rs['warm_s']:.2f} |"
            )
    lines += ["", "### Plan time through Spark (seconds, cold / warm) and hudi-rs", ""]
    lines.append(
        "| partitions | query | hudi-md | Hudi 1.2 | ratio cold | ratio warm | hudi-rs | Spark listing |"
    )
    lines.append("|---|---|---|---|---|---|---|---|")
    for r in records:
        spark = r.get("spark", {})
        for q in QUERIES:

            def pair(sys_: dict[str, Any] | None, q: str = q) -> str:
                e = (sys_ or {}).get(q)
                if not e or "cold_s" not in e:
                    return "-"
                return f"{fmt(e['cold_s'])} / {fmt(e['warm_s'])}"

            md, hu = spark.get("hudi_md", {}).get(q), spark.get("hudi", {}).get(q)
            ratio_c = ratio_w = "-"
            if md and hu:
                ratio_c = f"{md['cold_s'] / hu['cold_s']:.2f}"
                if md["warm_s"] is not None and hu["warm_s"]:
                    ratio_w = f"{md['warm_s'] / hu['warm_s']:.2f}"
            lines.append(
                f"| {r['partitions']} | {q} | {pair(spark.get('hudi_md'))} | {pair(spark.get('hudi'))} | "
                f"{ratio_c} | {ratio_w} | {pair(r.get('hudi_rs'))} | {pair(spark.get('spark'))} |"
            )
    lines += ["", "### Agreement (selected files equal to hudi-md's; rows counted)", ""]
    lines.append(
        "| partitions | query | files | Hudi | hudi-rs | Spark listing | rows hudi-md / Hudi / Spark |"
    )
    lines.append("|---|---|---|---|---|---|---|")
    for r in records:
        for q in QUERIES:
            a = r.get("agreement", {}).get(q, {})
            rows = " / ".join(fmt(a.get(f"{s}_rows")) for s in ("hudi_md", "hudi", "spark"))
            lines.append(
                f"| {r['partitions']} | {q} | {a.get('hudi_md_files')} | {fmt(a.get('hudi_same_files'))} | "
                f"{fmt(a.get('hudi_rs_same_files'))} | {fmt(a.get('spark_same_files'))} | {rows} |"
            )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--commit")
    args = ap.parse_args()
    records = load(args.commit)
    FIGURES.mkdir(exist_ok=True)
    for out in (plot_requests(records), plot_times(records), plot_skipping(records)):
        print(f"wrote {out.relative_to(HERE.parent)}")
    print()
    print(tables(records))


if __name__ == "__main__":
    main()
