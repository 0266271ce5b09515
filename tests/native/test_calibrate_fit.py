"""The host profile's context fit: recovered from samples, parsed, and charged by replay."""

from __future__ import annotations

import statistics

import numpy as np
import polars as pl
import pytest
import yaml

from workbench.decoding.records import RoundRecord
from workbench.native.context import SLOPE_MIN_SAMPLES, context_fit, round_times, within_run_slope
from workbench.native.driver import NativeResult
from workbench.native.episodes import SAMPLE_SCHEMA, Episodes, sample
from workbench.native.fit import beside_producer, live_widths, with_positions
from workbench.replay.engine import replay
from workbench.replay.profile import DEVICE_DIR, ProfileError, parse_profile
from workbench.replay.result import ReplayConfig
from workbench.replay.trajectory import Window

A, SLOPE, COLD = {1: 20.0, 4: 40.0}, {1: 0.05, 4: 0.12}, 7.0


def _sweep():
    rows = [sample("verify", "w", width=k, concurrent=False, offset=off, rep=rep,
                   ms=A[k] + SLOPE[k] * (off + 1) + (0.3 if rep % 2 else -0.3), tokens=k)
            for k in A for off in (0, 32, 64) for rep in range(4)]
    return pl.DataFrame(rows, schema=SAMPLE_SCHEMA)


def _target_only_rounds(n=40, runs=3):
    rows = []
    for rep in range(runs):
        t = 0.0
        for i in range(n):
            t += (A[1] + SLOPE[1] * (i + 1) + (COLD if i == 0 else 0.0)) / 1000
            rows.append({"window_id": "w", "rep": rep, "round": i, "t_end": t})
    return pl.DataFrame(rows)


def test_fit_recovers_slope_cold_call_and_step_at_the_reference_context():
    fit = context_fit(_sweep(), _target_only_rounds(), "today")
    ctx = fit.context
    ref = ctx["ref_tokens"]["v"]
    assert ref == 33  # median committed tokens of the sweep (offsets 0/32/64, plus the prefill's token)
    for k in A:
        assert ctx["slope_ms"][k]["v"] == pytest.approx(SLOPE[k], abs=1e-3)
        assert fit.sd[k][1] == 12 and fit.sd[k][0] == pytest.approx(0.3, abs=0.02)
    assert ctx["cold_ms"]["v"] == pytest.approx(COLD, abs=1e-3)
    assert fit.step["v"] == pytest.approx(A[1] + SLOPE[1] * ref, abs=1e-3)
    assert ctx["residual_ms"]["v"] == pytest.approx(0.0, abs=1e-3)
    assert context_fit(_sweep(), _target_only_rounds().head(0), "today") is None


def test_a_sweep_slope_its_noise_made_is_taken_as_none():
    """Width 4's samples hold no trend, only noise; width 1's three samples (one rep) leave too few to test
    a slope. Both get slope 0 and their dispersion around the mean, so a live call moved to ``ref_tokens``
    is not moved by noise (a cheap model's noisy slope once priced a call below zero)."""
    noise = (0.0, 4.0, -3.0, 3.5, -4.0, 0.5, 1.0, -2.0, 2.5, -1.0, 3.0, -0.5)
    rows = [sample("verify", "w", width=4, concurrent=False, offset=off, rep=rep, ms=40.0 + noise[3 * rep + i],
                   tokens=4) for rep in range(4) for i, off in enumerate((0, 32, 64))]
    rows += [sample("verify", "w", width=1, concurrent=False, offset=off, ms=20.0 + 0.3 * off, tokens=1)
             for off in (0, 32, 64)]
    assert 3 < SLOPE_MIN_SAMPLES <= 12
    fit = context_fit(pl.DataFrame(rows, schema=SAMPLE_SCHEMA), _target_only_rounds().head(5), "today")
    slopes = fit.context["slope_ms"]
    assert slopes[4]["v"] == 0.0 and "standard errors of 0" in slopes[4]["source"]
    assert slopes[1]["v"] == 0.0 and "too few samples" in slopes[1]["source"]
    assert fit.sd[4][0] == pytest.approx(statistics.stdev(noise), abs=1e-3)
    # the same sweep with a true trend keeps it
    trend = [{**r, "ms": r["ms"] + 0.5 * r["offset"]} for r in rows if r["width"] == 4]
    kept = context_fit(pl.DataFrame(trend, schema=SAMPLE_SCHEMA), _target_only_rounds().head(5), "today")
    assert kept.context["slope_ms"][4]["v"] == pytest.approx(0.5, abs=0.1)
    assert "standard errors from 0" in kept.context["slope_ms"][4]["source"]


