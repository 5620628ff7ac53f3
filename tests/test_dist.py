"""What a user installs (issue 39, item 1): the sdist and the wheel ``scripts/build-dist`` builds,
its checks, and the wheel installed into a fresh venv per extra, each round-tripping a table with
``scripts/dist_round_trip.py`` (a partitioned MOR table from pyarrow tables: an insert, an upsert,
read back with ``hudi_md.open_table(...).read()``) from a directory outside the repository:

- no extra: local paths, pyarrow only; pandas is neither installed nor loaded;
- ``s3``: the table on a local S3 server (moto, started here), through s3fs;
- ``metastore``: ``hudi-md metastore serve`` of the installed package on its embedded SQLite
  default (``~/.hudi-md/metastore.db`` of a temp HOME); the writes register the table on it and
  the read opens it by name (``default.dist_round_trip``).

The ``spark`` extra's round trip is tests/test_wheel.py's (the newest PySpark, reading through the
shim jar); the wheel is built once per pytest process for both (tests/dist_build.py). Each venv is
deleted when its test ends.
"""

from __future__ import annotations

import io
import json
import logging
import shutil
import signal
import socket
import subprocess
import tarfile
import time
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dist_build import (
    BUILD_DIST,
    REPO,
    ROUND_TRIP,
    Dist,
    built_dist,
    fresh_venv,
    installed_packages,
    outside_the_repository,
    run,
    user_env,
)

# Each extra's own distribution, and what none but its extra brings.
EXTRA_PACKAGES = {"s3": "s3fs", "metastore": "fastapi", "spark": "pyspark", "gcs": "gcsfs", "azure": "adlfs"}


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Dist:
    return built_dist(tmp_path_factory)


@pytest.fixture
def venv_dir(tmp_path: Path) -> Iterator[Path]:
    """Where a test makes its venv; deleted when the test ends, passed or failed."""
    path = tmp_path / "venv"
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _round_trip(python: Path, cwd: Path, path: str, options: dict[str, Any] | None = None, **kw: str) -> dict:
    """scripts/dist_round_trip.py run by ``python`` from ``cwd`` (outside the repository); its JSON."""
    script = cwd / ROUND_TRIP.name
    shutil.copy2(ROUND_TRIP, script)
    args: list[str | Path] = [python, script, path, "--options", json.dumps(options or {})]
    for key, value in kw.items():
        args += [f"--{key.replace('_', '-')}", value]
    proc = run(args, 600, cwd=cwd, env=user_env())
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _assert_round_trip(result: dict, env_dir: Path, cwd: Path) -> None:
    assert len(result["rows"]) == 25
    assert result["rows"] == result["expected"]
    assert result["partitions"] == ["chennai", "nyc", "sf"]
    assert Path(result["hudi_md"]).is_relative_to(env_dir)  # the installed package, not the repository's
    assert outside_the_repository(result["sys_path"], env_dir, cwd)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- scripts/build-dist's checks ----------------------------------------------------------------------


def _check(out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BUILD_DIST), "--check-only", "--no-venv", "--out", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_build_dist_finds_nothing_wrong_in_what_it_built(dist: Dist) -> None:
    proc = _check(dist.wheel.parent)
    assert proc.returncode == 0, proc.stderr
    assert "hold what they should" in proc.stderr


def _rewrite_zip(data: bytes, drop: set[str] = frozenset(), replace: dict[str, bytes] | None = None) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            if info.filename not in drop:
                dst.writestr(info, (replace or {}).get(info.filename, src.read(info)))
    return out.getvalue()


def _sdist_with(sdist: Path, dest: Path, extra: dict[str, bytes]) -> None:
    with tarfile.open(sdist) as src, tarfile.open(dest, "w:gz") as dst:
        for member in src.getmembers():
            dst.addfile(member, src.extractfile(member) if member.isfile() else None)
        for name, data in extra.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            dst.addfile(info, io.BytesIO(data))


JAR = "hudi_md/jars/hudi-md-spark-3.5_2.12.jar"


@pytest.mark.parametrize(
    "damage, expected",
    [
        ("jar-without-notice", [f"{JAR} lacks", "META-INF/NOTICE", "scripts/build-shim"]),
        ("wheel-without-license", ["lacks hudi_md-0.1.0.dist-info/licenses/LICENSE"]),
        ("wheel-without-a-module", ["lacks 1 package files the sdist has", "hudi_md/api.py"]),
        ("sdist-with-tests-and-a-venv", ["entries that are not the package's", "tests/data/t.zip", ".venv/"]),
    ],
)
def test_build_dist_names_what_is_wrong(dist: Dist, tmp_path: Path, damage: str, expected: list[str]) -> None:
    sdist, wheel = tmp_path / dist.sdist.name, tmp_path / dist.wheel.name
    shutil.copy2(dist.sdist, sdist)
    data = dist.wheel.read_bytes()
    if damage == "jar-without-notice":
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            jar = _rewrite_zip(z.read(JAR), drop={"META-INF/NOTICE"})
        wheel.write_bytes(_rewrite_zip(data, replace={JAR: jar}))
    elif damage == "wheel-without-license":
        wheel.write_bytes(_rewrite_zip(data, drop={"hudi_md-0.1.0.dist-info/licenses/LICENSE"}))
    elif damage == "wheel-without-a-module":
        wheel.write_bytes(_rewrite_zip(data, drop={"hudi_md/api.py"}))
    else:
        wheel.write_bytes(data)
        _sdist_with(
            dist.sdist,
            sdist,
            {"hudi_md-0.1.0/tests/data/t.zip": b"PK", "hudi_md-0.1.0/.venv/bin/python": b""},
        )
    proc = _check(tmp_path)
    assert proc.returncode == 1
    for text in expected:
        assert text in proc.stderr
    assert "FAILED: the contents of the sdist and the wheel" in proc.stderr


