"""Event-driven phone-profile replay of one window (paper D.1.3, D.2, D.5.1; clock per A.3).

Two resources share one wall clock that starts after prefill:

* the **verifier** (target) runs one round after another and never waits: each round is a
  decision at ``t_decide`` (the scheme's ``plan(now)`` sees only what is published by then),
  serial drafting for SD/ASP, the target call, and per-round loop/queue work;
* the **producer** (As²d only, see ``producer.py``) runs from time 0 and publishes batches.

While both are busy, the target call uses the profile's concurrent cost and the producer its
coexistence factor; a call that outlives the producer finishes at the idle rate. After target
EOS the producer is stopped at its next operation boundary and that drain is charged once.

The schemes and the round loop are the decoding core's (``run_rounds``), unchanged: this module
only supplies the two clocks (``_SerialClock``, ``_ProducerClock``) that own time and price work.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

import polars as pl

from workbench.decoding import (
    DECOUPLED,
    SERIAL,
    Call,
    DraftWork,
    ExactnessError,
    ReferenceTarget,
    RoundTimes,
    Scheme,
    Stage,
    TrajectoryDrafter,
    make_scheme,
    round_costs,
    run_rounds,
)
from workbench.decoding.schemes import CandidateSource

from .audit import audit_run
from .multi_source import SEPARATOR, MultiPlan, MultiProducer
from .pricing import Pricing, pricing_for
from .producer import Producer, ProducerPlan
from .profile import ContextFit, DeviceProfile
from .result import STAGE_SCHEMA, ReplayConfig, ReplayResult
from .trajectory import Window

Drain = Literal["boundary", "full"]


class _Greedy:
    """The target's greedy tokens for a call, read from the saved reference (replay premise).

    Equivalent to the core's ``ReferenceTarget`` (entries after the first mismatch are -1, the
    capped tail is EOS) without its per-call contract checks: exactness of the whole output is
    audited once at the end instead, which keeps the 50k-run oracle catalog affordable.
    """

    __slots__ = ("ref", "n", "eos", "pos")

    def __init__(self, window: Window) -> None:
        self.ref = window.reference
        self.n = len(window.reference)
        self.eos = window.eos_id
        self.pos = 0  # output position of the current known root

    def verify(self, root: int, chain: Sequence[int]) -> list[int]:
        ref, p = self.ref, self.pos + 1
        out = list(ref[p : p + len(chain) + 1])
        if len(out) < len(chain) + 1:
            if self.eos is None:
                raise ExactnessError(f"target asked beyond the capped reference at position {self.n}")
            out += [self.eos] * (len(chain) + 1 - len(out))
        for i, c in enumerate(chain):
            if c != out[i]:
                out[i + 1 :] = [-1] * (len(out) - i - 1)
                break
        return out

    def keep(self, accepted: int) -> None:
        self.pos += 1 + accepted


def _scheme(window: Window, cfg: ReplayConfig, buffer: CandidateSource | None, price: Pricing) -> Scheme:
    drafter = None
    if cfg.spec.needs_drafter:
        if window.drafts is None:
            raise ValueError(f"window {window.window_id!r}: scheme {cfg.scheme!r} needs saved drafts")
        drafter = TrajectoryDrafter(window.reference, window.drafts)
    costs = None
    if cfg.spec.needs_costs:
        # A round while the producer runs and once every producer has finished, plus the round's loop and
        # alignment work; with a drafter, one drafted token on the verifier (hybrid candidates).
        forward = 0.0
        if cfg.spec.needs_drafter:
            rows = price.prob_row_s if cfg.settings.get("threshold") is not None and price.prob_row_s else 0.0
            forward = price.forward_s + rows
        costs = round_costs(price.conc_s, price.idle_s, price.step_s, (price.loop_s, price.align_s), forward)
    return make_scheme(cfg.scheme, max_output=window.max_output, eos_id=window.eos_id, drafter=drafter,
                       source=buffer, costs=costs, **cfg.settings)


def replay(
    window: Window,
    config: ReplayConfig,
    profile: DeviceProfile,
    *,
    plan: ProducerPlan | MultiPlan | None = None,
    drain: Drain = "boundary",
    audit: bool = True,
) -> ReplayResult:
    """Replay one window under one configuration and device profile; audited unless told not."""
    price = pricing_for(profile)
    buffer = None
    if config.scheme in DECOUPLED:
        if plan is None:
            plan = producer_plan(window, config.source, profile)
        if isinstance(plan, ProducerPlan) and config.spec.needs_drafter:
            plan = MultiPlan((plan,))  # its serial drafting shares the producer's workers (multi_source.py)
        producer = Producer(plan) if isinstance(plan, ProducerPlan) else plan.producer()  # several sources
        buffer = producer.buffer
        result = _run_decoupled(window, config, price, producer, drain)
    elif config.scheme in SERIAL:
        target = ReferenceTarget(window.reference, window.eos_id, window.vocab_size)
        result = _run_serial(window, config, price, target)
    else:
        raise ValueError(f"replay: unknown scheme {config.scheme!r}")
    if audit:
        audit_run(window, result, price, buffer)
    return result


def producer_plan(window: Window, source: str | None, profile: DeviceProfile) -> ProducerPlan | MultiPlan:
    if source is not None and SEPARATOR in source:  # several resident sources: "qwen+parakeet"
        # A source ineligible for the window's language (D.4.3) does not run; the first always does.
        names = source.split(SEPARATOR)
        names = names[:1] + [s for s in names[1:] if s not in window.sources or window.sources[s].eligible]
        return MultiPlan(tuple(_one_plan(window, s, profile) for s in names))
    return _one_plan(window, source, profile)


def _one_plan(window: Window, source: str | None, profile: DeviceProfile) -> ProducerPlan:
    if source is None or source not in window.sources:
        raise ValueError(f"window {window.window_id!r} has no source {source!r} (has {sorted(window.sources)})")
    return ProducerPlan.build(window.sources[source], pricing_for(profile).source(source), window.vocab_size)


class _SerialClock:
    """Target-only, SD, ASP: drafting, verification and loop work strictly in sequence.

    Prefix lookahead drafts its next proposal beside the call (``Call.overlap``): the drafter runs
    from the call's start at its coexistence rate while the call pays the concurrent verify cost,
    and the call's rest after the drafter finishes the idle cost (as a producer beside the call). The
    drafter is one resource: the next round's drafting, or its use of the lookahead, waits for it.
    """

    __slots__ = ("t", "price", "step_s", "after_s", "free", "factor", "spans", "rounds", "beside")

    def __init__(self, price: Pricing, speculative: bool) -> None:
        self.t = 0.0
        self.price = price
        self.step_s = None if speculative else price.step_s  # target-only pays the plain step cost
        self.after_s = price.loop_s if speculative else 0.0
        self.free = 0.0  # when the drafter has finished its lookahead
        self.factor = price.profile.source(price.profile.serial_drafter).concurrent_factor if speculative else 1.0
        self.spans: list[Stage] = []  # lookahead drafting beside the calls
        self.rounds = 0
        self.beside = False  # the last call started beside a drafter (``_ContextClock``)

    def decide(self) -> float:
        return self.t

    def start(self, call: Call, t_decide: float) -> float:
        t = t_decide if self.free <= t_decide else self.free
        return t + self.price.draft(call.work)

    def end(self, call: Call, t_start: float) -> float:
        self.beside = self.step_s is None and bool(call.overlap.forwards)
        if self.step_s is not None:
            t_end = t_start + self.step_s
        elif self.beside:
            t_end = self._beside(call, t_start)
        else:
            t_end = t_start + self.price.verify(call.width, False)
        self.t = t_end + self.after_s
        self.rounds += 1
        return t_end

    def _beside(self, call: Call, t_start: float) -> float:
        price = self.price
        drafting = price.draft(call.overlap) * self.factor
        conc, idle = price.verify(call.width, True), price.verify(call.width, False)
        self.free = t_start + drafting
        self.spans.append(("producer", "lookahead", t_start, self.free, self.rounds))
        if drafting >= conc:
            return t_start + conc
        return self.free + (1.0 - drafting / conc) * idle

class _ProducerClock:
    """As²d and its w/o-BC ablation: the verifier's rounds against a concurrently running producer."""

    __slots__ = ("t", "price", "producer", "static_end", "after_s", "beside")

    def __init__(self, price: Pricing, producer: Producer | MultiProducer) -> None:
        self.t = 0.0
        self.price = price
        self.producer = producer
        self.after_s = price.queue_s
        # With a static plan the producer ignores the verifier: it is busy on [0, total_work).
        self.static_end = producer.plan.total_work if producer.plan.static is not None else None
        self.beside = False  # the last call started while the producer ran (``_ContextClock``)

    def decide(self) -> float:
        if self.static_end is None:
            self.producer.advance(self.t, slowed=False)  # publish what is out by the decision time
        return self.t

    def start(self, call: Call, t_decide: float) -> float:
        # Hybrid candidates draft serially in the verifier's loop before the call, on the
        # drafting workers the producers use (shared with the busy ones: multi_source.py).
        t = t_decide + self.price.align_s
        work = self.price.draft(call.work)
        share = getattr(self.producer, "draft", None)
        return t + work if share is None or work == 0.0 else share(t, work)

    def end(self, call: Call, t_start: float) -> float:
        price, producer, static_end = self.price, self.producer, self.static_end
        idle = price.verify(call.width, False)
        if static_end is not None:
            self.beside = t_start < static_end
            if not self.beside:
                t_end = t_start + idle
            else:
                conc = price.verify(call.width, True)
                t_end = t_start + conc
                if t_end > static_end:  # the producer finishes mid-call: the rest at the idle rate
                    t_end = static_end + (1.0 - (static_end - t_start) / conc) * idle
        else:
            producer.advance(t_start, slowed=False)
            self.beside = producer.busy()
            if self.beside:
                conc = price.verify(call.width, True)
                p_end = producer.finish_time_if(slowed=True)
                t_end = t_start + conc
                if t_end > p_end:
                    t_end = p_end + (1.0 - (p_end - t_start) / conc) * idle
                    producer.advance(p_end, slowed=True)
                producer.advance(t_end, slowed=True)
            else:
                t_end = t_start + idle
        self.t = t_end + self.after_s
        return t_end