def _profile(context=None):
    raw = yaml.safe_load((DEVICE_DIR / "host.yaml").read_text())
    if context is not None:
        raw["verifier"]["context"] = context
    return parse_profile(raw, file="host-test.yaml")


def test_replay_charges_the_context_line_and_the_cold_call():
    fit = context_fit(_sweep(), _target_only_rounds(), "today")
    plain, fitted = _profile(), _profile(fit.context)
    ref = list(range(10, 60)) + [0]
    w = Window("w", "host", tuple(ref), 0, 1000, 200, None, {}).validate()
    a = replay(w, ReplayConfig("target_only"), plain)
    b = replay(w, ReplayConfig("target_only"), fitted)
    r = fitted.verifier.context
    # round i sees i+1 committed tokens; the first round also pays the cold call
    extra = sum(r.slope(1) * (i + 1 - r.ref_tokens) for i in range(len(a.untimed))) + r.cold_ms
    assert b.time - a.time == pytest.approx(extra / 1000, rel=1e-9)
    assert b.output == a.output


def test_context_fit_is_checked_like_every_profile_field():
    fit = context_fit(_sweep(), _target_only_rounds(), "today").context
    bad = {**fit, "slope_ms": {99: {"v": 0.1, "source": "x"}}}
    with pytest.raises(ProfileError, match="slope_ms.99"):
        _profile(bad)
    with pytest.raises(ProfileError, match="cold_ms"):
        _profile({k: v for k, v in fit.items() if k != "cold_ms"})


def test_k1_slope_comes_from_target_only_runs_with_one_level_per_run():
    """Runs at different machine speeds (levels 0, +6, -4 ms) and a sweep whose K1 slope is wrong: K1's
    slope is the runs' own, and the step at ``ref_tokens`` is their line there at the median level."""
    levels = (0.0, 6.0, -4.0)
    rows = []
    for rep, lvl in enumerate(levels):
        t = 0.0
        for i in range(30):
            t += (A[1] + lvl + SLOPE[1] * (i + 1) + (COLD if i == 0 else 0.0)) / 1000
            rows.append({"window_id": "w", "rep": rep, "round": i, "t_end": t})
    to = pl.DataFrame(rows)
    slope, n, judged = within_run_slope(round_times(to))
    assert (slope, n) == (pytest.approx(SLOPE[1], abs=1e-6), 87) and "excludes 0" in judged
    sweep = _sweep().with_columns(pl.when(pl.col("width") == 1).then(pl.col("ms") + 0.2 * pl.col("offset"))
                                  .otherwise(pl.col("ms")).alias("ms"))
    fit = context_fit(sweep, to, "today")
    assert fit.context["slope_ms"][1]["v"] == pytest.approx(SLOPE[1], abs=1e-4)
    assert "Sen's slope" in fit.context["slope_ms"][1]["source"]
    assert fit.context["slope_ms"][4]["v"] == pytest.approx(SLOPE[4], abs=1e-3)  # other widths: the sweep's
    assert fit.step["v"] == pytest.approx(A[1] + SLOPE[1] * 33, abs=1e-3)
    # too few rounds: the sweep's slope stays
    assert within_run_slope(round_times(to.filter(pl.col("round") < 5))) is None
    short = context_fit(sweep, to.filter(pl.col("round") < 5), "today")
    assert short.context["slope_ms"][1]["v"] == pytest.approx(SLOPE[1] + 0.2, abs=1e-3)


def _noisy_runs(slope: float, stall_round: int | None = None) -> pl.DataFrame:
    """Three target-only runs of 60 rounds, ``A[1] + slope * pos`` with seeded noise; ``stall_round``: a
    VM pause makes that round of the first run 100 ms dearer."""
    rng = np.random.default_rng(7)
    rows = []
    for rep in range(3):
        t = 0.0
        for i in range(60):
            stall = 100.0 if i == stall_round and rep == 0 else 0.0
            t += (A[1] + slope * (i + 1) + rng.normal(0.0, 1.0) + stall) / 1000
            rows.append({"window_id": "w", "rep": rep, "round": i, "t_end": t})
    return round_times(pl.DataFrame(rows))


def test_k1_slope_ignores_a_stalled_round_and_keeps_no_slope_from_noise():
    """Sen's slope: one stalled round late in a run tilts a least-squares line, not the median of the
    pairwise slopes; rounds with no trend give 0 (their rank interval holds 0), a real trend is kept."""
    flat = within_run_slope(_noisy_runs(0.0))
    assert flat is not None and flat[0] == 0.0 and "inside" in flat[2]
    stalled = within_run_slope(_noisy_runs(0.0, stall_round=55))
    assert stalled is not None and stalled[0] == 0.0
    r = _noisy_runs(0.0, stall_round=55).filter(pl.col("round") > 0)
    assert abs(np.polyfit(r["pos"].to_numpy(), r["dur"].to_numpy(), 1)[0]) > 0.03  # what least squares makes of it
    steep = within_run_slope(_noisy_runs(0.2, stall_round=55))
    assert steep is not None and steep[0] == pytest.approx(0.2, abs=0.03) and "excludes 0" in steep[2]


