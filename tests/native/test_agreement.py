"""Replay vs native agreement (D.3) end to end on tiny real Whisper models."""

from __future__ import annotations

import polars as pl
import pytest

from tests.native.test_calibrate import host_cfg, windows  # noqa: F401  (fixtures)
from tests.native.test_native import audio, producer_dir, tiny_dir  # noqa: F401  (fixtures)
from workbench.native.agreement import AGREEMENT_COLUMNS, replay_agreement, summarize, verdict
from workbench.native.reprice import reprice
from workbench.replay.profile import CalibrationCheck


def test_agreement_reports_per_window_errors(host_cfg, windows, tmp_path):  # noqa: F811
    frame, summary = replay_agreement(windows[:1], windows[1:], host_cfg, reps=1, warmup=0, calib_reps=1,
                                      widths=range(1, 5), out_dir=tmp_path, progress=False)
    assert tuple(frame.columns) == AGREEMENT_COLUMNS and frame.height == 1
    row = frame.row(0, named=True)
    assert row["window_id"] == "eval" and row["matched"]
    # Identities, not timings (the suite runs on a loaded machine; the paper's 5% is measured by
    # `python -m workbench.native.agreement --reps 5` on a quiet one): on each clock the committed
    # tokens over the charged time give the TPS, and the charged time decomposes as T = D + V - O + H.
    for clock in ("native", "replay"):
        assert row[f"tps_{clock}"] * row[f"time_{clock}"] == pytest.approx(row["tokens"])
        d, v, o, h = (row[f"{k}_{clock}"] for k in "DVOH")
        assert row[f"time_{clock}"] == pytest.approx(d + v - o + h, abs=1e-6)
        assert 0 <= o <= min(d, v) + 1e-9 and h >= -1e-9
    assert row["rounds_native"] >= 1 and row["rounds_replay"] >= 1
    assert (row["signed_error_pct"] > 0) == (row["tps_replay"] > row["tps_native"])
    assert row["abs_error_pct"] == pytest.approx(abs(row["signed_error_pct"]))
    assert summary["windows"] == 1 and summary["matched_windows"] == 1
    # one repetition says nothing of its own spread: no noise floor, and the verdict says so
    assert row["reps"] == 1 and row["noise_floor_pct"] != row["noise_floor_pct"]
    assert "noise floor unknown" in verdict(summary)
    # The fresh profile carries a drift anchor on the calibration window, so the window was re-anchored
    # by a probe there; its frozen errors are kept beside the anchored ones.
    assert summary["anchored"] is True and row["drift_ratio"] > 0
    # The profile also anchors widths 1 and 4 (the sweep's widths here), so each width was scaled by its own
    # probe too.
    assert row["width_shape"] > 0 and summary["width_shape_min"] <= row["width_shape"] <= summary["width_shape_max"]
    # Exactly 1.0 only if the width probe never ran: two measured calls never drift by the same float.
    # (With one ratio for every width, the anchored replay is the frozen one times it: test_drift.py.)
    assert row["width_shape"] != 1.0 and row["width_signed_error_pct"] is not None
    # With one ratio for both processes, the anchored replay is the frozen one times it (reported beside).
    frozen = 1 + row["frozen_signed_error_pct"] / 100
    assert frozen == pytest.approx((1 + row["one_ratio_signed_error_pct"] / 100) * row["drift_ratio"])
    # The profile anchors As²d too (its calibration ran As²d on the anchor window), so an As²d probe ran
    # there, and As²d's replay scaled by its ratio is reported beside the verdict: the frozen one over it.
    assert row["drift_ratio_as2d"] > 0 and row["drift_ratio_as2d"] != row["drift_ratio"]
    assert summary["as2d_anchored"] is True and "As²d by its own probe" in verdict(summary)
    assert 1 + row["as2d_anchor_signed_error_pct"] / 100 == pytest.approx(frozen / row["drift_ratio_as2d"])
    # That As²d probe also timed its producer (the profile anchors it: calibration's As²d runs published), so
    # the verdict replays the producer by its own core's drift and the rest by the target-only one.
    assert row["drift_ratio_producer"] > 0 and row["drift_ratio_producer"] != row["drift_ratio"]
    assert row["producer_anchor_signed_error_pct"] == row["signed_error_pct"] != row["one_ratio_signed_error_pct"]
    assert summary["producer_anchored"] is True and "one ratio for both processes" in verdict(summary)
    assert summary["width_mae_pct"] == pytest.approx(abs(row["width_signed_error_pct"]))
    # Its target calls beside the producer, over the profile's price of them, price those calls in the
    # verdict (replay/drift.py, the verifier beside the producer); the target's idle ratio for them is beside.
    assert row["drift_ratio_concurrent"] > 0 and row["drift_ratio_concurrent"] != row["drift_ratio"]
    assert row["idle_ratio_concurrent_signed_error_pct"] not in (None, row["signed_error_pct"])
    # It is judged over anchors the frozen profile prices on the probe's runs (native/anchors.py); the error
    # with the calibration's measured anchors is kept beside.
    assert row["calibrated_anchor_signed_error_pct"] is not None and summary["calibrated_anchor_compared"] is True
    assert summary["concurrent_anchored"] is True
    assert "beside the producer by the target's idle ratio" in verdict(summary)
    assert (tmp_path / "agreement.parquet").exists() and (tmp_path / "host.yaml").exists()
    # The runs are kept as a run store: re-priced with the profile stored beside them, no model running,
    # they give the agreement measured here (workbench.native.reprice).
    again, _ = reprice(tmp_path / "native_runs.json")
    assert again.equals(frame)


