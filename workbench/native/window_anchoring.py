"""A window's drift probes and the anchorings of its D.3 replay (paper D.3; ``replay/drift.py``).

Before each measured repetition of a window, ``native_episodes`` runs probes on the profile's calibration
window: target-only (ms per round), idle verify calls at the anchored widths, and As²d (ms per token, with
its producer's interval per forward and its verify calls beside the producer). ``window_probes`` gathers
them as one ``WindowProbes``; ``anchored`` turns them into drift ratios and the signed As²d error under
each anchoring (the judged one: the target by its probe at the median repetition, the producer by its
own core's probe, the verify calls beside the producer by the As²d probe's own such calls; the rest
reported beside the verdict, ``agreement.window_agreement``).
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Callable, Mapping, Sequence

from workbench.replay.drift import as2d_drift_ratio, drift_ratio, producer_drift_ratio, scaled, width_shape
from workbench.replay.profile import DeviceProfile
from workbench.replay.result import ReplayResult

from .decomposition import concurrent_call_ratio
from .episodes import Episodes


@dataclasses.dataclass(frozen=True)
class WindowProbes:
    """A window's drift anchor (``native_episodes``' probes on the calibration window, ``replay/drift.py``).

    ``target_ms``: the median target-only probe (ms per round); ``widths_ms``: the median idle verify call per
    probed width; ``as2d_ms``: the median As²d probe (ms per token); ``producer_ms``: the median producer
    interval per token in those As²d probes; ``concurrent_ratio``: the As²d probes' verify calls beside the
    producer, measured over priced (``concurrent_probe_ratio``); ``reps``: each measured repetition's own
    (target, producer) probes, in repetition order. ``None`` / empty: not probed."""

    target_ms: float | None = None
    widths_ms: Mapping[int, float] | None = None
    as2d_ms: float | None = None
    producer_ms: float | None = None
    concurrent_ratio: float | None = None
    reps: Sequence[tuple[float, float | None]] = ()


NO_PROBES = WindowProbes()  # a window measured without drift probes: replay prices with the frozen profile


@dataclasses.dataclass(frozen=True)
class Anchored:
    """The errors of one window under each anchoring (``window_agreement``)."""

    judged: DeviceProfile
    ratio: float = 1.0
    shape_at: float = 1.0
    width_err: float | None = None
    a2_ratio: float | None = None
    a2_err: float | None = None
    p_ratio: float | None = None
    one_err: float | None = None
    c_err: float | None = None
    to_ratio: float | None = None  # target-only's anchor when it differs from As²d's (the median probe)


def anchored(profile: DeviceProfile, probes: WindowProbes,
              err_of: Callable[[DeviceProfile], tuple[ReplayResult, float, float]]) -> Anchored:
    """Each anchoring's ratio and signed As²d error (``err_of``: replay result, As²d error, target-only
    error under a profile). The judged profile scales the target by its probe (at the median repetition's
    probes with ``reps``), the producer by its own core's probe when the profile anchors it, and the verify
    calls beside the producer by ``probes.concurrent_ratio`` when an As²d probe measured it; the rest are
    reported beside the verdict, not in it (``c_err``: those calls by the target's idle ratio)."""
    assert probes.target_ms is not None
    ratio = drift_ratio(profile, probes.target_ms)
    conc = probes.concurrent_ratio
    median_ratio, rep_p_ratio = ratio, None
    if probes.reps:
        ratio, rep_p_ratio = median_repetition(profile, probes.reps, lambda p: err_of(p)[0].time, conc)
    shape_at, width_err = 1.0, None
    if probes.widths_ms and profile.anchor_widths_ms:
        shape = width_shape(profile, probes.widths_ms)
        shape_at = shape(max(profile.anchor_widths_ms))
        width_err = err_of(scaled(profile, ratio, shape))[1]
    a2_ratio = a2_err = None
    if probes.as2d_ms is not None:
        a2_ratio = as2d_drift_ratio(profile, probes.as2d_ms)
        a2_err = err_of(scaled(profile, a2_ratio))[1]
    p_ratio = one_err = None
    if probes.producer_ms is not None and profile.anchor_producer_ms is not None:
        # each process by its own core's drift: the judged replay; one ratio for both is kept beside it
        p_ratio = producer_drift_ratio(profile, probes.producer_ms) if rep_p_ratio is None else rep_p_ratio
        one_err = err_of(scaled(profile, ratio))[1]
    c_err = None
    if conc is not None:  # beside the verdict: the calls beside the producer by the target's idle ratio
        c_err = err_of(scaled(profile, ratio, source_ratio=p_ratio))[1]
    # target-only's replay is linear in the ratio: with per-repetition probes its median is at the median probe
    return Anchored(scaled(profile, ratio, source_ratio=p_ratio, concurrent_ratio=conc), ratio, shape_at, width_err,
                    a2_ratio, a2_err, p_ratio, one_err, c_err, median_ratio if probes.reps else None)


def median_repetition(profile: DeviceProfile, rep_probes: Sequence[tuple[float, float | None]],
                      replay_time: Callable[[DeviceProfile], float],
                      concurrent_ratio: float | None = None) -> tuple[float, float | None]:
    """The (target, producer) drift ratios of the repetition whose replay is the median one, by
    ``median_run``'s rule. The native side is the median over repetitions, each run at its own speed; a
    window near a readiness threshold (a round that finds a candidate ready at one speed takes a plain step
    at a slightly slower one) is not linear in the speed, so one replay at the median speed need not be
    the median of the replays at each repetition's speed. ``replay_time``: As²d's replayed time under a
    profile; a producer probe of ``None`` prices the producer by the target's ratio; ``concurrent_ratio``
    prices the verify calls beside the producer in every repetition's replay alike."""
    pairs = repetition_ratios(profile, rep_probes)
    times = [replay_time(scaled(profile, r, source_ratio=pr, concurrent_ratio=concurrent_ratio)) for r, pr in pairs]
    order = sorted(range(len(pairs)), key=times.__getitem__)
    return pairs[order[len(order) // 2]]


def repetition_ratios(profile: DeviceProfile, rep_probes: Sequence[tuple[float, float | None]],
                      ) -> list[tuple[float, float | None]]:
    """Each repetition's (target, producer) drift ratios from its (target, producer) probes; the producer's
    is None (priced by the target's) without a producer probe or a profile that anchors the producer."""
    return [(drift_ratio(profile, t), None if p is None or profile.anchor_producer_ms is None
             else producer_drift_ratio(profile, p)) for t, p in rep_probes]


def window_probes(ep: Episodes, window_id: str) -> WindowProbes:
    """The window's drift anchor: the median of the probes taken before its repetitions (per width, As²d's,
    and its producer's), and each repetition's own (target, producer) probes. One probe is one run, as noisy
    as any other run on this machine; their median is the machine's speed while the window was measured,
    from the calibration window only. ``concurrent_ratio`` is left to ``concurrent_probe_ratio``."""
    def median_of(probes: Mapping[tuple[str, int], float]) -> float | None:
        xs = [v for (w, _), v in probes.items() if w == window_id]
        return statistics.median(xs) if xs else None

    widths = [v for (w, _), v in ep.width_probes.items() if w == window_id]
    per_width = {k: statistics.median(p[k] for p in widths if k in p) for k in {k for p in widths for k in p}}
    p_probe = median_of(ep.producer_probes)
    reps = sorted(k for w, k in ep.probes if w == window_id)
    each = tuple((ep.probes[(window_id, k)], ep.producer_probes.get((window_id, k), p_probe)) for k in reps)
    return WindowProbes(median_of(ep.probes), per_width or None, median_of(ep.as2d_probes), p_probe, reps=each)


def concurrent_probe_ratio(ep: Episodes, window_id: str, profile: DeviceProfile) -> float | None:
    """The median over the window's drift probes of their As²d run's measured-over-priced concurrent
    calls (``decomposition.concurrent_call_ratio``); ``None`` without As²d probe runs."""
    xs = [x for (w, _), runs in ep.probe_runs.items() if w == window_id for r in runs if r.scheme == "as2d"
          for x in [concurrent_call_ratio(profile, r)] if x is not None]
    return statistics.median(xs) if xs else None