def test_live_width_prices_are_moved_to_the_reference_context():
    """Native calls at positions 2..21 cost ``a + s * pos``: the live price is the line at ``ref_tokens``,
    not the calls' median (which sits at their median position)."""
    a, s, ref = 30.0, 0.1, 40.0
    rows, t = [], 0.0
    for rep in range(2):
        for i in range(21):
            start = t
            t += (a + s * (1 + i)) / 1000
            rows.append({"window_id": "w", "config": "target_only", "rep": rep, "round": i, "width": 1,
                         "committed": [7], "t_start": start, "t_end": t})
    rounds = pl.DataFrame(rows).with_columns((pl.col("t_end") - pl.col("t_start")).alias("call"))
    assert with_positions(rounds).filter(pl.col("rep") == 0)["pos"].to_list() == list(range(1, 22))
    ctx = {"ref_tokens": {"v": ref}, "slope_ms": {1: {"v": s}}}
    moved = live_widths(rounds, {1: [99.0]}, "today", "calls", ctx)[1]
    assert moved["v"] == pytest.approx(a + s * ref, abs=1e-3) and "moved to 40" in moved["source"]
    plain = live_widths(rounds, {1: [99.0]}, "today", "calls")[1]
    assert plain["v"] == pytest.approx(a + s * 11.5, abs=1e-3)  # the median position of rounds 1..20
    # a slope steep enough to carry the calls below zero at ref_tokens prices nothing: the sweep's calls do
    steep = live_widths(rounds, {1: [99.0]}, "today", "calls", {"ref_tokens": {"v": ref}, "slope_ms": {1: {"v": -5.0}}})
    assert steep[1]["v"] == 99.0 and "measured on host" in steep[1]["source"]


def _as2d_run(producer_finish: float, beside_ms: float, alone_ms: float, calls: int = 12) -> NativeResult:
    """As²d calls of width 2, each costing ``beside_ms`` while it starts before ``producer_finish`` (s) and
    ``alone_ms`` after it."""
    records, t = [], 0.0
    for i in range(calls):
        cost = (beside_ms if t < producer_finish else alone_ms) / 1000
        rec = RoundRecord(i, "as2d", 2, 10 + 2 * i, (11 + 2 * i,), (0,), None, 1, 1, (10 + 2 * i, 11 + 2 * i),
                          "bonus", None, None, None)
        records.append(rec.timed(t, t, t + cost))
        t += cost
    out = tuple(tok for r in records for tok in r.committed)
    return NativeResult("w", "as2d", out, tuple(records), (), t, t, producer_tokens=out,
                        producer_times=tuple(0.0 for _ in out), producer_finish=producer_finish)


def test_the_price_beside_the_producer_takes_only_the_calls_that_started_while_it_ran():
    """Once the producer stops, As²d's calls run alone and replay prices them idle: the live price of a
    width beside the producer is the calls that started before its finish (30 ms), not their mix with
    the later idle ones (20 ms), and the flag follows replay's rule (a call starting after the finish is idle)."""
    ep = Episodes()
    for rep in range(2):
        ep.results.append(("w", "as2d", rep, _as2d_run(0.175, 30.0, 20.0)))
    rounds = ep.rounds().with_columns((pl.col("t_end") - pl.col("t_start")).alias("call"))
    running = rounds.filter(pl.col("rep") == 0)["producer_running"].to_list()
    assert running == [True] * 6 + [False] * 6  # calls start at 0, 30, ..., 150 ms, then 180 ms after the finish
    beside = live_widths(beside_producer(rounds), {2: [99.0]}, "today", "calls")[2]
    assert beside["v"] == pytest.approx(30.0, abs=1e-6) and "n=10" in beside["source"]  # first calls left out
    assert live_widths(rounds, {2: [99.0]}, "today", "calls")[2]["v"] == pytest.approx(20.0, abs=1e-6)
    # a run whose producer never stopped before EOS runs beside it throughout; rounds without the flag stay whole
    unstopped = _as2d_run(float("nan"), 30.0, 20.0)
    assert unstopped.producer_end == unstopped.t_eos > 0
    assert beside_producer(rounds.drop("producer_running")).height == rounds.height
