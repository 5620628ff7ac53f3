"""The crash matrix of issue 11: kill a writer before each storage mutation of an operation.

An *operation spec* (:class:`Spec`) names a table (table type, MDT on/off), the steps that build
it, the operation under test and the rows before and after it (a Python model). A *trial* copies
the built table, installs a fault hook that kills the writer before mutation ``k`` (``kill``), or
first writes a truncated prefix of the bytes that mutation would write (``torn``), or SIGKILLs a
child process there (``sigkill``), and then checks:

(a) readers: hudi-md through the MDT, hudi-md listing storage (``hoodie.metadata.enable=false``)
    and hudi-rs each return exactly the model's rows before or after the operation;
(b) ``validate_metadata_table`` answers (a list of differences) without raising;
(c) the next writer (an upsert) succeeds, then every reader equals the model, validate reports no
    difference (MDT on), and no instant is left pending.

Each trial yields an :class:`Outcome` whose ``classes`` (before / after / partial / error kinds)
``scripts/crash-matrix`` sums per operation.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hudi_md
from hudi_md.errors import HudiMdError
from hudi_md.metadata.validate import validate_metadata_table
from hudi_md.storage import SimulatedCrash, set_fault_hook
from hudi_md.table.config import TableConfig
from hudi_md.table.timeline import Timeline
from hudi_md.write import services
from hudi_md.write.config import WriteConfig
from hudi_md.write.lock import TableLock
from hudi_md.write.writer import HudiWriter

# tests/, for table_model (pytest's conftest puts it on the path; scripts/crash-matrix runs this file)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from table_model import Model, pending_instants, read_hudi_md, read_hudi_rs, read_listing, rows

COW, MOR = "COPY_ON_WRITE", "MERGE_ON_READ"


def options(table_type: str, mdt: bool, **extra: str) -> dict[str, str]:
    opts = {
        "hoodie.table.name": "crash",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.metadata.enable": str(mdt).lower(),
        "hoodie.metadata.record.index.enable": str(mdt).lower(),
        "hoodie.metadata.index.column.stats.enable": str(mdt).lower(),
        "hoodie.compact.inline": "false",
        "hoodie.clean.automatic": "false",
        "hoodie.cleaner.commits.retained": "1",
        "hoodie.archive.automatic": "false",
        "hoodie.keep.min.commits": "2",
        "hoodie.keep.max.commits": "3",
    }
    opts.update(extra)
    return opts


# --- steps ---------------------------------------------------------------------------------------

# A step: ("write", operation, ids, ts, seed) | ("compact",) | ("mdt_compact",) | ("clean",)
# | ("delete_partitions", [partition paths])
Step = tuple


def run_step(path: Path, table_type: str, mdt: bool, step: Step, model: Model | None = None) -> str | None:
    """Run one step on the table at ``path``; returns the instant it made (writes)."""
    w = HudiWriter(str(path), options(table_type, mdt))
    kind = step[0]
    if kind == "write":
        _, operation, ids, ts, seed = step
        data = rows(ids, ts, seed)
        result = w.write(data, operation)
        if model is not None:
            model.apply(operation, data)
        return result.instant
    if kind == "compact":
        return services.compact(w)
    if kind == "mdt_compact":
        return services.compact_metadata_table(w, force=True)
    if kind == "clean":
        return services.clean(w, WriteConfig.from_options(w.options, TableConfig.load(w.storage)))
    if kind == "delete_partitions":
        result = w.delete_partitions(step[1])
        if model is not None:
            cities = {p.split("=", 1)[1] for p in step[1]}
            for key in [k for k in model.rows if k[0] in cities]:
                del model.rows[key]
        return result.instant
    raise ValueError(step)


# --- the operations under test ---------------------------------------------------------------------


def _data_op(operation: str, ids: Any, ts: int = 5, seed: int = 5) -> Callable[[Path, Spec], None]:
    def run(path: Path, spec: Spec) -> None:
        HudiWriter(str(path), options(spec.table_type, spec.mdt)).write(rows(ids, ts, seed), operation)

    return run


def _clean(path: Path, spec: Spec) -> None:
    w = HudiWriter(str(path), options(spec.table_type, spec.mdt))
    assert services.clean(w, WriteConfig.from_options(w.options, TableConfig.load(w.storage)))


def _compact(path: Path, spec: Spec) -> None:
    assert services.compact(HudiWriter(str(path), options(spec.table_type, spec.mdt)))


def _cluster(path: Path, spec: Spec) -> None:
    """``hudi-md clustering run``: each partition's file groups rewritten into one new group (MOR:
    its log files merged in), a replacecommit."""
    assert services.cluster(HudiWriter(str(path), options(spec.table_type, spec.mdt)))


def _rollback_last(path: Path, spec: Spec) -> None:
    w = HudiWriter(str(path), options(spec.table_type, spec.mdt))
    last = Timeline.load(w.storage, ".hoodie/timeline", 2).write_timeline().last()
    w.rollback_commit(last.requested_time)


def _restore_first(path: Path, spec: Spec) -> None:
    w = HudiWriter(str(path), options(spec.table_type, spec.mdt))
    first = next(iter(Timeline.load(w.storage, ".hoodie/timeline", 2).write_timeline()))
    w.restore(first.requested_time)


def _archive(path: Path, spec: Spec) -> None:
    w = HudiWriter(str(path), options(spec.table_type, spec.mdt))
    cfg = WriteConfig.from_options(w.options, TableConfig.load(w.storage))
    services.archive_timeline(w, cfg)


def _mdt_compact(path: Path, spec: Spec) -> None:
    assert services.compact_metadata_table(HudiWriter(str(path), options(spec.table_type, True)), force=True)


def _mdt_create(path: Path, spec: Spec) -> None:
    """``hudi-md metadata create``'s path: under the lock, recover, then build the partitions."""
    from hudi_md.metadata.lifecycle import initialize_partitions

    w = HudiWriter(str(path), options(spec.table_type, True))
    config = TableConfig.load(w.storage)
    cfg = WriteConfig.from_options(w.options, config)
    with TableLock(w.storage):
        w.rollback_failed_writes(config)
        have = TableConfig.load(w.storage).metadata_partitions
        wanted = [p for p in w.wanted_mdt_partitions(cfg) if p not in have]
        initialize_partitions(w.storage, TableConfig.load(w.storage), wanted, cfg, w.options)


