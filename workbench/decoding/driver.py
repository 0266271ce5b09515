"""The simplest driver: lockstep rounds on a toy clock (tests, examples, the core smoke run).

It owns time the way the real drivers do -- it asks the scheme for a call at ``now``, charges
serial drafting, then verification -- but with two constants instead of a device profile. The
native and replay drivers reuse the same scheme objects unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .protocols import Target
from .records import DraftWork, RoundRecord
from .schemes.base import Scheme
from .verification import ExactnessError


@dataclass(frozen=True, slots=True)
class DecodeResult:
    output: tuple[int, ...]
    records: tuple[RoundRecord, ...]
    time: float  # decode clock: after prefill, through the last commit

    @property
    def tps(self) -> float:
        return len(self.output) / self.time if self.time > 0 else float("inf")


def decode(
    scheme: Scheme,
    target: Target,
    verify_cost: Callable[[int], float] = lambda k: 1.0,
    draft_cost: Callable[[DraftWork], float] = lambda w: 0.0,
    max_rounds: int = 1_000_000,
) -> DecodeResult:
    """Run one window to completion; time starts after prefill at 0."""
    scheme.start(target.prefill())
    now = 0.0
    while not scheme.done:
        if len(scheme.records) >= max_rounds:
            raise RuntimeError(f"{scheme.name}: no end after {max_rounds} rounds")
        t_decide = now
        call = scheme.plan(t_decide)
        t_start = t_decide + draft_cost(call.work)
        greedy = target.verify(call.root, call.chain)
        rec = scheme.commit(call, greedy)
        target.keep(rec.accepted)
        now = t_start + verify_cost(call.width)
        scheme.records[-1] = rec.timed(t_decide, t_start, now)
    return DecodeResult(tuple(scheme.output), tuple(scheme.records), now)


def audit_exact(output: Sequence[int], reference: Sequence[int], label: str = "output") -> None:
    """Proposition 1: a speculative output must equal the greedy reference token for token."""
    out, ref = tuple(output), tuple(reference)
    if out == ref:
        return
    i = next((i for i, (a, b) in enumerate(zip(out, ref, strict=False)) if a != b), min(len(out), len(ref)))
    raise ExactnessError(
        f"{label} differs from the greedy reference at position {i}: "
        f"{out[i:i + 5]} vs {ref[i:i + 5]} (lengths {len(out)} vs {len(ref)})"
    )
