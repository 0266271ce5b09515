"""As²d with an online budget: exact always, and its width choice follows costs and outcomes."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.decoding import PublicationBuffer, ReferenceTarget, RoundCosts, decode
from workbench.decoding.schemes.online import As2dOnline

EOS, V = 0, 64
REF = list(range(5, 35)) + [EOS]
CHEAP_WIDE = {k: 10.0 + 0.1 * k for k in range(1, 17)}  # phone-like: wide verifies nearly free
EXPENSIVE_WIDE = {1: 10.0, **{k: 30.0 * k for k in range(2, 17)}}  # any verify costs more than it can yield


def run(buf, costs, budget=8, **kw):
    scheme = As2dOnline(buf, budget, 64, EOS, costs, **kw)
    return decode(scheme, ReferenceTarget(REF, EOS, V), verify_cost=lambda k: RoundCosts.of(costs).running[k])


def test_a_perfect_producer_on_cheap_wide_verifies_uses_the_whole_budget():
    res = run(PublicationBuffer.from_stream(REF, [0.0] * len(REF)), CHEAP_WIDE)
    assert res.output == tuple(REF)
    assert max(r.width for r in res.records) == 9  # b = 8 candidates + the root
    assert all(r.k1_reason != "cost" for r in res.records)


def test_the_eos_candidate_is_left_to_the_bonus():
    # 30 tokens, budget 8: rounds of 8 candidates, then the last chain ends ... 33, 34, EOS. Verifying the
    # EOS would commit nothing the bonus does not: the last round stops before it and the bonus is EOS.
    res = run(PublicationBuffer.from_stream(REF, [0.0] * len(REF)), CHEAP_WIDE)
    last = res.records[-1]
    assert EOS not in last.chain and last.committed[-1] == EOS and last.accepted == len(last.chain)
    assert all(EOS not in r.chain for r in res.records)


def test_once_the_producer_is_done_the_rounds_are_priced_alone():
    buf = PublicationBuffer.from_stream(REF, [0.0] * len(REF))  # everything out, the producer finished
    assert buf.snapshot(0.0).complete
    beside = run(buf, EXPENSIVE_WIDE)  # priced as if the producer still ran: no verify pays
    assert all(r.width == 1 for r in beside.records)
    alone = run(buf, RoundCosts(EXPENSIVE_WIDE, idle=CHEAP_WIDE))
    assert alone.output == tuple(REF) and max(r.width for r in alone.records) == 9


def test_verifies_that_cannot_pay_become_plain_steps():
    # Even all-accepted chains yield at most n+1 tokens for 30*(n+1) ms < 1 token per 10 ms step.
    res = run(PublicationBuffer.from_stream(REF, [0.0] * len(REF)), EXPENSIVE_WIDE)
    assert res.output == tuple(REF)
    assert all(r.width == 1 for r in res.records)
    assert any(r.k1_reason == "cost" for r in res.records)


def test_a_wrong_producer_teaches_it_to_stop_verifying():
    # Host-like costs: K2 pays only when p > 0.43. A producer that is always wrong drives p to 0.
    costs = {1: 28.0, 2: 40.0, 4: 52.0, 8: 56.0, 9: 60.0}
    wrong = [t + 40 for t in REF[:-1]]  # same length, never the target's tokens
    res = run(PublicationBuffer.from_stream(wrong, [0.0] * len(wrong)), costs)
    assert res.output == tuple(REF)
    # The buffer never anchors, so every round is a plain step whatever the estimate says.
    assert all(r.width == 1 for r in res.records)


def test_acceptance_estimate_learns_from_rejections():
    # The producer matches the root but its continuation is always wrong after 1 token.
    stream = []
    for t in REF[:-1]:
        stream += [t, 63]
    costs = {1: 28.0, 2: 40.0, 3: 46.0, 4: 52.0, 8: 56.0, 9: 60.0}
    scheme = As2dOnline(PublicationBuffer.from_stream(stream, [0.0] * len(stream)), 8, 64, EOS, costs, decay=1.0)
    res = decode(scheme, ReferenceTarget(REF, EOS, V), verify_cost=lambda k: costs[k])
    assert res.output == tuple(REF)
    assert scheme.estimate.p < 0.5  # more rejections than acceptances were observed


@pytest.mark.parametrize("bad", [{}, {2: 5.0}])
def test_bad_cost_tables_are_named(bad):
    with pytest.raises(ValueError, match="costs"):
        As2dOnline(PublicationBuffer(), 4, 16, EOS, bad)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**31), st.integers(1, 24), st.floats(0.0, 1.0))
def test_exact_on_noisy_producers(seed, budget, noise):
    rng = random.Random(seed)
    stream = [t if rng.random() > noise else rng.randrange(1, V) for t in REF[:-1]]
    if rng.random() < 0.3:
        stream.insert(rng.randrange(len(stream)), rng.randrange(1, V))  # an extra producer token
    times = sorted(rng.uniform(0, 200) for _ in stream)
    costs = {1: 28.0, 2: 40.0, 4: 52.0, 8: 56.0, 16: 75.0, 25: 120.0}
    res = run(PublicationBuffer.from_stream(stream, times, batch_tokens=rng.choice([1, 4, 8])), costs, budget=budget)
    assert res.output == tuple(REF)


@pytest.mark.parametrize("prior, first_width", [(1.0, 9), (0.0, 1)])
def test_the_prior_decides_the_first_round(prior, first_width):
    # Linear costs 1 + 0.1 K: E[n] / cost[n + 1] grows with n when every slot is surely accepted, and
    # falls when none is; a prior held as firmly as 1,000 rounds decides before the window says anything.
    costs = {k: 1.0 + 0.1 * k for k in range(1, 17)}
    res = run(PublicationBuffer.from_stream(REF, [0.0] * len(REF)), costs, prior=prior, prior_rounds=1000.0)
    assert res.output == tuple(REF)
    assert res.records[0].width == first_width
    assert (res.records[0].k1_reason == "cost") == (first_width == 1)


@pytest.mark.parametrize("bad, key", [({"prior": 1.5}, "prior"), ({"prior_rounds": 0.0}, "prior_rounds")])
def test_a_bad_prior_is_named(bad, key):
    with pytest.raises(ValueError, match=key):
        As2dOnline(PublicationBuffer.from_stream(REF, [0.0] * len(REF)), 8, 64, EOS, CHEAP_WIDE, **bad)


def test_the_eos_candidate_rides_along_when_the_wider_width_is_cheaper():
    # As a host whose packed kernels start at K4 prices them: K2/K3 run unpacked and cost more than K4.
    # After the root 32, the candidates 33, 34, EOS are verified in one K4 round, not in a K3 round (or plain
    # steps) whose bonus is the EOS.
    costs = {1: 24.0, 2: 43.0, 3: 58.0, **{k: 23.0 + k for k in range(4, 17)}}
    ref = REF[-4:]  # 32, 33, 34, EOS
    buf = PublicationBuffer.from_stream(ref, [0.0] * len(ref))
    scheme = As2dOnline(buf, 8, 64, EOS, costs, prior=0.95)
    res = decode(scheme, ReferenceTarget(ref, EOS, V), verify_cost=lambda k: costs[k])
    assert res.output == tuple(ref)
    assert [r.width for r in res.records] == [4] and res.records[0].chain == (33, 34, EOS)
    # Monotone costs keep the EOS out (the bonus commits it one width narrower).
    mono = {k: 10.0 + k for k in range(1, 17)}
    res = decode(As2dOnline(buf, 8, 64, EOS, mono, prior=0.95), ReferenceTarget(ref, EOS, V),
                 verify_cost=lambda k: mono[k])
    assert [r.width for r in res.records] == [3] and res.records[0].chain == (33, 34)


def test_eos_pricing_by_hand():
    from workbench.decoding.width import eos_pricing

    costs = {1: 24.0, 2: 43.0, 3: 58.0, 4: 23.0}
    assert eos_pricing((7, 8, EOS), EOS, costs) == (2, {**costs, 3: 23.0}, True)
    assert eos_pricing((7, 8, 9), EOS, costs) == (3, costs, False)  # no EOS candidate
    assert eos_pricing((7, EOS), EOS, costs) == (1, costs, False)  # K3 costs more than K2
    assert eos_pricing((7, 8, 9, EOS), EOS, costs) == (3, costs, False)  # K5 is not priced


def test_the_source_choice_lets_the_eos_ride_too():
    from workbench.decoding.schemes.source_choice import As2dSourceChoice

    costs = {1: 24.0, 2: 43.0, 3: 58.0, **{k: 23.0 + k for k in range(4, 17)}}
    ref = REF[-4:]
    buf = PublicationBuffer.from_stream(ref, [0.0] * len(ref))
    res = decode(As2dSourceChoice(buf, 8, 64, EOS, costs, prior=0.95), ReferenceTarget(ref, EOS, V),
                 verify_cost=lambda k: costs[k])
    assert res.output == tuple(ref) and [r.width for r in res.records] == [4]


def test_supply_rate_by_hand():
    from workbench.decoding.width import supply_rate

    costs = {1: 24.0, 2: 43.0, 3: 58.0, 4: 23.0}
    assert supply_rate(1, costs) == pytest.approx(1 / 24)
    assert supply_rate(3, costs) == pytest.approx(3 / 58)  # K3 beats K1+K2 (67) and three steps (72)
    assert supply_rate(4, costs) == pytest.approx(4 / 23)
    assert supply_rate(5, costs) == pytest.approx(5 / 47)  # K4 + K1
    assert supply_rate(0, costs) is None and supply_rate(3, {2: 5.0}) is None  # nothing / widths cannot cover 3


def test_once_the_producer_is_done_the_rate_is_what_the_rest_can_earn():
    # Budget 5: one K6 round (12 ms) commits 6..10 and the bonus 11, a running rate of 0.5 token/ms. Left:
    # 12, EOS. Against 0.5 a K2 verify (18 ms) loses to a plain step (10 ms), so the window ended in two plain
    # steps (20 ms). Nothing more will be published, so the time saved can only earn what the rest can:
    # 2 tokens in 18 ms at best -- and then the K2 verify pays.
    costs = {1: 10.0, 2: 18.0, 3: 40.0, 4: 40.0, 5: 40.0, 6: 12.0, 7: 12.0}
    ref = list(range(5, 13)) + [EOS]
    buf = PublicationBuffer.from_stream(ref, [0.0] * len(ref))
    res = decode(As2dOnline(buf, 5, 64, EOS, costs, prior=0.95), ReferenceTarget(ref, EOS, V),
                 verify_cost=lambda k: costs[k])
    assert res.output == tuple(ref)
    assert [r.width for r in res.records] == [6, 2]
    # While the producer still runs, the window's own rate decides: the same chain ends in plain steps.
    late = PublicationBuffer.from_stream(ref, [0.0] * (len(ref) - 1) + [1e9])  # EOS published much later
    res = decode(As2dOnline(late, 5, 64, EOS, costs, prior=0.95), ReferenceTarget(ref, EOS, V),
                 verify_cost=lambda k: costs[k])
    assert res.output == tuple(ref) and [r.width for r in res.records] == [6, 1, 1]


def test_the_source_choice_caps_the_rate_once_every_producer_is_done():
    from workbench.decoding.schemes.source_choice import As2dSourceChoice

    costs = {1: 10.0, 2: 18.0, 3: 40.0, 4: 40.0, 5: 40.0, 6: 12.0, 7: 12.0}  # as above
    ref = list(range(5, 13)) + [EOS]
    buf = PublicationBuffer.from_stream(ref, [0.0] * len(ref))
    res = decode(As2dSourceChoice(buf, 5, 64, EOS, costs, prior=0.95), ReferenceTarget(ref, EOS, V),
                 verify_cost=lambda k: costs[k])
    assert res.output == tuple(ref) and [r.width for r in res.records] == [6, 2]