class _ContextClock:
    """A clock plus the profile's context fit (host profiles): a call costs more the longer the
    committed prefix (``slope_ms[K]`` per token from ``ref_tokens``; beside the producer the
    concurrent slope, ``ContextFit.slope``), and the window's first call pays the cold-call
    surcharge. Profiles without a fit (the phones) keep the plain clock."""

    __slots__ = ("inner", "scheme", "fit", "pos", "calls")

    def __init__(self, inner: _SerialClock | _ProducerClock, scheme: Scheme, fit: ContextFit) -> None:
        self.inner, self.scheme, self.fit, self.pos, self.calls = inner, scheme, fit, 0, 0

    def decide(self) -> float:
        return self.inner.decide()

    def start(self, call: Call, t_decide: float) -> float:
        self.pos = len(self.scheme.output)  # committed tokens before this call: its context length
        return self.inner.start(call, t_decide)

    def end(self, call: Call, t_start: float) -> float:
        t_end = self.inner.end(call, t_start)
        fit = self.fit
        slope = fit.slope(call.width, self.inner.beside)
        extra = (slope * (self.pos - fit.ref_tokens) + (fit.cold_ms if self.calls == 0 else 0.0)) / 1e3
        extra = max(extra, -0.5 * (t_end - t_start))  # a noisy slope never makes a call (nearly) free
        self.calls += 1
        self.inner.t += extra
        return t_end + extra


