"""Hand-computed cases that pin behaviour an audit found unguarded (the mutation audit's surviving mutants).

* a rejection at the last chain slot is a correction, never a bonus;
* ``tps_pooled(by=...)`` pools each group separately and keeps the groups in first-seen order.
"""

from __future__ import annotations

import polars as pl
import pytest

from workbench import metrics
from workbench.decoding import verify_chain

EOS = 0


@pytest.mark.parametrize("chain, greedy, accepted, committed, next_root, outcome", [
    # rejection at the LAST chain slot: two accepted, the target's 9 replaces the candidate 7
    ((5, 6, 7), (5, 6, 9, 4), 2, (5, 6, 9), 9, "correction"),
    # rejection at the first slot
    ((5, 6, 7), (8, -1, -1, -1), 0, (8,), 8, "correction"),
    # full acceptance: the token after the last candidate is the bonus
    ((5, 6, 7), (5, 6, 7, 4), 3, (5, 6, 7, 4), 4, "bonus"),
    # no chain (a plain step): the target's token is a bonus of an empty chain
    ((), (4,), 0, (4,), 4, "bonus"),
    # a one-candidate chain rejected: its only (and last) slot
    ((5,), (6, -1), 0, (6,), 6, "correction"),
    # an accepted EOS ends the output; the rest is moot
    ((5, EOS, 7), (5, EOS, -1, -1), 2, (5, EOS), None, "eos"),
])
def test_verdict_of_the_greedy_chain_rule(chain, greedy, accepted, committed, next_root, outcome):
    v = verify_chain(chain, greedy, EOS, room=10)
    assert (v.accepted, v.committed, v.next_root, v.outcome) == (accepted, committed, next_root, outcome)


def test_the_output_cap_ends_a_round_whatever_its_last_slot():
    # room 3: two accepted candidates plus the correction fill the output exactly
    v = verify_chain((5, 6), (5, 6, 9), EOS, room=3)
    assert (v.accepted, v.committed, v.next_root, v.outcome) == (2, (5, 6, 9), None, "cap")


def test_tps_pooled_by_group_pools_each_group_and_keeps_first_seen_order():
    # Rows interleave two configurations; "sd" appears first. Pooled per group (hand-computed):
    #   sd:   (30 + 10) / (2.0 + 2.0) = 10.0   (the mean of per-window rates would be 10.0 too,
    #   as2d: (60 + 5) / (2.0 + 0.5)  = 26.0    but for as2d it would be (30 + 10) / 2 = 20.0)
    w = pl.DataFrame({
        "window_id": ["w1", "w1", "w2", "w2"],
        "config": ["sd", "as2d", "sd", "as2d"],
        "device": ["k70", "k70", "k70", "k70"],
        "tokens": [30, 60, 10, 5],
        "time": [2.0, 2.0, 2.0, 0.5],
    })
    by = metrics.tps_pooled(w, by=["config"])
    assert by["config"].to_list() == ["sd", "as2d"]  # the configured order, not sorted
    assert dict(zip(by["config"], by["tps"], strict=True)) == pytest.approx({"sd": 10.0, "as2d": 26.0})
    # Two keys: one row per (device, config) pair, same pooled values.
    by2 = metrics.tps_pooled(w, by=["device", "config"])
    assert by2.select("device", "config").rows() == [("k70", "sd"), ("k70", "as2d")]
    assert by2["tps"].to_list() == pytest.approx([10.0, 26.0])
    # And the groups together pool to the whole frame: 105 tokens over 6.5 s.
    assert metrics.tps_pooled(w) == pytest.approx(105 / 6.5)
