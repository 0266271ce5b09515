"""The one round loop (``run_rounds``) and the simplest driver built on it (``decode``).

Every driver -- the toy clock here, replay's priced clocks, the native wall clock -- runs the
same loop; only the clock differs. A clock answers three questions per round:

* ``decide()`` -- when the scheme decides the next call (``plan(now)`` sees what is out by then);
* ``start(call, t_decide)`` -- when the target call begins (after serial drafting or alignment);
* ``end(call, t_start)`` -- when it returns; the clock also moves itself on to the next decision.

``decode`` uses two constants instead of a device profile (tests, examples, the core smoke run).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from .protocols import Target, Verifier
from .records import Call, DraftWork, RoundRecord
from .schemes.base import Scheme
from .verification import ExactnessError


class RoundClock(Protocol):
    """Owns time for ``run_rounds`` (see the module docstring)."""

    def decide(self) -> float: ...

    def start(self, call: Call, t_decide: float) -> float: ...

    def end(self, call: Call, t_start: float) -> float: ...


@dataclass(slots=True)
class RoundTimes:
    """Per-round times, in round order; records stay untimed until ``timed`` is asked."""

    decide: list[float] = field(default_factory=list)
    start: list[float] = field(default_factory=list)
    end: list[float] = field(default_factory=list)

    def timed(self, records: Sequence[RoundRecord]) -> tuple[RoundRecord, ...]:
        return tuple(r.timed(a, b, c) for r, a, b, c in zip(records, self.decide, self.start, self.end, strict=True))


def run_rounds(scheme: Scheme, target: Verifier, clock: RoundClock, max_rounds: int | None = None) -> RoundTimes:
    """Drive a started scheme to EOS or the cap: plan, verify, commit, keep -- timed by ``clock``.

    The target never waits for a producer: ``plan`` uses whatever is published at the decision
    time. The scheme keeps the (untimed) records; the times come back in round order.
    """
    times = RoundTimes()
    decide, start, end = times.decide, times.start, times.end
    # Bound once: the oracle catalog runs this loop for ~50k windows (replay's hot path).
    plan, commit, verify, keep = scheme.plan, scheme.commit, target.verify, target.keep
    at_decide, at_start, at_end = clock.decide, clock.start, clock.end
    limit = float("inf") if max_rounds is None else max_rounds
    while not scheme.done:
        if len(end) >= limit:
            raise RuntimeError(f"{scheme.name}: no end after {max_rounds} rounds")
        t_decide = at_decide()
        call = plan(t_decide)
        t_start = at_start(call, t_decide)
        keep(commit(call, verify(call.root, call.chain)).accepted)
        decide.append(t_decide)
        start.append(t_start)
        end.append(at_end(call, t_start))
    return times


class WallClock:
    """Real time since ``t0`` (native runs): each answer is simply the time it is asked."""

    __slots__ = ("t0", "now")

    def __init__(self, t0: float, now: Callable[[], float] = time.perf_counter) -> None:
        self.t0 = t0
        self.now = now

    def decide(self) -> float:
        return self.now() - self.t0

    def start(self, call: Call, t_decide: float) -> float:
        return self.now() - self.t0

    def end(self, call: Call, t_start: float) -> float:
        return self.now() - self.t0


class ToyClock:
    """Serial drafting then verification, priced by two functions; no producer, no loop work."""

    __slots__ = ("now", "verify_cost", "draft_cost")

    def __init__(self, verify_cost: Callable[[int], float], draft_cost: Callable[[DraftWork], float]) -> None:
        self.now = 0.0
        self.verify_cost = verify_cost
        self.draft_cost = draft_cost

    def decide(self) -> float:
        return self.now

    def start(self, call: Call, t_decide: float) -> float:
        return t_decide + self.draft_cost(call.work)

    def end(self, call: Call, t_start: float) -> float:
        self.now = t_start + self.verify_cost(call.width)
        return self.now


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
    clock = ToyClock(verify_cost, draft_cost)
    records = run_rounds(scheme, target, clock, max_rounds).timed(scheme.records)
    scheme.records = list(records)
    return DecodeResult(tuple(scheme.output), records, clock.now)


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