def test_agreement_summary_by_hand():
    """Two windows, replay +25% and -20%: MAE 22.5%, signed mean +2.5%; pooled, the 150 tokens take
    2.05 s replayed vs 2.0 s native, so pooled TPS is 2.0 / 2.05 - 1 = -2.44% off."""
    frame = pl.DataFrame({"tokens": [100, 50], "time_native": [1.0, 1.0], "time_replay": [0.8, 1.25],
                          "signed_error_pct": [25.0, -20.0], "abs_error_pct": [25.0, 20.0],
                          "target_only_error_pct": [-4.0, 6.0], "matched": [True, False],
                          "drift_ratio": [1.0, 1.0], "width_shape": [1.0, 1.0], "width_signed_error_pct": [None, None],
                          "frozen_signed_error_pct": [25.0, -20.0],
                          "frozen_target_only_error_pct": [-4.0, 6.0]})

    class Profile:
        file = "host.yaml"
        calibration = None  # a profile whose calibration was never checked for steadiness

    s = summarize(frame, Profile())
    assert s["windows"] == 2 and s["matched_windows"] == 1
    assert s["mae_pct"] == pytest.approx(22.5) and s["signed_mean_pct"] == pytest.approx(2.5)
    assert s["pooled_error_pct"] == pytest.approx(100 * (2.0 / 2.05 - 1))
    assert s["target_only_mae_pct"] == pytest.approx(5.0)
    assert s["within_goal"] is False and "MAE 22.50%" in verdict(s) and verdict(s).endswith("profile host.yaml")
    assert ": FAIL;" in verdict(s)
    close = frame.with_columns(pl.Series("abs_error_pct", [4.0, 5.0]))
    assert summarize(close, Profile())["within_goal"] is True and ": PASS;" in verdict(summarize(close, Profile()))
    assert s["anchored"] is False and "frozen profile;" in verdict(s)
    # Anchored: the goal judges the anchored errors, the frozen ones are reported beside them.
    drifted = close.with_columns(pl.Series("drift_ratio", [1.1, 0.9]))
    a = summarize(drifted, Profile())
    assert a["anchored"] is True and a["frozen_mae_pct"] == pytest.approx(22.5) and a["within_goal"] is True
    assert a["drift_min"] == pytest.approx(0.9) and a["drift_max"] == pytest.approx(1.1)
    assert "drift-anchored (the target's core x0.90-x1.10" in verdict(a) and "frozen profile: MAE 22.50%" in verdict(a)
    assert a["width_mae_pct"] is None and "own probe" not in verdict(a)
    assert a["as2d_anchored"] is False and "own probe x" not in verdict(a)
    own = summarize(drifted.with_columns(pl.Series("drift_ratio_as2d", [0.95, 1.05]),
                                         pl.Series("as2d_anchor_signed_error_pct", [8.0, -2.0])), Profile())
    assert own["as2d_drift_min"] == pytest.approx(0.95) and own["as2d_anchor_mae_pct"] == pytest.approx(5.0)
    assert own["mae_pct"] == a["mae_pct"]  # judged as before
    assert "As²d by its own probe (x0.95-x1.05): MAE 5.00%" in verdict(own)
    assert own["producer_anchored"] is False and "one ratio for both" not in verdict(own)
    # The producer by its own core's probe is judged; one ratio for both, replayed in 1/1.06 and 1/0.96 s
    # against 1 s each, is reported beside: pooled 2 / 1.9851 - 1.
    prod = summarize(drifted.with_columns(
        pl.Series("drift_ratio_producer", [1.1, 1.2]), pl.Series("one_ratio_signed_error_pct", [6.0, -4.0])),
        Profile())
    assert prod["one_ratio_mae_pct"] == pytest.approx(5.0) and prod["mae_pct"] == a["mae_pct"]
    assert prod["one_ratio_pooled_pct"] == pytest.approx(100 * (2.0 / (1 / 1.06 + 1 / 0.96) - 1))
    assert ("the producer's core x1.10-x1.20; one ratio for both processes: MAE 5.00%, pooled +0.75%"
            in verdict(prod))
    # The calibration's measured anchors instead of the profile's prices of them, beside the verdict.
    assert prod["calibrated_anchor_compared"] is False and "measured anchors" not in verdict(prod)
    cal = summarize(drifted.with_columns(pl.Series("calibrated_anchor_signed_error_pct", [10.0, -2.0])), Profile())
    assert cal["calibrated_anchor_mae_pct"] == pytest.approx(6.0) and cal["mae_pct"] == a["mae_pct"]
    assert cal["calibrated_anchor_pooled_pct"] == pytest.approx(100 * (2.0 / (1 / 1.1 + 1 / 0.98) - 1))
    assert "the calibration's measured anchors: MAE 6.00%" in verdict(cal)
    shaped = summarize(drifted.with_columns(pl.Series("width_shape", [0.9, 0.95]),
                                            pl.Series("width_signed_error_pct", [3.0, -6.0])), Profile())
    assert shaped["width_mae_pct"] == pytest.approx(4.5) and shaped["within_goal"] is True  # judged as before
    assert "each width by its own probe (widest drifting x0.90-x0.95 of K1's): MAE 4.50%" in verdict(shaped)


