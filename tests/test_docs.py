"""The docs' code samples run (every page under docs/, and README.md), and the configuration
reference lists every registered option.

How a page's samples run (docs/contributing/docs.md says the same for writers):

- Every fenced ``python`` block runs, in page order, in one Python process per page started with
  this interpreter in an empty temporary directory (relative paths such as ``"trips"`` land there).
  A page is one session: a block sees the names the page's earlier blocks defined, as cells of a
  notebook do. ``<!-- test: fresh -->`` on the line before a block starts it in a new namespace
  (same process).
- A fenced ``shell`` (or ``bash``, ``sh``, ``console``) block that has a ``hudi-md ...`` command
  runs too, at its place in the page, as one bash script (``set -eo pipefail``) in the page's
  directory, so against the tables the earlier blocks wrote; every command must succeed. Shell
  blocks without a ``hudi-md`` command (``pip install``, ``spark-submit``, ``scripts/...``) are
  not run; command synopses are ``text`` blocks.
- PySpark samples build their session with ``hudi_md.spark.configure(SparkSession.builder)``; the
  process gets ``PYSPARK_SUBMIT_ARGS`` (2 local cores, no UI), so a page has one session whose
  blocks share it.
- ``<!-- test: not-run REASON -->`` on the line before a block keeps it from running. It is for
  blocks that cannot run here (credentials for a cloud store, a server the page does not start);
  every such block is listed in ``NOT_RUN`` below, so each stays visible.
- A README block identical to a block of a docs page is not run again (the README's quickstart is
  the quickstart page's, checked below).

A failing block fails its page's test with ``<page>:<line>`` of the block (and the traceback's
line in the page).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"

# Blocks that do not run here: (page, the reason given in its marker), one entry per block. Each
# marker must be listed, and each listed block must exist.
NOT_RUN = [
    ("docs/guide/metastore.md", "needs a running metastore server and its token"),  # shell: serve, register
    ("docs/guide/metastore.md", "needs a running metastore server and its token"),  # python: the options
    ("docs/guide/metastore.md", "needs a running metastore server with --thrift-port"),
    ("docs/guide/reads.md", "needs S3 credentials and a bucket"),
    ("docs/guide/spark.md", "needs a Spark Connect server (Spark 4)"),
]

PYTHON = frozenset({"python", "py"})
SHELL = frozenset({"shell", "bash", "sh", "console"})
MARKERS = frozenset({"fresh", "not-run"})

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>[\w+-]*)")
_MARKER = re.compile(r"^\s*<!--\s*test:\s*(?P<what>[\w-]+)\s*(?P<reason>.*?)\s*-->\s*$")
_PAGE_TIMEOUT_S = 900


@dataclass(frozen=True)
class Block:
    page: str  # relative to the repository
    line: int  # the block's first code line (1-based)
    lang: str
    code: str
    marker: str | None = None  # "fresh" | "not-run"
    reason: str = ""

    def commands(self) -> list[str]:
        """A shell block's commands (``\\`` continuations joined; comments and blank lines left out)."""
        return [
            c.strip()
            for c in self.code.replace("\\\n", " ").splitlines()
            if c.strip() and c.strip()[0] != "#"
        ]

    def runs(self) -> bool:
        if self.marker == "not-run":
            return False
        if self.lang in PYTHON:
            return True
        return self.lang in SHELL and any(c.startswith("hudi-md") for c in self.commands())


