"""As²d with hybrid candidates (beyond the paper, F.1).

The decoupled buffer sometimes has nothing usable for a round: the producer is behind
(``not_ready``), the known root is not among the eligible published tokens (``no_match``), or
the source is finished past the cursor (``exhausted``). As²d then takes a plain step. When a
prefix-conditioned drafter is loaded, this scheme asks it instead: it drafts up to ``budget``
tokens after the committed prefix (stopping after the first token below ``threshold``, as ASP
does) and the target verifies them in that round. Otherwise it reads the buffer exactly as As²d.

Cost on the right resource: the drafting is serial work in the verifier's loop, so the round
carries it as ``DraftWork`` (replay prices it before the target call on the verifier's timeline;
a native run spends it on the host's wall clock). The producer keeps running meanwhile.
Drafted tokens are verified like any candidate, so exactness is unchanged (C.4).
"""

from __future__ import annotations

from ..protocols import Drafter
from ..records import FRESH, Call, DraftWork
from ..verification import Verdict
from .as2d import As2d, CandidateSource

UNUSABLE = ("not_ready", "no_match", "exhausted")  # plain-step reasons where the buffer has nothing


def drafted_call(drafter: Drafter, output: list[int], n: int, threshold: float | None) -> Call:
    """A round verifying up to ``n`` tokens the drafter proposes after the committed prefix."""
    prop = drafter.propose(output, n, stop_below=threshold)
    chain = tuple(prop.tokens[:n])
    work = DraftWork(forwards=prop.forwards, catchup=prop.catchup,
                     prob_rows=len(chain) if threshold is not None else 0)
    return Call(root=output[-1], chain=chain, provenance=(FRESH,) * len(chain),
                k1_reason=None if chain else "drafter", ready=len(chain), work=work,
                confidences=None if prop.confidences is None else prop.confidences[: len(chain)])


class As2dHybrid(As2d):
    name = "as2d_hybrid"
    uses_drafter = True

    def __init__(self, source: CandidateSource, drafter: Drafter, budget: int, max_output: int,
                 eos_id: int | None, **as2d: object) -> None:
        super().__init__(source, budget, max_output, eos_id, **as2d)  # type: ignore[arg-type]
        self.drafter = drafter

    def plan(self, now: float) -> Call:
        call = super().plan(now)
        if call.k1_reason in UNUSABLE:
            drafted = drafted_call(self.drafter, self.output, self.chain_limit(self.budget), self.threshold)
            drafted.cursor_before = call.cursor_before
            return drafted
        return call

    def _after(self, call: Call, verdict: Verdict) -> int | None:
        if call.provenance and call.provenance[0] == FRESH:
            return self.passed(verdict.accepted)
        return super()._after(call, verdict)