def test_the_results_table_names_machine_command_split_and_each_terms_share(tmp_path):
    """``--markdown``: the d3-agreement section states where and how it was measured, the errors beside
    their goals and each decomposition term's mean signed and absolute points."""
    from workbench.io import write_section
    from workbench.native.agreement import agreement_markdown
    from workbench.native.decomposition import TERMS

    frame = pl.DataFrame({"tokens": [100, 50], "time_native": [1.0, 1.0], "time_replay": [0.8, 1.25],
                          "signed_error_pct": [25.0, -20.0], "abs_error_pct": [25.0, 20.0],
                          "target_only_error_pct": [-4.0, 6.0], "matched": [True, True],
                          "drift_ratio": [1.0, 1.0], "width_shape": [1.0, 1.0], "width_signed_error_pct": [None, None],
                          "frozen_signed_error_pct": [25.0, -20.0], "frozen_target_only_error_pct": [-4.0, 6.0],
                          **{f"d_{t}": [2.0 * (i + 1), -1.0] for i, t in enumerate(TERMS)}})

    class Profile:
        file = "host.yaml"
        calibration = CalibrationCheck(steady=False, spread=1.234, inversions=2)

    from workbench.native.agreement import provenance

    s = {**summarize(frame, Profile()), **provenance("python -m workbench.native.agreement --split test")}
    text = agreement_markdown(frame, s, "bench test")
    assert "- command: `python -m workbench.native.agreement --split test`" in text
    assert "- split: bench test" in text and f"- run date: {s['date'][:10]}\n" in text and " cores; torch " in text
    assert "| As²d per-window MAE (%) | 22.50 | <= 5 |" in text and "| windows whose outputs matched | 2 / 2 |" in text
    assert f"| {TERMS[0]} | +0.50 | 1.50 |" in text  # (2 - 1) / 2 signed, (2 + 1) / 2 absolute
    # the profile's calibration moved under it: the table and the D.3 line say so
    assert ("| calibration steadiness: probe checkpoints (largest / smallest), width inversions | x1.23, 2 | "
            "<= x1.20, 0 |") in text
    assert text.rstrip().endswith("profile host.yaml; calibration unsteady (probe checkpoints x1.23, "
                                  "2 width inversion(s))")
    doc = tmp_path / "results.md"
    doc.write_text("# Results\n\n<!-- d3-agreement -->\nNot measured yet.\n<!-- /d3-agreement -->\n")
    write_section(doc, "d3-agreement", text)
    assert "Not measured yet" not in doc.read_text() and doc.read_text().count("<!-- d3-agreement -->") == 1
    assert "**D.3 agreement, bench test windows, torch engine**" in text
    assert "**D.3 agreement, bench test windows, mnn engine**" in agreement_markdown(frame, s, "bench test", "mnn")


