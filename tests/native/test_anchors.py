"""Drift anchors priced by the profile (D.3, ``workbench/native/anchors.py``): the probe's statistics
as the frozen profile charges them, so a probe over its priced anchor is the speed now relative to the
profile, whatever the calibration's few anchor runs measured."""

from __future__ import annotations

import dataclasses

import pytest

from workbench.native.agreement import agreement_frame
from workbench.native.anchors import priced_anchors, priced_producer_ms, priced_round_ms
from workbench.native.driver import NativeResult
from workbench.native.episodes import producer_token_ms
from workbench.native.run_store import ReplayInputs
from workbench.replay.drift import scaled
from workbench.replay.engine import replay
from workbench.replay.result import ReplayConfig
from workbench.replay.trajectory import Window

from .test_decomposition import EOS, REFERENCE, SETTINGS, VOCAB, native_like_run, profile_for
from .test_run_store import episodes


def _setup(growth: bool = True):
    run = native_like_run()
    profile, source = profile_for(run, growth=growth)
    profile = dataclasses.replace(profile, anchor_ms=20.0, anchor_window="calib00", anchor_producer_ms=5.0)
    target_only = NativeResult("w", "target_only", REFERENCE, (), (), 1.0, 1.0)
    return run, target_only, profile, ReplayInputs(source, SETTINGS, EOS, VOCAB, 200)


@pytest.mark.parametrize("growth", [True, False])
def test_a_profile_fitted_from_a_log_prices_that_logs_producer_statistic(growth):
    """The priced producer anchor is the probe's statistic (interval per operation after the first
    publication) on replayed publication times: for the profile fitted from the log, the log's own value."""
    run, _, profile, inputs = _setup(growth)
    measured = producer_token_ms(run.producer_times, run.producer_ops)
    assert measured is not None
    assert priced_producer_ms(profile, run, REFERENCE, inputs) == pytest.approx(measured, rel=1e-6)


def test_the_priced_target_anchor_is_target_only_replayed_per_round():
    _, target_only, profile, inputs = _setup()
    window = Window("w", "host", REFERENCE, EOS, VOCAB, 200, None).validate()
    res = replay(window, ReplayConfig("target_only"), profile)
    assert priced_round_ms(profile, target_only, inputs) == pytest.approx(1000 * res.time / len(res.untimed))


def test_priced_anchors_follow_the_profile_not_the_calibrations_measurement():
    """Twice every price, twice each priced anchor; the stored (measured) anchors play no part. Without an
    anchor or probe runs there is nothing to price."""
    run, target_only, profile, inputs = _setup()
    once = priced_anchors(profile, [(target_only, run)], inputs)
    twice = priced_anchors(scaled(profile, 2.0, source_ratio=2.0), [(target_only, run)], inputs)
    other = priced_anchors(dataclasses.replace(profile, anchor_ms=55.0, anchor_producer_ms=1.0),
                           [(target_only, run)], inputs)
    assert once is not None and twice is not None and other is not None
    assert once.anchor_ms != profile.anchor_ms and once.anchor_producer_ms != profile.anchor_producer_ms
    assert twice.anchor_ms == pytest.approx(2 * once.anchor_ms)
    assert twice.anchor_producer_ms == pytest.approx(2 * once.anchor_producer_ms)
    assert (other.anchor_ms, other.anchor_producer_ms) == (once.anchor_ms, once.anchor_producer_ms)
    # a probe that ran only target-only keeps the producer's stored anchor
    assert priced_anchors(profile, [(target_only,)], inputs).anchor_producer_ms == profile.anchor_producer_ms
    assert priced_anchors(profile, [], inputs) is None
    assert priced_anchors(dataclasses.replace(profile, anchor_ms=None), [(target_only, run)], inputs) is None


