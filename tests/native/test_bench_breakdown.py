"""The bench's round breakdown: where a method's rounds and time went, beside target-only's step."""

from __future__ import annotations

import polars as pl
import pytest

from workbench.native.bench_report import BREAKDOWN_COLUMNS, breakdown_markdown, round_breakdown, verify_ceiling


def _round(config: str, width: int, reason: str | None, ms: float, n: int, t0: float) -> dict:
    return {"config": config, "width": width, "k1_reason": reason, "committed": list(range(n)),
            "t_start": t0, "t_end": t0 + ms / 1e3}


def test_rounds_are_split_by_kind_with_shares_tokens_and_call_cost():
    rows = [_round("as2d/a", 4, None, 40.0, 3, 0.0), _round("as2d/a", 5, None, 40.0, 5, 1.0),
            _round("as2d/a", 1, "no_match", 30.0, 1, 2.0), _round("as2d/a", 1, "exhausted", 10.0, 1, 3.0),
            _round("target_only@2t", 1, "target_only", 20.0, 1, 4.0),
            _round("target_only@2t", 1, "target_only", 22.0, 1, 5.0),
            _round("target_only@1t", 1, "target_only", 30.0, 1, 6.0)]
    runs = pl.DataFrame({"method": ["target_only@1t", "target_only@2t", "as2d/a"], "window_id": ["w"] * 3,
                         "tokens": [2, 2, 10], "time": [0.06, 0.042, 0.12]})
    out = round_breakdown({"rounds": pl.DataFrame(rows), "runs": runs}, "as2d/a")
    assert tuple(out.columns) == BREAKDOWN_COLUMNS
    by = {r["kind"]: r for r in out.iter_rows(named=True)}
    assert set(by) == {"verify", "plain:no_match", "plain:exhausted", "target_only"}
    assert by["verify"]["rounds"] == 2 and by["verify"]["round_share"] == pytest.approx(0.5)
    assert by["verify"]["time_share"] == pytest.approx(80 / 120) and by["verify"]["tokens_per_round"] == 4.0
    assert by["plain:no_match"]["call_ms"] == pytest.approx(30.0)
    # the reference row is the best target-only's own step (2 threads here), not the 1-thread one
    assert by["target_only"]["rounds"] == 2 and by["target_only"]["call_ms"] == pytest.approx(21.0)
    assert "| plain:no_match | 1 | 0.25 | 0.25 | 1.00 | 30.00 |" in breakdown_markdown(out, "as2d/a")
    # every round a verify round: 4 tokens per 40 ms against target-only's 1 per 21 ms
    assert verify_ceiling(out) == pytest.approx((4 / 40) / (1 / 21))
    assert "Verify ceiling: 2.10x the best target-only's step" in breakdown_markdown(out, "as2d/a")
    assert verify_ceiling(out.filter(pl.col("kind") != "verify")) is None  # never verified: no ceiling


def test_no_rounds_give_an_empty_typed_frame():
    empty = round_breakdown({"rounds": pl.DataFrame(), "runs": pl.DataFrame()}, "as2d/a")
    assert empty.height == 0 and tuple(empty.columns) == BREAKDOWN_COLUMNS
