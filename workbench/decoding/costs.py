"""What one round costs the verifier, per physical width: the table the online rules weigh.

Terms. A round verifies the known root plus a chain at physical width ``K``; its cost is the target
call at that width plus the round's fixed per-round overhead (alignment, loop or queue work), in the
clock's own unit (seconds in replay, milliseconds natively). A device's verify can cost more beside a
busy producer than alone, and not by one factor (Xiaomi 11 Pro's K8 takes 1.24x its idle time while
Qwen drafts, its K1 0.94x; D.5.2), so a table holds both:

* ``running[K]`` -- the round while a producer still runs (``K = 1`` always priced: a plain step);
* ``idle[K]`` -- the same round once every producer has finished (empty: ``running`` serves throughout);
* ``drafter_forward`` -- one serial drafter forward on the verifier (hybrid candidates; 0: not priced);
* ``overhead`` -- the per-round overhead already inside every entry, as the clock pays it.

``round_costs`` is the one builder: replay (``replay/engine.py``), the native bench
(``native/bench.py``) and the jobs build their tables with it, each from its own clock's prices.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType


def _table(name: str, costs: Mapping[int, float]) -> Mapping[int, float]:
    out = {}
    for k, c in costs.items():
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"round costs: {name} widths are physical widths K >= 1, got {k!r} "
                             "(a drafter forward or an idle price is a field of RoundCosts, not a key)")
        out[k] = float(c)
    return MappingProxyType(out)


@dataclass(frozen=True)
class RoundCosts:
    """A round's cost per physical width, while a producer runs and once every producer has finished."""

    running: Mapping[int, float]
    idle: Mapping[int, float] = field(default_factory=lambda: MappingProxyType({}))
    drafter_forward: float = 0.0
    overhead: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "running", _table("running", self.running))
        idle = _table("idle", self.idle)
        # A table without a plain step cannot decide: the running one serves instead.
        object.__setattr__(self, "idle", idle if 1 in idle else MappingProxyType({}))
        if self.running.get(1, 0.0) <= 0:
            raise ValueError("round costs must price a plain step (width 1) with a positive time")
        object.__setattr__(self, "drafter_forward", float(self.drafter_forward))
        if not self.drafter_forward >= 0.0:
            raise ValueError(f"round costs: drafter_forward must be a non-negative time, got {self.drafter_forward}")

    @classmethod
    def of(cls, costs: RoundCosts | Mapping[int, float]) -> RoundCosts:
        """``costs`` itself, or a plain width -> cost mapping read as the running table alone."""
        return costs if isinstance(costs, RoundCosts) else cls(costs)

    def table(self, producers_done: bool) -> Mapping[int, float]:
        """The prices a round is weighed with: alone once every producer has finished (when priced)."""
        return self.idle if producers_done and self.idle else self.running

    @property
    def widest(self) -> int:
        """The widest physical width priced while a producer runs."""
        return max(self.running)


def round_costs(verify_running: Mapping[int, float], verify_idle: Mapping[int, float], step: float,
                overheads: Sequence[float], drafter_forward: float = 0.0) -> RoundCosts:
    """The one builder: each verify price plus the per-round ``overheads``, added one after another in
    the order given (the clock's own sum, digit for digit); ``step`` prices K = 1 where the running
    verify does not."""

    def plus(c: float) -> float:
        for o in overheads:
            c = c + o
        return c

    running = {k: plus(c) for k, c in verify_running.items()}
    running.setdefault(1, plus(step))
    return RoundCosts(running, {k: plus(c) for k, c in verify_idle.items()}, drafter_forward, plus(0.0))


__all__ = ["RoundCosts", "round_costs"]