def test_agreement_judges_with_priced_anchors_and_keeps_the_measured_ones_beside(monkeypatch):
    """The judged error is the same whatever ``anchor_ms`` the calibration measured; the error with the
    measured anchor (reported beside) moves with it. Every call of this log runs beside the producer, which
    its As²d probe's concurrent ratio would price whatever the anchor: without that probe, the target's
    ratio prices them, and the anchor shows."""
    import workbench.native.agreement as agreement

    monkeypatch.setattr(agreement, "concurrent_probe_ratio", lambda *_: None)
    ep, inputs = episodes()
    _, _, profile, _ = _setup()
    a = agreement_frame(ep, inputs, profile)
    b = agreement_frame(ep, inputs, dataclasses.replace(profile, anchor_ms=1.1 * profile.anchor_ms))
    assert a["signed_error_pct"].to_list() == pytest.approx(b["signed_error_pct"].to_list())
    col = "calibrated_anchor_signed_error_pct"
    assert all(x != pytest.approx(y) for x, y in zip(a[col], b[col], strict=True))
    # the sensitivity's target_scale moves the judged ratio as a smaller anchor would
    moved = agreement_frame(ep, inputs, profile, target_scale=1.03)
    assert all(m < s for m, s in zip(moved["signed_error_pct"], a["signed_error_pct"], strict=True))


def test_as2d_is_judged_at_the_repetition_whose_replay_is_the_median():
    """Near a readiness threshold replay is not monotonic in the speed: the median of the replays at each
    repetition's probes, not the replay at the median probe, is what a median over native runs compares to."""
    from workbench.native.window_anchoring import median_repetition

    _, _, profile, _ = _setup()
    times = {1.0: 3.0, 1.05: 1.0, 1.1: 2.0}  # replayed seconds by target ratio: 1.1's is the median

    def replay_time(p):
        return times[round(p.target_step_ms / profile.target_step_ms, 6)]

    rep_probes = [(20.0, 5.0), (21.0, 6.0), (22.0, 7.0)]  # anchor_ms 20, anchor_producer_ms 5
    assert median_repetition(profile, rep_probes, replay_time) == pytest.approx((1.1, 1.4))
    # a probe without a producer statistic prices the producer by the target's ratio
    assert median_repetition(profile, [(22.0, None)], replay_time) == (pytest.approx(1.1), None)


def test_agreement_judges_each_window_at_one_of_its_repetitions_probes():
    ep, inputs = episodes()
    _, _, profile, _ = _setup()
    frame = agreement_frame(ep, inputs, profile)
    priced = priced_anchors(profile, [rs for (w, _), rs in ep.probe_runs.items() if w == "w1"], inputs)
    assert priced is not None
    ratios = {round(ep.probes[("w1", k)] / priced.anchor_ms, 9) for k in range(3)}
    assert round(frame["drift_ratio"][0], 9) in ratios


def test_the_judged_replay_prices_calls_beside_the_producer_by_the_as2d_probes_own_such_calls():
    """Each kind of call by the probe that ran it alike (``anchored``): with a concurrent ratio the judged
    profile's verify calls beside the producer take it, idle calls keep the target-only probe's ratio; the
    error with the target's ratio for both is kept beside. Without one, both kinds follow the target."""
    from workbench.native.window_anchoring import WindowProbes, anchored

    _, _, profile, _ = _setup()
    seen: list[tuple[float, float]] = []

    def err_of(p):
        seen.append((p.verify_ms(2, True) / profile.verify_ms(2, True), p.verify_ms(2) / profile.verify_ms(2)))
        return None, 100 * (seen[-1][0] - 1), 0.0

    a = anchored(profile, WindowProbes(target_ms=22.0, concurrent_ratio=0.9), err_of)  # target ratio 1.1
    assert a.ratio == pytest.approx(1.1)
    assert a.judged.verify_ms(2, True) == pytest.approx(0.9 * profile.verify_ms(2, True))
    assert a.judged.verify_ms(2) == pytest.approx(1.1 * profile.verify_ms(2))
    assert a.c_err == pytest.approx(10.0)  # the concurrent calls by the target's idle ratio, beside
    plain = anchored(profile, WindowProbes(target_ms=22.0), err_of)
    assert plain.judged.verify_ms(2, True) == pytest.approx(1.1 * profile.verify_ms(2, True)) and plain.c_err is None
