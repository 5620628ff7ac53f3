"""Where a plan's column_stats read goes: Hudi's rule (override, rows threshold) and hudi-md's
memory budget in bytes (``hudi_md.planner.column.stats.memory.budget``), which also says whether
reading in process is safe when the engine cannot be used."""

from __future__ import annotations

import pytest

from hudi_md.errors import InvalidOptionError
from hudi_md.planning.column_stats_mode import (
    BYTES_PER_STATS_RECORD,
    DEFAULT_MEMORY_BUDGET,
    IN_MEMORY_PROJECTION_THRESHOLD,
    MEMORY_BUDGET,
    PROCESSING_MODE_OVERRIDE,
    column_stats_mode,
    memory_budget,
    wants_engine,
)


def test_hudis_rule_decides_by_rows_and_override() -> None:
    assert not wants_engine({}, 99_999, 1)
    assert wants_engine({}, 50_000, 2)  # Hudi's default threshold: 100k slices x columns
    assert wants_engine({IN_MEMORY_PROJECTION_THRESHOLD: "10"}, 5, 2)
    assert not wants_engine({IN_MEMORY_PROJECTION_THRESHOLD: "11"}, 5, 2)
    assert wants_engine({PROCESSING_MODE_OVERRIDE: "engine"}, 1, 1)
    assert not wants_engine({PROCESSING_MODE_OVERRIDE: "In-Memory"}, 10**9, 10)


def test_the_budget_sends_plans_over_it_to_the_engine_and_says_when_falling_back_is_safe() -> None:
    small = {MEMORY_BUDGET: str(1000 * BYTES_PER_STATS_RECORD)}
    under = column_stats_mode(small, 500, 2)
    assert not under.engine and under.fits_budget and under.estimated_bytes == 1000 * BYTES_PER_STATS_RECORD
    over = column_stats_mode(small, 501, 2)
    assert over.engine and not over.fits_budget
    assert MEMORY_BUDGET in over.over_budget_message()
    # forced to the engine: falling back is safe only within the budget
    assert column_stats_mode({**small, PROCESSING_MODE_OVERRIDE: "engine"}, 10, 1).fits_budget
    assert not column_stats_mode({**small, PROCESSING_MODE_OVERRIDE: "engine"}, 10**6, 1).fits_budget
    # forced in memory: the user's choice, no budget
    forced = column_stats_mode({**small, PROCESSING_MODE_OVERRIDE: "in-memory"}, 10**6, 1)
    assert not forced.engine and forced.fits_budget
    # the default budget is not what sends a plan under Hudi's row threshold to the engine
    assert DEFAULT_MEMORY_BUDGET >= 100_000 * BYTES_PER_STATS_RECORD


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("", 1 << 30), ("4096", 4096), ("512m", 512 << 20), ("2G", 2 << 30), ("64kb", 64 << 10)],
)
def test_memory_budget_takes_bytes_with_units(raw: str, expected: int) -> None:
    assert memory_budget({MEMORY_BUDGET: raw}) == expected


@pytest.mark.parametrize("raw", ["0", "-5", "1.5g", "lots", "12t"])
def test_bad_budgets_and_modes_name_the_key(raw: str) -> None:
    with pytest.raises(InvalidOptionError, match=MEMORY_BUDGET):
        memory_budget({MEMORY_BUDGET: raw})
    with pytest.raises(InvalidOptionError, match=PROCESSING_MODE_OVERRIDE):
        column_stats_mode({PROCESSING_MODE_OVERRIDE: "gpu"}, 1, 1)
