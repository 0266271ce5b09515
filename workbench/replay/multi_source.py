"""Several resident producers in one replay (issue 19, online source choice).

A configuration whose source is ``"qwen+parakeet"`` runs one ``Producer`` per named source from
time 0, each publishing into its own buffer; the scheme reads them through one ``MultiSource``.
Pricing: each producer keeps its own profile costs and coexistence factor against the target
(D.2.1). The profiles do not measure producers slowing *each other*, so this is optimistic for
two heavy producers on one phone; for a CTC chunk source beside an autoregressive producer
the extra contention is small. While any producer is busy, target calls pay the concurrent cost.
"""

from __future__ import annotations

from dataclasses import dataclass

from workbench.decoding.schemes.source_choice import MultiSource

from .producer import Producer, ProducerPlan

SEPARATOR = "+"


@dataclass(frozen=True)
class MultiPlan:
    plans: tuple[ProducerPlan, ...]

    @property
    def static(self) -> object | None:
        # One static end time only describes a single producer; the clock advances each instead.
        return None

    @property
    def total_work(self) -> float:
        return max(p.total_work for p in self.plans)

    @property
    def startup_s(self) -> float:
        return min(p.startup_s for p in self.plans)

    def producer(self) -> MultiProducer:
        return MultiProducer(self)


class MultiProducer:
    """The producers of a ``MultiPlan`` as one resource for the replay clock."""

    def __init__(self, plan: MultiPlan) -> None:
        self.plan = plan
        self.producers = tuple(Producer(p) for p in plan.plans)
        self.buffer = MultiSource({p.source: pr.buffer for p, pr in zip(plan.plans, self.producers, strict=True)})

    def busy(self) -> bool:
        return any(p.busy() for p in self.producers)

    def advance(self, t: float, slowed: bool) -> None:
        for p in self.producers:
            p.advance(t, slowed)

    def finish_time_if(self, slowed: bool) -> float:
        return max(p.finish_time_if(slowed) for p in self.producers if p.busy())

    def drain(self, t_eos: float, full: bool) -> float:
        return max(p.drain(t_eos, full) for p in self.producers)
