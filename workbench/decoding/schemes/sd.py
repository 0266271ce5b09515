"""Standard speculative decoding with a fixed physical width K (paper D.1.3).

Serial: a prefix-conditioned drafter proposes ``K - 1`` tokens after the known root, then the
target verifies them. Only the common output limit may shorten the chain; the remaining
reference length is never peeked at to pick a cheaper tail.
"""

from __future__ import annotations

from ..protocols import Drafter
from ..records import FRESH, Call, DraftWork
from .base import Scheme, check_budget


class StandardSD(Scheme):
    name = "sd"
    uses_drafter = True

    def __init__(self, drafter: Drafter, width: int, max_output: int, eos_id: int | None) -> None:
        super().__init__(max_output, eos_id)
        self.width = check_budget("width", width, low=2, high=25)
        self.drafter = drafter

    def plan(self, now: float) -> Call:
        n = self.chain_limit(self.width - 1)
        if n == 0:
            return Call(root=self.root, k1_reason="output_cap")
        prop = self.drafter.propose(self.output, n)
        chain = tuple(prop.tokens[:n])
        return Call(
            root=self.root,
            chain=chain,
            provenance=(FRESH,) * len(chain),
            k1_reason=None if chain else "drafter",
            ready=len(chain),
            work=DraftWork(forwards=prop.forwards, catchup=prop.catchup),
            confidences=prop.confidences,
        )