def test_the_noise_floor_is_the_bootstrap_spread_of_the_native_median():
    """A window whose repetitions agree has no floor; a spread one has one that falls as 1/sqrt(n);
    one repetition says nothing (NaN), and the verdict names the floor and the repetitions to halve the goal."""
    from workbench.native.agreement_report import noise_line
    from workbench.native.noise_floor import median_noise_pct, reps_for

    assert median_noise_pct([0.5, 0.5, 0.5], key="w") == 0.0
    assert median_noise_pct([0.5]) != median_noise_pct([0.5])  # NaN
    spread5 = median_noise_pct([0.40, 0.45, 0.50, 0.55, 0.60], key="w")
    spread = [0.40, 0.45, 0.50, 0.55, 0.60] * 4
    assert 3.0 < spread5 < 12.0 and median_noise_pct(spread, key="w") < 0.7 * spread5
    assert median_noise_pct(spread, key="w") == median_noise_pct(spread, key="w")  # seeded by the key
    assert reps_for(6.0, 5, 2.5) == 29 and reps_for(1.0, 5, 2.5) == 5 and reps_for(float("nan"), 5, 2.5) is None
    line = noise_line({"noise_floor_pct": 6.0, "target_only_noise_floor_pct": 3.0, "reps": 5})
    assert line == "noise floor of the native medians at 5 reps: As²d 6.00%, target-only 3.00% (--reps 29 would " \
                   "put As²d's under 2.5%)"
    assert "unknown" in noise_line({"noise_floor_pct": float("nan"), "reps": 1})


def test_a_windows_drift_anchor_is_the_median_of_its_probes():
    """One probe is one noisy run: the window is anchored on the median of the probes before its repetitions."""
    from workbench.native.episodes import Episodes
    from workbench.native.window_anchoring import WindowProbes, window_probes

    ep = Episodes()
    ep.probes.update({("a", 0): 10.0, ("a", 1): 30.0, ("a", 2): 12.0, ("b", 0): 99.0})
    ep.width_probes.update({("a", 0): {1: 10.0, 4: 20.0}, ("a", 1): {1: 14.0, 4: 26.0}, ("a", 2): {1: 12.0, 4: 21.0}})
    def medians(wp: WindowProbes) -> tuple:
        return wp.target_ms, wp.widths_ms, wp.as2d_ms, wp.producer_ms

    assert medians(window_probes(ep, "a")) == (12.0, {1: 12.0, 4: 21.0}, None, None)
    assert window_probes(ep, "a").reps == ((10.0, None), (30.0, None), (12.0, None))  # in repetition order
    ep.as2d_probes.update({("a", 0): 7.0, ("a", 1): 5.0, ("a", 2): 9.0, ("b", 0): 1.0})  # As²d's own, alike
    assert medians(window_probes(ep, "a")) == (12.0, {1: 12.0, 4: 21.0}, 7.0, None)
    ep.producer_probes.update({("a", 0): 8.5, ("a", 1): 8.0, ("a", 2): 9.5, ("b", 0): 2.0})  # its producer's
    assert medians(window_probes(ep, "a")) == (12.0, {1: 12.0, 4: 21.0}, 7.0, 8.5)
    assert window_probes(ep, "a").reps == ((10.0, 8.5), (30.0, 8.0), (12.0, 9.5))
    assert window_probes(ep, "c") == WindowProbes()


