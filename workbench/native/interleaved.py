"""D.3 per window as interleaved ratios: each repetition against a replay priced at its own probe.

Before each measured repetition of a window, the drift probe times this machine on the calibration window
(``native_episodes``; ``window_anchoring.py``), and the repetition runs right after it. A probe and the run
after it see one machine speed; the median of a window's native runs and one replay at one repetition's
probes (``median_repetition``) compare moments minutes apart on a machine whose speed moves within
minutes. The judged error of a window is therefore the median over its repetitions of

    e_k = 100 (T_native,k / T_replay,k - 1)

where ``T_replay,k`` replays the window with the profile scaled by repetition k's own probes: the target by
its target-only probe, the producer by its As²d probe's producer (each process by its own core's drift,
``replay/drift.py``), the verify calls beside the producer by the window's concurrent ratio. Target-only
likewise, each repetition against a replay at its own target probe. The replayed trajectory is the
median native run's: the producer's stream is deterministic, and readiness is replayed at each speed.
The median-run error is kept beside (``median_run_signed_error_pct``): it is what the decomposition's
terms add up to.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from workbench.replay.drift import scaled
from workbench.replay.profile import DeviceProfile

from .window_anchoring import repetition_ratios


@dataclass(frozen=True)
class InterleavedErrors:
    """A window's judged errors: the median over ``reps`` repetitions of each one's signed TPS error (%)
    against a replay at its own probes, for As²d and target-only."""

    as2d_pct: float
    target_only_pct: float
    reps: int


def interleaved_errors(profile: DeviceProfile, rep_probes: Sequence[tuple[float, float | None]],
                       concurrent_ratio: float | None, as2d_times: Sequence[float],
                       target_only_times: Sequence[float], as2d_replay_time: Callable[[DeviceProfile], float],
                       target_only_replay_time: Callable[[DeviceProfile], float]) -> InterleavedErrors | None:
    """The window's interleaved errors (module rule). ``rep_probes``: each repetition's (target, producer)
    probe, in repetition order, as ``as2d_times`` and ``target_only_times`` (native seconds) are;
    ``*_replay_time``: a scheme's replayed seconds under a profile. None when the repetitions and probes
    do not pair up one to one (a store written without per-repetition probes)."""
    n = len(rep_probes)
    if n == 0 or len(as2d_times) != n or len(target_only_times) != n:
        return None
    a2, to = [], []
    for (ratio, p_ratio), t_a2, t_to in zip(repetition_ratios(profile, rep_probes), as2d_times, target_only_times,
                                            strict=True):
        a2.append(100 * (t_a2 / as2d_replay_time(scaled(profile, ratio, source_ratio=p_ratio,
                                                                concurrent_ratio=concurrent_ratio)) - 1))
        to.append(100 * (t_to / target_only_replay_time(scaled(profile, ratio)) - 1))
    return InterleavedErrors(statistics.median(a2), statistics.median(to), n)


__all__ = ["InterleavedErrors", "interleaved_errors"]
