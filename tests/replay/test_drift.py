"""The drift anchor (issue 11): a profile scaled to the machine's current speed, and how it is checked."""

from __future__ import annotations

from dataclasses import replace

import pytest
import yaml
from replay_fixtures import exact_window

from workbench.replay.drift import drift_ratio, scaled
from workbench.replay.engine import replay
from workbench.replay.profile import DEVICE_DIR, ProfileError, load_profile, parse_profile
from workbench.replay.result import ReplayConfig

# Every scheme family replay prices: serial (step, drafts, loop), ASP (its extras), decoupled
# (verifier beside a producer with a coexistence factor, alignment, queue, drain) and the context fit.
CONFIGS = [ReplayConfig("target_only"), ReplayConfig("sd", width=4), ReplayConfig("asp", cap=15),
           *(ReplayConfig(s, source="qwen") for s in ("as2d", "as2d_wo_td", "as2d_wo_bc"))]


def _with_context() -> object:
    raw = yaml.safe_load((DEVICE_DIR / "host.yaml").read_text())
    n = lambda v: {"v": v, "source": "test"}  # noqa: E731
    raw["verifier"]["context"] = {"ref_tokens": n(33.0), "slope_ms": {1: n(0.05), 4: n(0.12)}, "cold_ms": n(7.0),
                                  "residual_ms": n(0.2)}
    return parse_profile(raw, file="host-context.yaml")


@pytest.mark.parametrize("device", ["k70_pro", "host", "host+context"])
@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.scheme)
def test_a_uniformly_slower_machine_replays_every_scheme_exactly_that_much_slower(device, config):
    """Scaling every time by r scales every replayed timeline by r: one missed field (a loop cost, a
    producer startup, the context slope, an ASP refresh) breaks the identity for some scheme."""
    profile = _with_context() if device == "host+context" else load_profile(device)
    src = next(iter(profile.sources))
    window = exact_window(40, producer=[*range(10, 30), 7, 7, *range(32, 48)])
    window = replace(window, sources={src: replace(window.sources["qwen"], source=src)}).validate()
    cfg = ReplayConfig(config.scheme, source=src if config.source else None, **dict(config.params))
    base = replay(window, cfg, profile)
    for r in (0.5, 1.7):
        moved = replay(window, cfg, scaled(profile, r))
        assert moved.tokens == base.tokens
        assert moved.time == pytest.approx(r * base.time, rel=1e-9)
        assert [x.width for x in moved.untimed] == [x.width for x in base.untimed]


def test_drift_ratio_is_probe_over_anchor_and_refuses_what_it_cannot_use():
    raw = yaml.safe_load((DEVICE_DIR / "host.yaml").read_text())
    raw.update(anchor_ms={"v": 25.0, "source": "test"}, anchor_window="calib00")
    p = parse_profile(raw, file="anchored.yaml")
    assert p.anchor_window == "calib00" and drift_ratio(p, 30.0) == pytest.approx(1.2)
    assert scaled(p, 1.2).anchor_ms == pytest.approx(30.0)  # a rescaled profile is anchored where it now is
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="positive"):
            drift_ratio(p, bad)
        with pytest.raises(ValueError, match="positive"):
            scaled(p, bad)
    with pytest.raises(ValueError, match="no anchor_ms; recalibrate"):
        drift_ratio(load_profile("host"), 30.0)
    half = dict(raw)
    del half["anchor_window"]
    with pytest.raises(ProfileError, match="needs both anchor_ms and anchor_window"):
        parse_profile(half, file="half.yaml")
