"""One small class per scheme, plus the paper's two ablations as configurations of them.

* ``target_only`` -- greedy target alone.
* ``sd`` -- standard SD, fixed physical width K, prefix-conditioned drafter.
* ``asp`` -- SpecASR adaptive single-sequence prediction with draft recycling.
* ``as2d`` -- target-decoupled producer, fixed budget, shared alignment.
* ``as2d_wo_td`` -- As²d without target decoupling: serial ASP with As²d's selected budget as cap.
* ``as2d_wo_bc`` -- As²d without the budget cap: decoupled candidates with ASP's threshold and cap.
"""

from __future__ import annotations

from typing import Any

from ..protocols import Drafter
from .as2d import As2d, CandidateSource
from .asp import ASP_CAP, ASP_THRESHOLD, SpecASR
from .base import MAX_BUDGET, Scheme
from .sd import StandardSD
from .target_only import TargetOnly

SCHEMES = ("target_only", "sd", "asp", "as2d", "as2d_wo_td", "as2d_wo_bc")


def make_scheme(
    name: str,
    *,
    max_output: int,
    eos_id: int | None,
    drafter: Drafter | None = None,
    source: CandidateSource | None = None,
    budget: int = 7,
    width: int = 8,
    threshold: float = ASP_THRESHOLD,
    cap: int = ASP_CAP,
    window: int = 8,
    lookback: int | None = None,
    **unused: Any,
) -> Scheme:
    """Build a scheme by its paper name. ``budget`` is As²d's proposal budget b (K <= b + 1)."""

    def need(obj: Any, what: str) -> Any:
        if obj is None:
            raise ValueError(f"scheme {name!r} needs a {what}")
        return obj

    if name == "target_only":
        return TargetOnly(max_output, eos_id)
    if name == "sd":
        return StandardSD(need(drafter, "drafter"), width, max_output, eos_id)
    if name == "asp":
        return SpecASR(need(drafter, "drafter"), max_output, eos_id, threshold, cap)
    if name == "as2d":
        return As2d(need(source, "candidate source (buffer)"), budget, max_output, eos_id, window, lookback=lookback)
    if name == "as2d_wo_td":
        s = SpecASR(need(drafter, "drafter"), max_output, eos_id, threshold, budget)
        s.name = "as2d_wo_td"
        return s
    if name == "as2d_wo_bc":
        s = As2d(need(source, "candidate source (buffer)"), cap, max_output, eos_id, window, threshold, lookback)
        s.name = "as2d_wo_bc"
        return s
    raise ValueError(f"scheme: unknown name {name!r}; choose one of {', '.join(SCHEMES)}")


__all__ = [
    "As2d",
    "ASP_CAP",
    "ASP_THRESHOLD",
    "CandidateSource",
    "MAX_BUDGET",
    "SCHEMES",
    "Scheme",
    "SpecASR",
    "StandardSD",
    "TargetOnly",
    "make_scheme",
]
