"""Adaptive As²d: online budget, substitution guess and hybrid candidates in one scheme (issue 19).

Each round starts from what As²d with a substitution guess would verify (``substitution.py``):
after a rejection, the correction plus the producer's continuation after the mismatch slot;
otherwise the anchored buffer chain. Then:

* **online budget** (``width.py``): the chain is cut to the length with the best expected tokens
  per unit verify time, from the device's per-width ``costs`` and a running per-slot acceptance
  estimate. Guessed chains and drafted chains keep their own estimates: a substitution guess is
  right less often than an anchored chain, and a drafter's acceptance is its own.
* **hybrid candidates** (``hybrid.py``): when the buffer has nothing usable and a drafter is
  loaded, the drafter proposes -- but only when its expected tokens per unit time, drafting
  included (``costs[0]``: one serial drafter forward; 0 when the driver did not price it), beat a
  plain step. Drafting happens before the verify, so the decision uses the estimate, not the draft.

No future information: estimates are updated only from verified rounds. Every committed token is
the target's own (C.4), whatever the candidates' origin.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..protocols import Drafter
from ..records import FRESH, Call
from ..verification import Verdict
from ..width import AcceptanceEstimate, choose_chain_length
from .as2d import CandidateSource
from .hybrid import UNUSABLE, drafted_call, drafted_cursor
from .substitution import As2dSubstitution

DRAFT_FORWARD = 0  # key of ``costs`` holding one serial drafter forward (same unit as the widths)
KINDS = ("anchor", "guess", "draft")


class As2dAdaptive(As2dSubstitution):
    name = "as2d_adaptive"

    def __init__(self, source: CandidateSource, budget: int, max_output: int, eos_id: int | None,
                 costs: Mapping[int, float], decay: float = 0.9, drafter: Drafter | None = None,
                 **as2d: object) -> None:
        super().__init__(source, budget, max_output, eos_id, **as2d)  # type: ignore[arg-type]
        if not costs or 1 not in costs:
            raise ValueError("as2d_adaptive: costs must give each priced width's verify time, width 1 included")
        if not 0.0 < decay <= 1.0:
            raise ValueError(f"as2d_adaptive: decay must be in (0, 1], got {decay}")
        self.costs = {int(k): float(v) for k, v in costs.items() if int(k) >= 1}
        fwd = float(costs.get(DRAFT_FORWARD, 0.0))
        # A drafted chain of n tokens costs its verify plus n drafter forwards before it.
        self.draft_costs = {k: c + fwd * (k - 1) for k, c in self.costs.items()}
        self.decay = decay
        self.drafter = drafter
        self.uses_drafter = drafter is not None

    def _reset(self) -> None:
        super()._reset()
        self.estimates = {k: AcceptanceEstimate(decay=self.decay) for k in KINDS}
        self._kind: str | None = None

    def plan(self, now: float) -> Call:
        guessing = self._processing
        call = super().plan(now)
        self._kind = None
        if call.k1_reason in UNUSABLE and self.drafter is not None:
            n_max = self.chain_limit(self.budget)
            est = self.estimates["draft"]
            n = choose_chain_length(n_max, self.draft_costs, est.slots(n_max))
            if n > 0:
                drafted = drafted_call(self.drafter, self.output, n, self.threshold)
                drafted.cursor_before = call.cursor_before
                self._kind = "draft"
                return drafted
            return call
        if not call.chain:
            return call
        kind = "guess" if guessing and call.anchor is not None else "anchor"
        n = choose_chain_length(len(call.chain), self.costs, self.estimates[kind].slots(len(call.chain)))
        if n < len(call.chain):
            call.chain, call.provenance = call.chain[:n], call.provenance[:n]
            if n == 0:
                if kind == "guess":  # no guess worth its width: the paper's plain correction step
                    call.anchor, call.k1_reason = None, "correction"
                else:
                    call.k1_reason = "cost"
        self._kind = kind if n > 0 else None
        return call

    def _after(self, call: Call, verdict: Verdict) -> int | None:
        if self._kind is not None:
            self.estimates[self._kind].observe(len(call.chain), verdict.accepted)
        if call.provenance and call.provenance[0] == FRESH:
            self.cursor = drafted_cursor(self.cursor, verdict.accepted, self.lookback)
            self._processing, self._correction = False, None
            return self.cursor.cursor
        return super()._after(call, verdict)
