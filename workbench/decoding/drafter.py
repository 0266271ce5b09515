"""A prefix-conditioned drafter that answers from saved drafts (replay and tests).

``drafts[c]`` is what the drafter proposes after the committed prefix ``reference[:c]``: its
greedy tokens and top-1 confidences up to the cap, off-path continuation included. Committed
prefixes are always reference prefixes (exactness), so these drafts cover every round.

It keeps a model of the drafter's own KV cache so catch-up is charged as D.1.3 says: committed
tokens the cache lacks are processed before the next proposal, in one extra forward when more
than the known root is missing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .protocols import Proposal


class TrajectoryDrafter:
    def __init__(
        self,
        reference: Sequence[int],
        drafts: Mapping[int, tuple[Sequence[int], Sequence[float] | None]],
    ) -> None:
        self.reference = tuple(reference)
        self.drafts = drafts
        self._kv: tuple[int, ...] = ()

    def reset(self) -> None:
        self._kv = ()

    def propose(self, prefix: Sequence[int], n: int, stop_below: float | None = None) -> Proposal:
        c = len(prefix)
        if tuple(prefix) != self.reference[:c]:
            raise ValueError(f"prefix: length-{c} prefix is not a committed reference prefix")
        if c not in self.drafts:
            raise ValueError(f"drafts: no saved draft after committed prefix length {c}")
        tokens, confs = self.drafts[c]
        tokens = tuple(tokens[:n])
        confs = None if confs is None else tuple(confs[: len(tokens)])
        if stop_below is not None:
            if confs is None:
                raise ValueError("stop_below: saved drafts carry no confidences")
            for i, p in enumerate(confs):
                if p < stop_below:
                    tokens, confs = tokens[: i + 1], confs[: i + 1]
                    break
        common = 0
        for a, b in zip(self._kv, prefix, strict=False):
            if a != b:
                break
            common += 1
        catchup = c - common
        forwards = len(tokens) + (1 if catchup > 1 else 0)
        if tokens:
            self._kv = (*prefix, *tokens[:-1])
        return Proposal(tokens, confs, forwards, catchup)
