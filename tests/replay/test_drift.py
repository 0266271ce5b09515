"""The drift anchor (D.3): a profile scaled to the machine's current speed, and how it is checked."""

from __future__ import annotations

from dataclasses import replace

import pytest
import yaml
from replay_fixtures import exact_window

from workbench.replay.drift import as2d_drift_ratio, drift_ratio, producer_drift_ratio, scaled, width_shape
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


def _width_anchored() -> object:
    raw = yaml.safe_load((DEVICE_DIR / "host.yaml").read_text())
    n = lambda v: {"v": v, "source": "test"}  # noqa: E731
    raw.update(anchor_ms=n(25.0), anchor_window="calib00", anchor_widths_ms={1: n(10.0), 4: n(20.0), 8: n(30.0)})
    return parse_profile(raw, file="width-anchored.yaml")


def test_each_width_drifts_by_its_own_probe_relative_to_k1():
    # K1 now 1.2x its anchor, K4 1.1x, K8 1.0x: relative to K1, K4 drifted 11/12, K8 10/12.
    p = _width_anchored()
    shape = width_shape(p, {1: 12.0, 4: 22.0, 8: 30.0})
    assert shape(1) == pytest.approx(1.0)
    assert shape(4) == pytest.approx(1.1 / 1.2) and shape(8) == pytest.approx(1.0 / 1.2)
    assert shape(2) == pytest.approx(1 + (1.1 / 1.2 - 1) / 3)  # linear in K between probe widths
    assert shape(6) == pytest.approx((1.1 / 1.2 + 1.0 / 1.2) / 2) and shape(16) == pytest.approx(1.0 / 1.2)
    moved = scaled(p, 1.3, shape)
    for k in p.verifier.widths():  # every verifier call by ratio x its width's shape; nothing else by it
        assert moved.verify_ms(k) == pytest.approx(p.verify_ms(k) * 1.3 * shape(k))
        assert moved.verify_ms(k, concurrent=True) == pytest.approx(p.verify_ms(k, concurrent=True) * 1.3 * shape(k))
    assert moved.target_step_ms == pytest.approx(1.3 * p.target_step_ms)
    assert moved.queue_ms == pytest.approx(1.3 * p.queue_ms)
    src = next(iter(p.sources))
    assert moved.source(src).op_ms == pytest.approx(1.3 * p.source(src).op_ms)
    # A rescaled profile is anchored where it now is: probing it again with the same calls is the identity.
    again = width_shape(moved, {k: v * 1.3 * shape(k) for k, v in p.anchor_widths_ms.items()})
    assert all(again(k) == pytest.approx(1.0) for k in range(1, 17))


def test_a_width_probe_it_cannot_use_is_refused():
    p = _width_anchored()
    with pytest.raises(ValueError, match="K=1 and another anchored width"):
        width_shape(p, {4: 22.0, 8: 30.0})
    with pytest.raises(ValueError, match="K=4 must be a positive time"):
        width_shape(p, {1: 12.0, 4: 0.0})
    with pytest.raises(ValueError, match="no anchor_widths_ms; recalibrate"):
        width_shape(load_profile("host"), {1: 12.0, 4: 22.0})
    raw = yaml.safe_load((DEVICE_DIR / "host.yaml").read_text())
    raw["anchor_widths_ms"] = {1: {"v": 10.0, "source": "test"}, 4: {"v": 20.0, "source": "test"}}
    with pytest.raises(ProfileError, match="anchor_widths_ms"):
        parse_profile(raw, file="no-anchor.yaml")


