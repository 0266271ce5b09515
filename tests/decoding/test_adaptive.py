"""Adaptive As²d variants on hand-built windows: what each one verifies, and that the output stays exact."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.decoding import PublicationBuffer, ReferenceTarget, RoundCosts, audit_exact, decode, make_scheme
from workbench.decoding.drafter import TrajectoryDrafter
from workbench.decoding.records import FRESH
from workbench.decoding.schemes.source_choice import SOURCE_STRIDE, MultiSource

from . import strategies as gen
from .strategies import STREAMS, make_stream, make_window, windows

EOS, VOCAB = 99, 100
R0, A, B, X, Y, D, E = 1, 2, 3, 4, 5, 6, 7


def buffer(tokens, t=0.0) -> PublicationBuffer:
    return PublicationBuffer.from_stream(tokens, [t] * len(tokens), [0.9] * len(tokens), vocab_size=VOCAB)


def drafter_for(reference, conf=0.9) -> TrajectoryDrafter:
    """A drafter that proposes the reference's continuation after every committed prefix."""
    return TrajectoryDrafter(reference, {c: (reference[c:], [conf] * len(reference[c:]))
                                         for c in range(1, len(reference) + 1)})


def run(name, reference, stream, t_publish=0.0, costs=None, **settings):
    scheme = make_scheme(name, max_output=len(reference) + 4, eos_id=EOS, source=buffer(stream, t_publish),
                         drafter=drafter_for(reference), costs=costs, **settings)
    res = decode(scheme, ReferenceTarget(reference, EOS, VOCAB))
    audit_exact(res.output, reference, name)
    return res.records


SUBSTITUTED = [R0, A, B, Y, D, E, EOS]  # the producer heard X where the target says Y
PRODUCED = [R0, A, B, X, D, E, EOS]


def test_as2d_spends_a_plain_step_on_the_correction_and_the_guess_does_not():
    plain = run("as2d", SUBSTITUTED, PRODUCED)
    assert [(r.width, r.accepted, r.k1_reason) for r in plain] == [
        (7, 2, None), (1, 0, "correction"), (3, 2, None)]
    guess = run("as2d_subst", SUBSTITUTED, PRODUCED)
    # Round 1 verifies the correction Y plus the continuation after the mismatch slot: d, e, EOS.
    assert [(r.width, r.accepted) for r in guess] == [(7, 2), (4, 3)]
    assert guess[1].chain == (D, E, EOS) and guess[1].provenance == (4, 5, 6)


def test_a_wrong_guess_falls_back_to_the_papers_realignment():
    inserted = [R0, A, B, Y, X, D, E, EOS]  # the target inserted Y: no substitution happened
    recs = run("as2d_subst", inserted, PRODUCED)
    assert recs[1].chain[0] == D and recs[1].accepted == 0  # the guess is verified and rejected
    # Next round anchors the target's X at its buffer slot and reuses d, e, EOS.
    assert recs[2].provenance[0] == 4 and recs[2].accepted == 3


def test_when_the_correction_is_the_next_published_token_the_guess_continues_after_it():
    extra = [R0, A, B, X, Y, D, E, EOS]  # the producer wrote an extra X before the target's Y
    recs = run("as2d_subst", SUBSTITUTED, extra)
    assert (recs[0].accepted, recs[0].committed[-1]) == (2, Y)  # X rejected at slot 3, correction Y
    # Y is published at slot 4: the guess anchors there and verifies d, e, EOS after it.
    assert recs[1].chain == (D, E, EOS) and recs[1].provenance == (5, 6, 7) and recs[1].accepted == 3
    assert len(recs) == 2


def test_a_guess_the_correction_anchors_is_weighed_as_an_anchored_chain():
    # After the producer's extra X is rejected, the correction Y is the next published token: the guess
    # anchored there is confirmed by the buffer, so the combination verifies D, E with its anchored-chain
    # estimate (prior 0.95) -- not the pessimistic guess estimate, which verified D alone, then a step.
    extra = [R0, A, B, X, Y, D, E, EOS]
    costs = {k: 1.0 + 0.2 * (k - 1) for k in range(1, 26)}
    recs = run("as2d_adaptive", SUBSTITUTED, extra, costs=costs, budget=8, hybrid=False, prior=0.95)
    assert [(r.width, r.accepted) for r in recs] == [(7, 2), (3, 2)]
    assert recs[1].chain == (D, E) and recs[1].committed == (D, E, EOS)


