"""The layer contract (pyproject.toml, [tool.importlinter]) holds, and catches an upward import:
``lint-imports`` runs on a copy of the package with one added (issue 12)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root / "python")}
    return subprocess.run(
        [str(LINT), "--no-cache"], cwd=root, env=env, capture_output=True, text=True, timeout=300
    )


def test_the_layers_hold() -> None:
    result = _lint(REPO)
    assert result.returncode == 0, result.stdout + result.stderr


def test_an_upward_import_breaks_the_contract(tmp_path: Path) -> None:
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copytree(
        REPO / "python" / "hudi_md",
        tmp_path / "python" / "hudi_md",
        ignore=shutil.ignore_patterns("jars", "__pycache__"),
    )
    storage = tmp_path / "python" / "hudi_md" / "storage" / "base.py"
    # a function-local import counts as much as a module-level one
    storage.write_text(storage.read_text() + "\n\ndef _upward() -> None:\n    import hudi_md.table.config\n")
    result = _lint(tmp_path)
    assert result.returncode != 0
    assert "hudi_md.storage is not allowed to import hudi_md.table" in result.stdout


def test_structure_figures_stay_at_zero() -> None:
    """No import cycle (function-local imports counted), no private name used across modules, no
    bare ``Any`` for a parameter whose name denotes a project type (scripts/arch_metrics.py)."""
    out = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "arch_metrics.py")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    assert "module import cycles (strongly connected sets): 0," in out, out
    assert "package (layer) cycles: 0" in out, out
    assert "underscore names used across modules: 0" in out, out
    assert "bare Any parameters whose name denotes a project type: 0" in out, out
    assert "of them writing instant files directly (to a TimelineWriter): 4" in out, out
