"""Adaptive As²d variants under replay: audited on every phone profile, several resident sources included."""

from __future__ import annotations

import pytest

from workbench.decoding.schemes.source_choice import SOURCE_STRIDE
from workbench.replay.engine import producer_plan, replay
from workbench.replay.multi_source import MultiPlan
from workbench.replay.pricing import pricing_for
from workbench.replay.producer import Producer, ProducerPlan
from workbench.replay.profile import SourceCost, load_profile
from workbench.replay.result import ReplayConfig
from workbench.replay.synthetic import SyntheticSpec, paper_like_sources, synthetic_windows
from workbench.replay.trajectory import SourceTrack

WINDOWS = synthetic_windows(SyntheticSpec(n_windows=6, sources=paper_like_sources()))
VARIANTS = [("as2d_guarded", "qwen"), ("as2d_subst", "qwen"), ("as2d_hybrid", "qwen"),
            ("as2d_sources", "qwen+sensevoice"), ("as2d_adaptive", "qwen+parakeet+sensevoice")]


@pytest.mark.parametrize("profile", ["k70_pro", "xiaomi_11_pro", "xiaomi_14", "redmi_note_9_pro"])
def test_every_variant_passes_the_replay_audits(profile):
    prof = load_profile(profile)
    for scheme, source in VARIANTS:
        for w in WINDOWS:
            r = replay(w, ReplayConfig(scheme, source=source, budget=7), prof)  # audited: exact, causal, priced
            assert r.tokens == len(w.reference)


def test_hybrid_rounds_pay_their_drafting_on_the_workers_the_producer_uses():
    prof = load_profile("xiaomi_14")
    price = pricing_for(prof)
    shared = 0
    for w in WINDOWS:
        alone_end = producer_plan(w, "qwen", prof).total_work  # the producer is busy at least this long
        r = replay(w, ReplayConfig("as2d_hybrid", source="qwen", budget=7), prof)
        for rec, t_decide, t_start in zip(r.untimed, r.t_decide, r.t_start, strict=True):
            if rec.work.forwards:
                work = price.draft(rec.work)  # forwards plus the confidence rows the threshold reads
                assert t_start - t_decide >= price.align_s + work - 1e-12
                if t_decide + price.align_s + 2 * work < alone_end:  # producer busy throughout: half the workers
                    assert t_start - t_decide == pytest.approx(price.align_s + 2 * work, rel=1e-9)
                    shared += 1
    assert shared > 0


def _plan(name: str, ops: int, op_ms: float, batch: int | None) -> ProducerPlan:
    kind = "autoregressive" if batch else "chunk"
    track = SourceTrack(name, tuple(range(1, ops + 1)), None, (1,) * ops)
    cost = SourceCost(name, kind, op_ms, 0.0, 0.0, 1.0, batch, False)
    return ProducerPlan.build(track, cost, 100)


def test_two_resident_producers_share_one_pool_of_drafting_workers():
    # By hand: A has 10 ops of 10 ms, B 4 ops of 10 ms, one token each. While both run each gets half
    # the pool: B's 40 ms of work ends at 80 ms, A has then done 40 ms and finishes its other 60 ms
    # alone, at 140 ms = the summed work (the pool never idles).
    pool = MultiPlan((_plan("a", 10, 10.0, 1), _plan("b", 4, 10.0, None))).producer()
    assert pool.finish_time_if(slowed=False) == pytest.approx(0.140)
    pool.advance(0.080, slowed=False)
    a, b = pool.producers
    assert not b.busy() and a.work == pytest.approx(0.040)
    assert b.buffer.publish_time_of(3) == pytest.approx(0.080)  # B's last chunk: 4 ops at half rate
    assert a.buffer.publish_time_of(0) == pytest.approx(0.020)  # A's first token: 10 ms at half rate
    # Serial drafting of 30 ms beside A alone: both at half rate -> 60 ms, A advances 30 ms.
    assert pool.draft(0.080, 0.030) == pytest.approx(0.140)
    assert a.work == pytest.approx(0.070)
    # After EOS the operation in flight completes; nothing is left for B.
    assert pool.drain(0.145, full=False) == pytest.approx(0.150)


def test_a_second_resident_source_never_makes_the_first_publish_sooner():
    prof = load_profile("k70_pro")
    eligible = 0
    for w in WINDOWS:
        plans = producer_plan(w, "qwen+parakeet", prof).plans
        if not w.sources["parakeet"].eligible:  # language-ineligible (D.4.3): it does not run at all
            assert [p.source for p in plans] == ["qwen"]
            continue
        eligible += 1
        alone = Producer(producer_plan(w, "qwen", prof)).buffer
        both = MultiPlan(plans).producer()
        both.advance(1e9, slowed=False)
        n = len(w.sources["qwen"].tokens)
        times = [(alone.publish_time_of(i), both.buffer.publish_time_of(i)) for i in range(n)]
        assert all(t2 >= t1 - 1e-12 for t1, t2 in times)
        assert any(t2 > t1 + 1e-6 for t1, t2 in times)  # parakeet's chunks took a share while qwen ran
    assert eligible > 0


def test_source_choice_uses_more_than_one_source():
    prof = load_profile("k70_pro")
    used = set()
    for w in WINDOWS:
        r = replay(w, ReplayConfig("as2d_sources", source="qwen+parakeet+sensevoice", budget=7), prof)
        used |= {p // SOURCE_STRIDE for rec in r.untimed for p in rec.provenance if p >= 0}
    assert len(used) >= 2
