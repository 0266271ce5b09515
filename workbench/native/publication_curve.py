"""The producer's publication curve beside the target (rule R_GROWTH of the host profile, paper D.2).

Attention over a longer stream makes each drafter forward a little dearer: the per-forward publication
interval of the native As²d episodes is fitted as a line in the producer's stream position, kept only when
its slope is significant. The host fit (``fit.py``) and the phone fit (``phone_runner/calibration.py``)
read the producer's coexistence factor, startup and ``growth`` from it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from .samples import med

GROWTH_MIN_INTERVALS = 20  # fewer native publication intervals than this: no curve, a constant cost
GROWTH_SIGNIFICANCE = 2.0  # a slope within this many standard errors of zero is taken as none


@dataclass(frozen=True, slots=True)
class PublicationCurve:
    """The producer's per-forward publication interval beside the target as a line in its stream position,
    ``ms = a + b * pos``, from the native As²d episodes (R_GROWTH); ``ref``: the median position."""

    a: float
    b: float
    ref: float
    n: int

    def at(self, pos: float) -> float:
        return self.a + self.b * pos

    def growth_per_token(self) -> float:
        """The slope over the interval at ``ref``: the profile's ``growth.per_token``."""
        return self.b / self.at(self.ref)

    def ops_ms(self, n: int, prefilled: bool = False) -> float:
        """The first ``n`` operations' cost on this line; a prefilled producer's operation 0 costs nothing."""
        return sum(self.at(i) for i in range(1 if prefilled else 0, n))

    def lead_ms(self, first: pl.DataFrame, prefilled: bool = False) -> float:
        """Startup: the median over runs (``producer_first`` rows) of the first publication after the clock
        minus the operations replay prices before it (``tokens`` operations, the prompt prefill is
        operation 0: charged unless ``prefilled``, A.3). Clamped at 0: nothing runs before the clock but
        the prefill."""
        return max(0.0, med([ms - self.ops_ms(n, prefilled)
                             for ms, n in zip(first["ms"].to_list(), first["tokens"].to_list(), strict=True)]))


def publication_curve(raw: pl.DataFrame) -> PublicationCurve | None:
    """Least squares over every native publication interval (``producer_interval`` samples)."""
    iv = raw.filter(pl.col("kind") == "producer_interval")
    if iv.height < GROWTH_MIN_INTERVALS or iv["offset"].n_unique() < 2:
        return None
    x, y = iv["offset"].to_numpy().astype(float), iv["ms"].to_numpy()
    b, a = np.polyfit(x, y, 1)
    res = y - (a + b * x)
    se = float(np.sqrt(res @ res / max(1, len(x) - 2) / max(1e-12, float(((x - x.mean()) ** 2).sum()))))
    if abs(b) < GROWTH_SIGNIFICANCE * se:  # no growth this sample can tell from noise: a constant cost
        b = 0.0
    a = float(np.median(y - b * x))  # robust level: one stalled interval must not move every token
    ref = float(np.median(x))
    if a + b * ref <= 0:
        return None
    return PublicationCurve(a, float(b), ref, iv.height)