def _mdt_delete(path: Path, spec: Spec) -> None:
    """``hudi-md metadata delete``'s path."""
    from hudi_md.metadata.lifecycle import delete_metadata_table

    w = HudiWriter(str(path), options(spec.table_type, True))
    with TableLock(w.storage):
        delete_metadata_table(w.storage)


def _switch_mdt(to: bool) -> Callable[[Path, Spec], None]:
    """An upsert with the MDT switched on (its first MDT-enabled write) or off (drops it)."""

    def run(path: Path, spec: Spec) -> None:
        HudiWriter(str(path), options(spec.table_type, to)).write(rows(range(10, 70, 3), 5, 5), "upsert")

    return run


BASE: list[Step] = [
    ("write", "insert", range(0, 45), 1, 1),
    ("write", "upsert", range(0, 45, 2), 2, 2),
    ("write", "upsert", range(20, 60), 3, 3),
]
NEXT: Step = ("write", "upsert", range(0, 90, 7), 9, 9)


@dataclass
class Spec:
    op: str
    table_type: str
    mdt: bool
    setup: list[Step]
    run: Callable[[Path, Spec], None]
    # the model after the operation, from the model before it
    after: Callable[[Model], Model]
    base_mdt: bool | None = None  # MDT while building the table (default: mdt)
    next_mdt: bool | None = None  # MDT of the next writer (default: mdt)
    partial: Callable[[list[Model]], list[Model]] | None = None  # allowed intermediate states

    @property
    def name(self) -> str:
        t = "cow" if self.table_type == COW else "mor"
        return f"{self.op}/{t}/{'mdt' if self.mdt else 'no_mdt'}"


