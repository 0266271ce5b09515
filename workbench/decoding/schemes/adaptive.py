"""Adaptive As²d: online budget, substitution guess, hybrid candidates and source choice in one
scheme (beyond the paper, F.1/F.3).

It is the online source choice (``source_choice.py``) whose readers guess substitutions
(``substitution.py``; with ``guess=False`` they take the paper's correction step): each resident
source proposes what As²d with a substitution guess would verify -- after a rejection, the
correction plus that source's continuation after the mismatch slot; otherwise its anchored chain.
Then:

* **online budget and source** (``width.py``): each proposal is cut to the length with the best
  expected tokens per unit verify time, from the device's per-width ``costs`` and a running
  per-slot acceptance estimate, and the best source's proposal is verified. Guessed and anchored
  chains keep separate estimates per source (a guess is right less often than an anchored chain).
* **hybrid candidates** (``hybrid.py``): when no source has anything usable and a drafter is
  loaded, the drafter proposes -- only when its expected tokens per unit time, drafting included
  (``RoundCosts.drafter_forward``: what one drafted token costs the verifier, forward and confidence
  row; 0 when the driver did not price it), beat a plain step. Drafting precedes the verify, so the decision uses
  the drafter's estimate, not the draft. The drafter shares the drafting workers with every source
  still producing (replay prices it so, ``replay/multi_source.py``), so a forward is counted
  ``1 + producing`` times its cost. A drafter whose cache lags the committed prefix by more than the
  root first runs one catch-up forward (D.1.3) -- always on its first draft of a window, when the
  whole prefix is new to it -- and that forward is counted too: leaving it out drafts single tokens
  that cost more than they earn (evidence: docs/adaptive.md, "Hybrid candidates").

No future information: estimates are updated only from verified rounds. Every committed token is
the target's own (C.4), whatever the candidates' origin.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..costs import RoundCosts
from ..protocols import Drafter
from ..records import Call
from ..verification import Verdict
from ..width import PRIOR, PRIOR_ROUNDS, AcceptanceEstimate, choose_chain_length
from .as2d import As2d, CandidateSource
from .hybrid import UNUSABLE, drafted_call
from .source_choice import As2dSourceChoice, EstimateKey, EstimateKind
from .substitution import As2dSubstitution

DRAFTER = -1  # reader index of the drafter's estimate
DRAFT_KEY: EstimateKey = (DRAFTER, EstimateKind.DRAFT)


class As2dAdaptive(As2dSourceChoice):
    name = "as2d_adaptive"
    reader_class: type[As2d] = As2dSubstitution

    def __init__(self, source: CandidateSource, budget: int, max_output: int, eos_id: int | None,
                 costs: RoundCosts | Mapping[int, float], decay: float = 0.9, drafter: Drafter | None = None,
                 prior: float = PRIOR, prior_rounds: float = PRIOR_ROUNDS, draft_prior: float = PRIOR,
                 guess: bool = True, **as2d: object) -> None:
        # Without ``guess`` the readers take the paper's plain correction step (a deployment choice: the
        # guess pays where mismatches are mostly substitutions, experiment=adaptive chooses it on dev).
        self.reader_class = As2dSubstitution if guess else As2d
        super().__init__(source, budget, max_output, eos_id, costs, decay, prior, prior_rounds, **as2d)
        AcceptanceEstimate.starting_at(draft_prior, prior_rounds, decay)  # one clear error, now
        self.draft_prior = draft_prior
        self.forward = self.round_costs.drafter_forward
        self.drafter = drafter
        self.uses_drafter = drafter is not None
        self._drafted = False
        self._cached = 0  # committed tokens the drafter's cache holds (a prefix of the output)

    def _reset(self) -> None:
        super()._reset()
        self._drafted, self._cached, self._draft_at = False, 0, 0

    def estimate(self, key: EstimateKey) -> AcceptanceEstimate:
        # A guess is tried only after a rejection, so it has few rounds to learn from: start it from
        # a pessimistic prior (1 in 3) so a source whose mismatches are not substitutions stops paying.
        if key[1] is EstimateKind.GUESS and key not in self.estimates:
            self.estimates[key] = AcceptanceEstimate(decay=self.decay, prior=1.0)
        # ``prior`` is the sources' anchored-chain acceptance; the drafter has its own, ``draft_prior``
        # (a drafter started at the sources' dev-fitted prior drafts on every unusable round;
        # docs/adaptive.md, "Hybrid candidates").
        if key[0] == DRAFTER and key not in self.estimates:
            self.estimates[key] = AcceptanceEstimate.starting_at(self.draft_prior, self.prior_rounds, self.decay)
        return super().estimate(key)

    def _kind(self, reader: As2d, call: Call) -> EstimateKind:
        # A guess that the correction itself anchors (published right after the mismatch slot) is
        # confirmed by the buffer like any anchor; only the substitution hypothesis is a guess.
        guess = reader.correction_pending and call.anchor is not None and call.anchor == call.cursor_before
        return EstimateKind.GUESS if guess else EstimateKind.ANCHOR

    def _fallback(self, call: Call) -> Call | None:
        self._drafted = False
        if self.drafter is None or call.k1_reason not in UNUSABLE:
            return None
        n_max = self.readers[0].chain_limit(self.budget)
        # A drafted chain of n tokens costs its verify plus n drafter forwards before it, each slowed by
        # the sources still producing on the same workers (what is published by now says which).
        producing = sum(not r.source.snapshot(self._now).complete for r in self.readers)
        fwd = self.forward * (1 + producing)
        catchup = fwd if len(self.output) - self._cached > 1 else 0.0
        draft_costs = {k: c + fwd * (k - 1) + catchup for k, c in self.costs.items() if k > 1}
        draft_costs[1] = self.costs[1]
        n = choose_chain_length(n_max, draft_costs, self.estimate(DRAFT_KEY).slots(n_max), self.rate.value)
        if n == 0:
            return None
        drafted = drafted_call(self.drafter, self.output, n, self.threshold)
        drafted.cursor_before = call.cursor_before
        self._drafted, self._draft_at = bool(drafted.chain), len(self.output)
        return drafted

    def plan(self, now: float) -> Call:
        self._drafted, self._now = False, now
        return super().plan(now)

    def _after(self, call: Call, verdict: Verdict) -> int | None:
        if self._drafted:
            self.estimate(DRAFT_KEY).observe(len(call.chain), verdict.accepted)
            # Its cache now holds the prefix and every drafted token but the last; what the target kept
            # of them is committed (D.1.3's catch-up rule, drafter.py).
            self._cached = self._draft_at + min(verdict.accepted, len(call.chain) - 1)
        return super()._after(call, verdict)
