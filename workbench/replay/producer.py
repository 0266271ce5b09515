"""The target-decoupled producer as a priced resource (paper Section 4.1, Appendix C.1, A.3).

The producer never waits for the target: from the start of the clock it runs its operations
back to back -- startup, then drafter forwards (one token each) or external chunk services --
(a ``prefilled`` producer ran operation 0, its prompt prefill, before the clock: A.3) and
publishes each batch when its publication operation completes. Its only coupling to the verifier
is coexistence: while a target call runs, a producer operation takes
``concurrent_factor`` times its idle cost (D.2.1). Work is counted in *idle seconds*, so the
real time of every publication follows from the rates in force while it was produced.

``ProducerPlan`` is the static part (operations, cumulative idle work, batch boundaries) and
is shared by every budget replayed on the same window and source. When the factor is 1 the
publication times do not depend on the verifier, so the plan also prebuilds the buffer once.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import cast

from workbench.decoding import PublicationBuffer
from workbench.decoding.cumulative import CUMULATIVE_PREFIX

from .profile import SourceCost
from .trajectory import SourceTrack

BOUNDARY_S = 1e-9  # float drift tolerated when deciding if an operation is in flight (far below any op cost)


@dataclass(frozen=True, slots=True)
class SourcePrice:
    """One candidate source's producer costs in seconds, as the clock adds them.

    ``of(cost)`` converts a profile's milliseconds once (``x / 1000``); a phone runner builds one
    straight from its request's seconds, so no price passes through a second unit."""

    kind: str
    op_s: float
    publication_s: float
    startup_s: float
    concurrent_factor: float
    batch_tokens: int | None
    growth: SourceCost | None = None  # a profile's context growth (D.3), priced in its own unit
    prefilled: bool = False  # operation 0 (the prompt prefill) ran before the clock (A.3): not charged

    @classmethod
    def of(cls, cost: SourceCost) -> SourcePrice:
        return cls(cost.kind, cost.op_ms / 1000.0, cost.publication_ms / 1000.0, cost.startup_ms / 1000.0,
                   cost.concurrent_factor, cost.batch_tokens, cost if cost.growth else None, cost.prefilled)

    def op_at(self, position: int) -> float:
        """One operation's idle cost (s) when it starts at ``position`` (``SourceCost.op_at``)."""
        return self.op_s if self.growth is None else self.growth.op_at(position) / 1000.0


@dataclass(frozen=True, slots=True)
class ProducerPlan:
    source: str
    tokens: tuple[int, ...]
    confidences: tuple[float, ...] | None
    op_end: tuple[float, ...]  # cumulative idle work (s) at the end of each operation
    batch_work: tuple[float, ...]  # cumulative idle work (s) when each batch becomes visible
    batch_end: tuple[int, ...]  # token count published after each batch
    startup_s: float
    factor: float
    vocab_size: int
    static: PublicationBuffer | None  # prebuilt when publication times are verifier-independent

    total_work: float  # idle seconds of the whole stream

    @classmethod
    def build(cls, track: SourceTrack, cost: SourceCost | SourcePrice, vocab_size: int) -> ProducerPlan:
        if isinstance(cost, SourceCost):
            cost = SourcePrice.of(cost)
        ends: list[float] = []
        batch_work: list[float] = []
        batch_end: list[int] = []
        op_ms = track.op_ms
        measured = op_ms is not None
        # A prefilled producer ran operation 0 before the clock (A.3): its tokens are out at the clock's
        # zero and the startup (the process waking on the clock) precedes operation 1. A measured track
        # times operation 0 from the clock.
        prefilled = cost.prefilled and not measured
        w = 0.0 if prefilled else cost.startup_s
        ends.append(w)
        pub = 0.0 if measured else cost.publication_s
        batch = cost.batch_tokens if cost.kind == "autoregressive" else None
        if track.publication == CUMULATIVE_PREFIX:
            # Spoken QA (D.1.2): the buffer receives cumulative observed prefixes with unchanged
            # token-arrival times -- each operation's tokens are readable when it ends, with no
            # batch to wait for and no publication operation to pay (decoding/cumulative.py).
            batch, pub = None, 0.0
        produced = pending = 0
        for i, n in enumerate(track.op_tokens):
            # growth with context (D.3): the producer's context is the operations it has run, whether or
            # not they released a token yet (a held-back word's tokens are made one operation each)
            if op_ms is not None:
                w += op_ms[i] / 1000.0
            elif i or not prefilled:
                w += cost.op_at(i) + (cost.startup_s if prefilled and i == 1 else 0.0)
            ends.append(w)
            produced += n
            pending += n
            last = i == len(track.op_tokens) - 1
            # An autoregressive producer publishes every ``batch_tokens`` tokens (and the final
            # partial batch); an external source publishes each completed chunk atomically.
            if pending and (batch is None or pending >= batch or last):
                w += pub
                ends.append(w)
                batch_work.append(w)
                batch_end.append(produced)
                pending = 0
        # Measured times already contain the contention they ran under.
        factor = 1.0 if measured else cost.concurrent_factor
        plan = cls(track.source, track.tokens, track.confidences, tuple(ends), tuple(batch_work),
                   tuple(batch_end), cost.startup_s, factor, vocab_size, None, w)
        if factor == 1.0:
            buf = PublicationBuffer(track.source, f"{track.source}-producer", vocab_size)
            plan._publish_until(buf, 0, len(batch_work), lambda j: batch_work[j])
            buf.finish(w)
            object.__setattr__(plan, "static", buf)
        return plan

    def _publish_until(self, buf: PublicationBuffer, first: int, stop: int, when) -> None:
        for j in range(first, stop):
            s = self.batch_end[j - 1] if j else 0
            e = self.batch_end[j]
            conf = None if self.confidences is None else self.confidences[s:e]
            buf.publish(self.tokens[s:e], when(j), conf)


