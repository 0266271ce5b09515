"""What every scheme shares: the committed prefix, the output limit, and the commit step.

A scheme is a clock-agnostic state machine. The one round loop (``driver.run_rounds``) calls it
under a clock that owns time (native wall clock, replay's priced clocks)::

    root = target.prefill(); scheme.start(root)
    while not scheme.done:
        call = scheme.plan(now)             # known root + chain, with provenance
        greedy = target.verify(call.root, call.chain)
        record = scheme.commit(call, greedy)
        target.keep(record.accepted)

Subclasses implement ``plan`` and may override ``_after`` to move their own cursor or
recycling state; the verification rule itself lives in one place (``verify_chain``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import ClassVar

from ..records import Call, RoundRecord
from ..verification import Verdict, verify_chain

MAX_BUDGET = 24  # the paper's catalog: proposal budgets 1-24 (D.4.3), ASP cap 24 (D.1.3)


def check_budget(name: str, value: int, low: int = 1, high: int = MAX_BUDGET) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if not low <= value <= high:
        raise ValueError(f"{name} must be in [{low}, {high}], got {value}")
    return value


def check_threshold(name: str, value: float | None) -> float | None:
    if value is not None and not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be a probability in [0, 1] or null, got {value}")
    return value


class Scheme(ABC):
    """Base state machine. ``output`` is the committed prefix, known root included."""

    name: str  # the catalog name; a configuration of another class renames its instance (catalog.py)
    uses_buffer: ClassVar[bool] = False
    uses_drafter: bool = False  # a scheme that drafts only when given a drafter says so per instance

    def __init__(self, max_output: int, eos_id: int | None) -> None:
        if isinstance(max_output, bool) or not isinstance(max_output, int) or max_output < 1:
            raise ValueError(f"max_output must be a positive integer, got {max_output!r}")
        self.max_output = max_output
        self.eos_id = eos_id
        self.output: list[int] = []
        self.records: list[RoundRecord] = []
        self.done = True

    # -- lifecycle -------------------------------------------------------------------------
    def start(self, root: int) -> None:
        """Begin a window with the first known root (from prefill)."""
        self.output = [int(root)]
        self.records = []
        self.done = root == self.eos_id or self.max_output == 1
        self._reset()

    def _reset(self) -> None:  # noqa: B027 - optional hook
        """Reset per-window scheme state."""

    @property
    def root(self) -> int:
        return self.output[-1]

    @property
    def room(self) -> int:
        """Tokens the output may still hold after the root."""
        return self.max_output - len(self.output)

    def chain_limit(self, budget: int) -> int:
        """Budget b, cut so the correction or bonus still fits in the output limit."""
        room = self.max_output - len(self.output) - 1
        return budget if budget < room else max(0, room)

    @abstractmethod
    def plan(self, now: float) -> Call:
        """Decide the next target call from what is ready at ``now``."""

    def commit(self, call: Call, greedy: Sequence[int]) -> RoundRecord:
        """Commit the longest matching prefix plus the correction or bonus."""
        if self.done:
            raise RuntimeError(f"{self.name}: commit after the output ended")
        output = self.output
        if call.root != output[-1]:
            raise RuntimeError(f"{self.name}: call root {call.root} is not the known root {output[-1]}")
        verdict = verify_chain(call.chain, greedy, self.eos_id, self.max_output - len(output))
        output.extend(verdict.committed)
        self.done = verdict.next_root is None
        cursor_after = self._after(call, verdict)
        record = RoundRecord(
            round=len(self.records),
            scheme=self.name,
            width=1 + len(call.chain),
            root=call.root,
            chain=call.chain,
            provenance=call.provenance,
            k1_reason=call.k1_reason,
            ready=call.ready,
            accepted=verdict.accepted,
            committed=verdict.committed,
            outcome=verdict.outcome,
            next_root=verdict.next_root,
            cursor_before=call.cursor_before,
            cursor_after=cursor_after,
            work=call.work,
        )
        self.records.append(record)
        return record

    def _after(self, call: Call, verdict: Verdict) -> int | None:
        """Update scheme state after a commit; return the read cursor if the scheme has one."""
        return None