def read_blocks(path: Path) -> list[Block]:
    """The fenced code blocks of a Markdown page, with the marker comment before each."""
    in_repo = path == README or path.is_relative_to(DOCS)
    page = path.relative_to(ROOT).as_posix() if in_repo else path.name
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        indent, fence, lang = len(m.group("indent")), m.group("fence"), m.group("lang").lower()
        end = i + 1
        while end < len(lines):
            close = lines[end].strip()
            if close.startswith(fence[0] * len(fence)) and not close.strip(fence[0]):
                break
            end += 1
        code = "\n".join(
            text[indent:] if text[:indent].strip() == "" else text for text in lines[i + 1 : end]
        )
        marker, reason = None, ""
        before = i - 1
        while before >= 0 and not lines[before].strip():
            before -= 1
        if before >= 0 and (mm := _MARKER.match(lines[before])):
            marker, reason = mm.group("what"), mm.group("reason")
            if marker not in MARKERS:
                raise ValueError(f"{page}:{before + 1}: unknown marker {marker!r} (use {sorted(MARKERS)})")
        blocks.append(Block(page, i + 2, lang, code + "\n", marker, reason))
        i = end + 1
    return blocks


def doc_pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md") if "hooks" not in p.relative_to(DOCS).parts)


def page_steps(path: Path) -> list[Block]:
    """The blocks of a page that run, in page order."""
    blocks = [b for b in read_blocks(path) if b.runs()]
    if path == README:
        in_docs = {b.code for page in doc_pages() for b in read_blocks(page) if b.runs()}
        blocks = [b for b in blocks if b.code not in in_docs]
    return blocks


# The process that runs one page's steps (argv[1]: a JSON list of steps): python blocks in a
# namespace the page keeps, shell commands in the page's directory; it stops at the first failure
# with "FAILED <page>:<line>".
_RUNNER = r"""
import json, os, subprocess, sys, time, traceback

steps = json.load(open(sys.argv[1]))
namespace = None
started = time.monotonic()
for step in steps:
    where = f"{step['page']}:{step['line']}"
    print(f"--- {where} ({step['lang']}; at {time.monotonic() - started:.1f}s)", flush=True)
    if step["kind"] == "python":
        if namespace is None or step["fresh"]:
            namespace = {"__name__": "__main__"}
        # padded so that the traceback's line is the page's line
        code = compile("\n" * (step["line"] - 1) + step["code"], step["file"], "exec")
        try:
            exec(code, namespace)
        except BaseException:
            traceback.print_exc()
            print(f"FAILED {where}: the python block raised", flush=True)
            sys.stdout.flush()
            os._exit(1)
        continue
    # the block as one bash script (its variables carry from line to line); the ERR trap names the
    # failing line, counted from the block's second line (the first is this prelude)
    prelude = "set -eo pipefail; trap 'echo \"FAILED_LINE $LINENO $?\" >&2' ERR\n"
    done = subprocess.run(["bash", "-c", prelude + step["code"]], capture_output=True, text=True)
    print(done.stdout[-4000:] + done.stderr[-4000:], flush=True)
    if done.returncode != 0:
        found = [l.split() for l in done.stderr.splitlines() if l.startswith("FAILED_LINE ")]
        offset, rc = (int(found[-1][1]) - 2, found[-1][2]) if found else (0, done.returncode)
        text = step["code"].splitlines()[offset].strip() if offset < len(step["code"].splitlines()) else ""
        print(f"FAILED {step['page']}:{step['line'] + offset}: `{text}` exited {rc}", flush=True)
        os._exit(1)
sys.stdout.flush()
os._exit(0)
"""