class Producer:
    """One replay's producer state: idle work done by the current real time."""

    __slots__ = ("plan", "buffer", "work", "time", "_next_batch", "stopped_at", "finished_at")

    def __init__(self, plan: ProducerPlan) -> None:
        self.plan = plan
        self.work = 0.0
        self.time = 0.0
        self._next_batch = 0
        self.stopped_at: float | None = None
        self.finished_at: float | None = plan.total_work if plan.total_work == 0.0 else None
        if plan.static is not None:
            self.buffer = plan.static
        else:
            self.buffer = PublicationBuffer(plan.source, f"{plan.source}-producer", plan.vocab_size)

    @property
    def remaining(self) -> float:
        return max(0.0, self.plan.total_work - self.work)

    def busy(self) -> bool:
        return self.remaining > 0.0

    def advance(self, t: float, slowed: bool, share: float = 1.0) -> None:
        """Run from ``self.time`` to real time ``t`` at the idle or the coexistence rate.

        ``share``: how many jobs split the drafting workers this producer runs on (several resident
        producers, ``multi_source.py``); each gets ``1/share`` of its rate."""
        if t <= self.time:
            return
        rate = (1.0 / self.plan.factor if slowed else 1.0) / share
        start_work, start_time = self.work, self.time
        self.work = min(self.plan.total_work, start_work + (t - start_time) * rate)
        if self.finished_at is None and self.work >= self.plan.total_work:
            self.finished_at = start_time + (self.plan.total_work - start_work) / rate
        if self.plan.static is None:
            stop = bisect.bisect_right(self.plan.batch_work, self.work)
            if stop > self._next_batch:
                self.plan._publish_until(
                    self.buffer, self._next_batch, stop,
                    lambda j: start_time + (self.plan.batch_work[j] - start_work) / rate,
                )
                self._next_batch = stop
            if self.finished_at is not None and self.buffer.finish_time is None:
                self.buffer.finish(self.finished_at)
        self.time = t

    def finish_time_if(self, slowed: bool) -> float:
        """Real time at which the producer would finish from now at a constant rate."""
        return self.time + self.remaining * (self.plan.factor if slowed else 1.0)

    def drain(self, t_eos: float, full: bool) -> float:
        """Stop after target EOS: complete the operation in flight (or everything if ``full``).

        Charged once (D.5.1): the returned time is when the producer is idle.
        """
        self.advance(t_eos, slowed=False)
        if not self.busy():
            self.stopped_at = self.finished_at
            return cast(float, self.stopped_at)  # an idle producer has finished
        if full:
            target_work = self.plan.total_work
        else:
            # Work accumulates in floats: an EOS that lands on an operation's end (to within
            # BOUNDARY_S) finds nothing in flight, rather than paying for one more operation.
            ends = self.plan.op_end
            target_work = max(self.work, ends[bisect.bisect_left(ends, self.work - BOUNDARY_S)])
        end = self.time + (target_work - self.work)
        self.advance(end, slowed=False)
        self.stopped_at = end
        return end
