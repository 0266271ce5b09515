"""benchmarks/window_shapes.py's pure part: a native run's calls become rows flagged beside the producer by
replay's rule (a call that starts after the producer's end is idle), the cold first call left out, and
the table puts a clip's median over the packed window's per width. The measurement itself is never
asserted here (no timed assertions)."""

from __future__ import annotations

from types import SimpleNamespace

import polars as pl
import pytest

from tests.benchmarks.scripts import script_module


@pytest.fixture(scope="module")
def shapes():
    yield from script_module("window_shapes")


def _run(calls, end):
    rec = lambda s, e, k: SimpleNamespace(t_start=s, t_end=e, width=k)  # noqa: E731
    return SimpleNamespace(records=tuple(rec(*c) for c in calls), producer_end=end)


def test_calls_skip_the_cold_call_and_follow_the_producers_end(shapes):
    run = _run([(0.0, 0.05, 1), (0.05, 0.08, 4), (0.08, 0.12, 4), (0.12, 0.15, 2)], end=0.10)
    rows = shapes.calls("w", "clip", run)
    assert [r["width"] for r in rows] == [4, 4, 2]  # the first (cold) call is left out
    assert [r["beside"] for r in rows] == [True, True, False]  # 80 ms starts before the 100 ms end
    assert [round(r["ms"], 6) for r in rows] == [30.0, 40.0, 30.0]


def test_the_table_puts_the_clip_median_over_the_packed_one(shapes):
    rows = [{"window_id": "p", "shape": "packed", "width": 4, "beside": True, "ms": ms} for ms in (40.0, 42.0, 44.0)]
    rows += [{"window_id": "c", "shape": "clip", "width": 4, "beside": True, "ms": ms} for ms in (46.0, 48.2)]
    rows += [{"window_id": s, "shape": s, "width": 4, "beside": False, "ms": 36.0} for s in ("packed", "clip")]
    t = shapes.shape_table(pl.DataFrame(rows))
    beside = t.filter(pl.col("beside")).row(0, named=True)
    assert beside["median_ms_packed"] == 42.0 and beside["median_ms_clip"] == pytest.approx(47.1)
    assert beside["n_packed"] == 3 and beside["clip_over_packed"] == pytest.approx(47.1 / 42.0)
    assert t.filter(~pl.col("beside"))["clip_over_packed"].to_list() == [1.0]
