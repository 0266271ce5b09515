"""D.3 per window as interleaved ratios (``workbench/native/interleaved.py``): each repetition against a
replay priced at the probes taken just before it, the median of those errors judged."""

from __future__ import annotations

import dataclasses

import pytest

from workbench.native.agreement import agreement_frame
from workbench.native.agreement_report import decomposition_lines, summarize, verdict
from workbench.native.interleaved import interleaved_errors
from workbench.native.window_anchoring import median_repetition
from workbench.replay.drift import scaled

from .test_anchors import _setup
from .test_run_store import episodes


def test_each_repetition_is_judged_against_a_replay_at_its_own_probes():
    _, _, profile, _ = _setup()  # anchor_ms 20, anchor_producer_ms 5
    base = 2.0

    def replay_time(p):  # replayed seconds scale with the target's price
        return base * p.target_step_ms / profile.target_step_ms

    rep_probes = [(20.0, 5.0), (22.0, 5.5), (26.0, 6.5)]  # target ratios 1.0, 1.1, 1.3
    off = (0.01, -0.02, 0.04)  # each repetition's native time over the replay at its own probes, minus 1
    native = [base * r * (1 + e) for r, e in zip((1.0, 1.1, 1.3), off, strict=True)]
    got = interleaved_errors(profile, rep_probes, None, native, native, replay_time, replay_time)
    assert got is not None and got.reps == 3
    assert got.as2d_pct == pytest.approx(1.0) and got.target_only_pct == pytest.approx(1.0)
    # the median native run (repetition 1) against the replay at the median repetition's probes (1.1) reads
    # repetition 1's own error only, while a steady offset shows in every repetition alike
    ratio, _ = median_repetition(profile, rep_probes, replay_time)
    assert 100 * (sorted(native)[1] / replay_time(scaled(profile, ratio)) - 1) == pytest.approx(-2.0)


def test_the_verify_calls_beside_the_producer_take_the_windows_concurrent_ratio():
    _, _, profile, _ = _setup()
    seen = []

    def as2d_time(p):
        seen.append(p.verify_ms(2, True) / profile.verify_ms(2, True))
        return 1.0

    got = interleaved_errors(profile, [(22.0, 5.0)], 0.9, [1.0], [1.0], as2d_time, lambda p: 1.0)
    assert got is not None and seen == [pytest.approx(0.9)]


def test_repetitions_that_do_not_pair_with_probes_give_no_interleaved_error():
    _, _, profile, _ = _setup()
    assert interleaved_errors(profile, [(20.0, 5.0)], None, [1.0, 1.0], [1.0, 1.0], lambda p: 1.0,
                              lambda p: 1.0) is None
    assert interleaved_errors(profile, [], None, [], [], lambda p: 1.0, lambda p: 1.0) is None


def test_agreement_judges_the_interleaved_error_and_keeps_the_median_runs_beside():
    """The frame's judged error is the interleaved one; the median run's, which the decomposition's terms
    add up to, is kept beside it and in the verdict."""
    ep, inputs = episodes()  # As²d's native time tracks each repetition's probe: move each off it
    off = (0.97, 1.03, 0.99)
    ep.results = [(w, s, k, dataclasses.replace(r, time=r.time * off[k]) if s == "as2d" else r)
                  for w, s, k, r in ep.results]
    _, _, profile, _ = _setup()
    frame = agreement_frame(ep, inputs, profile)
    row = frame.row(0, named=True)
    # the median native run (+3 % off its probe) is not the median repetition against its own probes
    assert abs(row["signed_error_pct"] - row["median_run_signed_error_pct"]) > 0.2
    terms = sum(row[c] for c in frame.columns if c.startswith("d_") and c.removeprefix("d_") in
                ("publication", "readiness", "verify_concurrent", "verify_idle", "loop", "drain"))
    assert terms == pytest.approx(row["median_run_signed_error_pct"], abs=1e-6)
    assert row["abs_error_pct"] == pytest.approx(abs(row["signed_error_pct"]))
    summary = summarize(frame, profile)
    assert summary["median_run_mae_pct"] == pytest.approx(frame["median_run_signed_error_pct"].abs().mean())
    assert "against the median run: MAE" in verdict(summary)
    assert f"{row['median_run_signed_error_pct']:>+8.2f}" in decomposition_lines(frame)[2]