def run_page(path: Path, steps: list[Block], workdir: Path) -> tuple[bool, str]:
    """Runs ``steps`` (a page's blocks) in one process in ``workdir``; (passed, output)."""
    workdir.mkdir(parents=True, exist_ok=True)
    payload = [
        {
            "page": b.page,
            "file": str(path),
            "line": b.line,
            "lang": b.lang,
            "kind": "python" if b.lang in PYTHON else "shell",
            "code": b.code,
            "fresh": b.marker == "fresh",
        }
        for b in steps
    ]
    (workdir / ".steps.json").write_text(json.dumps(payload))
    (workdir / ".runner.py").write_text(_RUNNER)
    env = dict(os.environ)
    bin_dir = str(Path(sys.executable).parent)
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # Spark binds to loopback only
    env["PYSPARK_SUBMIT_ARGS"] = (
        "--master local[2] --conf spark.ui.enabled=false --conf spark.ui.showConsoleProgress=false "
        "--conf spark.sql.shuffle.partitions=2 pyspark-shell"
    )
    try:
        done = subprocess.run(
            [sys.executable, str(workdir / ".runner.py"), str(workdir / ".steps.json")],
            cwd=workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=_PAGE_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        return False, out + f"\nTIMEOUT after {_PAGE_TIMEOUT_S}s"
    return done.returncode == 0, done.stdout + done.stderr


def _failure(output: str) -> str:
    failed = [line for line in output.splitlines() if line.startswith("FAILED ")]
    tail = "\n".join(line for line in output.splitlines()[-60:] if not line.startswith("WARN"))
    return (failed[-1] if failed else "the page's process failed") + "\n" + tail


RUN_PAGES = [p for p in [*doc_pages(), README] if page_steps(p)]


@pytest.mark.parametrize("path", RUN_PAGES, ids=[p.relative_to(ROOT).as_posix() for p in RUN_PAGES])
def test_samples_run(path: Path, tmp_path: Path) -> None:
    passed, output = run_page(path, page_steps(path), tmp_path / "page")
    assert passed, _failure(output)


def test_a_broken_sample_names_its_page_and_line(tmp_path: Path) -> None:
    page = tmp_path / "broken.md"
    page.write_text(
        "# A page\n\n```python\nx = 1\n```\n\nText.\n\n```python\ny = x + 1\nz = y / 0\n```\n",
        encoding="utf-8",
    )
    blocks = page_steps(page)
    assert [b.line for b in blocks] == [4, 10]
    passed, output = run_page(page, blocks, tmp_path / "run")
    assert not passed
    assert "FAILED broken.md:10: the python block raised" in output
    assert "ZeroDivisionError" in output
    assert 'broken.md", line 11' in output  # the traceback points at the page's line


def test_a_failing_command_names_its_line(tmp_path: Path) -> None:
    page = tmp_path / "cli.md"
    page.write_text("```shell\nhudi-md --version\nhudi-md table show nosuch\n```\n", encoding="utf-8")
    passed, output = run_page(page, page_steps(page), tmp_path / "run")
    assert not passed
    assert "FAILED cli.md:3: `hudi-md table show nosuch` exited" in output


def test_markers() -> None:
    """Every not-run block is listed in NOT_RUN (and each listed one is still there); markers are
    known words."""
    found = [
        (b.page, b.reason)
        for page in [*doc_pages(), README]
        for b in read_blocks(page)
        if b.marker == "not-run"
    ]
    assert sorted(found) == sorted(NOT_RUN)


def test_readme_quickstart_is_the_quickstart_page() -> None:
    """The README's quickstart samples are the quickstart page's, word for word (they run there)."""
    quickstart = [b.code for b in read_blocks(DOCS / "quickstart.md") if b.lang in PYTHON]
    readme = [b.code for b in read_blocks(README) if b.lang in PYTHON]
    assert readme and all(code in quickstart for code in readme)


def test_readme_links_resolve() -> None:
    """The README's relative links (to docs pages and files) name files of the repository."""
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    relative = [t.split("#", 1)[0] for t in targets if "://" not in t and not t.startswith("#")]
    assert relative
    missing = [t for t in relative if not (ROOT / t).exists()]
    assert not missing


def _reference_module():
    spec = importlib.util.spec_from_file_location("config_reference", DOCS / "hooks" / "config_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_registered_option_is_in_the_reference() -> None:
    try:
        from hudi_md.config import all_options
    except ImportError as e:
        pytest.skip(f"hudi_md.config (the option registry) is not there yet: {e}")
    reference = _reference_module()
    options = all_options()
    text = reference.render_reference(options)
    missing = [o.key for o in options if f"`{o.key}`" not in text]
    assert options and not missing
    page = (DOCS / "reference" / "configuration.md").read_text(encoding="utf-8")
    assert reference.MARKER in page
