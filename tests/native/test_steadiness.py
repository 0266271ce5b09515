"""Calibration steadiness: the checkpoints' spread, width inversions, the profile block, and a real
calibration that measures again while the verdict is unsteady."""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging

import polars as pl
import pytest
import yaml

from tests.native.test_calibrate import host_cfg, windows  # noqa: F401  (fixtures)
from tests.native.test_native import audio, producer_dir, tiny_dir  # noqa: F401  (fixtures)
from workbench.native import calibrate as calibrate_mod
from workbench.native.calibrate import calibrate_host
from workbench.native.fit import RULES
from workbench.native.steadiness import (
    ORDER_TOLERANCE,
    STEADY_SPREAD,
    Checkpoint,
    Steadiness,
    assess,
    checkpoint,
    inversions,
)
from workbench.replay.profile import DEVICE_DIR, ProfileError, load_profile, parse_profile


def _points(*levels: float) -> list[Checkpoint]:
    return [Checkpoint(f"stage{i}", {1: v, 4: v * 1.05, 8: v * 1.3}) for i, v in enumerate(levels)]


def test_checkpoints_within_the_spread_are_steady_and_a_slow_stage_is_not():
    steady = assess(_points(22.0, 22.9, 21.8, 23.1), {1: 21.7, 2: 21.7, 3: 23.7, 4: 22.8})
    assert steady.steady and steady.spread == pytest.approx(23.1 / 21.8) and steady.spread <= STEADY_SPREAD
    moved = assess(_points(22.0, 22.9, 30.0, 23.1), {1: 21.7, 2: 21.7, 3: 23.7, 4: 22.8})
    assert not moved.steady and moved.spread == pytest.approx(30.0 / 22.0)
    assert "'stage2'" in moved.describe() and "'stage0'" in moved.describe()  # the slowest and the fastest
    assert assess(_points(22.0), {1: 20.0}).spread == 1.0  # one checkpoint: nothing to compare


def test_a_narrow_width_priced_above_a_wider_one_is_an_inversion():
    # a calibration whose idle calls ran at a slower moment for some widths (a VM's speed swing)
    found = inversions({1: 37.4, 2: 22.0, 3: 21.5, 4: 37.2, 5: 22.6})
    assert {(i.narrow, i.wide) for i in found} == {(1, 2), (1, 3), (1, 5), (4, 5)}
    # padding (equal prices) and wiggles within the tolerance are no inversion
    assert inversions({1: 20.0, 2: 20.0, 3: 20.0, 4: 21.0}) == ()
    assert inversions({2: 22.1 * (1 + ORDER_TOLERANCE) - 0.01, 4: 22.1}) == ()
    verdict = assess(_points(22.0, 22.5), {1: 37.4, 2: 22.0})
    assert not verdict.steady and "K1 37.4 ms above K2 22.0 ms" in verdict.describe()


def test_a_checkpoint_is_the_median_per_width_of_its_calls():
    rows = [{"width": 1, "ms": v} for v in (20.0, 30.0, 21.0)] + [{"width": 4, "ms": v} for v in (25.0, 24.0, 99.0)]
    assert checkpoint("start", rows).ms == {1: 21.0, 4: 25.0}
    with pytest.raises(ValueError, match="'start' timed no calls"):
        checkpoint("start", [])


def test_the_profile_block_has_provenance_and_parses():
    raw = yaml.safe_load((DEVICE_DIR / "host.yaml").read_text())
    raw["rules"] = {**raw["rules"], "R_STEADY": RULES["R_STEADY"]}
    today = dt.date.today().isoformat()
    raw["calibration"] = assess(_points(22.0, 25.0), {1: 37.4, 2: 22.0}).to_profile(today)
    prof = parse_profile(raw, "host.yaml")
    assert prof.calibration is not None and not prof.calibration.steady
    assert prof.calibration.spread == pytest.approx(25.0 / 22.0, abs=1e-4) and prof.calibration.inversions == 1
    assert f"measured on host {today}" in prof.provenance["calibration.spread"]
    assert "measured again" in prof.provenance["calibration.inversions"]  # the stated rule R_STEADY
    raw["calibration"]["why"] = "x"
    with pytest.raises(ProfileError, match="calibration.why"):
        parse_profile(raw, "host.yaml")
    assert load_profile(DEVICE_DIR / "host.yaml").calibration is None  # a profile never checked says nothing


