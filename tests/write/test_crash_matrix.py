"""The crash matrix of issue 11, a seeded sample (``scripts/crash-matrix`` runs every trial).

For each operation x table type (x MDT on/off) in :data:`crash_harness.SPECS`, the writer is killed
before storage mutation ``k`` (SimulatedCrash from the storage layer's fault hook), or after writing
half of that mutation's bytes (a torn file), or by a real SIGKILL of a writer process. Afterwards
hudi-md (MDT and listing) and hudi-rs all read the rows from before or after the operation,
validate answers, and the next upsert recovers: rows as the model, no difference, nothing pending.

``HUDI_MD_CRASH_ALL=1`` runs every trial here; ``HUDI_MD_CRASH_SEED`` and
``HUDI_MD_CRASH_PER_SPEC`` (trials per spec, default 4) choose the sample.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import crash_harness as H
import pytest

SEED = int(os.environ.get("HUDI_MD_CRASH_SEED", "11"))
PER_SPEC = int(os.environ.get("HUDI_MD_CRASH_PER_SPEC", "4"))
ALL = os.environ.get("HUDI_MD_CRASH_ALL") == "1"


def _report(outcomes: list[H.Outcome]) -> None:
    failed = [o for o in outcomes if not o.ok]
    print(f"trials: {len(outcomes)}; failed: {len(failed)}")
    for o in outcomes:
        print(f"  k={o.k} [{o.variant}] {o.mutation}: {' '.join(o.classes)}")
    assert not failed, [(o.k, o.variant, o.mutation, o.classes, o.detail) for o in failed]


@pytest.mark.parametrize("name", sorted(H.SPECS))
def test_crash_matrix(name: str, tmp_path: Path) -> None:
    built = H.build(H.SPECS[name], tmp_path)
    assert built.mutations, "the operation mutates storage"
    cells = H.trials(built)
    if not ALL:
        rng = random.Random(f"{SEED}/{name}")
        cells = sorted(rng.sample(cells, min(PER_SPEC, len(cells))))
    _report([H.run_trial(built, k, v, tmp_path) for k, v in cells])


SIGKILLED = [
    "upsert/mor/mdt",
    "insert_overwrite/cow/mdt",
    "compaction/mor/mdt",
    "clustering/mor/mdt",
    "clean/cow/mdt",
    "restore/mor/mdt",
    "archival/cow/mdt",
    "mdt_compaction/mor/mdt",
    "mdt_create/cow/mdt",
]


@pytest.mark.parametrize("name", SIGKILLED)
def test_crash_matrix_sigkill(name: str, tmp_path: Path) -> None:
    """A writer process SIGKILLs itself before a (seeded) random mutation of the operation: its
    lock and half-written files stay behind, and the next writer recovers."""
    built = H.build(H.SPECS[name], tmp_path)
    ks = range(len(built.mutations))
    if not ALL:
        ks = sorted(random.Random(f"{SEED}/sigkill/{name}").sample(ks, min(1, len(ks))))
    _report([H.run_trial(built, k, "sigkill", tmp_path) for k in ks])
