"""Structure figures of python/hudi_md (issue 12): import cycles counting function-local imports,
underscore names used across modules, parameters typed ``Any``, the largest modules and
functions, and the places that write an instant's state. ``scripts/arch-metrics`` runs it."""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

_ARGS = [a for a in sys.argv[1:] if not a.startswith("-")]
ROOT = Path(_ARGS[0]) if _ARGS else Path(__file__).resolve().parents[1] / "python"
PACKAGE = "hudi_md"
# Calls that move an instant through its states on a timeline.
INSTANT_STATE_CALLS = {"requested", "inflight", "complete"}
# Parameter names that denote a project type (TableState, Storage, Timeline, MetadataTable, a
# writer, WriteConfig, FileSystemView, FileSlice, PartitionScheme, Expression, pa.Schema,
# ColumnStat, a plan, a Spark session, the transaction, the lock): typed bare Any, the type is lost.
PROJECT_TYPE_NAMES = {
    "table",
    "state",
    "storage",
    "timeline",
    "mdt",
    "metadata_table",
    "writer",
    "config",
    "write_config",
    "view",
    "fs_view",
    "file_slice",
    "file_slices",
    "slices",
    "scheme",
    "expr",
    "expression",
    "filters",
    "schema",
    "stat",
    "stats",
    "plan",
    "session",
    "spark",
    "txn",
    "transaction",
    "lock",
}


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def resolve(mod: str, node: ast.ImportFrom, is_pkg: bool) -> str | None:
    if node.level == 0:
        return node.module
    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def nearest(name: str, known: dict[str, Path]) -> str | None:
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def import_graph(known: dict[str, Path]) -> tuple[dict[str, set[str]], int, int]:
    graph: dict[str, set[str]] = defaultdict(set)
    local = total = 0
    for mod, path in known.items():
        tree = ast.parse(path.read_text())
        is_pkg = path.name == "__init__.py"
        funcs = [f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)]
        func_nodes = {id(n) for f in funcs for n in ast.walk(f)}
        # `if TYPE_CHECKING:` blocks name types for annotations and never run: not a dependency.
        typing_only = {
            id(n)
            for b in ast.walk(tree)
            if isinstance(b, ast.If) and "TYPE_CHECKING" in ast.unparse(b.test)
            for stmt in b.body
            for n in ast.walk(stmt)
        }
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = resolve(mod, node, is_pkg)
                if base:
                    targets = [f"{base}.{a.name}" for a in node.names]
            if id(node) in typing_only:
                continue
            for t in targets:
                dep = nearest(t, known)
                if dep is None or dep == mod or not dep.startswith(PACKAGE):
                    continue
                total += 1
                if id(node) in func_nodes:
                    local += 1
                graph[mod].add(dep)
    return graph, local, total


