"""Every option key the package reads is in the registry, and the registry is the only reader.

Read from the source (``ast``), not by running it: the key-like string literals (each must be a
registered key, or one of the few strings below that only look like keys), and the places that read
a key from a mapping themselves (``options.get("hoodie.x")``, ``opts[KEY]``, ``KEY in opts``) instead
of through the registry (``OPTION.get(options)``). A key is followed through module constants and
imports (``KEY = "hoodie.x"``, ``KEY = W.RECORD_KEY.key``, ``from hudi_md.write.config import
RECORD_KEY``, ``C.TABLE_NAME``), so a read through a constant is found as well as one through a
literal; names bound inside functions (loop variables) are not followed.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from hudi_md.config import all_options, option_for
from hudi_md.config.option import known_prefix

PACKAGE_DIR = Path(__file__).resolve().parents[2] / "python" / "hudi_md"
KEY_PATTERN = re.compile(r"(hoodie|hudi_md)\.[A-Za-z0-9_.\-]+")
# the option factories of hudi_md.config.option: NAME = boolean("hoodie.x", ...) declares an option
FACTORIES = frozenset({"boolean", "integer", "double", "string", "enum", "string_list", "size"})
READ_METHODS = frozenset({"get", "get_bool", "get_list"})


@dataclass(frozen=True)
class Found:
    path: str  # relative to the package's parent
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}"


def module_name(path: Path, root: Path = PACKAGE_DIR) -> str:
    rel = path.relative_to(root.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


class Package:
    """Every module of a package (``hudi_md``), parsed, with its top-level names."""

    def __init__(self, root: Path = PACKAGE_DIR) -> None:
        self.root = root
        self.trees: dict[str, ast.Module] = {}
        self.paths: dict[str, Path] = {}
        for path in sorted(root.rglob("*.py")):
            name = module_name(path, root)
            self.trees[name] = ast.parse(path.read_text(encoding="utf-8"), str(path))
            self.paths[name] = path
        self.assigned: dict[str, dict[str, ast.expr]] = {}
        self.imported: dict[str, dict[str, tuple[str, str | None]]] = {}
        for name, tree in self.trees.items():
            self._index(name, tree)

    def _index(self, module: str, tree: ast.Module) -> None:
        assigned: dict[str, ast.expr] = {}
        imported: dict[str, tuple[str, str | None]] = {}
        package = module if self.paths[module].name == "__init__.py" else module.rpartition(".")[0]
        for node in tree.body:
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        assigned[target.id] = node.value
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
                assigned[node.target.id] = node.value
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    base = f"{parent}.{base}" if base else parent
                for alias in node.names:
                    # a submodule (from hudi_md.config import write as W) or a name in the module
                    target = f"{base}.{alias.name}"
                    entry = (target, None) if target in self.trees else (base, alias.name)
                    imported[alias.asname or alias.name] = entry
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        imported[alias.asname] = (alias.name, None)
        self.assigned[module] = assigned
        self.imported[module] = imported

    # --- resolving an expression to a key ----------------------------------------------------------

    def resolve(self, module: str, node: ast.expr, depth: int = 0) -> tuple[str, str] | None:
        """("key", k) for an expression that is the key k; ("option", k) for a ConfigOption of
        key k; ("module", m) for a module; None for anything else."""
        if depth > 20:
            return None
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return ("key", node.value) if KEY_PATTERN.fullmatch(node.value) else None
        if isinstance(node, ast.Name):
            return self.resolve_name(module, node.id, depth + 1)
        if isinstance(node, ast.Attribute):
            base = self.resolve(module, node.value, depth + 1)
            if base is None:
                return None
            if base[0] == "module":
                return self.resolve_name(base[1], node.attr, depth + 1)
            if base[0] == "option" and node.attr == "key":
                return ("key", base[1])
            return None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FACTORIES:
            first = node.args[0] if node.args else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                return ("option", first.value)
        return None

    def resolve_name(self, module: str, name: str, depth: int) -> tuple[str, str] | None:
        if module not in self.trees:
            return None
        if name in self.assigned[module]:
            return self.resolve(module, self.assigned[module][name], depth + 1)
        if name in self.imported[module]:
            target, attr = self.imported[module][name]
            if attr is None:
                return ("module", target) if target in self.trees else None
            return self.resolve_name(target, attr, depth + 1)
        return None


def key_literals(package: Package) -> Iterator[Found]:
    """Every string literal of the package that is a whole key (``"hoodie.x"``), docstrings aside."""
    for module, tree in package.trees.items():
        docstrings = {
            id(n.body[0].value)
            for n in ast.walk(tree)
            if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and n.body
            and isinstance(n.body[0], ast.Expr)
            and isinstance(n.body[0].value, ast.Constant)
        }
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in docstrings
                and KEY_PATTERN.fullmatch(node.value)
            ):
                yield Found(_rel(package, module), node.lineno, node.value)


def raw_reads(package: Package, *, skip: tuple[str, ...]) -> Iterator[Found]:
    """Reads of a key from a mapping that do not go through the registry, outside the modules
    ``skip`` names (and their submodules)."""
    for module, tree in package.trees.items():
        if module.startswith(skip):
            continue

        def key(node: ast.expr) -> str | None:
            resolved = package.resolve(module, node)  # noqa: B023 (used right away)
            return resolved[1] if resolved is not None and resolved[0] == "key" else None

        for node in ast.walk(tree):
            found = None
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in READ_METHODS
                and node.args
            ):
                k = key(node.args[0])
                found = k and f".{node.func.attr}({k!r})"
            elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
                k = key(node.slice)
                found = k and f"[{k!r}]"
            elif isinstance(node, ast.Compare) and any(isinstance(o, ast.In | ast.NotIn) for o in node.ops):
                k = key(node.left)
                found = k and f"{k!r} in ..."
            if found:
                yield Found(_rel(package, module), node.lineno, found)


def _rel(package: Package, module: str) -> str:
    return package.paths[module].relative_to(package.root.parent).as_posix()


# --- the checks ---------------------------------------------------------------------------------------

# Strings of the package that look like keys and are not options (each says what it is).
NOT_OPTIONS = {
    "hoodie.properties": "the table config's file name",
    "hoodie.r": "the Avro namespace of a schema built to read types back (write/evolution.py)",
    "hudi_md.version": "a Hive metastore table parameter the metastore server writes",
    "hudi_md.created_instant": "a Hive metastore partition parameter the metastore server writes",
    "hudi_md.updated_instant": "a Hive metastore partition parameter the metastore server writes",
    "hudi_md.clean.pending": "a partition parameter of the metastore server's catalog",
    "hudi_md.dropped.time": "a partition parameter of the metastore server's catalog",
}
# Modules that read keys on their own terms: the registry itself, and hoodie.properties (Hudi's
# leniency: a boolean is true when it says "true"; its keys come from the registry).
OWN_READERS = ("hudi_md.config", "hudi_md.table.config")


@pytest.fixture(scope="module")
def package() -> Package:
    return Package()


def _names_a_module(package: Package, literal: str) -> bool:
    """``hudi_md.spark.planner``, ``hudi_md.storage.strategy.DefaultStorageStrategy``: a module,
    or a name in one."""
    return literal in package.trees or literal.rpartition(".")[0] in package.trees


def test_every_key_literal_is_a_registered_option(package: Package) -> None:
    unknown = [
        found
        for found in key_literals(package)
        if option_for(found.what) is None
        and known_prefix(found.what) is None
        and found.what not in NOT_OPTIONS
        and not _names_a_module(package, found.what)
    ]
    assert not unknown, "keys missing from hudi_md.config:\n" + "\n".join(map(str, unknown))


def test_the_strings_that_only_look_like_keys_are_still_there(package: Package) -> None:
    """An entry of NOT_OPTIONS whose string left the code goes too (a stale exemption would let a
    real key of that name through)."""
    literals = {found.what for found in key_literals(package)}
    assert set(NOT_OPTIONS) <= literals


def test_no_module_reads_a_key_but_through_the_registry(package: Package) -> None:
    reads = list(raw_reads(package, skip=OWN_READERS))
    shown = "\n".join(map(str, reads))
    assert not reads, f"read these through hudi_md.config (OPTION.get(options)):\n{shown}"


def test_the_scan_finds_raw_reads_through_literals_constants_and_imports(tmp_path: Path) -> None:
    """The scan on a package made for it: each way of reading a key around the registry is found,
    reading through it is not."""
    root = tmp_path / "pkg"
    (root / "conf").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "conf" / "__init__.py").write_text("")
    (root / "conf" / "keys.py").write_text(
        "from hudi_md.config.option import boolean\n"
        'ENABLE = boolean("hoodie.metadata.enable", True, hudi=True, scopes=("read",), doc="d")\n'
        'NAME = "hoodie.table.name"\n'
        "ALIAS = ENABLE.key\n"
    )
    (root / "reader.py").write_text(
        "from pkg.conf import keys as K\n"
        "from pkg.conf.keys import ALIAS, NAME\n"
        "def read(options, props):\n"
        '    a = options.get("hoodie.metadata.enable")\n'
        "    b = options[NAME]\n"
        "    c = ALIAS in options\n"
        "    d = props.get_bool(K.ENABLE.key, True)\n"
        "    e = K.ENABLE.get(options)\n"
        '    options["hoodie.table.name"] = "t"\n'
        '    return options.get("path"), a, b, c, d, e\n'
    )
    reads = sorted((f.line, f.what) for f in raw_reads(Package(root), skip=("pkg.conf",)))
    assert reads == [
        (4, ".get('hoodie.metadata.enable')"),
        (5, "['hoodie.table.name']"),
        (6, "'hoodie.metadata.enable' in ..."),
        (7, ".get_bool('hoodie.metadata.enable')"),
    ]


def test_every_spark_conf_of_the_shim_is_listed() -> None:
    """The Spark configuration the Scala shim reads (``spark.hudi_md.*``) is in the registry, as
    options of scope spark (listed for the reference; the shim reads them itself)."""
    shim = Path(__file__).resolve().parents[2] / "jvm-shim" / "src"
    confs = {
        m.group(1)
        for path in shim.rglob("*.scala")
        for m in re.finditer(r'"(spark\.hudi_md\.[A-Za-z0-9_.]+)"', path.read_text(encoding="utf-8"))
    }
    assert confs, "no spark.hudi_md.* conf found in the shim's sources"
    listed = {o.key: o for o in all_options() if o.key.startswith("spark.hudi_md.")}
    assert confs == set(listed)
    assert all(o.scopes == ("spark",) for o in listed.values())