def test_a_repeat_rule_measures_a_scattered_window_more_within_its_cap():
    """At least ``reps``; then more while any method's median still has a noise floor above the goal,
    never past ``max_reps``; native times only decide."""
    from workbench.native.noise_floor import RepeatRule

    quiet, scattered = [0.5] * 5, [0.40, 0.60, 0.45, 0.55, 0.50]
    rule = RepeatRule(5, 9, 2.0)
    assert rule.more(3, {"as2d": quiet[:3]})  # below reps: always
    assert not rule.more(5, {"target_only": quiet, "as2d": quiet})
    assert rule.more(5, {"target_only": quiet, "as2d": scattered})  # one scattered method is enough
    assert not rule.more(9, {"as2d": scattered * 2})  # the cap
    assert not RepeatRule(5).more(5, {"as2d": scattered})  # no cap: exactly reps
    judged = RepeatRule(5, 9, 2.0, judged=("target_only", "as2d"))  # another method's scatter buys none
    assert not judged.more(5, {"target_only": quiet, "as2d": quiet, "sd": scattered})
    assert judged.more(5, {"target_only": quiet, "as2d": scattered, "sd": quiet})
    for bad in ((0, None, 2.0), (5, 4, 2.0), (5, 9, 0.0)):
        with pytest.raises(ValueError, match="repetitions"):
            RepeatRule(*bad)


def test_native_episodes_follow_the_repeat_rule(host_cfg, windows):  # noqa: F811
    from workbench.native.episodes import host_setup, native_episodes
    from workbench.native.noise_floor import RepeatRule

    setup = host_setup(host_cfg)
    # a goal no two real runs meet: repeated to the cap; one every run meets: stopped at reps
    for goal, want in ((1e-9, 4), (1e9, 2)):
        ep = native_episodes(setup, windows[1:], ["target_only", "as2d"], RepeatRule(2, 4, goal), warmup=0)
        assert [len(ep.runs("eval", s)) for s in ("target_only", "as2d")] == [want, want]
        assert sorted({rep for _, _, rep, _ in ep.results}) == list(range(want))


def test_a_bad_repeat_setting_is_one_config_line():
    from omegaconf import OmegaConf

    from workbench.jobs.base import ConfigError
    from workbench.jobs.config import repeat_rule

    assert repeat_rule(OmegaConf.create({"repeats": 5, "max_repeats": 15, "noise_goal_pct": 2.0})).max_reps == 15
    assert repeat_rule(OmegaConf.create({"repeats": 5, "max_repeats": None, "noise_goal_pct": 2.0})).max_reps \
        is None
    with pytest.raises(ConfigError, match="native.max_repeats"):
        repeat_rule(OmegaConf.create({"repeats": 5, "max_repeats": 3}))
    with pytest.raises(ConfigError, match="calibration.noise_goal_pct"):
        repeat_rule(OmegaConf.create({"agreement_reps": 5, "agreement_max_reps": 15, "noise_goal_pct": -1}),
                    "calibration", "agreement_reps", "agreement_max_reps")


def test_native_episodes_probe_each_window_on_its_matched_dev_window(host_cfg, windows):  # noqa: F811
    """With a ``ProbeChoice`` every probe run of a window (target-only and As²d) ran on the dev window
    nearest it in duration, and As²d's probe reproduced target-only's output (C.4)."""
    import numpy as np

    from workbench.native.episodes import host_setup, native_episodes
    from workbench.native.probe_choice import ProbeChoice
    from workbench.native.windows import AudioWindow

    calib, held = windows
    short = AudioWindow("short", ("s",), np.ascontiguousarray(calib.audio[: len(calib.audio) // 3]), split="dev")
    held_short = AudioWindow("eval-short", ("e",), held.audio[: len(held.audio) // 3].copy(), split="test")
    choice = ProbeChoice.of(calib, [short], "matched")
    ep = native_episodes(host_setup(host_cfg), [held, held_short], ["target_only", "as2d"], 1, warmup=0,
                         probe=choice, probe_as2d=True)
    probed = {w: {r.window_id for r in rs} for (w, _), rs in ep.probe_runs.items()}
    assert probed == {"eval": {"calib"}, "eval-short": {"short"}}
    assert all(len(rs) == 2 and rs[0].output == rs[1].output for rs in ep.probe_runs.values())
