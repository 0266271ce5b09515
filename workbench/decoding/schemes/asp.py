"""SpecASR adaptive single-sequence prediction (ASP) with draft recycling (paper D.1.3).

Serial like standard SD, but the chain length adapts: the drafter stops after the first token
whose top-1 confidence falls below the threshold (that token is included), or at the cap.

Recycling: after a rejection at slot ``m`` (correction ``x``), one paired-branch forward
regenerates the first token ``t`` after ``x``. If ``t`` equals the rejected draft at the same
slot (``m+1``) or an adjacent one (``m``: the target inserted ``x``; ``m+2``: it dropped a
token), the old suffix after the match is reused without new drafting, its drafter KV refreshed
in one batch. Reused tokens are still verified by the target like any other candidate. When the
match is the old draft's last token there is nothing to reuse, and drafting continues fresh.
"""

from __future__ import annotations

from ..protocols import Drafter, Proposal
from ..records import FRESH, RECYCLED, Call, DraftWork
from ..verification import Verdict
from .base import MAX_BUDGET, Scheme, check_budget, check_threshold

ASP_THRESHOLD = 0.4
ASP_CAP = 24
_MATCH_OFFSETS = (1, 0, 2)  # same slot first, then the two adjacent ones


def confident_prefix(confs: tuple[float | None, ...], threshold: float) -> int:
    """Length of the chain up to and including the first low-confidence token.

    A missing confidence (``None``) is not imputed: it never stops the chain.
    """
    for i, c in enumerate(confs):
        if c is not None and c < threshold:
            return i + 1
    return len(confs)


def _confidences(prop: Proposal, who: str) -> tuple[float, ...]:
    if prop.confidences is None:
        raise ValueError(f"{who}: the drafter gives no confidences; ASP needs top-1 probabilities")
    return prop.confidences


class SpecASR(Scheme):
    name = "asp"
    uses_drafter = True

    def __init__(
        self,
        drafter: Drafter,
        max_output: int,
        eos_id: int | None,
        threshold: float = ASP_THRESHOLD,
        cap: int = ASP_CAP,
        recycle: bool = True,
    ) -> None:
        super().__init__(max_output, eos_id)
        self.drafter = drafter
        check_threshold("threshold", threshold)
        self.threshold = threshold
        self.cap = check_budget("cap", cap, high=MAX_BUDGET)
        self.recycle = recycle

    def _reset(self) -> None:
        self._old: tuple[tuple[int, ...], tuple[float, ...]] | None = None

    def plan(self, now: float) -> Call:
        n = self.chain_limit(self.cap)
        if n == 0:
            return Call(root=self.root, k1_reason="output_cap")
        first, catchup = 0, 0
        if self._old is not None and self.recycle:
            head = self.drafter.propose(self.output, 1)
            call = self._recycled(n, head, self._old)
            if call is not None:
                return call
            # The paired-branch forward already produced the first fresh token and caught up
            # the drafter's KV; a drafter reuses its last logits for it.
            first, catchup = 1, head.catchup
        prop = self.drafter.propose(self.output, n, stop_below=self.threshold)
        confs = _confidences(prop, self.name)
        chain = prop.tokens[:n]
        work = DraftWork(
            forwards=max(0, prop.forwards - first),
            catchup=catchup + prop.catchup,
            paired_forwards=first,
            prob_rows=len(chain) + first,
        )
        return Call(
            root=self.root,
            chain=chain,
            provenance=(FRESH,) * len(chain),
            k1_reason=None if chain else "drafter",
            ready=len(chain),
            work=work,
            confidences=confs[: len(chain)],
        )

    def _recycled(self, n: int, head: Proposal, old: tuple[tuple[int, ...], tuple[float, ...]]) -> Call | None:
        old_tokens, old_confs = old
        if not head.tokens:
            return None
        t, t_conf = head.tokens[0], _confidences(head, self.name)[0]
        for off in _MATCH_OFFSETS:
            if off < len(old_tokens) and old_tokens[off] == t:
                break
        else:
            return None
        reused = old_tokens[off + 1 :]
        if not reused:
            return None  # the match is the old draft's last token: nothing to reuse, draft fresh
        reused_confs = old_confs[off + 1 :]
        chain_confs = (t_conf, *reused_confs)
        keep = min(n, confident_prefix(chain_confs, self.threshold))
        chain = (t, *reused)[:keep]
        return Call(
            root=self.root,
            chain=chain,
            provenance=(FRESH,) + (RECYCLED,) * (keep - 1),
            ready=len(chain),
            work=DraftWork(catchup=head.catchup, paired_forwards=1, prob_rows=2, refresh_width=keep - 1),
            confidences=chain_confs[:keep],
        )

    def _after(self, call: Call, verdict: Verdict) -> int | None:
        a = verdict.accepted
        if verdict.outcome == "correction" and a < len(call.chain):
            self._old = (call.chain[a:], (call.confidences or ())[a:])  # an ASP call carries its confidences
        else:
            self._old = None
        return None
