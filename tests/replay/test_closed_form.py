"""Replayed time equals hand-computed time (to 1e-9) for target-only, SD and As²d."""

from __future__ import annotations

from dataclasses import replace

import pytest
from replay_fixtures import constant_profile, exact_window

from workbench.replay.engine import ReplayConfig, producer_plan, replay
from workbench.replay.synthetic import SyntheticSpec, paper_like_sources, synthetic_windows

MS = 1e-3


def test_target_only_is_n_minus_one_steps() -> None:
    w = exact_window(25)
    r = replay(w, ReplayConfig("target_only"), constant_profile())
    # prefill yields the first token; each 50 ms step yields one more, EOS needs no forward after it
    assert r.time == pytest.approx(24 * 50 * MS, abs=1e-9)
    assert r.tokens == 25 and len(r.records) == 24


def test_standard_sd_k8_exact_drafter() -> None:
    w = exact_window(25)
    r = replay(w, ReplayConfig("sd", width=8), constant_profile())
    # 3 rounds of K8 (7 accepted + bonus); 7 draft forwards each, +1 catch-up forward in rounds 2-3
    expected = 3 * ((40 + 80) + 5) * MS + (7 + 8 + 8) * 10 * MS
    assert r.time == pytest.approx(expected, abs=1e-9)
    assert [x.width for x in r.records] == [8, 8, 8]


def test_as2d_instant_producer_b7() -> None:
    w = exact_window(25)
    p = constant_profile(forward_ms=0.0)
    r = replay(w, ReplayConfig("as2d", source="qwen", budget=7), p)
    # everything is published at t=0 and the producer is idle: 3 idle K8 calls, align + queue each
    assert r.time == pytest.approx(3 * (1 + 120 + 2) * MS, abs=1e-9)
    assert [x.width for x in r.records] == [8, 8, 8]


def test_as2d_producer_at_known_rate_with_coexistence() -> None:
    """10 ms/token producer, batches of 8, concurrent verifier cost 1.5x until it finishes (410 ms)."""
    w = exact_window(41)
    p = constant_profile(align_ms=0.0, queue_ms=0.0)
    r = replay(w, ReplayConfig("as2d", source="qwen", budget=7), p)
    k1 = 1.5 * 50  # nothing published before 80 ms: two concurrent plain steps
    k6 = 1.5 * 100  # at 150 ms batch 1 is out: anchor r2, chain r3..r7
    crossing = (410 - 300) + (1 - 110 / 180) * 120  # K8 from 300 ms; the producer ends at 410 ms
    expected = (2 * k1 + k6 + crossing + 3 * 120) * MS
    assert r.time == pytest.approx(expected, abs=1e-9)
    assert [x.width for x in r.records] == [1, 1, 6, 8, 8, 8, 8]
    assert [x.k1_reason for x in r.records[:2]] == ["not_ready", "not_ready"]


@pytest.mark.parametrize(("drain", "expected_ms"), [("boundary", 300.0), ("full", 500.0)])
def test_producer_drain_after_target_eos(drain: str, expected_ms: float) -> None:
    # Producer 100 ms/token; the target finishes alone at 4 x 62.5 = 250 ms, mid-forward.
    w = exact_window(5)
    p = constant_profile(forward_ms=100.0, conc=1.25, align_ms=0.0, queue_ms=0.0)
    r = replay(w, ReplayConfig("as2d", source="qwen", budget=7), p, drain=drain)
    assert r.t_eos == pytest.approx(0.25, abs=1e-12)
    assert r.time == pytest.approx(expected_ms * MS, abs=1e-9)


def test_dynamic_producer_matches_static_when_unslowed() -> None:
    """The live-publishing path and the prebuilt-buffer fast path agree when the factor is 1."""
    from workbench.replay.profile import load_profile

    prof = load_profile("xiaomi_11_pro")
    for w in synthetic_windows(SyntheticSpec(n_windows=6, sources=paper_like_sources(), seed=3)):
        for src in ("qwen", "parakeet"):
            plan = producer_plan(w, src, prof)
            cfg = ReplayConfig("as2d", source=src, budget=5)
            fast = replay(w, cfg, prof, plan=plan)
            slow = replay(w, cfg, prof, plan=replace(plan, static=None))
            assert slow.time == pytest.approx(fast.time, rel=1e-12)
            assert [r.committed for r in slow.untimed] == [r.committed for r in fast.untimed]


def test_slower_producer_under_contention_costs_time() -> None:
    w = exact_window(60)
    base = replay(w, ReplayConfig("as2d", source="qwen", budget=7), constant_profile(producer_factor=1.0))
    slowed = replay(w, ReplayConfig("as2d", source="qwen", budget=7), constant_profile(producer_factor=3.0))
    assert slowed.time > base.time


def test_measured_operation_times_replace_profile_prices() -> None:
    """A trajectory with measured producer times is not re-priced (nor slowed by coexistence)."""
    w = exact_window(41)
    track = w.sources["qwen"]
    measured = replace(w, sources={"qwen": replace(track, op_ms=(10.0,) * len(track.op_tokens))})
    p = constant_profile(forward_ms=99.0, producer_factor=4.0, align_ms=0.0, queue_ms=0.0)
    r = replay(measured, ReplayConfig("as2d", source="qwen", budget=7), p)
    ref = replay(w, ReplayConfig("as2d", source="qwen", budget=7), constant_profile(align_ms=0.0, queue_ms=0.0))
    assert r.time == pytest.approx(ref.time, abs=1e-12)
