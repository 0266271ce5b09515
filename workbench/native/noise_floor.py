"""The measurement noise under a D.3 error: how far a median of ``n`` native repetitions can sit
from this machine's typical latency.

D.3 compares replay with the *median* native latency of ``n`` repetitions. Even a replay that
priced the window perfectly would show an error: the median of ``n`` noisy runs is itself a
sample. Its spread follows from the repetitions themselves. A bootstrap of the median (draw ``n``
repetitions with replacement, take their median) gives the expected ``|median* / median - 1|``,
the window's **noise floor** in signed-TPS-error points (TPS is tokens over latency, so the TPS
error of a median latency is ``median / t - 1``). A D.3 MAE near the mean floor says these
repetitions cannot resolve the cost model's error on this machine; the floor shrinks as
``1/sqrt(n)``, so :func:`reps_for` says how many repetitions would put it under a given error, and
:class:`RepeatRule` keeps repeating a window, within a cap, until its medians are that well resolved.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

NOISE_GOAL_PCT = 2.0  # the repeat rule's default: a median resolved to within this (conf/ sets the jobs')
DRAWS = 4000  # bootstrap draws: the floor's own Monte Carlo error is well under 0.1 point


def median_noise_pct(times: Sequence[float], *, key: str = "", draws: int = DRAWS) -> float:
    """Expected ``100 |median* / median - 1|`` over bootstrap medians ``median*`` of ``times``
    (seeded by ``key``, e.g. the window id, so a frame recomputes to the same value). NaN below two
    repetitions: one run says nothing about its own spread."""
    t = np.asarray(times, dtype=float)
    if t.size < 2 or not np.all(np.isfinite(t)) or np.any(t <= 0):
        return math.nan
    rng = np.random.default_rng(zlib.crc32(key.encode()))
    boot = np.median(t[rng.integers(0, t.size, size=(draws, t.size))], axis=1)
    return float(100 * np.mean(np.abs(boot / np.median(t) - 1)))


def reps_for(floor_pct: float, reps: int, target_pct: float) -> int | None:
    """Repetitions whose floor would be ``target_pct``, given ``floor_pct`` at ``reps`` (the median's
    error falls as ``1/sqrt(n)``); ``None`` when the floor is unknown."""
    if not (math.isfinite(floor_pct) and reps >= 1 and target_pct > 0):
        return None
    return max(reps, math.ceil(reps * (floor_pct / target_pct) ** 2))


@dataclass(frozen=True)
class RepeatRule:
    """Measured repetitions of one window: at least ``reps``; then one more at a time, up to ``max_reps``,
    while any method's median latency has a noise floor above ``goal_pct`` (``median_noise_pct`` of that
    method's own repetitions so far). The rule reads native times only, never a replay's, so where it
    stops cannot favour agreement; it spends repetitions on the windows whose runs scatter (a producer
    that sometimes falls behind) and none on the quiet ones. ``max_reps=None``: exactly ``reps``.
    ``judged``: the methods whose medians must be resolved (empty: every method measured)."""

    reps: int
    max_reps: int | None = None
    goal_pct: float = NOISE_GOAL_PCT
    judged: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.reps < 1 or (self.max_reps is not None and self.max_reps < self.reps) or not self.goal_pct > 0:
            raise ValueError(f"repetitions: need 1 <= reps <= max_reps and a positive goal, got {self}")

    def more(self, done: int, times: Mapping[str, Sequence[float]]) -> bool:
        """Whether to measure another repetition after ``done``, given each method's times so far."""
        if done < self.reps:
            return True
        if self.max_reps is None or done >= self.max_reps:
            return False
        return any(median_noise_pct(t) > self.goal_pct for m, t in times.items() if not self.judged or m in self.judged)