def _same(m: Model) -> Model:
    return m.copy()


def _applied(operation: str, ids: Any, ts: int = 5, seed: int = 5) -> Callable[[Model], Model]:
    def after(m: Model) -> Model:
        m = m.copy()
        m.apply(operation, rows(ids, ts, seed))
        return m

    return after


def _specs() -> list[Spec]:
    out: list[Spec] = []
    write_ops = {
        "insert": ("insert", range(100, 130)),
        "upsert": ("upsert", range(10, 70, 3)),
        "delete": ("delete", range(0, 60, 4)),
        "insert_overwrite": ("insert_overwrite", range(300, 330, 3)),  # one partition (sf)
        "insert_overwrite_table": ("insert_overwrite_table", range(400, 412)),
    }
    for table_type in (COW, MOR):
        for name, (operation, ids) in write_ops.items():
            for mdt in (True, False):
                run, after = _data_op(operation, ids), _applied(operation, ids)
                out.append(Spec(name, table_type, mdt, BASE, run, after))
        for mdt in (True, False):
            # clean: the slices the last upserts (COW) or a compaction (MOR) replaced
            setup = [*BASE[:2], ("compact",), BASE[2]] if table_type == MOR else BASE
            out.append(Spec("clean", table_type, mdt, setup, _clean, _same))
            # a clean deleting a partition a delete_partition emptied (its directory, its MDT entry)
            dropped = [*BASE, ("delete_partitions", ["city=sf"]), ("write", "upsert", range(1, 60, 3), 4, 4)]
            out.append(Spec("clean_dropped_partition", table_type, mdt, dropped, _clean, _same))
            if table_type == MOR:
                out.append(Spec("compaction", table_type, mdt, BASE, _compact, _same))
            out.append(Spec("clustering", table_type, mdt, BASE, _cluster, _same))
            out.append(Spec("rollback_commit", table_type, mdt, BASE, _rollback_last, lambda m: m))
            out.append(Spec("restore", table_type, mdt, BASE, _restore_first, lambda m: m))
            many = [*BASE, *[("write", "upsert", range(i, 60, 5), 3 + i, 3 + i) for i in range(1, 5)]]
            if mdt:
                many.append(("mdt_compact",))
            out.append(Spec("archival", table_type, mdt, many, _archive, _same))
        out.append(Spec("mdt_compaction", table_type, True, BASE, _mdt_compact, _same))
        out.append(Spec("mdt_create", table_type, True, BASE, _mdt_create, _same, base_mdt=False))
        out.append(
            Spec(
                "mdt_enable_write",
                table_type,
                True,
                BASE,
                _switch_mdt(True),
                _applied("upsert", range(10, 70, 3)),
                base_mdt=False,
            )
        )
        out.append(Spec("mdt_delete", table_type, True, BASE, _mdt_delete, _same, next_mdt=False))
        out.append(
            Spec(
                "mdt_disable_write",
                table_type,
                True,
                BASE,
                _switch_mdt(False),
                _applied("upsert", range(10, 70, 3)),
                next_mdt=False,
            )
        )
    return out


SPECS = {s.name: s for s in _specs()}


@dataclass
class Built:
    """A built table: the path of its pristine copy, the models and the operation's mutations."""

    spec: Spec
    path: Path
    models: list[Model]  # the model after each setup step
    mutations: list[tuple[str, str, bool]]  # (kind, path, carries bytes)

    @property
    def before(self) -> Model:
        return self.models[-1]

    @property
    def after(self) -> Model:
        if self.spec.op == "rollback_commit":
            return self.models[-2]
        if self.spec.op == "restore":
            return self.models[0]
        return self.spec.after(self.before)

    def allowed_partial(self) -> list[Model]:
        # A restore rolls later writes back one by one, newest first (as Hudi does): a crash in
        # between leaves the table as it was right after one of them, until the next writer
        # finishes the restore.
        if self.spec.op == "restore":
            return self.models[1:-1]
        return []


