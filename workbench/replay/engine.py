"""Event-driven phone-profile replay of one window (paper D.1.3, D.2, D.5.1; clock per A.3).

Two resources share one wall clock that starts after prefill:

* the **verifier** (target) runs one round after another and never waits: each round is a
  decision at ``t_decide`` (the scheme's ``plan(now)`` sees only what is published by then),
  serial drafting for SD/ASP, the target call, and per-round loop/queue work;
* the **producer** (As²d only, see ``producer.py``) runs from time 0 and publishes batches.

While both are busy, the target call uses the profile's concurrent cost and the producer its
coexistence factor; a call that outlives the producer finishes at the idle rate. After target
EOS the producer is stopped at its next operation boundary and that drain is charged once.

The schemes are the decoding core's, unchanged: this module only owns time and prices work.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

import polars as pl

from workbench.decoding import (
    ROUND_COLUMNS,
    DraftWork,
    ExactnessError,
    ReferenceTarget,
    RoundRecord,
    Scheme,
    TrajectoryDrafter,
    make_scheme,
)

from .audit import audit_run
from .pricing import Pricing, pricing_for
from .producer import Producer, ProducerPlan
from .profile import DeviceProfile
from .trajectory import Window

Drain = Literal["boundary", "full"]
SERIAL = frozenset({"target_only", "sd", "asp", "as2d_wo_td"})
DECOUPLED = frozenset({"as2d", "as2d_wo_bc"})

Stage = tuple[str, str, float, float, int]  # resource, stage, start, end, round (-1: none)
STAGE_SCHEMA = {"resource": pl.Utf8, "stage": pl.Utf8, "start": pl.Float64, "end": pl.Float64,
                "round": pl.Int64}


@dataclass(frozen=True, slots=True)
class ReplayConfig:
    """One catalog entry: a scheme and its fixed settings (chosen before test, D.2.6)."""

    scheme: str
    source: str | None = None  # candidate source for the decoupled schemes
    budget: int = 7  # As²d proposal budget b (physical K <= b + 1); cap of as2d_wo_td
    width: int = 8  # standard SD physical width K
    threshold: float = 0.4
    cap: int = 24
    window: int = 8  # alignment search window

    @property
    def label(self) -> str:
        if self.scheme in DECOUPLED:
            return f"{self.scheme}/{self.source}/b{self.budget if self.scheme == 'as2d' else self.cap}"
        if self.scheme == "sd":
            return f"sd/K{self.width}"
        if self.scheme in ("asp", "as2d_wo_td"):
            return f"{self.scheme}/cap{self.cap if self.scheme == 'asp' else self.budget}"
        return self.scheme


@dataclass(frozen=True, slots=True)
class ReplayResult:
    """One replayed window. Round times and stage intervals are kept as plain lists and turned
    into timed ``RoundRecord``s / stage tuples only on request (the oracle replays ~50k runs)."""

    window_id: str
    dataset: str
    config: ReplayConfig
    profile: str
    tokens: int  # committed target tokens (the whole reference, EOS included)
    time: float  # decode clock in seconds, drain included
    t_eos: float  # when the target committed its last token
    untimed: tuple[RoundRecord, ...] = field(repr=False)
    t_decide: list[float] = field(repr=False)
    t_start: list[float] = field(repr=False)
    t_end: list[float] = field(repr=False)
    after_s: float = 0.0  # per-round work after the call: loop residual or queue
    producer_spans: tuple[Stage, ...] = ()

    @property
    def tps(self) -> float:
        return self.tokens / self.time

    @property
    def records(self) -> tuple[RoundRecord, ...]:
        return tuple(r.timed(a, b, c) for r, a, b, c in
                     zip(self.untimed, self.t_decide, self.t_start, self.t_end, strict=True))

    @property
    def stages(self) -> tuple[Stage, ...]:
        """Completed stage intervals (D.2.7): resource, stage, start, end, round."""
        serial = self.config.scheme in SERIAL
        pre = ("producer", "draft") if serial else ("verifier", "align")
        call = "step" if self.config.scheme == "target_only" else "verify"
        post = "loop" if serial else "queue"
        out: list[Stage] = []
        for i, (a, b, c) in enumerate(zip(self.t_decide, self.t_start, self.t_end, strict=True)):
            if b > a:
                out.append((*pre, a, b, i))
            out.append(("verifier", call, b, c, i))
            if self.after_s:
                out.append(("other", post, c, c + self.after_s, i))
        return (*out, *self.producer_spans)

    def summary(self) -> dict:
        c = self.config
        return {"window_id": self.window_id, "dataset": self.dataset, "profile": self.profile,
                "config": c.label, "scheme": c.scheme, "source": c.source,
                "budget": c.budget if c.scheme in DECOUPLED | {"as2d_wo_td"} else None,
                "tokens": self.tokens, "time": self.time, "rounds": len(self.untimed)}

    def rounds_frame(self) -> pl.DataFrame:
        rows = [r.as_row() for r in self.records]
        df = pl.DataFrame(rows, schema_overrides={"chain": pl.List(pl.Int64), "provenance": pl.List(pl.Int64),
                                                  "committed": pl.List(pl.Int64)})
        return df.select(ROUND_COLUMNS).with_columns(
            pl.lit(self.window_id).alias("window_id"), pl.lit(self.config.label).alias("config"))

    def stages_frame(self) -> pl.DataFrame:
        df = pl.DataFrame(list(self.stages), schema=STAGE_SCHEMA, orient="row")
        return df.with_columns(pl.lit(self.window_id).alias("window_id"),
                               pl.lit(self.config.label).alias("config"), pl.lit(self.time).alias("T"))


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

    def __call__(self, chain: tuple[int, ...]) -> list[int]:
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


def _scheme(window: Window, cfg: ReplayConfig, buffer: object | None) -> Scheme:
    drafter = None
    if cfg.scheme in ("sd", "asp", "as2d_wo_td"):
        if window.drafts is None:
            raise ValueError(f"window {window.window_id!r}: scheme {cfg.scheme!r} needs saved drafts")
        drafter = TrajectoryDrafter(window.reference, window.drafts)
    return make_scheme(cfg.scheme, max_output=window.max_output, eos_id=window.eos_id, drafter=drafter,
                       source=buffer, budget=cfg.budget, width=cfg.width, threshold=cfg.threshold,
                       cap=cfg.cap, window=cfg.window)


def replay(
    window: Window,
    config: ReplayConfig,
    profile: DeviceProfile,
    *,
    plan: ProducerPlan | None = None,
    drain: Drain = "boundary",
    audit: bool = True,
) -> ReplayResult:
    """Replay one window under one configuration and device profile; audited unless told not."""
    price = pricing_for(profile)
    target = ReferenceTarget(window.reference, window.eos_id, window.vocab_size) if config.scheme in SERIAL else None
    buffer = None
    if config.scheme in DECOUPLED:
        if plan is None:
            plan = producer_plan(window, config.source, profile)
        producer = Producer(plan)
        buffer = producer.buffer
        result = _run_decoupled(window, config, price, target, producer, drain)
    elif config.scheme in SERIAL:
        result = _run_serial(window, config, price, target)
    else:
        raise ValueError(f"replay: unknown scheme {config.scheme!r}")
    if audit:
        audit_run(window, result, price, buffer)
    return result


def producer_plan(window: Window, source: str | None, profile: DeviceProfile) -> ProducerPlan:
    if source is None or source not in window.sources:
        raise ValueError(f"window {window.window_id!r} has no source {source!r} (has {sorted(window.sources)})")
    return ProducerPlan.build(window.sources[source], profile.source(source), window.vocab_size)


class _Clock:
    """Round times as three lists; records stay untimed until someone asks (see ReplayResult)."""

    __slots__ = ("decide", "start", "end")

    def __init__(self) -> None:
        self.decide: list[float] = []
        self.start: list[float] = []
        self.end: list[float] = []

    def result(self, window: Window, cfg: ReplayConfig, price: Pricing, scheme: Scheme, time: float,
               after_s: float, spans: tuple[Stage, ...] = ()) -> ReplayResult:
        t_eos = self.end[-1] if self.end else 0.0
        return ReplayResult(window.window_id, window.dataset, cfg, price.name, len(scheme.output), time, t_eos,
                            tuple(scheme.records), self.decide, self.start, self.end, after_s, spans)


def _run_serial(window: Window, cfg: ReplayConfig, price: Pricing, target: ReferenceTarget) -> ReplayResult:
    """Target-only, SD, ASP: drafting, verification and loop work strictly in sequence."""
    scheme = _scheme(window, cfg, None)
    scheme.start(target.prefill())
    target_only = cfg.scheme == "target_only"
    loop = 0.0 if target_only else price.loop_s
    clock = _Clock()
    t = 0.0
    while not scheme.done:
        call = scheme.plan(t)
        t_start = t + price.draft(call.work)
        cost = price.step_s if target_only else price.verify(call.width, False)
        rec = scheme.commit(call, target.verify(call.root, call.chain))
        target.keep(rec.accepted)
        clock.decide.append(t)
        clock.start.append(t_start)
        clock.end.append(t_start + cost)
        t = t_start + cost + loop
    return clock.result(window, cfg, price, scheme, t, loop)


def _run_decoupled(window: Window, cfg: ReplayConfig, price: Pricing, target: None,
                   producer: Producer, drain: Drain) -> ReplayResult:
    """As²d and its w/o-BC ablation: the verifier loop against a concurrently running producer."""
    scheme = _scheme(window, cfg, producer.buffer)
    greedy = _Greedy(window)
    scheme.start(window.reference[0])
    clock = _Clock()
    t = 0.0
    align, queue = price.align_s, price.queue_s
    # With a static plan the producer ignores the verifier: it is busy on [0, total_work).
    static_end = producer.plan.total_work if producer.plan.static is not None else None
    while not scheme.done:
        if static_end is None:
            producer.advance(t, slowed=False)  # publish what is out by the decision time
        call = scheme.plan(t)
        t_start = t + align
        idle = price.verify(call.width, False)
        if static_end is not None:
            if t_start >= static_end:
                t_end = t_start + idle
            else:
                conc = price.verify(call.width, True)
                t_end = t_start + conc
                if t_end > static_end:  # the producer finishes mid-call: the rest at the idle rate
                    t_end = static_end + (1.0 - (static_end - t_start) / conc) * idle
        else:
            producer.advance(t_start, slowed=False)
            if producer.busy():
                conc = price.verify(call.width, True)
                p_end = producer.finish_time_if(slowed=True)
                t_end = t_start + conc
                if t_end > p_end:
                    t_end = p_end + (1.0 - (p_end - t_start) / conc) * idle
                    producer.advance(p_end, slowed=True)
                producer.advance(t_end, slowed=True)
            else:
                t_end = t_start + idle
        rec = scheme.commit(call, greedy(call.chain))
        greedy.keep(rec.accepted)
        clock.decide.append(t)
        clock.start.append(t_start)
        clock.end.append(t_end)
        t = t_end + queue
    # Producer completion after target EOS is on the clock, charged once (A.3, D.5.1).
    t_eos = clock.end[-1] if clock.end else 0.0
    p_stop = producer.drain(t_eos, full=drain == "full")
    startup = producer.plan.startup_s
    spans: list[Stage] = []
    if startup > 0:
        spans.append(("producer", "startup", 0.0, min(startup, p_stop), -1))
    if p_stop > startup:
        spans.append(("producer", "produce", startup, p_stop, -1))
    return clock.result(window, cfg, price, scheme, max(t, p_stop), queue, tuple(spans))


def replay_many(windows: list[Window], config: ReplayConfig, profile: DeviceProfile,
                plans: Mapping[str, ProducerPlan] | None = None, **kw: object) -> list[ReplayResult]:
    return [replay(w, config, profile, plan=None if plans is None else plans.get(w.window_id), **kw)
            for w in windows]


def results_frame(results: list[ReplayResult]) -> pl.DataFrame:
    """Per-window table (window_id, config, tokens, time, ...) for ``workbench.metrics``."""
    return pl.DataFrame([r.summary() for r in results],
                        schema_overrides={"source": pl.Utf8, "budget": pl.Int64})


__all__ = ["DECOUPLED", "SERIAL", "DraftWork", "ReplayConfig", "ReplayResult", "producer_plan", "replay",
           "replay_many", "results_frame"]
