"""One small class per scheme, plus the paper's two ablations as configurations of them.

* ``target_only`` -- greedy target alone.
* ``sd`` -- standard SD, fixed physical width K, prefix-conditioned drafter.
* ``asp`` -- SpecASR adaptive single-sequence prediction with draft recycling.
* ``as2d`` -- target-decoupled producer, fixed budget, shared alignment.
* ``as2d_wo_td`` -- As²d without target decoupling: serial ASP with As²d's selected budget as cap.
* ``as2d_wo_bc`` -- As²d without the budget cap: decoupled candidates with ASP's threshold and cap.

``catalog.py`` holds the facts about each (settings, defaults, widths, labels, how to build it).
"""

from __future__ import annotations

from .as2d import As2d, CandidateSource
from .asp import ASP_CAP, ASP_THRESHOLD, SpecASR
from .base import MAX_BUDGET, Scheme
from .catalog import CATALOG, DECOUPLED, SCHEMES, SERIAL, SchemeSpec, make_scheme, scheme_spec
from .sd import StandardSD
from .target_only import TargetOnly

__all__ = [
    "As2d",
    "ASP_CAP",
    "ASP_THRESHOLD",
    "CATALOG",
    "CandidateSource",
    "DECOUPLED",
    "MAX_BUDGET",
    "SCHEMES",
    "SERIAL",
    "Scheme",
    "SchemeSpec",
    "SpecASR",
    "StandardSD",
    "TargetOnly",
    "make_scheme",
    "scheme_spec",
]