def build(spec: Spec, root: Path) -> Built:
    path = root / "base"
    base_mdt = spec.mdt if spec.base_mdt is None else spec.base_mdt
    model = Model()
    models = [Model()]
    for step in spec.setup:
        run_step(path, spec.table_type, base_mdt, step, model)
        if step[0] in ("write", "delete_partitions"):
            models.append(model.copy())
    probe = root / "probe"
    shutil.copytree(path, probe)
    seen: list[tuple[str, str, bool]] = []

    def count(kind: str, p: str, data: bytes | None) -> None:
        seen.append((kind, p[len(str(probe)) :], data is not None))

    count.wants_data = True  # type: ignore[attr-defined]
    previous = set_fault_hook(count)
    try:
        spec.run(probe, spec)
    finally:
        set_fault_hook(previous)
    shutil.rmtree(probe)
    return Built(spec, path, models[1:] if len(models) > 1 else models, seen)


# --- fault hooks ------------------------------------------------------------------------------------


def kill_hook(k: int, torn: bool = False) -> Any:
    """Kill the writer before mutation ``k`` (0-based) and every one after it; with ``torn``, first
    write the first half of the bytes that mutation writes to its target."""
    count = [0]

    def hook(kind: str, path: str, data: bytes | None) -> None:
        count[0] += 1
        if count[0] == k + 1 and torn and data is not None:
            with open(path, "wb") as f:
                f.write(data[: len(data) // 2])
        if count[0] > k:
            raise SimulatedCrash(f"before {kind} {path}")

    hook.wants_data = True  # type: ignore[attr-defined]
    return hook


# --- readers -----------------------------------------------------------------------------------------


READERS = {"mdt": read_hudi_md, "listing": read_listing, "hudi-rs": read_hudi_rs}


def pending(path: Path) -> list[str]:
    """Pending instants of the data table's timeline and of its MDT's."""
    out = pending_instants(str(path))
    mdt = path / ".hoodie" / "metadata"
    if (mdt / ".hoodie" / "hoodie.properties").exists():
        out += [f"mdt:{i}" for i in pending_instants(str(mdt))]
    return out


def _err(e: BaseException) -> str:
    typed = "typed" if isinstance(e, HudiMdError) else "untyped"
    return f"error:{typed}:{type(e).__name__}"


@dataclass
class Outcome:
    spec: str
    k: int
    variant: str
    mutation: str
    readers: dict[str, str] = field(default_factory=dict)  # reader -> before/after/partial/mix/error
    validate: str = ""
    recovery: str = ""
    detail: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        # A torn file may be refused by a reader (hudi-md: a typed error naming it; hudi-rs: its
        # own error); rows read are always one state, the same for every reader that read.
        states = set()
        for reader, state in self.readers.items():
            if state.startswith("error:"):
                if self.variant != "torn" or (reader != "hudi-rs" and ":untyped:" in state):
                    return False
                continue
            states.add(state)
        good_states = states <= {"before", "after", "partial", "same"}
        return good_states and len(states) <= 1 and self.validate == "answered" and self.recovery == "ok"

    @property
    def classes(self) -> list[str]:
        states = set(self.readers.values())
        state = (
            states.pop()
            if len(states) == 1
            else "disagree:" + ",".join(f"{r}={s}" for r, s in sorted(self.readers.items()))
        )
        out = [f"state:{state}"]
        if self.validate != "answered":
            out.append(f"validate:{self.validate}")
        out.append(f"recovery:{self.recovery}")
        return out


def classify(got: list[tuple], built: Built) -> str:
    before, after = built.before.expected(), built.after.expected()
    if got == before and got == after:
        return "same"
    if got == before:
        return "before"
    if got == after:
        return "after"
    if any(got == m.expected() for m in built.allowed_partial()):
        return "partial"
    return "mix"


def check_after_crash(path: Path, built: Built, out: Outcome) -> None:
    for name, reader in READERS.items():
        try:
            out.readers[name] = classify(reader(str(path)), built)
        except Exception as e:
            out.readers[name] = _err(e)
            out.detail.append(f"{name}: {type(e).__name__}: {str(e)[:300]}")
    try:
        validate_metadata_table(hudi_md.open_table(str(path)))
        out.validate = "answered"
    except Exception as e:
        out.validate = _err(e)
        out.detail.append(f"validate: {type(e).__name__}: {str(e)[:300]}")


def recover_and_check(path: Path, built: Built, out: Outcome) -> None:
    spec = built.spec
    mdt = spec.mdt if spec.next_mdt is None else spec.next_mdt
    try:
        run_step(path, spec.table_type, mdt, NEXT, None)
    except Exception as e:
        out.recovery = "next-write-" + _err(e)
        out.detail.append(f"next write: {type(e).__name__}: {str(e)[:300]}")
        return
    # The next writer settles on before or after (a failed write rolled back, a planned service
    # finished); once any reader saw the operation's effect, only after (no committed row lost).
    seen = set(out.readers.values())
    candidates = [built.after] if seen & {"after", "partial"} else [built.before, built.after]
    results = {}
    for name, reader in READERS.items():
        try:
            results[name] = reader(str(path))
        except Exception as e:
            out.recovery = f"read-{name}-" + _err(e)
            out.detail.append(f"after recovery, {name}: {type(e).__name__}: {str(e)[:300]}")
            return
    nexts = []
    for m in candidates:
        m = m.copy()
        m.apply("upsert", rows(*NEXT[2:]))
        nexts.append(m.expected())
    values = list(results.values())
    if any(v != values[0] for v in values):
        out.recovery = "readers-disagree"
        return
    if values[0] not in nexts:
        out.recovery = "rows-lost-or-mixed"
        return
    left = pending(path)
    if left:
        out.recovery = "pending-left"
        out.detail.append(f"pending: {left}")
        return
    if mdt:
        try:
            table = hudi_md.open_table(str(path))
            if not table.state.uses_metadata_table:
                out.recovery = "mdt-missing"
                return
            diffs = validate_metadata_table(table)
        except Exception as e:
            out.recovery = "validate-" + _err(e)
            out.detail.append(f"validate: {type(e).__name__}: {str(e)[:300]}")
            return
        if diffs:
            out.recovery = "validate-differences"
            out.detail.append("; ".join(d.describe() for d in diffs[:5]))
            return
    out.recovery = "ok"


def run_trial(built: Built, k: int, variant: str, work: Path) -> Outcome:
    """One trial: a copy of the built table, the operation killed before mutation ``k``."""
    kind, target, _ = built.mutations[k]
    out = Outcome(built.spec.name, k, variant, f"{kind} {target}")
    path = work / f"t-{k}-{variant}"
    if path.exists():
        shutil.rmtree(path)
    shutil.copytree(built.path, path)
    try:
        if variant == "sigkill":
            code = run_child(built.spec.name, path, k)
            if code != -signal.SIGKILL:
                out.recovery = f"child-exit-{code}"
                return out
        else:
            previous = set_fault_hook(kill_hook(k, torn=variant == "torn"))
            try:
                built.spec.run(path, built.spec)
            except SimulatedCrash:
                pass
            else:
                out.detail.append("the operation did not reach mutation k")
            finally:
                set_fault_hook(previous)
        check_after_crash(path, built, out)
        recover_and_check(path, built, out)
    finally:
        shutil.rmtree(path, ignore_errors=True)
    return out


def trials(built: Built, variants: tuple[str, ...] = ("kill", "torn")) -> list[tuple[int, str]]:
    out = []
    for k, (_, _, has_data) in enumerate(built.mutations):
        for v in variants:
            if v == "torn" and not has_data:
                continue  # nothing to tear: a delete, mkdir or plain rename
            if v == "torn" and "/.locks/" in built.mutations[k][1]:
                # A torn lock record is the lock's business (it expires by its mtime; the next
                # writer waits that long): tests/write/test_lock.py covers it.
                continue
            out.append((k, v))
    return out


# --- SIGKILL: a child process that kills itself before mutation k ---------------------------------

_CHILD = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    sys.path.insert(0, {tests!r})
    import crash_harness as H
    from hudi_md.storage import set_fault_hook

    count = [0]
    def hook(kind, path):
        count[0] += 1
        if count[0] > {k}:
            os.kill(os.getpid(), signal.SIGKILL)
    set_fault_hook(hook)
    spec = H.SPECS[{spec!r}]
    spec.run(Path({path!r}), spec)
    """
)


def run_child(spec: str, path: Path, k: int) -> int:
    code = _CHILD.format(tests=str(Path(__file__).parent), k=k, spec=spec, path=str(path))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=300)
    return proc.returncode


def sample(all_trials: list[tuple[str, int, str]], n: int, seed: int) -> list[tuple[str, int, str]]:
    if os.environ.get("HUDI_MD_CRASH_ALL") == "1" or n >= len(all_trials):
        return all_trials
    return sorted(random.Random(seed).sample(all_trials, n))


# --- running many trials (scripts/crash-matrix) -----------------------------------------------------


def _run_spec(args: tuple[str, str, tuple[str, ...], list[int] | None]) -> list[Outcome]:
    name, root, variants, only = args
    import logging
    import tempfile

    logging.disable(logging.WARNING)
    work = Path(tempfile.mkdtemp(dir=root, prefix=name.replace("/", "_") + "-"))
    built = build(SPECS[name], work)
    out = []
    for k, v in trials(built, variants):
        if only is None or k in only:
            out.append(run_trial(built, k, v, work))
    shutil.rmtree(work, ignore_errors=True)
    return out


def main(argv: list[str]) -> int:
    """``crash_harness.py [--jobs N] [--variants kill,torn,sigkill] [--sigkill-every N] [SPEC...]``:
    every trial of the named specs (default: all); prints outcomes per class, then failures."""
    import argparse
    import tempfile
    from collections import Counter, defaultdict
    from concurrent.futures import ProcessPoolExecutor

    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--variants", default="kill,torn")
    ap.add_argument("--sigkill-every", type=int, default=0, help="also SIGKILL at every N-th mutation")
    ap.add_argument("specs", nargs="*")
    a = ap.parse_args(argv)
    names = [n for n in SPECS if not a.specs or any(s in n for s in a.specs)]
    root = tempfile.mkdtemp(prefix="crash-matrix-")
    jobs: list[tuple[str, str, tuple[str, ...], list[int] | None]] = [
        (n, root, tuple(a.variants.split(",")), None) for n in names
    ]
    if a.sigkill_every:
        jobs += [(n, root, ("sigkill",), list(range(0, 10_000, a.sigkill_every))) for n in names]
    per_op: dict[str, Counter] = defaultdict(Counter)
    totals: Counter = Counter()
    failures: list[Outcome] = []
    with ProcessPoolExecutor(max_workers=a.jobs) as pool:
        for outcomes in pool.map(_run_spec, jobs):
            for o in outcomes:
                op = o.spec.split("/")[0]
                per_op[op]["trials"] += 1
                per_op[op]["ok" if o.ok else "failed"] += 1
                totals["trials"] += 1
                totals["ok" if o.ok else "failed"] += 1
                for c in o.classes:
                    per_op[op][c] += 1
                    totals[c] += 1
                if not o.ok:
                    failures.append(o)
    shutil.rmtree(root, ignore_errors=True)
    for op, c in sorted(per_op.items()):
        print(f"{op}: " + ", ".join(f"{k}={v}" for k, v in sorted(c.items())))
    print("ALL: " + ", ".join(f"{k}={v}" for k, v in sorted(totals.items())))
    by_cell = Counter((o.spec, o.variant, tuple(o.classes)) for o in failures)
    for (spec, variant, classes), n in sorted(by_cell.items()):
        example = next(
            o for o in failures if (o.spec, o.variant, tuple(o.classes)) == (spec, variant, classes)
        )
        print(f"FAILED {spec} [{variant}] x{n}: {' '.join(classes)} e.g. k={example.k} {example.mutation}")
        for d in example.detail[:3]:
            print(f"    {d}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
