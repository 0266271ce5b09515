"""The As²d decoding core: pure Python, no torch (paper Sections 4.1-4.2, Appendix C).

Clock-agnostic state machines. One round loop (``run_rounds``) runs every scheme under a clock
that owns time; the scheme catalog (``schemes/catalog.py``) holds the facts about each scheme;
the verification rule decides what is committed; the buffer holds immutable published candidates
and the read cursor realigns over them.
"""

from .alignment import DEFAULT_ALIGN_SPAN, ReadCursor
from .buffer import DEFAULT_BATCH_TOKENS, Batch, PublicationBuffer, Snapshot
from .costs import RoundCosts, round_costs
from .drafter import TrajectoryDrafter
from .driver import DecodeResult, RoundClock, RoundTimes, ToyClock, WallClock, audit_exact, decode, run_rounds
from .protocols import Drafter, Proposal, Target
from .records import (
    FRESH,
    RECYCLED,
    ROUND_COLUMNS,
    SOURCE_STRIDE,
    Call,
    DraftWork,
    RoundRecord,
    SourcePosition,
    Stage,
    round_stages,
)
from .schemes import (
    CATALOG,
    DECOUPLED,
    SCHEMES,
    SERIAL,
    As2d,
    Scheme,
    SchemeSpec,
    SpecASR,
    StandardSD,
    TargetOnly,
    make_scheme,
    scheme_spec,
)
from .verification import ExactnessError, ReferenceTarget, Verdict, verify_chain

__all__ = [
    "CATALOG",
    "DECOUPLED",
    "DEFAULT_ALIGN_SPAN",
    "DEFAULT_BATCH_TOKENS",
    "FRESH",
    "RECYCLED",
    "ROUND_COLUMNS",
    "SCHEMES",
    "SOURCE_STRIDE",
    "SERIAL",
    "As2d",
    "Batch",
    "Call",
    "DecodeResult",
    "DraftWork",
    "Drafter",
    "ExactnessError",
    "Proposal",
    "PublicationBuffer",
    "ReadCursor",
    "ReferenceTarget",
    "RoundClock",
    "RoundCosts",
    "RoundRecord",
    "RoundTimes",
    "Scheme",
    "SchemeSpec",
    "Snapshot",
    "SourcePosition",
    "Stage",
    "SpecASR",
    "StandardSD",
    "Target",
    "TargetOnly",
    "ToyClock",
    "TrajectoryDrafter",
    "Verdict",
    "WallClock",
    "audit_exact",
    "decode",
    "make_scheme",
    "round_costs",
    "round_stages",
    "run_rounds",
    "scheme_spec",
    "verify_chain",
]
