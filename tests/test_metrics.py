"""Metrics on hand-made frames with known answers, and the D.2.7 identity on real replays."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench import metrics
from workbench.replay.engine import ReplayConfig, replay, results_frame
from workbench.replay.profile import load_profile
from workbench.replay.synthetic import SyntheticSpec, paper_like_sources, synthetic_windows


def _rounds(rows: list[tuple[int, int, int, list[int]]]) -> pl.DataFrame:
    """(width, ready, accepted, committed) per round; chain length = width - 1."""
    return pl.DataFrame({
        "width": [r[0] for r in rows], "ready": [r[1] for r in rows], "accepted": [r[2] for r in rows],
        "chain": [[7] * (r[0] - 1) for r in rows], "committed": [r[3] for r in rows],
        "window_id": ["a"] * len(rows), "config": ["x"] * len(rows),
    })


ROUNDS = _rounds([
    (1, 0, 0, [1]),  # K1, nothing ready
    (4, 5, 3, [1, 1, 1, 1]),  # full acceptance + bonus
    (3, 2, 0, [1]),  # rejected at once
    (1, 3, 0, [1]),  # K1 although candidates existed (e.g. no match)
])


def test_round_metrics_by_hand() -> None:
    assert metrics.acceptance(ROUNDS) == pytest.approx(3 / 5)
    assert metrics.output_tokens(ROUNDS) == 7 + 1  # committed + the first root
    assert metrics.coverage(ROUNDS) == pytest.approx(3 / 8)
    assert metrics.readiness(ROUNDS) == pytest.approx(1 / 4)
    assert metrics.multi_token_share(ROUNDS) == pytest.approx(2 / 4)
    assert metrics.mean_accepted_length(ROUNDS) == pytest.approx(1 + 3 / 2)


def test_tps_pooled_is_not_mean_of_rates() -> None:
    w = pl.DataFrame({"window_id": ["a", "b"], "config": ["x", "x"], "tokens": [100, 10], "time": [10.0, 0.5]})
    assert metrics.tps_pooled(w) == pytest.approx(110 / 10.5)
    assert metrics.tps_per_window(w)["tps"].to_list() == [10.0, 20.0]
    by = metrics.tps_pooled(w, by=["config"])
    assert by["tps"][0] == pytest.approx(110 / 10.5)


def test_slowdown_share_and_gap() -> None:
    base = pl.DataFrame({"window_id": ["a", "b", "c"], "tokens": [10, 10, 10], "time": [1.0, 1.0, 1.0]})
    run = pl.DataFrame({"window_id": ["a", "b", "c"], "tokens": [10, 10, 10], "time": [0.5, 2.0, 1.0]})
    assert metrics.slowdown_share(run, base) == pytest.approx(1 / 3)
    assert metrics.oracle_gap(27.92, 28.54) == pytest.approx(100 * (1 - 27.92 / 28.54))
    with pytest.raises(ValueError, match="baseline lacks"):
        metrics.slowdown_share(run, base.head(2))


def _stages(producer: list[tuple[float, float]], verifier: list[tuple[float, float]], T: float) -> pl.DataFrame:
    rows = [("producer", s, e) for s, e in producer] + [("verifier", s, e) for s, e in verifier]
    rows.append(("other", 0.0, T))  # residual stages never enter D or V
    return pl.DataFrame(rows, schema=["resource", "start", "end"], orient="row").with_columns(pl.lit(T).alias("T"))


def test_overlap_decomposition_exact_on_dyadic_intervals() -> None:
    st_ = _stages([(0.0, 0.5), (0.25, 1.0), (2.0, 2.5)], [(0.75, 1.5), (1.75, 2.25), (3.0, 3.5)], T=4.0)
    o = metrics.overlap_decomposition(st_)
    assert (o.D, o.V, o.O) == (1.5, 1.75, 0.5)
    assert o.H == 4.0 - 2.75
    assert o.T == o.D + o.V - o.O + o.H  # eq. 5, exactly
    assert o.T >= max(o.D, o.V) + o.H  # eq. 9


interval = st.tuples(st.floats(0, 10, allow_nan=False), st.floats(0, 3, allow_nan=False)).map(
    lambda x: (x[0], x[0] + x[1]))


@settings(max_examples=200, deadline=None)
@given(st.lists(interval, max_size=12), st.lists(interval, max_size=12), st.floats(0, 14))
def test_overlap_identity_property(p: list, v: list, T: float) -> None:
    o = metrics.overlap_decomposition(_stages(p, v, T))
    assert o.T == pytest.approx(o.D + o.V - o.O + o.H, abs=1e-9)
    assert o.T + 1e-9 >= max(o.D, o.V) + o.H
    assert 0 <= o.O <= min(o.D, o.V) + 1e-12


def test_overlap_on_replays_serial_has_no_overlap() -> None:
    prof = load_profile("k70_pro")
    w = synthetic_windows(SyntheticSpec(n_windows=1, sources=paper_like_sources(), seed=5))[0]
    sd = replay(w, ReplayConfig("sd", width=8), prof)
    o = metrics.overlap_decomposition(sd.stages_frame())
    assert o.O == 0.0 and o.D > 0 and o.V > 0
    assert o.T == pytest.approx(o.D + o.V + o.H, rel=1e-12)
    a = replay(w, ReplayConfig("as2d", source="qwen", budget=7), prof)
    oa = metrics.overlap_decomposition(a.stages_frame())
    assert oa.O > 0  # drafting hidden behind verification
    assert oa.T == pytest.approx(oa.D + oa.V - oa.O + oa.H, rel=1e-12)
    assert oa.T >= max(oa.D, oa.V) + oa.H - 1e-12
    # the round table carries what the round metrics need
    rounds = a.rounds_frame()
    assert metrics.output_tokens(rounds) == a.tokens
    table = metrics.overlap_table(pl.concat([sd.stages_frame(), a.stages_frame()]))
    assert table.height == 2
    assert metrics.tps_pooled(results_frame([a])) == pytest.approx(a.tps)


def test_regime_changes_give_median_and_iqr_of_per_window_change() -> None:
    rows = [("d", "a", f"a{i}", "target_only", 10.0) for i in range(3)] + \
           [("d", "b", f"b{i}", "target_only", 10.0) for i in range(2)] + \
           [("d", "a", "a0", "sd", 11.0), ("d", "a", "a1", "sd", 12.0), ("d", "a", "a2", "sd", 15.0),
            ("d", "b", "b0", "sd", 5.0), ("d", "b", "b1", "sd", 10.0)]
    per = pl.DataFrame(rows, schema=["device", "dataset", "window_id", "method", "tps"], orient="row")
    t = metrics.regime_changes(per)
    a = t.filter(pl.col("dataset") == "a").row(0, named=True)
    b = t.filter(pl.col("dataset") == "b").row(0, named=True)
    # changes +10, +20, +50 and -50, 0 (%); quartiles interpolate linearly between windows
    assert (a["median_pct"], a["q1_pct"], a["q3_pct"], a["windows"]) == pytest.approx((20.0, 15.0, 35.0, 3))
    assert (b["median_pct"], b["q1_pct"], b["q3_pct"]) == pytest.approx((-25.0, -37.5, -12.5))
    with pytest.raises(ValueError, match="target_only"):
        metrics.regime_changes(per.filter(pl.col("window_id") != "b1").vstack(
            pl.DataFrame([("d", "b", "b9", "sd", 1.0)], schema=per.columns, orient="row")))


def test_work_by_config_accounts_every_second_of_sd_at_two_widths() -> None:
    prof = load_profile("k70_pro")
    ws = synthetic_windows(SyntheticSpec(n_windows=4, sources=paper_like_sources(), seed=7))
    results = [replay(w, ReplayConfig("sd", width=k), prof) for k in (8, 12) for w in ws]
    windows = results_frame(results)
    rounds = pl.concat([r.rounds_frame() for r in results])
    t = metrics.work_by_config(windows, rounds)
    assert set(t["dataset"]) == {*(w.dataset for w in ws), "all"}
    for label in ("sd/K8", "sd/K12"):
        allrow = t.filter((pl.col("config") == label) & (pl.col("dataset") == "all")).row(0, named=True)
        subset = [r for r in results if r.config.label == label]
        assert allrow["rounds"] == sum(len(r.untimed) for r in subset)
        assert allrow["tps"] == pytest.approx(metrics.tps_pooled(results_frame(subset)))
        # serial SD: the charged clock is drafting + verification + the per-round loop residual
        loop = sum(len(r.untimed) for r in subset) * prof.loop_residual_ms / 1000
        assert allrow["draft_s"] + allrow["verify_s"] + loop == pytest.approx(allrow["time"])
        parts = t.filter((pl.col("config") == label) & (pl.col("dataset") != "all"))
        assert parts["draft_forwards"].sum() == allrow["draft_forwards"] > 0
    k8, k12 = (t.filter((pl.col("config") == c) & (pl.col("dataset") == "all")).row(0, named=True)
               for c in ("sd/K8", "sd/K12"))
    assert k12["rounds"] < k8["rounds"]  # wider calls, fewer of them (the paper's Table 10 pattern)


def test_task_tps_counts_useful_tokens_on_hand_built_trajectories() -> None:
    """D.1.2 / D.4.4: task TPS leaves out the first token (chosen in prefill) and a final EOS; a capped
    output has no EOS to leave out, and an output prefill already ended has no useful token."""
    from tests.replay.replay_fixtures import EOS, constant_profile, exact_window
    from workbench.replay.trajectory import Window

    ended = exact_window(6)  # 10, 11, 12, 13, 14, EOS
    capped = Window("capped", "test", tuple(range(10, 16)), EOS, 1000, 6, None, {}).validate()
    at_once = Window("prefill", "test", (EOS,), EOS, 1000, 8, None, {}).validate()
    profile = constant_profile()
    results = [replay(w, ReplayConfig("target_only"), profile) for w in (ended, capped, at_once)]
    results.append(replay(ended, ReplayConfig("as2d", source="qwen", budget=3), profile))
    assert [r.tokens for r in results] == [6, 6, 1, 6]
    assert [r.useful_tokens for r in results] == [4, 5, 0, 4]
    assert metrics.useful_tokens(6, True) == 4 and metrics.useful_tokens(6, False) == 5
    assert metrics.useful_tokens(1, True) == 0 and metrics.useful_tokens(0, False) == 0
    frame = results_frame(results)
    assert frame["useful_tokens"].to_list() == [4, 5, 0, 4]
    assert metrics.task_tps(frame) == pytest.approx(13 / frame["time"].sum())
    assert metrics.task_tps(frame) < metrics.tps_pooled(frame)  # never the committed-token count
    by = metrics.task_tps(frame, by=["config"])
    assert isinstance(by, pl.DataFrame)
    t_only = frame.filter(pl.col("config") == by["config"][0])
    assert by["tps_useful"][0] == pytest.approx(9 / t_only["time"].sum())