def test_hybrid_drafts_when_the_buffer_has_nothing_and_reads_the_buffer_otherwise():
    late = run("as2d_hybrid", SUBSTITUTED, PRODUCED, t_publish=1e9)  # never published in time
    assert late[0].provenance[0] == FRESH and late[0].work.forwards > 0
    assert len(late) == 1  # the drafter proposes the reference: one round commits everything
    ready = run("as2d_hybrid", SUBSTITUTED, PRODUCED)
    assert ready[0].provenance[0] == 1 and ready[0].work.forwards == 0


@pytest.mark.parametrize("verify", [1.0, 100.0])
def test_adaptive_verifies_wide_when_cheap_and_steps_when_verifies_cost_too_much(verify):
    reference = [R0, A, B, D, E, X, Y, D, E, A, EOS]
    costs = {1: 1.0, **{k: verify for k in range(2, 26)}}
    recs = run("as2d_adaptive", reference, reference, costs=costs, budget=24, hybrid=False)
    if verify == 1.0:  # a wide verify costs a step: verify every ready candidate but the EOS (the bonus is it)
        assert recs[0].width == len(reference) - 1 and recs[0].committed[-1] == EOS
    else:  # no chain can earn 100 steps' worth: plain steps only
        assert all(r.width == 1 for r in recs) and recs[0].k1_reason == "cost"


def test_adaptive_drafts_only_when_drafting_is_worth_it():
    costs = {1: 1.0, **{k: 1.0 for k in range(2, 26)}}
    cheap = run("as2d_adaptive", SUBSTITUTED, PRODUCED, t_publish=1e9, costs=RoundCosts(costs, drafter_forward=0.01))
    assert cheap[0].provenance and cheap[0].provenance[0] == FRESH
    dear = run("as2d_adaptive", SUBSTITUTED, PRODUCED, t_publish=1e9, costs=RoundCosts(costs, drafter_forward=50.0))
    assert all(r.width == 1 and r.work.forwards == 0 for r in dear)


LONG_TARGET = [R0, A, B, D, E, A, D, B, Y, D, E, EOS]
LONG_PRODUCED = [R0, A, B, D, E, A, D, B, X, D, E, EOS]


def drafting_round(forward, **settings):
    """Only the producer's first batch (8 tokens) is published in time. Round 0 verifies its 7 candidates
    and commits 8 tokens for a cost of 1 (running rate r = 8); round 1 has nothing usable, so it may
    draft. A plain step is worth 1 - 8 = -7 there."""
    times = [0.0] * 8 + [1e9] * (len(LONG_PRODUCED) - 8)
    source = PublicationBuffer.from_stream(LONG_PRODUCED, times, [0.9] * len(LONG_PRODUCED), vocab_size=VOCAB)
    costs = RoundCosts({k: 1.0 for k in range(1, 26)}, drafter_forward=forward)
    scheme = make_scheme("as2d_adaptive", max_output=16, eos_id=EOS, source=source,
                         drafter=drafter_for(LONG_TARGET), costs=costs, **settings)
    recs = decode(scheme, ReferenceTarget(LONG_TARGET, EOS, VOCAB)).records
    assert (recs[0].width, recs[0].accepted) == (8, 7) and recs[1].k1_reason in (None, "not_ready")
    return recs[1]


@pytest.mark.parametrize("forward, drafts", [(0.03, False), (0.01, True)])
def test_a_draft_pays_for_the_drafters_catch_up(forward, drafts):
    # The drafter's cache holds none of the 9 committed tokens: a draft of n costs the verify (1) plus
    # n + 1 forwards (catch-up first), each shared with the still producing source (x2). Its estimate
    # starts at 2/3: the best draft (n = 2) is worth 1 + 2/3 + 4/9 - 8 (1 + 6f). At f = 0.03 that is
    # below a plain step (without the catch-up, n = 1 at 1 + 2/3 - 8 (1 + 2f) would be above); at
    # f = 0.01 it is above.
    r = drafting_round(forward)
    assert (r.work.forwards > 0) == drafts
    assert bool(r.provenance and r.provenance[0] == FRESH) == drafts


def test_the_sources_prior_is_not_the_drafters():
    # A drafter estimate starting at the sources' certainty would draft: n + 1 tokens for
    # 8 (1 + 2f (n + 1)) beat -7 at f = 0.03 for any n >= 1. Its own estimate still starts at 2/3,
    # where no draft pays (the test above).
    r = drafting_round(0.03, prior=1.0, prior_rounds=1000.0)
    assert r.width == 1 and r.work.forwards == 0