# --- a fresh venv per extra ----------------------------------------------------------------------------


def test_core_install_round_trips_without_pandas(dist: Dist, venv_dir: Path, tmp_path: Path) -> None:
    python = fresh_venv(venv_dir, dist.wheel)
    packages = installed_packages(python)
    assert "hudi-md" in packages
    assert "pandas" not in packages
    assert not packages & set(EXTRA_PACKAGES.values())

    result = _round_trip(python, tmp_path, str(tmp_path / "t"))
    _assert_round_trip(result, venv_dir, tmp_path)
    assert (result["pandas_installed"], result["pandas_loaded"]) == (False, False)
    # a reader alone: `import hudi_md; open_table(...).read()` in a new process
    code = (
        "import sys, hudi_md\n"
        f"t = hudi_md.open_table({str(tmp_path / 't')!r}).read()\n"
        "print(t.num_rows, sorted(m for m in sys.modules if m.split('.')[0] in ('pandas', 'pyspark')))"
    )
    read = run([python, "-c", code], 300, cwd=tmp_path, env=user_env()).stdout.split()
    assert read == ["25", "[]"]
    version = run([venv_dir / "bin" / "hudi-md", "--version"], 120, cwd=tmp_path, env=user_env()).stdout
    assert version.strip() == "hudi-md 0.1.0"


@pytest.mark.s3
def test_s3_extra_round_trips_on_a_local_s3_server(dist: Dist, venv_dir: Path, tmp_path: Path) -> None:
    import s3fs
    from moto.server import ThreadedMotoServer

    python = fresh_venv(venv_dir, dist.wheel, "s3")
    assert "s3fs" in installed_packages(python)
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        options = {
            "key": "test",
            "secret": "test",
            "client_kwargs": {"endpoint_url": f"http://127.0.0.1:{port}", "region_name": "us-east-1"},
        }
        fs = s3fs.S3FileSystem(skip_instance_cache=True, **options)
        fs.call_s3("create_bucket", Bucket="bucket")
        result = _round_trip(python, tmp_path, "s3://bucket/t", options)
        _assert_round_trip(result, venv_dir, tmp_path)
        # the table is on the server, with its metadata table
        assert fs.exists("bucket/t/.hoodie/hoodie.properties")
        assert fs.exists("bucket/t/.hoodie/metadata/.hoodie/hoodie.properties")
        assert sorted(p.rsplit("/", 1)[-1] for p in fs.ls("bucket/t") if fs.isdir(p)) == [
            ".hoodie",
            "chennai",
            "nyc",
            "sf",
        ]
    finally:
        server.stop()


class _Server:
    """``hudi-md metastore serve`` of the venv, on its default database (no --db) under a temp HOME."""

    def __init__(self, hudi_md: Path, home: Path, log: Path) -> None:
        self.url = f"http://127.0.0.1:{_free_port()}"
        self.env = user_env(HOME=str(home))
        self.env.pop("HUDI_MD_METASTORE_DB", None)
        self.log_path = log
        self._log = open(log, "wb")  # noqa: SIM115 - closed in stop()
        port = self.url.rsplit(":", 1)[1]
        self.proc = subprocess.Popen(
            [str(hudi_md), "metastore", "serve", "--port", port],
            cwd=home,
            env=self.env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_ready(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"the metastore exited {self.proc.returncode}:\n{self.log()}", pytrace=False)
            try:
                with urllib.request.urlopen(f"{self.url}/openapi.json", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.2)
        pytest.fail(f"the metastore was not ready after {timeout}s:\n{self.log()}", pytrace=False)

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)
        self._log.close()


def test_metastore_extra_serves_and_reads_a_table(dist: Dist, venv_dir: Path, tmp_path: Path) -> None:
    python = fresh_venv(venv_dir, dist.wheel, "metastore")
    assert {"fastapi", "uvicorn", "sqlalchemy", "alembic", "httpx"} <= installed_packages(python)
    hudi_md = venv_dir / "bin" / "hudi-md"
    home = tmp_path / "home"
    home.mkdir()
    server = _Server(hudi_md, home, tmp_path / "metastore.log")
    try:
        server.wait_ready()
        token = run([hudi_md, "metastore", "token", "create"], 120, cwd=home, env=server.env).stdout.strip()
        assert (home / ".hudi-md" / "metastore.db").is_file()  # the embedded SQLite default
        ms = {
            "hoodie.metaserver.enabled": "true",
            "hoodie.metaserver.uris": server.url,
            "hoodie.metaserver.token": token,
        }
        # written with the metastore on: the writes register default.dist_round_trip; the read
        # opens it by that name, which only the server resolves
        result = _round_trip(python, tmp_path, str(tmp_path / "t"), ms, open_as="default.dist_round_trip")
        _assert_round_trip(result, venv_dir, tmp_path)
        listing = run(
            [hudi_md, "metastore", "ls", "default", "--json", "--uri", server.url],
            120,
            cwd=tmp_path,
            env=user_env(),
        ).stdout
        (table,) = json.loads(listing)
        assert table["table"] == "default.dist_round_trip"
        assert table["location"].removeprefix("file://") == str(tmp_path / "t")
        log = server.log()
        assert "POST /v1/tables/open" in log
        assert "/tables/dist_round_trip/plan" in log
    finally:
        server.stop()
