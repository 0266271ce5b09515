"""Several resident candidate sources, one buffer each (beyond the paper, F.1).

``MultiSource`` bundles the publication buffers of several sources resident at once (for
example an autoregressive producer and a CTC chunk source). Each keeps its own positions; a round
that verifies candidates of source ``i`` records each as the pair ``SourcePosition(i, position)``
(``records.py``; stored as one integer), so one provenance column still names exactly one published
token (``publish_time_of`` decodes it, and the audits check it like any buffer position). With one
source the stored form is the plain position.

``As2dSourceChoice`` (``as2d_sources``) reads every source with its own As²d read cursor and, per
round, verifies the chain of the source worth the most under a running per-source acceptance
estimate and the window's running throughput (the online budget's rule, ``width.py``).
The choice is the combination scheme's (``adaptive.py``) with plain As²d readers and no drafter.
It drives each reader through As²d's reader API (``join``, ``verified``, ``passed``,
``correction_pending``), never through its private state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import Enum

from ..buffer import Snapshot
from ..costs import RoundCosts
from ..records import SOURCE_STRIDE, Call, SourcePosition
from ..verification import Verdict
from ..width import PRIOR, PRIOR_ROUNDS, AcceptanceEstimate, RunningRate, online_choice
from .as2d import As2d, CandidateSource
from .base import Scheme
from .online import rejected_at_cut, seen_cut

__all__ = ["SOURCE_STRIDE", "As2dSourceChoice", "EstimateKind", "MultiSource", "encode", "sources_of"]


class EstimateKind(Enum):
    """Which running acceptance estimate a proposal is weighed with (one per reader and kind)."""

    ANCHOR = "anchor"  # a chain after an anchor the buffer confirms
    GUESS = "guess"  # a substitution guess after a rejection (substitution.py): right less often
    DRAFT = "draft"  # the drafter's chain (hybrid candidates, adaptive.py)


EstimateKey = tuple[int, EstimateKind]  # (reader index, or adaptive.DRAFTER; kind)


class MultiSource:
    """The buffers of several resident sources, in a fixed order (the first is the primary)."""

    def __init__(self, sources: Mapping[str, object]) -> None:
        if not sources:
            raise ValueError("sources: a multi-source needs at least one candidate source")
        self.names: tuple[str, ...] = tuple(sources)
        self.buffers: tuple = tuple(sources.values())

    def snapshot(self, t: float = float("inf")) -> Snapshot:
        return self.buffers[0].snapshot(t)  # the primary's view, for readers that know one source

    def publish_time_of(self, provenance: int) -> float:
        i, pos = SourcePosition.decode(provenance)
        return self.buffers[i].publish_time_of(pos)


def sources_of(source: object) -> Sequence[object]:
    """Every buffer behind ``source``: a ``MultiSource``'s, or the one buffer itself."""
    return source.buffers if isinstance(source, MultiSource) else (source,)


def encode(i: int, positions: Sequence[int]) -> tuple[int, ...]:
    """Source ``i``'s buffer positions as stored provenance (``SourcePosition.encode``)."""
    return tuple(SourcePosition(i, p).encode() for p in positions)


