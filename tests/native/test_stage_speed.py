"""A calibration's samples brought to its drift anchor's speed (``native/stage_speed.py``, R_STAGE)."""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl
import pytest
import yaml

from workbench.errors import WorkbenchError
from workbench.native.samples import SAMPLE_SCHEMA, sample
from workbench.native.stage_speed import at_anchor_speed, stage_factors, to_profile
from workbench.native.sweep import PROBE_WIDTHS
from workbench.replay.profile import parse_profile


def _checkpoint(stage: str, level: float) -> list[dict]:
    # every probe width at the same time: the checkpoint's level is that time
    return [sample("checkpoint", "calib00", scheme=stage, width=k, concurrent=False, offset=0, rep=r, ms=level)
            for k in PROBE_WIDTHS for r in range(3)]


def _calibration(levels: dict[str, float]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Kernel sweep, checkpoint, sweeps, checkpoint, the anchor's episodes, checkpoint, a clip, checkpoint:
    each stage's samples at 10 ms and each round 0.1 s long, as a VM timing them at one speed would."""
    rows = [sample("kernel", "calib00", width=1, ms=10.0, kernel="packed"), *_checkpoint("start", levels["start"]),
            sample("verify", "calib00", width=4, concurrent=False, offset=0, rep=0, ms=10.0),
            *_checkpoint("calib00 sweeps", levels["calib00 sweeps"]),
            sample("episode", "calib00", scheme="target_only", rep=0, ms=10.0, tokens=5, rounds=5),
            sample("producer_interval", "calib00", scheme="as2d", concurrent=True, ms=10.0),
            *_checkpoint("calib00 episodes", levels["calib00 episodes"]),
            sample("episode", "clip-1", scheme="as2d", rep=0, ms=10.0, tokens=5, rounds=2),
            *_checkpoint("clips", levels["clips"]),
            sample("publication", None, ms=10.0)]
    rounds = pl.DataFrame({"window_id": ["calib00", "clip-1"], "t_decide": [0.0, 0.0], "t_start": [0.0, 0.0],
                           "t_end": [0.1, 0.1], "T": [0.5, 0.2]})
    return pl.DataFrame(rows, schema=SAMPLE_SCHEMA), rounds


LEVELS = {"start": 40.0, "calib00 sweeps": 36.0, "calib00 episodes": 25.0, "clips": 25.0}


def test_each_stage_is_brought_to_the_speed_of_the_anchors_episodes():
    raw, rounds = _calibration(LEVELS)
    out, moved, factors = at_anchor_speed(raw, rounds)
    ref = math.sqrt(36.0 * 25.0)  # the anchor's target-only episodes ran between these two checkpoints
    want = {"start": ref / 40.0, "calib00 sweeps": ref / math.sqrt(40.0 * 36.0), "calib00 episodes": 1.0,
            "clips": ref / 25.0, "end": ref / 25.0}
    assert {f.stage: f.factor for f in factors} == pytest.approx(want, abs=1e-4)
    ms = dict(zip(out["kind"], out["ms"], strict=True))  # the last row of each kind
    assert ms["kernel"] == pytest.approx(10.0 * want["start"], rel=1e-3)
    assert ms["verify"] == pytest.approx(10.0 * want["calib00 sweeps"], rel=1e-3)
    assert ms["producer_interval"] == 10.0  # the anchor's own stage: as measured
    assert ms["publication"] == pytest.approx(10.0 * want["end"], rel=1e-3)
    # the checkpoints' own calls keep their times: the steadiness verdict reads them as measured
    assert out.filter(pl.col("kind") == "checkpoint")["ms"].to_list() == \
        raw.filter(pl.col("kind") == "checkpoint")["ms"].to_list()
    # a clip's rounds scale with its episodes' stage; the anchor's stay
    assert moved["t_end"].to_list() == pytest.approx([0.1, 0.1 * want["clips"]], rel=1e-3)
    assert moved["T"].to_list() == pytest.approx([0.5, 0.2 * want["clips"]], rel=1e-3)


def test_a_calibration_at_one_speed_or_without_checkpoints_stays_as_measured():
    raw, rounds = _calibration(dict.fromkeys(LEVELS, 30.0))
    out, moved, factors = at_anchor_speed(raw, rounds)
    assert all(f.factor == 1.0 for f in factors) and out["ms"].to_list() == raw["ms"].to_list()
    bare = raw.filter(pl.col("kind") != "checkpoint")
    out, moved, factors = at_anchor_speed(bare, rounds)
    assert factors == () and out.equals(bare) and moved.equals(rounds)
    no_anchor = raw.filter(pl.col("scheme").fill_null("") != "target_only")
    assert stage_factors(no_anchor)[1] == ()


def test_the_factors_are_a_profile_field_with_provenance():
    raw, rounds = _calibration(LEVELS)
    block = to_profile(at_anchor_speed(raw, rounds)[2], "DAY")
    assert set(block) == {"start", "calib00 sweeps", "calib00 episodes", "clips", "end"}
    assert all("R_STAGE" in v["source"] and "DAY" in v["source"] for v in block.values())
    profile = yaml.safe_load((Path(__file__).parents[2] / "conf/device/xiaomi_14.yaml").read_text())
    profile["calibration"] = {"steady": False, "spread": {"v": 1.6, "source": "t"},
                              "inversions": {"v": 0, "source": "t"}, "stage_factors": block}
    check = parse_profile(profile, file="t.yaml").calibration
    assert check is not None and check.stage_factors["start"] == block["start"]["v"]
    profile["calibration"]["stage_factors"] = {"start": 0.9}
    with pytest.raises(WorkbenchError, match="stage_factors.start"):
        parse_profile(profile, file="t.yaml")
