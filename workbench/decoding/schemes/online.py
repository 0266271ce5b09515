"""As²d with an online budget: the chain length is chosen each round from what was observed.

The paper fixes one budget b per device on a dev split and names adaptation future work (F.1,
F.3). This scheme keeps As²d's buffer, read cursor and alignment unchanged and only cuts the
chain As²d would verify: after the anchor it takes the ``n`` ready candidates (``n <= budget``)
that maximize expected committed tokens per ms of verify time (``width.choose_chain_length``),
from the device's per-width costs, a running acceptance estimate and the window's running
throughput (what a round's time would earn otherwise). ``n = 0`` is a plain step
(``k1_reason = "cost"``): the verifier does not start a verify worth less than a step.

A cut chain still checks its first left-out candidate for free: the round's bonus token is the
target's own token at that slot. The acceptance estimate learns that slot either way (slots a cut
leaves out would otherwise never be tried), and a mismatch there is a rejection at that slot: the
paper's correction step and re-anchoring follow, as if the chain had not been cut. Without this the
bonus is anchored at a spurious later match and the read cursor drifts (evidence: docs/adaptive.md,
"Online budget").

Before its first round a window knows nothing of its own audio: the estimate starts from ``prior``
(an acceptance) weighted as ``prior_rounds`` observed rounds. A deployment fits both on the dev split
(``jobs/adaptive.py``), as the paper fits b: demo windows are 5-34 tokens, a handful of rounds, so
the start decides much of each window (evidence: docs/adaptive.md, "Online budget").

It uses no future information: the estimate is updated only from rounds already verified, and
every committed token is still the target's own (exactness is unchanged, C.4).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from ..costs import RoundCosts
from ..records import Call
from ..verification import Verdict
from ..width import PRIOR, PRIOR_ROUNDS, AcceptanceEstimate, RunningRate, online_choice
from .as2d import As2d, CandidateSource


def seen_cut(call: Call, verdict: Verdict, cut: tuple[int, int] | None) -> tuple[Call, Verdict]:
    """The round as if its first left-out candidate ``cut`` (token, provenance) had been verified too.

    The bonus after a fully accepted chain is the target's token at that slot: equal, the candidate
    is accepted; different, it is the rejection there with the bonus as the correction."""
    if cut is None or verdict.next_root is None or verdict.accepted < len(call.chain) or verdict.outcome != "bonus":
        return call, verdict
    tok, pos = cut
    longer = Call(root=call.root, chain=(*call.chain, tok), provenance=(*call.provenance, pos), ready=call.ready,
                  cursor_before=call.cursor_before, anchor=call.anchor)
    if tok == verdict.next_root:
        return longer, replace(verdict, accepted=verdict.accepted + 1)
    return longer, replace(verdict, outcome="correction")


def rejected_at_cut(call: Call, verdict: Verdict, seen: Call, v: Verdict) -> tuple[Call, Verdict]:
    """What the read cursor follows: the round as verified, unless the left-out candidate was rejected
    (then the rejection there). A matching one changes nothing: the bonus is the root at that slot."""
    return (seen, v) if v.outcome == "correction" and verdict.outcome == "bonus" else (call, verdict)


class As2dOnline(As2d):
    name = "as2d_online"

    def __init__(self, source: CandidateSource, budget: int, max_output: int, eos_id: int | None,
                 costs: RoundCosts | Mapping[int, float], decay: float = 0.9, prior: float = PRIOR,
                 prior_rounds: float = PRIOR_ROUNDS, **as2d: object) -> None:
        super().__init__(source, budget, max_output, eos_id, **as2d)  # type: ignore[arg-type]
        if not costs:
            raise ValueError("as2d_online: costs must give each priced width's verify time, width 1 included")
        if not 0.0 < decay <= 1.0:
            raise ValueError(f"as2d_online: decay must be in (0, 1], got {decay}")
        self.round_costs = RoundCosts.of(costs)
        self.costs = self.round_costs.running
        self.decay = decay
        AcceptanceEstimate.starting_at(prior, prior_rounds, decay)  # one clear error for a bad prior, now
        self.prior, self.prior_rounds = prior, prior_rounds

    def _reset(self) -> None:
        super()._reset()
        self.estimate = AcceptanceEstimate.starting_at(self.prior, self.prior_rounds, self.decay)
        self.rate = RunningRate()  # this window's tokens per unit cost: what a round's time is worth

    def plan(self, now: float) -> Call:
        call = super().plan(now)
        done = self.source.snapshot(now).complete
        self._table = self.round_costs.table(done)  # done: rounds run alone
        n, _ = online_choice(call.chain, self.eos_id, self._table, self.estimate, self.rate.value, done)
        self._cut = (call.chain[n], call.provenance[n]) if n < len(call.chain) else None
        if n < len(call.chain):
            call.chain, call.provenance = call.chain[:n], call.provenance[:n]
            if n == 0:
                call.k1_reason = "cost"
        return call

    def _after(self, call: Call, verdict: Verdict) -> int | None:
        self.rate.observe(len(verdict.committed), self._table.get(1 + len(call.chain)))
        seen, v = seen_cut(call, verdict, self._cut)  # the estimate learns the first left-out slot too
        self.estimate.observe(len(seen.chain), v.accepted)
        return super()._after(*rejected_at_cut(call, verdict, seen, v))
