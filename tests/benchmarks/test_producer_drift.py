"""benchmarks/producer_drift.py's pure part: a native run's publications become intervals, each with the
width of the target call running at its midpoint, and nothing after target EOS is counted. The
measurement itself is never asserted here (no timed assertions)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests.benchmarks.scripts import script_module


@pytest.fixture(scope="module")
def drift():
    yield from script_module("producer_drift")


def test_intervals_carry_the_running_width_and_stop_at_target_eos(drift):
    call = lambda s, e, k: SimpleNamespace(t_start=s, t_end=e, width=k)  # noqa: E731
    run = SimpleNamespace(producer_times=(-0.001, 0.010, 0.018, 0.030, 0.041, 0.060),
                          records=(call(0.0, 0.012, 1), call(0.020, 0.036, 4)), t_eos=0.045)
    rows = drift.intervals("w", 2, run)
    assert [r["position"] for r in rows] == [1, 2, 3, 4]  # the publication at 60 ms is after EOS
    assert [round(r["interval_ms"], 6) for r in rows] == [10.0, 8.0, 12.0, 11.0]  # the first time clamps to 0
    assert [r["width"] for r in rows] == [1, 0, 4, 4]  # midpoints 5, 14, 24, 35.5 ms; calls [0, 12], [20, 36]
    assert {r["window_id"] for r in rows} == {"w"} and {r["pass"] for r in rows} == {2}
