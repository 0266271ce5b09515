"""Several resident producers in one replay (beyond the paper: online source choice and hybrid candidates).

A configuration whose source is ``"qwen+parakeet"`` runs one ``Producer`` per named source from
time 0, each publishing into its own buffer; the scheme reads them through one ``MultiSource``.

Pricing: the paper runs every candidate source on one pool of drafting workers -- "the four CPU
drafting workers use cores 4-7" (D.2.4), and in the source comparison "only the selected source
generates candidates, using four CPU threads" (D.4.5) -- and the serial drafter of SD/ASP runs
there too. So the producers do not each get a pool of their own: while ``k`` jobs are busy on the
pool (producers, plus the verifier's serial drafting for hybrid candidates) each runs at ``1/k`` of
its rate (equal processor sharing). Each producer keeps its own coexistence factor against the target
(D.2.1), and a target call pays the profile's concurrent cost while any producer is busy (the pool
is busy either way). No profile measures two sources sharing the pool, so equal sharing is the
assumption; it is never cheaper than the pool each source was calibrated alone on.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, replace

from workbench.decoding.schemes.source_choice import MultiSource

from .producer import BOUNDARY_S, Producer, ProducerPlan

SEPARATOR = "+"
_EPS = 1e-12  # a step that ends a job overshoots by this much, so float drift never leaves a sliver of work


@dataclass(frozen=True)
class MultiPlan:
    plans: tuple[ProducerPlan, ...]

    @property
    def static(self) -> object | None:
        # Shared workers make publication times depend on the verifier: the clock advances each.
        return None

    @property
    def total_work(self) -> float:
        return sum(p.total_work for p in self.plans)

    @property
    def startup_s(self) -> float:
        return min(p.startup_s for p in self.plans)

    def producer(self) -> MultiProducer:
        return MultiProducer(self)


class MultiProducer:
    """The producers of a ``MultiPlan`` on one shared pool of drafting workers, for the replay clock."""

    def __init__(self, plan: MultiPlan) -> None:
        self.plan = plan
        # Dynamic buffers: a prebuilt (static) buffer holds idle-rate publication times.
        self.producers = tuple(Producer(replace(p, static=None)) for p in plan.plans)
        self.buffer = MultiSource({p.source: pr.buffer for p, pr in zip(plan.plans, self.producers, strict=True)})
        self.time = 0.0

    def busy(self) -> bool:
        return any(p.busy() for p in self.producers)

    def _run(self, t: float, slowed: bool, extra_jobs: int = 0, job_work: float = float("inf")) -> tuple[float, float]:
        """Share the pool from ``self.time`` until ``t`` or until a job of ``job_work`` idle seconds
        (running beside the producers, ``extra_jobs`` = 1) is done; returns (time, work left)."""
        while self.time < t and job_work > 0.0:
            busy = [p for p in self.producers if p.busy()]
            k = len(busy) + extra_jobs
            if k == 0:
                break
            # The first job to finish at this share ends the step.
            ends = [p.remaining * (p.plan.factor if slowed else 1.0) * k for p in busy]
            if extra_jobs:
                ends.append(job_work * k)
            step = min(min(ends) + _EPS, t - self.time)
            nxt = self.time + step
            for p in busy:
                p.advance(nxt, slowed, share=k)
            if extra_jobs:
                job_work -= step / k
            self.time = nxt
        if self.time < t and extra_jobs == 0:
            self.time = t
        for p in self.producers:  # idle producers only move their clock
            p.advance(self.time, slowed)
        return self.time, max(0.0, job_work)

    def advance(self, t: float, slowed: bool) -> None:
        self._run(t, slowed)

    def draft(self, t: float, work_s: float) -> float:
        """Serial drafting of ``work_s`` idle seconds on the pool from time ``t`` (the target waits):
        it shares the workers with the busy producers, so it takes longer and slows them."""
        self.advance(t, slowed=False)
        if work_s <= 0.0:
            return t
        end, left = self._run(float("inf"), slowed=False, extra_jobs=1, job_work=work_s)
        return end + left  # producers all finished: the rest of the drafting runs alone

    def finish_time_if(self, slowed: bool) -> float:
        # Equal sharing keeps the pool fully used until the last producer is done (work-conserving).
        return self.time + sum(p.remaining * (p.plan.factor if slowed else 1.0) for p in self.producers if p.busy())

    def drain(self, t_eos: float, full: bool) -> float:
        """After target EOS each busy producer completes its operation in flight (everything if ``full``);
        on the shared pool that takes their summed remaining work. Charged once (D.5.1)."""
        self.advance(t_eos, slowed=False)
        if not self.busy():
            return max(p.finished_at or 0.0 for p in self.producers)
        left = 0.0
        for p in self.producers:
            if not p.busy():
                continue
            if full:
                left += p.remaining
            else:
                ends = p.plan.op_end
                left += max(p.work, ends[bisect.bisect_left(ends, p.work - BOUNDARY_S)]) - p.work
        return self.time + left
