"""calibrate_phone's fit: a real engine's producer service beside the verify sweep over its idle service
is the source's measured concurrent_factor (D.2.1); without those lines the base profile's stays, marked."""

from __future__ import annotations

import polars as pl
import pytest
from omegaconf import OmegaConf

from phone_runner.calibration import fit_profile
from workbench.replay.profile import load_profile, parse_profile


def _measures(beside: bool) -> pl.DataFrame:
    rows = [{"op": "verify", "width": k, "offset": 0, "concurrent": c, "source": None, "repetition": r,
             "ms": 10.0 * k * (1.5 if c else 1.0) + r} for k in (1, 2, 3, 4) for c in (False, True) for r in range(3)]
    for c in (False, True) if beside else (False,):
        rows += [{"op": "producer_forward", "width": None, "offset": None, "concurrent": c, "source": "whisper-tiny.en",
                  "repetition": r, "ms": (9.0 if c else 6.0) + 0.1 * r} for r in range(3)]
    return pl.DataFrame(rows, schema_overrides={"width": pl.Int64, "offset": pl.Int64, "source": pl.Utf8})


def _fit(beside: bool) -> dict:
    base = load_profile("host")
    base_raw = OmegaConf.to_container(OmegaConf.load(base.file), resolve=True)
    return fit_profile(_measures(beside), base, base_raw, name="t", model="Phone", serial_hash="abc", engine="torch")


def test_the_producer_beside_the_sweep_gives_a_measured_concurrent_factor() -> None:
    src = _fit(beside=True)["sources"]["whisper-tiny.en"]
    assert abs(src["concurrent_factor"]["v"] - 9.1 / 6.1) < 1e-3 and "derived" not in src["concurrent_factor"]
    assert "beside the verify sweep" in src["concurrent_factor"]["source"] and src["forward_ms"]["v"] == 6.1
    parse_profile(_fit(beside=True), file="fitted")  # a valid profile


def test_without_those_lines_the_base_factor_stays_marked_derived() -> None:
    src = _fit(beside=False)["sources"]["whisper-tiny.en"]
    assert src["concurrent_factor"]["derived"] == "R_BASE" and src["forward_ms"]["v"] == 6.1


def _publications(a_ms: float, b_ms: float, startup_ms: float, n: int = 40, reps: int = 3) -> pl.DataFrame:
    """A native As²d run's publications whose per-token interval is the line ``a + b * position``: the
    prompt-prefill token before the clock, then one token per publication."""
    rows = []
    for rep in range(reps):
        t = (startup_ms + a_ms + (a_ms + b_ms)) / 1000  # the first token after the clock: startup + two ops
        rows.append({"window_id": "w", "repetition": rep, "source_id": "whisper-tiny.en", "offset": 0,
                     "publish_time": -0.001, "tokens": [1]})
        for pos in range(1, n):
            if pos > 1:
                t += (a_ms + b_ms * pos) / 1000
            rows.append({"window_id": "w", "repetition": rep, "source_id": "whisper-tiny.en", "offset": pos,
                         "publish_time": t, "tokens": [pos + 1]})
    return pl.DataFrame(rows)


