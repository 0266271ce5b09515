"""benchmarks/loopback_d3.py's pure parts: a native_phone agreement table becomes one row per configuration,
a pair passes only when every configuration's MAE is within the goal. The measurement itself is never
asserted here (no timed assertions)."""

from __future__ import annotations

import math

import polars as pl
import pytest

from tests.benchmarks.scripts import script_module


@pytest.fixture(scope="module")
def d3():
    yield from script_module("loopback_d3")


def _agreement(errs: dict[str, list[float]], anchored: bool = True) -> pl.DataFrame:
    rows = [{"config": c, "window_id": f"eval{i:02d}", "tokens": 10 + i, "time_native": 0.3, "time_replay": 0.3,
             "signed_error_pct": e, "noise_floor_pct": 1.0 if i else math.nan,
             "drift_ratio": 1.02 if anchored else None,
             "time_replay_anchored": 0.3 if anchored else None, "anchored_error_pct": e / 2 if anchored else None,
             "producer_anchored_error_pct": e / 4 if anchored and c != "target_only" else None,
             "probe_anchored_error_pct": e / 5 if anchored else None}
            for c, es in errs.items() for i, e in enumerate(es)]
    return pl.DataFrame(rows)


def test_one_row_per_configuration_with_mae_signed_anchored_and_noise(d3) -> None:
    target, as2d = d3.pair_rows(2, _agreement({"target_only": [4.0, -2.0], "as2d": [6.0, 8.0]}))
    assert (target.pair, target.config, target.windows) == (2, "target_only", 2)
    assert target.mae_pct == pytest.approx(3.0) and target.signed_pct == pytest.approx(1.0)
    assert target.anchored_mae_pct == pytest.approx(1.5)
    assert target.noise_floor_pct == pytest.approx(1.0)  # a window without a spread (NaN) is left out
    assert target.passed and as2d.mae_pct == pytest.approx(7.0)
    assert as2d.judged_mae_pct == pytest.approx(3.5) and as2d.passed  # the anchored MAE is judged when probed
    # the producer by its own probe is reported beside the verdict, never judged
    assert as2d.producer_anchored_mae_pct == pytest.approx(1.75) and math.isnan(target.producer_anchored_mae_pct)
    assert as2d.probe_anchored_mae_pct == pytest.approx(1.4)  # the bracketed probes too, beside it


def test_without_a_drift_probe_the_anchored_mae_is_nan(d3) -> None:
    (row,) = d3.pair_rows(1, _agreement({"as2d": [1.0, -1.0]}, anchored=False))
    assert math.isnan(row.anchored_mae_pct) and row.judged_mae_pct == 1.0 and row.passed
    (off,) = d3.pair_rows(1, _agreement({"as2d": [6.0, -6.0]}, anchored=False))
    assert not off.passed  # without a probe the frozen MAE is judged


def test_the_verdict_counts_pairs_where_every_configuration_met_the_goal(d3) -> None:
    rows = (d3.pair_rows(1, _agreement({"target_only": [1.0], "as2d": [2.0]}))
            + d3.pair_rows(2, _agreement({"target_only": [1.0], "as2d": [11.0]}))
            + d3.pair_rows(3, _agreement({"target_only": [-9.8], "as2d": [3.0]})))
    assert d3.verdict(rows).startswith("D.3 on the loopback phone: 2 of 3 consecutive pairs within 5% ")
    assert d3.verdict(rows).endswith("worst MAE 5.50%, frozen profile 11.00%")
    lines = d3.table(rows)
    assert len(lines) == 2 + 6
    # one window: no noise floor
    assert lines[5] == "| 2 | as2d | 1 | 11.00 | +11.00 | 5.50 | nan | FAIL | 2.75 | 2.20 |"


def test_the_window_table_has_one_line_per_configuration_and_window(d3) -> None:
    lines = d3.window_table(_agreement({"target_only": [1.0, 2.0], "as2d": [3.0, 4.0]}))
    assert lines[0].startswith("| config | window_id | tokens |") and len(lines) == 2 + 4
    assert lines[2].startswith("| target_only | eval00 | 10 | 0.300 |") and lines[-1].split(" | ")[1] == "eval01"


@pytest.mark.parametrize("seconds", ["0", "31", "-6"])
def test_a_window_length_outside_whispers_limit_is_refused_before_anything_starts(d3, seconds, capsys) -> None:
    with pytest.raises(SystemExit) as stop:
        d3.main(["--max-seconds", seconds])
    assert stop.value.code == 2
    assert f"--max-seconds {float(seconds):g}: give a window length in (0, 30] s" in capsys.readouterr().err
