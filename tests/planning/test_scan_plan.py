"""A ScanPlan holds its slices as FileSlice objects or as slice rows, each made from the other."""

from __future__ import annotations

from hudi_md.planning.planner import ScanPlan


def test_a_plan_given_neither_form_has_no_slice() -> None:
    # it raised TypeError (list(None)) before
    plan = ScanPlan()
    assert plan.slices == [] and plan.counters == {}
    assert plan.rows.num_rows == 0
    assert ScanPlan(rows=plan.rows).slices == []
    assert plan.copy().slices == []