def test_the_catch_up_it_prices_is_the_one_the_drafter_runs():
    # The scheme predicts, before drafting, whether the drafter's cache lags by more than the root (then
    # one catch-up forward, D.1.3). Drafts wrong at their second token every third prefix give rounds
    # that stop inside the draft (cache current) and rounds accepted whole (cache behind).
    reference = [10 + i for i in range(30)] + [EOS]
    drafts = {c: ([t if not (c % 3 == 0 and i == 1) else 98 for i, t in enumerate(reference[c:])],
                  [0.9] * len(reference[c:])) for c in range(1, len(reference) + 1)}
    seen: list[tuple[bool, bool]] = []

    class Watched(TrajectoryDrafter):
        def propose(self, prefix, n, stop_below=None):
            p = super().propose(prefix, n, stop_below)
            seen.append((len(prefix) - scheme._cached > 1, p.catchup > 1))
            return p

    costs = RoundCosts({k: 1.0 for k in range(1, 26)}, drafter_forward=0.01)
    scheme = make_scheme("as2d_adaptive", max_output=40, eos_id=EOS, source=buffer(reference, 1e9),
                         drafter=Watched(reference, drafts), costs=costs, budget=3)
    res = decode(scheme, ReferenceTarget(reference, EOS, VOCAB))
    audit_exact(res.output, reference, "as2d_adaptive")
    assert {priced for priced, _ in seen} == {True, False}  # both cases happened
    assert all(priced == lags for priced, lags in seen), seen


# -- several resident sources ---------------------------------------------------------------------

COSTS = {k: 1 + 0.1 * k for k in range(1, 26)}


def test_source_choice_verifies_the_source_that_has_the_candidates():
    empty = PublicationBuffer(vocab_size=VOCAB)  # a resident source that never publishes in time
    src = MultiSource({"late": buffer(PRODUCED, 1e9), "ready": buffer(SUBSTITUTED)})
    scheme = make_scheme("as2d_sources", max_output=12, eos_id=EOS, source=src, costs=COSTS)
    res = decode(scheme, ReferenceTarget(SUBSTITUTED, EOS, VOCAB))
    audit_exact(res.output, SUBSTITUTED, "as2d_sources")
    assert res.records[0].provenance[0] == SOURCE_STRIDE + 1  # source 1 ("ready"), slot 1
    assert all(p >= SOURCE_STRIDE for r in res.records for p in r.provenance)
    one = make_scheme("as2d_sources", max_output=12, eos_id=EOS, source=MultiSource({"e": empty}), costs=COSTS)
    assert all(r.width == 1 for r in decode(one, ReferenceTarget(SUBSTITUTED, EOS, VOCAB)).records)


@settings(max_examples=400, deadline=None)
@given(w=windows(), rng=st.randoms(use_true_random=False), kind=st.sampled_from(STREAMS),
       name=st.sampled_from(["as2d_sources", "as2d_adaptive"]), budget=st.integers(1, 24),
       span=st.integers(1, 10))
def test_several_sources_reproduce_the_greedy_reference(w, rng, kind, name, budget, span):
    stream = make_stream(rng, rng, list(w.reference), kind)
    times = [0.05 * (i + 1) * (0.5 + rng.random()) for i in range(len(stream))]
    times = [max(times[: i + 1]) for i in range(len(times))]
    second = (PublicationBuffer.from_stream(stream, times, [rng.random() for _ in stream], vocab_size=gen.VOCAB)
              if stream else PublicationBuffer(vocab_size=gen.VOCAB))
    src = MultiSource({"a": w.buffer, "b": second})
    scheme = make_scheme(name, max_output=w.max_output, eos_id=gen.EOS, source=src, drafter=w.drafter,
                         costs=RoundCosts(COSTS, drafter_forward=0.3), budget=budget, span=span)
    res = decode(scheme, ReferenceTarget(w.reference, gen.EOS, gen.VOCAB), verify_cost=lambda k: 1 + 0.1 * k,
                 draft_cost=lambda wk: 0.3 * wk.forwards)
    audit_exact(res.output, w.reference, name)
    for r in res.records:
        assert 1 <= r.width <= budget + 1
        for pos in r.provenance:  # every candidate was published by its decision time, in its own source
            assert pos == FRESH or src.publish_time_of(pos) <= r.t_decide


def test_one_source_choice_is_the_online_budget():
    """With one resident source the choice has nothing to choose: As²d online, round for round."""
    for seed in range(30):
        w = make_window(seed, STREAMS[seed % len(STREAMS)])
        got = []
        for name in ("as2d_online", "as2d_sources"):
            s = make_scheme(name, max_output=w.max_output, eos_id=gen.EOS, source=w.buffer, costs=COSTS, budget=9)
            got.append([(r.width, r.accepted, r.provenance) for r in
                        decode(s, ReferenceTarget(w.reference, gen.EOS, gen.VOCAB)).records])
        assert got[0] == got[1]
