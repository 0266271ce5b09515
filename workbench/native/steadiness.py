"""Calibration steadiness (paper D.2, D.3): did this machine hold its speed while it was measured?

A host calibration takes minutes; every field of the profile is a median over some stretch of them. On
a VM whose speed moves within those minutes, the fields describe different speeds: the kernel sweep a
fast minute, the native episodes a slow one. A drift ratio at evaluation time rescales a whole profile
(``replay/drift.py``) and cannot repair its shape, so replay on such a profile misses D.3 one way on
every window. Two checks say whether a calibration was steady:

* **checkpoints** -- the drift probe's idle calls (``sweep.PROBE_WIDTHS`` at offset 0 on the anchor
  window, ``CHECK_CALLS`` calls each) timed again after the kernel plan is installed, after each
  calibration window's idle sweep, its sweeps beside the producer and its episodes, and after the clips
  (``stage_speed.py`` also brings each stage's samples to the anchor's speed by them). Each checkpoint's level is the
  geometric mean over widths of its medians; the **spread** is the largest level over the smallest.
  Steady: spread <= ``STEADY_SPREAD``.
* **width order** -- under a kernel plan, in the fitted idle prices a forward of more rows is never
  cheaper than a narrower one by more than ``ORDER_TOLERANCE`` (the plan pads a width to a wider one
  when that costs less, so a plan makes prices equal, never inverted; without a plan a width whose rows
  fit a faster kernel may rightly cost less, and the order is not judged). An **inversion** is a narrower width priced
  above a wider one beyond that tolerance: its calls ran at a slower moment.

``calibrate.calibrate_host`` measures again when a calibration is unsteady (up to ``attempts``), keeps
the steadiest attempt, and writes its verdict into the profile (``calibration:``), which agreement
reports beside D.3.

``python -m workbench.native.steadiness_report A.yaml [B.yaml ...]`` reads any profile's verdict.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

STEADY_SPREAD = 1.20  # checkpoints' levels may differ by this factor at most (largest / smallest); a VM of
# this kind moves several per cent within minutes at rest, so a tighter bound would measure every calibration twice
ORDER_TOLERANCE = 0.15  # a narrower width priced above a wider one by more than this fraction: an inversion
CHECK_CALLS = 5  # idle calls per probe width at each checkpoint (their median is the checkpoint's)
CALIBRATION_ATTEMPTS = 2  # calibrations measured at most, the first included, while the machine moves
RULE = (f"calibration.steady: the drift probe's idle calls, timed again between the calibration's stages, "
        f"differ by at most x{STEADY_SPREAD:.2f} (largest checkpoint over the smallest), and no idle width is "
        f"priced above a wider one by over {ORDER_TOLERANCE:.0%} (inversions); an unsteady calibration was "
        f"measured again and the steadiest attempt kept (workbench.native.steadiness).")


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """The probe widths' median idle call (ms) at one point of the calibration (``stage``)."""

    stage: str
    ms: Mapping[int, float]

    @property
    def level(self) -> float:
        """Geometric mean over the probe widths: one number per checkpoint, every width weighted alike."""
        return math.exp(statistics.fmean(math.log(v) for v in self.ms.values()))


@dataclass(frozen=True, slots=True)
class Inversion:
    """A narrower width priced above a wider one (idle, fitted) beyond ``ORDER_TOLERANCE``."""

    narrow: int
    wide: int
    narrow_ms: float
    wide_ms: float

    @property
    def ratio(self) -> float:
        return self.narrow_ms / self.wide_ms


@dataclass(frozen=True, slots=True)
class Steadiness:
    """One calibration's verdict: its checkpoints and the inversions of its fitted idle prices."""

    checkpoints: tuple[Checkpoint, ...]
    inversions: tuple[Inversion, ...]
    max_spread: float = STEADY_SPREAD

    @property
    def spread(self) -> float:
        """Largest checkpoint level over the smallest (1.0 with fewer than two checkpoints)."""
        levels = [c.level for c in self.checkpoints]
        return max(levels) / min(levels) if len(levels) > 1 else 1.0

    @property
    def steady(self) -> bool:
        return self.spread <= self.max_spread and not self.inversions

    def badness(self) -> tuple[int, float]:
        """Order of preference between attempts: fewer inversions, then the smaller spread."""
        return len(self.inversions), self.spread

    def describe(self) -> str:
        """What moved, in a few words: the spread with its slowest and fastest checkpoints, the worst inversion."""
        parts = []
        if len(self.checkpoints) > 1:
            lo = min(self.checkpoints, key=lambda c: c.level)
            hi = max(self.checkpoints, key=lambda c: c.level)
            parts.append(f"probe calls x{self.spread:.2f} slower {hi.stage!r} than {lo.stage!r} "
                         f"(steady: <= x{self.max_spread:.2f})")
        if self.inversions:
            w = max(self.inversions, key=lambda i: i.ratio)
            parts.append(f"{len(self.inversions)} width inversion(s), worst K{w.narrow} {w.narrow_ms:.1f} ms "
                         f"above K{w.wide} {w.wide_ms:.1f} ms")
        return "; ".join(parts) or "no checkpoints"

    def to_profile(self, date: str) -> dict[str, Any]:
        """The profile's ``calibration:`` block (provenance on every number)."""
        n = sum(len(c.ms) for c in self.checkpoints) * CHECK_CALLS
        return {"steady": self.steady,
                "spread": {"v": round(self.spread, 4),
                           "source": f"measured on host {date}, n={n} idle probe calls at {len(self.checkpoints)} "
                                     "checkpoints, largest checkpoint level over the smallest"},
                "inversions": {"v": len(self.inversions), "derived": "R_STEADY"}}


def checkpoint(stage: str, rows: Sequence[Mapping[str, Any]]) -> Checkpoint:
    """A checkpoint from probe-call sample rows (``width``, ``ms``): the median per width."""
    widths = sorted({int(r["width"]) for r in rows})
    if not widths:
        raise ValueError(f"calibration checkpoint {stage!r} timed no calls")
    return Checkpoint(stage, {k: float(statistics.median(r["ms"] for r in rows if r["width"] == k)) for k in widths})


def inversions(idle_ms: Mapping[int, float], tolerance: float = ORDER_TOLERANCE) -> tuple[Inversion, ...]:
    """Every pair (narrower, wider) whose narrower width is priced above the wider by over ``tolerance``."""
    ks = sorted(idle_ms)
    return tuple(Inversion(a, b, idle_ms[a], idle_ms[b]) for i, a in enumerate(ks) for b in ks[i + 1:]
                 if idle_ms[a] > idle_ms[b] * (1.0 + tolerance))


def assess(points: Sequence[Checkpoint], idle_ms: Mapping[int, float], planned: bool = True) -> Steadiness:
    """The verdict; width order is judged only under a kernel plan (``planned``): without one, a width
    whose rows fit a faster kernel may rightly cost less than a narrower one."""
    return Steadiness(tuple(points), inversions(idle_ms) if planned else ())


__all__ = ["CALIBRATION_ATTEMPTS", "CHECK_CALLS", "ORDER_TOLERANCE", "RULE", "STEADY_SPREAD", "Checkpoint", "Inversion",
           "Steadiness", "assess", "checkpoint", "inversions"]
