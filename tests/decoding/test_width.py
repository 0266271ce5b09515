"""The cost-aware chain-length rule against hand-computed cases (closed-form checks)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from workbench.decoding.width import AcceptanceEstimate, choose_chain_length, expected_tokens

CHEAP_WIDE = {1: 10.0, 2: 10.5, 4: 11.0, 8: 12.0, 16: 14.0}  # a phone: wide verifies nearly free
CPU_LIKE = {1: 28.0, 2: 40.0, 4: 52.0, 8: 56.0}  # the host: K4 ~ 1.85 steps


def test_expected_tokens_closed_form():
    assert expected_tokens(0, 0.3) == 1.0
    assert expected_tokens(3, 1.0) == 4.0
    assert expected_tokens(2, 0.5) == pytest.approx(1 + 0.5 + 0.25)


def test_full_acceptance_and_cheap_wide_verifies_take_the_widest_priced_width():
    # 15 candidates ready: widest priced width is 16 -> chain 15.
    assert choose_chain_length(15, CHEAP_WIDE, 1.0) == 15
    # 9 ready: width 10 is not priced, so the widest priced width that fits is 8 -> chain 7.
    assert choose_chain_length(9, CHEAP_WIDE, 1.0) == 7


def test_zero_acceptance_takes_plain_steps():
    assert choose_chain_length(15, CHEAP_WIDE, 0.0) == 0
    assert choose_chain_length(7, CPU_LIKE, 0.0) == 0


def test_nothing_ready_is_a_plain_step():
    assert choose_chain_length(0, CHEAP_WIDE, 1.0) == 0


def test_break_even_on_the_host_by_hand():
    # K=2 pays when (1 + p) / 40 > 1 / 28, i.e. p > 40/28 - 1 = 0.4286.
    assert choose_chain_length(1, CPU_LIKE, 0.42) == 0
    assert choose_chain_length(1, CPU_LIKE, 0.44) == 1
    # p = 0.9 with 7 ready: rates 1/28=.0357, 1.9/40=.0475, (1+.9+.81+.729)/52=.0661, E[7]/56=.0891.
    assert choose_chain_length(7, CPU_LIKE, 0.9) == 7


def test_rejects_bad_inputs():
    with pytest.raises(ValueError, match="acceptance"):
        choose_chain_length(3, CPU_LIKE, 1.5)
    with pytest.raises(ValueError, match="width 1"):
        choose_chain_length(3, {2: 5.0}, 0.5)


@given(st.integers(0, 24), st.floats(0.0, 1.0), st.dictionaries(st.integers(2, 25), st.floats(0.1, 500.0)),
       st.floats(0.1, 500.0))
def test_choice_is_the_argmax_over_priced_widths(ready, p, wide, step):
    costs = {1: step, **wide}
    n = choose_chain_length(ready, costs, p)
    assert 0 <= n <= ready and (n == 0 or n + 1 in costs)
    best = max([1.0 / step] + [expected_tokens(m, p) / costs[m + 1] for m in range(1, ready + 1) if m + 1 in costs])
    assert expected_tokens(n, p) / costs[n + 1] == pytest.approx(best, rel=1e-9)


def test_acceptance_estimate_counts_each_slot_it_tried():
    # By hand: slot i = (successes_i + 2 * pooled) / (trials_i + 2), pooled = (S + 1) / (T + 2).
    est = AcceptanceEstimate(decay=1.0, prior=1.0, prior_trials=2.0)
    assert est.slots(3) == pytest.approx([0.5, 0.5, 0.5])  # nothing seen: the prior everywhere
    est.observe(4, 4)  # all four slots tried and accepted: pooled 5/6, each slot (1 + 5/3) / 3
    assert est.slots(4) == pytest.approx([8 / 9] * 4)
    est.observe(4, 1)  # slot 1 accepted, slot 2 rejected, slots 3-4 not tried: S=5, T=6, pooled 3/4
    assert est.slots(4) == pytest.approx([3.5 / 4, 2.5 / 4, 2.5 / 3, 2.5 / 3])
    est.observe(0, 0)  # plain step: no information
    assert est.slots(5) == pytest.approx([3.5 / 4, 2.5 / 4, 2.5 / 3, 2.5 / 3, 2.5 / 3])  # slot 5 borrows slot 4
    with pytest.raises(ValueError):
        est.observe(2, 3)


def test_forgetting_weights_recent_rounds_more():
    est = AcceptanceEstimate(decay=0.5, prior=0.0, prior_trials=1e-9)
    est.observe(1, 0)  # old rejection
    est.observe(1, 1)  # recent acceptance: successes 1, trials 0.5 + 1
    assert est.p == pytest.approx(1 / 1.5)


def test_per_slot_acceptance_reaches_further_than_one_geometric_p():
    # Bursty producer: slot 1 is a coin flip, but once it is right the rest follow (q = 0.95).
    # By hand, cost 10 + K: bursty n=8 gives (1 + 0.5 * (1 - 0.95^8) / 0.05) / 19 = 0.227 > n=7's 0.223;
    # one p = 0.5 everywhere peaks at n=2: 1.75 / 13 = 0.135 (n=1: 0.125, n=3: 0.134).
    costs = {1: 10.0, **{k: 10.0 + k for k in range(2, 10)}}
    bursty = [0.5, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95]
    assert choose_chain_length(8, costs, bursty) == 8
    assert choose_chain_length(8, costs, 0.5) == 2