def test_an_unsteady_calibration_is_measured_again_and_says_so(host_cfg, windows, tmp_path, monkeypatch, caplog):  # noqa: F811
    verdicts: list[Steadiness] = []
    real_assess = calibrate_mod.assess

    def strict(points, idle, **kw):  # the real verdict, judged against a spread no machine meets
        v = dataclasses.replace(real_assess(points, idle, **kw), max_spread=0.5)
        verdicts.append(v)
        return v

    monkeypatch.setattr(calibrate_mod, "assess", strict)

    with caplog.at_level(logging.WARNING, logger="workbench.native.calibrate"):
        profile, raw = calibrate_host(windows[:1], host_cfg, reps=1, widths=range(1, 9), out_dir=tmp_path,
                                      warmup=0, progress=False, attempts=2)
    assert len(verdicts) == 2  # measured twice, then gave up
    lines = [r.getMessage() for r in caplog.records]
    assert any("measuring again, attempt 2 of 2" in m for m in lines)
    assert any("unsteady in 2 attempt(s)" in m and "python -m workbench.native.calibrate" in m for m in lines)
    kept = min(verdicts, key=Steadiness.badness)
    written = yaml.safe_load((tmp_path / "host.yaml").read_text())["calibration"]
    assert written["steady"] is False and written["spread"]["v"] == pytest.approx(kept.spread, abs=1e-4)
    assert profile.calibration is not None and profile.calibration.spread == pytest.approx(kept.spread, abs=1e-4)
    # the checkpoints are raw samples of their own kind, after each stage; no profile field reads them
    stages = raw.filter(pl.col("kind") == "checkpoint")["scheme"].unique().to_list()
    assert set(stages) == {"start", "calib idle sweeps", "calib sweeps", "calib episodes"}
    # every stage's samples were brought to the anchor's speed (R_STAGE): the anchor's own stage by 1
    assert set(written["stage_factors"]) == {"start", "calib idle sweeps", "calib sweeps", "calib episodes", "end"}
    assert written["stage_factors"]["calib episodes"]["v"] == 1.0 and profile.calibration.stage_factors
    assert "n=1," in profile.provenance["anchor_widths_ms.1"]  # the sweep's one call, not the checkpoints' five


def test_a_steady_calibration_is_measured_once(host_cfg, windows, monkeypatch):  # noqa: F811
    calls = []
    real_assess = calibrate_mod.assess

    def lenient(points, idle, **kw):
        v = dataclasses.replace(real_assess(points, idle, **kw), max_spread=1e9)
        calls.append(v)
        return dataclasses.replace(v, inversions=())

    monkeypatch.setattr(calibrate_mod, "assess", lenient)
    profile, _ = calibrate_host(windows[:1], host_cfg, reps=1, widths=range(1, 5), warmup=0, progress=False,
                                attempts=3)
    assert len(calls) == 1 and profile.calibration is not None and profile.calibration.steady


def test_the_command_reads_inversions_of_any_profile_and_files_its_section(tmp_path, capsys):
    from workbench.native.steadiness_report import main

    raw = yaml.safe_load((DEVICE_DIR / "host.yaml").read_text())
    raw.pop("kernel_plan", None)
    widths = sorted(raw["verifier"]["idle_ms"])
    for k in widths:  # prices rising with the width, as a steady calibration under a plan gives
        raw["verifier"]["idle_ms"][k]["v"] = 20.0 + k
    flat = yaml.safe_load(yaml.safe_dump(raw))
    flat["kernel_plan"] = {k: {"kernel": "packed", "rows": k, "ms": {"v": 20.0 + k, "source": "test"}} for k in widths}
    bent = yaml.safe_load(yaml.safe_dump(flat))
    bent["verifier"]["idle_ms"][1]["v"] = 40.0  # K1 priced far above K2..K8: its calls ran at a slow moment
    paths = [tmp_path / "flat.yaml", tmp_path / "bent.yaml", tmp_path / "unplanned.yaml"]
    unplanned = yaml.safe_load(yaml.safe_dump(bent))
    unplanned.pop("kernel_plan")
    for path, prof in zip(paths, (flat, bent, unplanned), strict=True):
        path.write_text(yaml.safe_dump(prof))
    doc = tmp_path / "results.md"
    doc.write_text("# Results\n")
    main([*map(str, paths), "--markdown", str(doc)])
    out = capsys.readouterr().out.splitlines()
    assert "flat.yaml" in out[0] and out[0].endswith("not checked; 0 width inversion(s)")
    assert "bent.yaml" in out[1] and "K1 40.0 ms above K2 22.0 ms" in out[1] and " 0 width" not in out[1]
    assert "unplanned.yaml" in out[2] and out[2].endswith("width order not judged (no kernel plan)")
    text = doc.read_text()
    assert "<!-- calibration-steadiness -->" in text and " cores" in text and "- split:" in text
    with pytest.raises(SystemExit, match="missing.yaml"):
        main([str(tmp_path / "missing.yaml")])
