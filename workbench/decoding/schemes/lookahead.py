"""Prefix lookahead (paper D.4.5, Table 13): serial SD whose next proposal overlaps the verification.

While the target verifies ``root + chain``, the drafter already drafts from the prefix the round
leaves if the target accepts the whole chain (``output + chain``): the first lookahead token guesses
the bonus, the rest would be the next chain. The next round collects it before its call (waiting
while it still runs, which a clock sees as time before the call):

* every candidate accepted and the bonus equal to the guess: the rest of the lookahead proposal is
  the next chain, with no serial drafting before the call (provenance ``LOOKAHEAD``);
* otherwise the lookahead proposal is discarded (the hidden work is wasted) and the next round
  drafts from the committed prefix, as standard SD does.

With a deterministic greedy drafter the reused tokens are those SD would draft from the same
prefix, so acceptance is SD's at the same width (Table 13's matched acceptance); only time differs.
Where the lookahead runs is the drafter's business: an ``Overlapping`` drafter (the native host's: a
thread beside the target call) starts it at once; any other is asked only when the expected prefix
came true, since its tokens are used only then (replay's saved drafts cover committed prefixes
only). Each call carries its lookahead work (``Call.overlap``) for a priced clock.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..protocols import Drafter, Overlapping, Pending, Proposal
from ..records import FRESH, LOOKAHEAD, NO_WORK, Call, DraftWork, RoundRecord
from ..verification import Verdict
from .base import Scheme, check_budget


def reused_lookaheads(records: Sequence[RoundRecord]) -> set[int]:
    """Rounds whose lookahead proposal became the next round's chain."""
    return {r.round - 1 for r in records if r.provenance[:1] == (LOOKAHEAD,)}


class _Deferred:
    """A lookahead proposal drafted only when its tokens are asked for (no real overlap)."""

    __slots__ = ("drafter", "prefix", "n")

    def __init__(self, drafter: Drafter, prefix: Sequence[int], n: int) -> None:
        self.drafter, self.prefix, self.n = drafter, tuple(prefix), n

    def result(self) -> Proposal:
        return self.drafter.propose(self.prefix, self.n)

    def discard(self) -> None:
        pass


class PrefixLookahead(Scheme):
    name = "lookahead"
    uses_drafter = True

    def __init__(self, drafter: Drafter, width: int, max_output: int, eos_id: int | None) -> None:
        super().__init__(max_output, eos_id)
        self.width = check_budget("width", width, low=2, high=25)
        self.drafter = drafter
        self._pending: Pending | None = None  # the lookahead drafting beside the last call
        self._full = False  # the last call accepted every candidate
        self.overlapped = 0  # lookahead proposals started beside a call (this window)
        self.reused = 0  # ... whose tokens became the next chain

    def _reset(self) -> None:
        self._full = False
        self._settle()
        self.overlapped = self.reused = 0

    def _settle(self) -> tuple[int, ...]:
        """Collect the last call's lookahead, waiting for it: its tokens after the bonus when the call
        accepted every candidate and the bonus (now the root) is its first token, else nothing."""
        pending, self._pending = self._pending, None
        if pending is None:
            return ()
        if not self._full:
            pending.discard()
            return ()
        guess = pending.result().tokens
        return tuple(guess[1:]) if guess[:1] == (self.root,) else ()

    def plan(self, now: float) -> Call:
        ready = self._settle()  # before the call: a wait for the drafter is time before the call
        n = self.chain_limit(self.width - 1)
        if n == 0:
            return Call(root=self.root, k1_reason="output_cap")
        if ready:
            chain, provenance, work, confs = ready[:n], (LOOKAHEAD,) * len(ready[:n]), NO_WORK, None
            self.reused += 1
        else:
            prop = self.drafter.propose(self.output, n)
            chain, confs = tuple(prop.tokens[:n]), prop.confidences
            provenance, work = (FRESH,) * len(chain), DraftWork(forwards=prop.forwards, catchup=prop.catchup)
        return Call(root=self.root, chain=chain, provenance=provenance, k1_reason=None if chain else "drafter",
                    ready=len(chain), work=work, confidences=confs, overlap=self._look_ahead(chain))

    def _look_ahead(self, chain: tuple[int, ...]) -> DraftWork:
        """Start drafting from the prefix a full acceptance leaves; return the work it takes."""
        after = len(self.output) + len(chain) + 1  # output length once the chain and the bonus are in
        n = min(self.width - 1, self.max_output - after - 1)  # the next round's chain limit
        if not chain or self.eos_id in chain or n < 1:
            return NO_WORK
        expected = (*self.output, *chain)
        m = n + 1  # the bonus guess, then the next chain
        drafter = self.drafter
        self._pending = drafter.start(expected, m) if isinstance(drafter, Overlapping) else _Deferred(
            drafter, expected, m)
        self.overlapped += 1
        return DraftWork(forwards=m, catchup=1)  # the last chain token, then one forward per token

    def _after(self, call: Call, verdict: Verdict) -> int | None:
        self._full = verdict.accepted == len(call.chain)
        if self.done and self._pending is not None:  # the output ended: nothing will use it
            self._pending.discard()
            self._pending = None
        return None