def sccs(graph: dict[str, set[str]], nodes: list[str]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in nodes:
        if v not in index:
            visit(v)
    return out


def _is_self_attr(t: ast.expr) -> bool:
    return isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"


def layer(mod: str) -> str:
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def main() -> None:
    known = modules()
    graph, local, total = import_graph(known)
    cycles = sccs(graph, list(known))
    layers: dict[str, set[str]] = defaultdict(set)
    for a, deps in graph.items():
        for b in deps:
            if layer(a) != layer(b) and layer(a) != "__init__":
                layers[layer(a)].add(layer(b))
    layer_cycles = sccs(layers, sorted(layers))

    defined: dict[str, set[str]] = defaultdict(set)  # _name -> modules defining it
    trees = {m: ast.parse(p.read_text()) for m, p in known.items()}
    for m, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                defined[node.name].add(m)
            elif isinstance(node, ast.Assign):
                for t in node.targets:
                    if _is_self_attr(t):
                        defined[t.attr].add(m)
                    elif isinstance(t, ast.Name):
                        defined[t.id].add(m)
            elif isinstance(node, ast.AnnAssign):
                t = node.target
                if isinstance(t, ast.Name):
                    defined[t.id].add(m)
                elif isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                    defined[t.attr].add(m)

    def private(name: str) -> bool:
        return name.startswith("_") and not name.startswith("__")

    cross: list[str] = []
    any_params: list[str] = []
    project_any: list[str] = []  # the subset of any_params whose name denotes a project type
    functions: list[tuple[int, str]] = []
    state_writes: list[str] = []
    direct_writes: list[str] = []  # of those, the calls straight to a TimelineWriter (instant files)
    # names bound to another library's objects (``from pyspark import SparkContext``): their
    # underscore attributes are that library's, whatever a project module happens to define
    foreign: dict[str, set[str]] = defaultdict(set)
    for m, tree in trees.items():
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.ImportFrom)
                and node.level == 0
                and not (node.module or "").startswith(PACKAGE)
            ):
                foreign[m].update(a.asname or a.name for a in node.names)
            elif isinstance(node, ast.Import):
                foreign[m].update(
                    (a.asname or a.name).split(".")[0] for a in node.names if not a.name.startswith(PACKAGE)
                )
    for m, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                for a in node.names:
                    if private(a.name):
                        cross.append(f"{m}: from {node.module} import {a.name}")
            elif isinstance(node, ast.Attribute) and private(node.attr):
                v = node.value
                if isinstance(v, ast.Name) and (v.id in ("self", "cls") or v.id in foreign[m]):
                    continue
                owners = defined.get(node.attr, set())
                if owners and m not in owners:
                    cross.append(f"{m}: .{node.attr} (defined in {', '.join(sorted(owners))})")
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                end = node.end_lineno or node.lineno
                functions.append((end - node.lineno + 1, f"{m}.{node.name}"))
                args = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
                for a in args:
                    ann = a.annotation
                    # a bare Any (or Any | None): the type a project type could name
                    if ann is not None and ast.unparse(ann) in ("Any", "Any | None", "Optional[Any]"):
                        any_params.append(f"{m}.{node.name}({a.arg}: {ast.unparse(ann)})")
                        if a.arg.lstrip("_") in PROJECT_TYPE_NAMES:
                            project_any.append(any_params[-1])
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in INSTANT_STATE_CALLS
            ):
                state_writes.append(f"{m}:{node.lineno} .{node.func.attr}()")
                receiver = ast.unparse(node.func.value)
                if receiver in ("tw", "timeline", "self.timeline", "self.timeline_writer()") or (
                    receiver.startswith("TimelineWriter(")
                ):
                    direct_writes.append(f"{m}:{node.lineno} {receiver}.{node.func.attr}()")

    sizes = sorted(((len(p.read_text().splitlines()), m) for m, p in known.items()), reverse=True)
    functions.sort(reverse=True)
    verbose = "-v" in sys.argv
    print(f"modules: {len(known)}")
    print(f"imports between hudi_md modules: {total} ({local} function-local)")
    print(
        f"module import cycles (strongly connected sets): {len(cycles)}, "
        f"modules in them: {sum(len(c) for c in cycles)}"
    )
    for c in cycles:
        print("   ", " ↔ ".join(c) if verbose or len(c) < 6 else f"{len(c)} modules: {', '.join(c[:6])}, ...")
    print(f"package (layer) cycles: {len(layer_cycles)}")
    for c in layer_cycles:
        print("   ", " ↔ ".join(c))
    print(f"underscore names used across modules: {len(cross)}")
    for c in cross if verbose else cross[:10]:
        print("   ", c)
    print(f"parameters typed bare Any: {len(any_params)}")
    for c in any_params if verbose else any_params[:10]:
        print("   ", c)
    print(f"bare Any parameters whose name denotes a project type: {len(project_any)}")
    for c in project_any:
        print("   ", c)
    print("largest modules:", ", ".join(f"{m} {n}" for n, m in sizes[:5]))
    print("largest functions:", ", ".join(f"{f} {n}" for n, f in functions[:5]))
    print(f"calls writing an instant's state (requested/inflight/complete): {len(state_writes)}")
    for c in state_writes:
        print("   ", c)
    print(f"  of them writing instant files directly (to a TimelineWriter): {len(direct_writes)}")
    for c in direct_writes:
        print("   ", c)


if __name__ == "__main__":
    main()
