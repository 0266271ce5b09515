"""A host profile re-anchored to this machine's current speed (D.3 on a drifting host).

A shared 2-core VM changes speed by 10-70% within minutes while its load stays flat; a phone in
the paper's protocol is cooled to a stationary state instead. Every cost a frozen host profile
states was measured in one such moment. The **drift anchor** is one statistic measured at
calibration time -- the median target-only round on the first calibration window (``anchor_ms``)
-- and again, on the same dev window, just before a held-out window is run. Their ratio scales
every time in the profile: the machine got uniformly faster or slower, its cost *shape* (per-width
ratios, coexistence factors, context slope) stays as calibrated. No held-out window's own timing
is used, so replay still predicts rather than fits. D.3's agreement divides the probe by the frozen
profile's own price of that statistic rather than by the calibration's measurement of it
(``native/anchors.py``): both are on the anchor window, but only the price describes the profile it scales.

**Per-width shape.** One ratio assumes every width slowed alike. When a drifting VM slows the
target-only K = 1 rounds more than As²d's calls (mostly K > 1), one ratio prices As²d too slow. So
the profile also keeps the idle verify call at a few probe widths on that window
(``anchor_widths_ms``), and the probe measures them again. ``width_shape`` gives each width ``K`` its
own drift relative to K = 1's: linear in K between probe widths, held beyond the widest. Width ``K`` is
then scaled by ``ratio * shape(K)``. It is a diagnosis, not the model: on this VM it lowered the error
in one agreement run and raised it in the next, so agreement reports it beside the verdict, not in it.

**As²d's own anchor.** A target-only probe keeps one core busy; As²d keeps both (verifier and
producer). A VM's vCPUs need not drift alike, so a target-only probe can see a slowdown that As²d, run
in the same minutes, does not. The profile therefore also keeps
As²d's median native time per committed token on the anchor window (``anchor_as2d_ms``), the probe runs
As²d there too, and agreement prices As²d by that ratio as well (``as2d_drift_ratio``). Like the width
shape it is a diagnosis beside the verdict, not in it: one As²d run carries the producer's noise on top of
the target's, and on this VM it raised the error in the run where it was first measured.

**The producer's own anchor.** That As²d probe run also times the producer: its interval per published
token beside the target (``anchor_producer_ms`` at calibration, the probe's run now). Their ratio
(``producer_drift_ratio``) scales the producer's times only (``scaled(..., source_ratio=)``), and the
target-only ratio the target: each process is priced by the drift of the CPU it runs on. D.3's verdict
judges it (``native/agreement.py``): a VM's two vCPUs drift apart, even in
opposite directions, and one ratio for both then misprices the producer against the target by the
gap, one way for every window of a run.

**The verifier beside the producer.** The same As²d probe run also times the target's calls that ran
while the producer worked. Over the profile's price of those very calls (``concurrent_ratio`` is that
quotient, computed by ``native/decomposition.concurrent_call_ratio``) it says how much the contention
between the two processes has moved since calibration, which neither core's own probe sees.
``scaled(..., concurrent_ratio=)`` prices the concurrent verify calls by it, and the idle ones, the
loop and the context line by the target-only ratio. D.3's verdict judges it: each kind of call by the
probe that ran it the same way (the target-only probe's idle ratio for those calls is reported beside).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
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


def _ratio(profile: DeviceProfile, field: str, probe_ms: float, purpose: str, probe: str) -> float:
    """``probe_ms`` over the profile's anchor ``field``, with one line naming the fix when either is missing."""
    anchor = getattr(profile, field)
    if anchor is None:
        raise ValueError(f"profile {profile.file}: no {field}; recalibrate it with workbench.native.calibrate "
                         f"to {purpose}")
    if not (math.isfinite(probe_ms) and probe_ms > 0):
        raise ValueError(f"{probe} must be a positive time in ms, got {probe_ms!r}")
    return probe_ms / anchor


def as2d_drift_ratio(profile: DeviceProfile, probe_ms: float) -> float:
    """``probe_ms / anchor_as2d_ms``: As²d's time per token on the anchor window now over at calibration."""
    return _ratio(profile, "anchor_as2d_ms", probe_ms, "anchor As²d's replay on As²d's own probe",
                  "As²d drift probe")


def producer_drift_ratio(profile: DeviceProfile, probe_ms: float) -> float:
    """``probe_ms / anchor_producer_ms``: the producer's interval per token on the anchor window now over
    at calibration (its own CPU's drift)."""
    return _ratio(profile, "anchor_producer_ms", probe_ms, "anchor the producer on its own probe",
                  "producer drift probe")


