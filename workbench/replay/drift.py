"""A host profile re-anchored to this machine's current speed (issue 11, D.3 on a drifting host).

A shared 2-core VM changes speed by 10-70% within minutes while its load stays flat; a phone in
the paper's protocol is cooled to a stationary state instead. Every cost a frozen host profile
states was measured in one such moment. The **drift anchor** is one statistic measured at
calibration time -- the median target-only round on the first calibration window (``anchor_ms``)
-- and again, on the same dev window, just before a held-out window is run. Their ratio scales
every time in the profile: the machine got uniformly faster or slower, its cost *shape* (per-width
ratios, coexistence factors, context slope) stays as calibrated. No held-out window's own timing
is used, so replay still predicts rather than fits.
"""

from __future__ import annotations

import math
from dataclasses import replace
from types import MappingProxyType

from .profile import DeviceProfile


def drift_ratio(profile: DeviceProfile, probe_ms: float) -> float:
    """``probe_ms / anchor_ms``: how much slower (> 1) this machine runs now than when calibrated."""
    if profile.anchor_ms is None or not profile.anchor_ms > 0:
        raise ValueError(f"profile {profile.file}: no anchor_ms; recalibrate it with workbench.native.calibrate "
                         "to replay with a drift anchor")
    if not (math.isfinite(probe_ms) and probe_ms > 0):
        raise ValueError(f"drift probe must be a positive time in ms, got {probe_ms!r}")
    return probe_ms / profile.anchor_ms


def _times(m, r: float):
    return MappingProxyType({k: v * r for k, v in m.items()})


def scaled(profile: DeviceProfile, ratio: float) -> DeviceProfile:
    """Every time of ``profile`` times ``ratio``; ratios (coexistence factors) and counts unchanged."""
    if not (math.isfinite(ratio) and ratio > 0):
        raise ValueError(f"drift ratio must be a positive number, got {ratio!r}")
    v = profile.verifier
    ctx = v.context
    if ctx is not None:
        ctx = replace(ctx, slope_ms=_times(ctx.slope_ms, ratio), cold_ms=ctx.cold_ms * ratio,
                      residual_ms=ctx.residual_ms * ratio)
    verifier = replace(v, idle_ms=_times(v.idle_ms, ratio), concurrent_ms=_times(v.concurrent_ms, ratio),
                       idle_sd_ms=_times(v.idle_sd_ms, ratio), context=ctx)
    sources = {n: replace(s, op_ms=s.op_ms * ratio, publication_ms=s.publication_ms * ratio,
                          startup_ms=s.startup_ms * ratio) for n, s in profile.sources.items()}
    asp = profile.asp
    if asp is not None:
        asp = replace(asp, paired_branch_ms=asp.paired_branch_ms * ratio, prob_row_ms=asp.prob_row_ms * ratio,
                      kv_refresh_ms=_times(asp.kv_refresh_ms, ratio))
    return replace(profile, target_step_ms=profile.target_step_ms * ratio,
                   loop_residual_ms=profile.loop_residual_ms * ratio, queue_ms=profile.queue_ms * ratio,
                   alignment_ms=profile.alignment_ms * ratio, verifier=verifier, sources=MappingProxyType(sources),
                   asp=asp, anchor_ms=None if profile.anchor_ms is None else profile.anchor_ms * ratio)


__all__ = ["drift_ratio", "scaled"]
