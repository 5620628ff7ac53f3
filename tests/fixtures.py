"""Access to the Apache Hudi fixture tables in tests/data/hudi-rs (copied from apache/hudi-rs, see
its README.md, LICENSE.hudi-rs and NOTICE.hudi-rs; unpacked once per run)."""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from functools import lru_cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(os.environ.get("HUDI_MD_FIXTURES", REPO / "tests" / "data" / "hudi-rs"))


def shim_sources_sha256() -> str:
    """The hash of the sources the shim jars are built from, as ``scripts/build-shim`` writes it
    next to each jar (``<jar>.sources.sha256``: same files, same line format)."""
    files = ["build.sbt", "project/build.properties", "project/repositories", "LICENSE", "NOTICE"]
    files += [p.relative_to(REPO).as_posix() for p in (REPO / "jvm-shim" / "src").rglob("*") if p.is_file()]
    lines = "".join(f"{hashlib.sha256((REPO / f).read_bytes()).hexdigest()}  {f}\n" for f in sorted(files))
    return hashlib.sha256(lines.encode()).hexdigest()


def fixtures_dir() -> Path:
    if not FIXTURES.is_dir():
        raise RuntimeError(
            f"fixture tables not found at {FIXTURES}; set HUDI_MD_FIXTURES to the hudi-rs fixtures folder"
        )
    return FIXTURES


@lru_cache(maxsize=1)
def golden() -> dict:
    return json.loads((fixtures_dir() / "golden_hudi_rs_0.5.0.json").read_text())["tables"]


def archives() -> list[str]:
    """Archive paths relative to the fixtures folder, e.g. ``sample_table/cow/v6_empty.zip``."""
    return sorted(str(p.relative_to(fixtures_dir())) for p in fixtures_dir().rglob("*.zip"))


def unpack(archive: str, dest_root: Path) -> Path:
    """Unpack one archive (without ``__MACOSX``) below ``dest_root``; returns the table directory."""
    dest = dest_root / archive.replace("/", "__").removesuffix(".zip")
    if not dest.exists():
        tmp = dest.with_suffix(".partial")
        with zipfile.ZipFile(fixtures_dir() / archive) as zf:
            members = [m for m in zf.namelist() if not m.startswith("__MACOSX")]
            zf.extractall(tmp, members=members)
        tmp.rename(dest)
    (table_dir,) = [p for p in dest.iterdir() if p.is_dir()]
    return table_dir


def writable_copy(src: Path | str, dst: Path | str) -> str:
    """A copy of a fixture table that hudi-md's writer accepts: Hudi 1.1's v9 tables carry
    secondary indexes, which hudi-md does not maintain and so refuses to write stale; they are
    dropped first, as a user would (``hudi-md metadata drop-index``)."""
    import shutil

    from hudi_md.metadata.lifecycle import drop_indexes
    from hudi_md.storage import Storage
    from hudi_md.table.config import TableConfig
    from hudi_md.write.config import MAINTAINED_MDT_PARTITIONS

    shutil.copytree(src, dst)
    storage = Storage(str(dst))
    config = TableConfig.load(storage)
    extra = [
        p
        for p in (*config.metadata_partitions, *config.metadata_partitions_inflight)
        if p not in MAINTAINED_MDT_PARTITIONS
    ]
    if extra:
        drop_indexes(storage, extra)
    return str(dst)