def test_a_native_as2d_run_prices_the_producer_as_it_ran_beside_the_target():
    base = load_profile("host")
    base_raw = OmegaConf.to_container(OmegaConf.load(base.file), resolve=True)
    raw = fit_profile(_measures(True), base, base_raw, name="t", model="Phone", serial_hash="abc", engine="torch",
                      publications=_publications(8.0, 0.05, 20.0))
    src = raw["sources"]["whisper-tiny.en"]
    ref = src["growth"]["ref_tokens"]["v"]
    assert src["concurrent_factor"]["v"] == pytest.approx((8.0 + 0.05 * ref) / 6.1, rel=1e-3)  # over idle 6.1
    assert src["growth"]["per_token"]["v"] == pytest.approx(0.05 / (8.0 + 0.05 * ref), rel=1e-3)
    assert src["startup_ms"]["v"] == pytest.approx(20.0, abs=1e-3)
    assert "R_LIVE" in src["concurrent_factor"]["source"] and "measured on Phone" in src["startup_ms"]["source"]
    # a runner charges operation 0 on the clock whatever the base profile says (PROTOCOL.md, pricing)
    base_raw["sources"]["whisper-tiny.en"]["prefilled"] = {"v": True, "source": "a host calibration"}
    raw = fit_profile(_measures(True), base, base_raw, name="t", model="Phone", serial_hash="abc", engine="torch",
                      publications=_publications(8.0, 0.05, 20.0))
    assert not parse_profile(raw, file="fitted").source("whisper-tiny.en").prefilled
    # the reference engine ran no model: its echoed publications price nothing
    echo = fit_profile(_measures(True), base, base_raw, name="t", model="Phone", serial_hash="abc",
                       engine="reference", publications=_publications(8.0, 0.05, 20.0))
    assert "R_LIVE" not in echo["sources"]["whisper-tiny.en"]["concurrent_factor"]["source"]


def test_native_target_only_rounds_on_the_calibration_window_are_the_drift_anchor():
    """A real engine's native target-only time per round on the calibration window becomes the profile's
    drift anchor on that window (what native_phone probes again before each configuration); the
    reference engine's echoed rounds anchor nothing; the anchored profile replays scaled by a probe."""
    from workbench.replay.drift import drift_ratio, scaled

    base = load_profile("host")
    base_raw = OmegaConf.to_container(OmegaConf.load(base.file), resolve=True)
    steps = pl.DataFrame({"op": ["target_step"] * 3, "ms": [30.0, 34.0, 31.0]})
    measures = pl.concat([_measures(False), steps], how="diagonal_relaxed")
    raw = fit_profile(measures, base, base_raw, name="t", model="Phone", serial_hash="abc", engine="torch",
                      anchor_window="calib-0")
    assert raw["anchor_ms"]["v"] == pytest.approx(31.0) and raw["anchor_window"] == "calib-0"
    assert "drift anchor" in raw["anchor_ms"]["source"] and "measured on Phone" in raw["anchor_ms"]["source"]
    prof = parse_profile(raw, file="fitted")
    assert drift_ratio(prof, 34.1) == pytest.approx(1.1)
    assert scaled(prof, 1.1).verifier.idle_ms[2] == pytest.approx(1.1 * prof.verifier.idle_ms[2])
    echo = fit_profile(measures, base, base_raw, name="t", model="Phone", serial_hash="abc", engine="reference",
                       anchor_window="calib-0")
    assert "anchor_ms" not in echo and "anchor_window" not in echo
    assert "anchor_ms" not in fit_profile(measures, base, base_raw, name="t", model="Phone", serial_hash="abc",
                                          engine="torch")  # no calibration window named: no anchor