def width_shape(profile: DeviceProfile, probe_ms: Mapping[int, float]) -> Callable[[int], float]:
    """``K -> shape(K)``: how much more width ``K`` drifted than K = 1 between the profile's
    ``anchor_widths_ms`` and ``probe_ms`` (the same calls now); 1 at K = 1, linear in K between probe
    widths, held beyond the widest."""
    anchor = profile.anchor_widths_ms
    if not anchor:
        raise ValueError(f"profile {profile.file}: no anchor_widths_ms; recalibrate it with "
                         "workbench.native.calibrate to scale each width by its own drift")
    common = sorted(k for k in anchor if k in probe_ms)
    if 1 not in common or len(common) < 2:
        raise ValueError(f"width probe must measure K=1 and another anchored width {sorted(anchor)}, "
                         f"got {sorted(probe_ms)}")
    for k in common:
        if not (math.isfinite(probe_ms[k]) and probe_ms[k] > 0):
            raise ValueError(f"width probe at K={k} must be a positive time in ms, got {probe_ms[k]!r}")
    base = probe_ms[1] / anchor[1]
    at = {k: (probe_ms[k] / anchor[k]) / base for k in common}

    def shape(k: int) -> float:
        if k >= common[-1]:
            return at[common[-1]]
        hi = next(w for w in common if w >= k)
        lo = max(w for w in common if w <= k)
        return at[lo] if hi == lo else at[lo] + (at[hi] - at[lo]) * (k - lo) / (hi - lo)

    return shape


def _times(m, r: float, shape: Callable[[int], float] | None = None):
    return MappingProxyType({k: v * r * (shape(k) if shape else 1.0) for k, v in m.items()})


def scaled(profile: DeviceProfile, ratio: float, shape: Callable[[int], float] | None = None,
           source_ratio: float | None = None, concurrent_ratio: float | None = None) -> DeviceProfile:
    """Every time of ``profile`` times ``ratio``, and a verifier call of width K also times ``shape(K)``
    (``width_shape``; ``None``: every width alike); ratios (coexistence factors) and counts unchanged.
    ``source_ratio``: the producer process's sources' times by this one instead (``producer_drift_ratio``);
    the serial drafter keeps ``ratio``. ``concurrent_ratio``: a verify call beside the producer by this
    one instead (the quotient of measured over priced concurrent calls, module docstring)."""
    src = ratio if source_ratio is None else source_ratio
    conc = ratio if concurrent_ratio is None else concurrent_ratio
    for name, r in (("drift ratio", ratio), ("source drift ratio", src), ("concurrent drift ratio", conc)):
        if not (math.isfinite(r) and r > 0):
            raise ValueError(f"{name} must be a positive number, got {r!r}")
    v = profile.verifier
    ctx = v.context
    if ctx is not None:
        ctx = replace(ctx, slope_ms=_times(ctx.slope_ms, ratio, shape), cold_ms=ctx.cold_ms * ratio,
                      residual_ms=ctx.residual_ms * ratio,
                      concurrent_slope_ms=None if ctx.concurrent_slope_ms is None
                      else _times(ctx.concurrent_slope_ms, conc, shape))
    # a width without a direct concurrent figure is its idle cost times a factor: the factor carries the
    # concurrent ratio's excess over the idle one
    excess = conc / ratio
    verifier = replace(v, idle_ms=_times(v.idle_ms, ratio, shape),
                       concurrent_ms=_times(v.concurrent_ms, conc, shape),
                       factor=None if v.factor is None else v.factor * excess,
                       fallback_ratio=None if v.fallback_ratio is None else v.fallback_ratio * excess,
                       idle_sd_ms=_times(v.idle_sd_ms, ratio, shape), context=ctx)
    # the serial drafter runs in the verifier's loop, on the verifier's CPU: it drifts with the target
    per = {n: ratio if n == profile.serial_drafter else src for n in profile.sources}
    sources = {n: replace(s, op_ms=s.op_ms * per[n], publication_ms=s.publication_ms * per[n],
                          startup_ms=s.startup_ms * per[n]) for n, s in profile.sources.items()}
    asp = profile.asp
    if asp is not None:
        asp = replace(asp, paired_branch_ms=asp.paired_branch_ms * ratio, prob_row_ms=asp.prob_row_ms * ratio,
                      kv_refresh_ms=_times(asp.kv_refresh_ms, ratio, shape))
    return replace(profile, target_step_ms=profile.target_step_ms * ratio,
                   loop_residual_ms=profile.loop_residual_ms * ratio, queue_ms=profile.queue_ms * ratio,
                   alignment_ms=profile.alignment_ms * ratio, verifier=verifier, sources=MappingProxyType(sources),
                   asp=asp, anchor_ms=None if profile.anchor_ms is None else profile.anchor_ms * ratio,
                   anchor_widths_ms=None if profile.anchor_widths_ms is None
                   else _times(profile.anchor_widths_ms, ratio, shape),
                   anchor_as2d_ms=None if profile.anchor_as2d_ms is None else profile.anchor_as2d_ms * ratio,
                   anchor_producer_ms=None if profile.anchor_producer_ms is None
                   else profile.anchor_producer_ms * src)


__all__ = ["as2d_drift_ratio", "drift_ratio", "producer_drift_ratio", "scaled", "width_shape"]