def test_as2d_drifts_by_its_own_probe_over_its_own_anchor():
    """As²d's anchor is As²d's time per token on the anchor window: its ratio is independent of the
    target-only one, a rescaled profile is anchored where it now is, and a profile without it refuses."""
    raw = yaml.safe_load((DEVICE_DIR / "host.yaml").read_text())
    raw.update(anchor_ms={"v": 25.0, "source": "test"}, anchor_window="calib00",
               anchor_as2d_ms={"v": 12.5, "source": "test"})
    p = parse_profile(raw, file="as2d-anchored.yaml")
    assert as2d_drift_ratio(p, 10.0) == pytest.approx(0.8) and drift_ratio(p, 30.0) == pytest.approx(1.2)
    assert scaled(p, 0.8).anchor_as2d_ms == pytest.approx(10.0)
    with pytest.raises(ValueError, match="positive"):
        as2d_drift_ratio(p, 0.0)
    with pytest.raises(ValueError, match="no anchor_as2d_ms; recalibrate"):
        as2d_drift_ratio(parse_profile({k: v for k, v in raw.items() if k != "anchor_as2d_ms"}), 10.0)
    alone = {k: v for k, v in raw.items() if k not in ("anchor_ms", "anchor_window")}
    with pytest.raises(ProfileError, match="anchor_as2d_ms"):
        parse_profile(alone, file="as2d-alone.yaml")
    with pytest.raises(ProfileError, match="positive"):
        parse_profile({**raw, "anchor_as2d_ms": {"v": 0.0, "source": "test"}}, file="zero.yaml")


def test_the_producer_drifts_by_its_own_probe_and_only_its_times_move():
    """The producer's anchor is its interval per token beside the target on the anchor window: its ratio
    scales the producer process's sources only; the verifier, the loop and the serial drafter (it runs
    in the verifier's loop) keep the target-only ratio; a profile without it refuses."""
    raw = yaml.safe_load((DEVICE_DIR / "host.yaml").read_text())
    raw.update(anchor_ms={"v": 25.0, "source": "test"}, anchor_window="calib00",
               anchor_producer_ms={"v": 8.0, "source": "test"})
    p = parse_profile(raw, file="producer-anchored.yaml")
    assert producer_drift_ratio(p, 9.2) == pytest.approx(1.15)
    q = scaled(p, 0.9, source_ratio=1.15)
    assert q.anchor_producer_ms == pytest.approx(9.2) and q.anchor_ms == pytest.approx(22.5)
    assert q.verify_ms(4) == pytest.approx(0.9 * p.verify_ms(4)) and q.queue_ms == pytest.approx(0.9 * p.queue_ms)
    for name, s in p.sources.items():
        r = 0.9 if name == p.serial_drafter else 1.15
        assert q.source(name).op_ms == pytest.approx(r * s.op_ms)
        assert q.source(name).startup_ms == pytest.approx(r * s.startup_ms)
        assert q.source(name).concurrent_factor == s.concurrent_factor
    assert scaled(p, 0.9) == scaled(p, 0.9, source_ratio=0.9)
    with pytest.raises(ValueError, match="source drift ratio"):
        scaled(p, 0.9, source_ratio=float("nan"))
    with pytest.raises(ValueError, match="positive"):
        producer_drift_ratio(p, -1.0)
    with pytest.raises(ValueError, match="no anchor_producer_ms; recalibrate"):
        producer_drift_ratio(load_profile("host"), 9.0)
    alone = {k: v for k, v in raw.items() if k not in ("anchor_ms", "anchor_window")}
    with pytest.raises(ProfileError, match="anchor_producer_ms"):
        parse_profile(alone, file="producer-alone.yaml")


@pytest.mark.parametrize("device", ["host", "k70_pro"])
def test_verify_calls_beside_the_producer_drift_by_their_own_ratio(device):
    """``concurrent_ratio`` prices a verify call beside the producer by its own drift, whether the width has
    a direct concurrent figure or takes its idle cost times a factor; idle calls, the loop and the producer
    keep theirs."""
    p = load_profile(device)
    q = scaled(p, 0.9, source_ratio=1.1, concurrent_ratio=1.2)
    for k in p.verifier.widths():
        assert q.verify_ms(k, concurrent=True) == pytest.approx(1.2 * p.verify_ms(k, concurrent=True))
        assert q.verify_ms(k) == pytest.approx(0.9 * p.verify_ms(k))
    assert q.queue_ms == pytest.approx(0.9 * p.queue_ms)
    name = next(n for n in p.sources if n != p.serial_drafter)
    assert q.source(name).op_ms == pytest.approx(1.1 * p.source(name).op_ms)
    assert scaled(p, 0.9, concurrent_ratio=0.9) == scaled(p, 0.9)
    with pytest.raises(ValueError, match="concurrent drift ratio"):
        scaled(p, 0.9, concurrent_ratio=0.0)