def _in_context(clock: _SerialClock | _ProducerClock, scheme: Scheme,
                price: Pricing) -> _SerialClock | _ProducerClock | _ContextClock:
    fit = price.profile.verifier.context
    return clock if fit is None else _ContextClock(clock, scheme, fit)


def _result(window: Window, cfg: ReplayConfig, price: Pricing, scheme: Scheme, times: RoundTimes, time: float,
            after_s: float, after: str, spans: tuple[Stage, ...] = ()) -> ReplayResult:
    t_eos = times.end[-1] if times.end else 0.0
    return ReplayResult(window.window_id, window.dataset, cfg, price.name, len(scheme.output), time, t_eos,
                        tuple(scheme.records), times.decide, times.start, times.end, after_s, spans, after,
                        scheme.output[0], window.eos_id)


def _run_serial(window: Window, cfg: ReplayConfig, price: Pricing, target: ReferenceTarget) -> ReplayResult:
    scheme = _scheme(window, cfg, None, price)
    scheme.start(target.prefill())
    clock = _SerialClock(price, cfg.spec.speculative)
    times = run_rounds(scheme, target, _in_context(clock, scheme, price))
    # Lookahead drafting the target did not wait for still finishes on the drafter (it is not stopped).
    return _result(window, cfg, price, scheme, times, max(clock.t, clock.free), clock.after_s, "loop",
                   tuple(clock.spans))


def _run_decoupled(window: Window, cfg: ReplayConfig, price: Pricing, producer: Producer | MultiProducer,
                   drain: Drain) -> ReplayResult:
    scheme = _scheme(window, cfg, producer.buffer, price)
    scheme.start(window.reference[0])
    clock = _ProducerClock(price, producer)
    times = run_rounds(scheme, _Greedy(window), _in_context(clock, scheme, price))
    # Producer completion after target EOS is on the clock, charged once (A.3, D.5.1).
    t_eos = times.end[-1] if times.end else 0.0
    p_stop = producer.drain(t_eos, full=drain == "full")
    startup = producer.plan.startup_s
    spans: list[Stage] = []
    if startup > 0:
        spans.append(("producer", "startup", 0.0, min(startup, p_stop), -1))
    if p_stop > startup:
        spans.append(("producer", "produce", startup, p_stop, -1))
    return _result(window, cfg, price, scheme, times, max(clock.t, p_stop), clock.after_s, "queue", tuple(spans))


def replay_many(windows: list[Window], config: ReplayConfig, profile: DeviceProfile,
                plans: Mapping[str, ProducerPlan] | None = None, *, drain: Drain = "boundary",
                audit: bool = True) -> list[ReplayResult]:
    return [replay(w, config, profile, plan=None if plans is None else plans.get(w.window_id), drain=drain,
                   audit=audit) for w in windows]


def results_frame(results: list[ReplayResult]) -> pl.DataFrame:
    """Per-window table (window_id, config, tokens, time, ...) for ``workbench.metrics``."""
    return pl.DataFrame([r.summary() for r in results],
                        schema_overrides={"source": pl.Utf8, "budget": pl.Int64})


__all__ = ["DECOUPLED", "SERIAL", "STAGE_SCHEMA", "DraftWork", "ReplayConfig", "ReplayResult", "Stage",
           "producer_plan", "replay", "replay_many", "results_frame"]
