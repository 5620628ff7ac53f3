"""The sdist and the wheel as ``scripts/build-dist`` builds them, once per pytest process, and fresh
venvs with the wheel installed, for the tests of what a user installs: tests/test_dist.py (the core
install and the ``s3`` and ``metastore`` extras) and tests/test_wheel.py (the ``spark`` extra).

A venv is made with the standard library's ``venv`` and pip installs into it from pip's cache
(~/.cache/pip), so a venv costs seconds once the downloads are cached; the tests delete their venvs
(a few hundred MB each, over 1 GB with PySpark) when they end, passed or failed.
"""

from __future__ import annotations

import os
import subprocess
import time
import venv
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
BUILD_DIST = REPO / "scripts" / "build-dist"
ROUND_TRIP = REPO / "scripts" / "dist_round_trip.py"


@dataclass(frozen=True)
class Dist:
    sdist: Path
    wheel: Path


_built: dict[str, Dist] = {}


def run(args: list[str | Path], timeout: float, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """``args`` run to completion; the test fails with the output's tail when it exits non-zero."""
    proc = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=timeout, **kwargs)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-40:])
        pytest.fail(f"{' '.join(map(str, args[:4]))} ... failed ({proc.returncode}):\n{tail}", pytrace=False)
    return proc


def built_dist(factory: pytest.TempPathFactory) -> Dist:
    """``scripts/build-dist --build-only`` into a temp dir, the first time a test module asks."""
    if "dist" not in _built:
        out = factory.mktemp("dist")
        run([BUILD_DIST, "--build-only", "--out", out], 600, cwd=REPO)
        (sdist,) = out.glob("hudi_md-*.tar.gz")
        (wheel,) = out.glob("hudi_md-*.whl")
        _built["dist"] = Dist(sdist, wheel)
    return _built["dist"]


def user_env(**extra: str) -> dict[str, str]:
    """This process's environment less what would make the venv's python see the repository or
    this venv (PYTHONPATH, VIRTUAL_ENV, PySpark's worker python)."""
    drop = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")
    return {**{k: v for k, v in os.environ.items() if k not in drop}, **extra}


def fresh_venv(env_dir: Path, wheel: Path, extra: str | None = None, timeout: float = 900) -> Path:
    """A new venv at ``env_dir`` with ``wheel`` (and its ``extra``) installed; its python."""
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    target = f"{wheel}[{extra}]" if extra else str(wheel)
    start = time.monotonic()
    run(
        [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", target],
        timeout,
        cwd=env_dir,
        env=user_env(),
    )
    print(f"pip install {wheel.name}{f'[{extra}]' if extra else ''}: {time.monotonic() - start:.1f}s")
    return python


def installed_packages(python: Path) -> set[str]:
    """The normalized names of the distributions installed in ``python``'s venv."""
    code = "import importlib.metadata as m; print('\\n'.join(d.metadata['Name'] for d in m.distributions()))"
    out = run([python, "-c", code], 120, env=user_env()).stdout
    return {name.strip().lower().replace("_", "-") for name in out.splitlines() if name.strip()}


def outside_the_repository(sys_path: list[str], *temp_dirs: Path) -> bool:
    """No entry of ``sys_path`` is in the repository, but in ``temp_dirs`` (the venv and the
    script's directory, in the repository when pytest's basetemp is: build/pytest-*)."""
    entries = [Path(p).resolve() for p in sys_path if p]
    return not [
        p
        for p in entries
        if p.is_relative_to(REPO) and not any(p.is_relative_to(t.resolve()) for t in temp_dirs)
    ]