def test_the_producer_in_native_as2d_runs_on_the_calibration_window_is_its_own_drift_anchor():
    """A real engine's As²d runs on the calibration window anchor the producer: the median interval per
    token after its first publication (the host's producer_token statistic), which native_phone's producer
    probe measures again; replay then scales the producer by its own ratio and the target by the target's.
    Publications on another window, or from the reference engine, anchor nothing."""
    from phone_runner.calibration import producer_interval_ms
    from workbench.replay.drift import producer_drift_ratio, scaled

    base = load_profile("host")
    base_raw = OmegaConf.to_container(OmegaConf.load(base.file), resolve=True)
    steps = pl.DataFrame({"op": ["target_step"] * 3, "ms": [30.0, 34.0, 31.0]})
    measures = pl.concat([_measures(True), steps], how="diagonal_relaxed")
    pubs = _publications(8.0, 0.0, 20.0, n=30).with_columns(pl.lit("calib-0").alias("window_id"))
    assert producer_interval_ms(pubs, "calib-0") == pytest.approx([8.0] * 3)
    assert producer_interval_ms(pubs, "other") == []
    raw = fit_profile(measures, base, base_raw, name="t", model="Phone", serial_hash="abc", engine="torch",
                      publications=pubs, anchor_window="calib-0")
    assert raw["anchor_producer_ms"]["v"] == pytest.approx(8.0)
    assert "producer drift anchor" in raw["anchor_producer_ms"]["source"]
    prof = parse_profile(raw, file="fitted")
    now = scaled(prof, 1.1, source_ratio=producer_drift_ratio(prof, 7.2))
    src = next(iter(raw["sources"]))
    assert now.source(src).op_ms == pytest.approx(0.9 * prof.source(src).op_ms)
    assert now.verifier.idle_ms[2] == pytest.approx(1.1 * prof.verifier.idle_ms[2])
    elsewhere = fit_profile(measures, base, base_raw, name="t", model="Phone", serial_hash="abc", engine="torch",
                            publications=pubs, anchor_window="calib-1")
    assert "anchor_producer_ms" not in elsewhere and elsewhere["anchor_ms"]["v"] == pytest.approx(31.0)
    echo = fit_profile(measures, base, base_raw, name="t", model="Phone", serial_hash="abc", engine="reference",
                       publications=pubs, anchor_window="calib-0")
    assert "anchor_producer_ms" not in echo


def _calls(widths_ms: dict[int, float], n: int, start: float) -> list[dict]:
    """Round rows of rep 0 of window ``w``: ``n`` calls per width, back to back from ``start`` (s)."""
    rows, t = [], start
    for k, ms in widths_ms.items():
        for _ in range(n):
            rows.append({"window_id": "w", "repetition": 0, "width": k, "t_start": t, "t_end": t + ms / 1000})
            t += ms / 1000
    return rows


def test_native_as2d_calls_beside_the_producer_price_the_concurrent_widths():
    """R_LIVE on the phone: a width As²d called often enough while its producer still published is
    priced at the median of those calls; a width called too rarely, or only after the producer's last
    publication, keeps the sweep's price."""
    base = load_profile("host")
    base_raw = OmegaConf.to_container(OmegaConf.load(base.file), resolve=True)
    pubs = _publications(8.0, 0.0, 0.0, n=40, reps=1)  # rep 0 publishes until about 0.33 s
    last = float(pubs["publish_time"].max())
    rounds = pl.DataFrame(_calls({1: 21.0, 3: 33.0}, 5, 0.0) + _calls({2: 7.0}, 4, 0.2)
                          + _calls({4: 44.0}, 6, last + 0.01))
    raw = fit_profile(_measures(True), base, base_raw, name="t", model="Phone", serial_hash="abc", engine="torch",
                      publications=pubs, rounds=rounds)
    conc = raw["verifier"]["concurrent"]["ms"]
    assert conc[1]["v"] == pytest.approx(21.0) and conc[3]["v"] == pytest.approx(33.0)
    assert "R_LIVE" in conc[1]["source"] and "n=5" in conc[1]["source"]
    sweep = {k: 10.0 * k * 1.5 + 1 for k in (1, 2, 3, 4)}  # _measures: the median repetition, beside
    assert conc[2]["v"] == pytest.approx(sweep[2]) and conc[4]["v"] == pytest.approx(sweep[4])
    assert "R_LIVE" not in conc[2]["source"] + conc[4]["source"]
    parse_profile(raw, file="fitted")
    # the reference engine ran no model: its echoed calls price nothing
    echo = fit_profile(_measures(True), base, base_raw, name="t", model="Phone", serial_hash="abc",
                       engine="reference", publications=pubs, rounds=rounds)
    assert echo["verifier"]["concurrent"]["ms"][1]["v"] == pytest.approx(sweep[1])