class As2dSourceChoice(Scheme):
    name = "as2d_sources"
    uses_buffer = True
    reader_class: type[As2d] = As2d

    def __init__(self, source: CandidateSource, budget: int, max_output: int, eos_id: int | None,
                 costs: RoundCosts | Mapping[int, float], decay: float = 0.9, prior: float = PRIOR,
                 prior_rounds: float = PRIOR_ROUNDS, **as2d: object) -> None:
        super().__init__(max_output, eos_id)
        if not costs:
            raise ValueError(f"{self.name}: costs must give each priced width's verify time, width 1 included")
        if not 0.0 < decay <= 1.0:
            raise ValueError(f"{self.name}: decay must be in (0, 1], got {decay}")
        self.round_costs = RoundCosts.of(costs)
        self.costs = self.round_costs.running
        self.decay = decay
        AcceptanceEstimate.starting_at(prior, prior_rounds, decay)  # one clear error for a bad prior, now
        self.prior, self.prior_rounds = prior, prior_rounds  # where each estimate starts (online.py)
        self.source = source
        self.readers = [self.reader_class(s, budget, max_output, eos_id, **as2d)  # type: ignore[arg-type]
                        for s in sources_of(source)]
        self.budget, self.threshold, self.lookback = budget, self.readers[0].threshold, self.readers[0].lookback

    def _reset(self) -> None:
        for r in self.readers:  # every reader sees the one committed prefix (the same list)
            r.join(self.output)
        self.estimates: dict[EstimateKey, AcceptanceEstimate] = {}
        self.rate = RunningRate()  # this window's tokens per unit cost (width.py: what a round's time is worth)
        self._chosen: EstimateKey | None = None  # (reader, kind) of this round's chain
        self._calls: list[Call] = []

    def estimate(self, key: EstimateKey) -> AcceptanceEstimate:
        est = self.estimates.get(key)
        if est is None:
            est = self.estimates[key] = AcceptanceEstimate.starting_at(self.prior, self.prior_rounds, self.decay)
        return est

    def _kind(self, reader: As2d, call: Call) -> EstimateKind:
        return EstimateKind.ANCHOR

    def _fallback(self, call: Call) -> Call | None:
        """A round when no source has a chain worth verifying (``None``: a plain step)."""
        return None

    def plan(self, now: float) -> Call:
        self._chosen, calls, self._cut = None, [], None
        best: tuple[float, int, int, EstimateKind] | None = None  # value, reader, chain length, kind
        rate = self.rate.value
        done = all(r.source.snapshot(now).complete for r in self.readers)
        self._table = costs = self.round_costs.table(done)  # done: rounds run alone
        for i, r in enumerate(self.readers):
            call = r.plan(now)
            kind = self._kind(r, call)
            calls.append(call)
            if not call.chain:
                continue
            n, value = online_choice(call.chain, self.eos_id, costs, self.estimate((i, kind)), rate, done)
            if n > 0 and (best is None or value > best[0] + 1e-12 * max(1.0, abs(best[0]))):
                best = (value, i, n, kind)
        self._calls = calls
        if best is not None:
            _, i, n, kind = best
            call = calls[i]
            self._chosen = (i, kind)
            self._cut = (call.chain[n], call.provenance[n]) if n < len(call.chain) else None
            return Call(root=call.root, chain=call.chain[:n], provenance=encode(i, call.provenance[:n]),
                        ready=call.ready, cursor_before=call.cursor_before, anchor=call.anchor)
        primary = calls[0]
        drafted = self._fallback(primary)
        if drafted is not None:
            return drafted
        cut = any(c.chain for c in calls)
        return Call(root=primary.root, k1_reason="cost" if cut else primary.k1_reason, ready=primary.ready,
                    cursor_before=primary.cursor_before)

    def _after(self, call: Call, verdict: Verdict) -> int | None:
        self.rate.observe(len(verdict.committed), self._table.get(1 + len(call.chain)))
        chosen = self._chosen
        if chosen is not None:
            i, kind = chosen
            own = self._calls[i]
            own_call = Call(root=own.root, chain=call.chain, provenance=own.provenance[: len(call.chain)],
                        ready=own.ready, cursor_before=own.cursor_before, anchor=own.anchor)
            seen, v = seen_cut(own_call, verdict, self._cut)  # the bonus checks the first left-out candidate
            self.estimate(chosen).observe(len(seen.chain), v.accepted)
            for j, r in enumerate(self.readers):
                if j == i:
                    r.verified(*rejected_at_cut(own_call, verdict, seen, v))
                else:  # the target advanced past this source's cursor on another source's chain
                    r.passed(verdict.accepted)
            return self.readers[0].cursor.cursor
        if call.chain:  # a drafted round (hybrid candidates): no source's candidates were used
            for r in self.readers:
                r.passed(verdict.accepted)
            return self.readers[0].cursor.cursor
        for i, (own, r) in enumerate(zip(self._calls, self.readers, strict=True)):  # a plain step: own rules
            step = verdict
            if own.chain:  # cut by cost: the root sat at the anchor (a guess cut is the correction step)
                kind = self._kind(r, own)
                cut = (own.chain[0], own.provenance[0])
                guess = kind is EstimateKind.GUESS
                own = Call(root=own.root, k1_reason="correction" if guess else "cost",
                           cursor_before=own.cursor_before, anchor=None if guess else own.anchor)
                if kind is EstimateKind.ANCHOR:  # the step's token checks this source's first candidate
                    seen, v = seen_cut(own, verdict, cut)
                    self.estimate((i, kind)).observe(len(seen.chain), v.accepted)
                    own, step = rejected_at_cut(own, verdict, seen, v)
            r.verified(own, step)
        return self.readers[0].cursor.cursor
