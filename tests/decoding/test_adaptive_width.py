"""The online budget's rule against the window's own throughput (width.py), by hand."""

from __future__ import annotations

import pytest

from workbench.decoding.width import RunningRate, chain_value, choose_chain_length, expected_tokens

STEP_JUMP = {1: 10.0, 4: 13.0, 8: 20.0}  # a K4 -> K8 cost jump, as on Xiaomi 14 (K4 -> K5)
CHEAP_WIDE = {1: 10.0, 2: 10.5, 4: 11.0, 8: 12.0, 16: 14.0}


def test_the_ratio_cuts_at_the_jump_but_a_slow_window_verifies_the_whole_chain():
    e3, e7 = expected_tokens(3, 0.75), expected_tokens(7, 0.75)
    assert e3 == pytest.approx(2.734375) and e7 == pytest.approx((1 - 0.75**8) / 0.25)
    # Ratio: 2.734/13 = 0.210 beats 3.600/20 = 0.180 and a step's 0.1 -> 3 candidates.
    assert choose_chain_length(7, STEP_JUMP, 0.75) == 3
    # The window earns 0.1 tokens per ms: 3.600 - 2.0 = 1.600 beats 2.734 - 1.3 = 1.434 and 1 - 1 = 0.
    assert choose_chain_length(7, STEP_JUMP, 0.75, rate=0.1) == 7
    # A window earning 0.3 per ms: 2.734 - 3.9 = -1.166 beats a step's 1 - 3 = -2 and 3.600 - 6 = -2.4.
    assert choose_chain_length(7, STEP_JUMP, 0.75, rate=0.3) == 3
    assert chain_value(7, STEP_JUMP, 0.75, 0.1) == pytest.approx(e7 - 2.0)


@pytest.mark.parametrize("rate", [0.0, 0.05, 0.1, 1.0])
def test_closed_form_ends_hold_at_any_rate(rate):
    assert choose_chain_length(15, CHEAP_WIDE, 1.0, rate=rate) == 15  # all accepted, wide verifies cheap
    assert choose_chain_length(15, CHEAP_WIDE, 0.0, rate=rate) == 0  # nothing accepted: plain steps (ties: shorter)
    assert choose_chain_length(7, STEP_JUMP, 0.0, rate=0.01) == 0


def test_running_rate_is_tokens_per_priced_cost():
    r = RunningRate()
    assert r.value is None  # no round yet: the ratio rule decides
    r.observe(1, 10.0)
    r.observe(4, 20.0)
    r.observe(3, None)  # an unpriced width tells nothing
    assert r.value == pytest.approx(5 / 30)
    with pytest.raises(ValueError, match="rate"):
        choose_chain_length(3, STEP_JUMP, 0.5, rate=-1.0)


def test_a_cut_chain_learns_its_first_left_out_slot_from_the_bonus():
    from workbench.decoding.records import Call
    from workbench.decoding.schemes.online import seen_cut
    from workbench.decoding.verification import verify_chain

    call = Call(root=1, chain=(2, 3), provenance=(5, 6), anchor=4)
    full = verify_chain(call.chain, [2, 3, 9], None, 10)  # both accepted, bonus 9
    seen, v = seen_cut(call, full, (9, 7))  # the left-out candidate at slot 7 was 9: it would have been accepted
    assert seen.chain == (2, 3, 9) and seen.provenance == (5, 6, 7) and v.accepted == 3
    seen, v = seen_cut(call, full, (8, 7))  # it was 8: rejected there, the bonus is the correction
    assert seen.chain == (2, 3, 8) and v.accepted == 2 and v.outcome == "correction"
    rejected = verify_chain(call.chain, [2, 5, 0], None, 10)  # a rejection inside the chain: nothing to add
    assert seen_cut(call, rejected, (9, 7)) == (call, rejected)
    assert seen_cut(call, full, None) == (call, full)


def test_a_rejected_left_out_candidate_moves_the_cursor_as_a_rejection_there():
    from workbench.decoding import PublicationBuffer, ReferenceTarget, decode
    from workbench.decoding.schemes.online import As2dOnline

    # The producer heard 40 where the target says 41 at slot 6. Costs make a chain of 4 the best
    # (K5 jumps): the first round verifies slots 1-4, its bonus is slot 5's token; the next verifies
    # slots 6.. and is rejected at 6 (41 != 40); that bonus checks nothing more.
    ref = [10, 11, 12, 13, 14, 15, 41, 17, 18, 19, 20, 21, 22, 0]
    stream = [10, 11, 12, 13, 14, 15, 40, 17, 18, 19, 20, 21, 22, 0]
    costs = {1: 10.0, 2: 10.5, 3: 11.0, 4: 11.5, 5: 12.0, **{k: 40.0 for k in range(6, 10)}}
    scheme = As2dOnline(PublicationBuffer.from_stream(stream, [0.0] * len(stream)), 8, 32, 0, costs)
    res = decode(scheme, ReferenceTarget(ref, 0, 64), verify_cost=lambda k: costs[k])
    assert res.output == tuple(ref)
    assert (res.records[0].width, res.records[0].accepted) == (5, 4)  # cut: slot 5 left out
    # Slot 5 (15) matched the bonus: the cursor sits there, the next chain starts at slot 6.
    assert res.records[1].provenance[0] == 6

    # Now the left-out slot 5 was misheard (40, the target says 41): the bonus is a rejection there,
    # so the paper's correction step follows (C.3) and the next chain re-anchors after it, at slot 7.
    stream = [10, 11, 12, 13, 14, 40, 16, 17, 18, 19, 20, 21, 22, 0]
    ref = [10, 11, 12, 13, 14, 41, 16, 17, 18, 19, 20, 21, 22, 0]
    scheme = As2dOnline(PublicationBuffer.from_stream(stream, [0.0] * len(stream)), 8, 32, 0, costs)
    res = decode(scheme, ReferenceTarget(ref, 0, 64), verify_cost=lambda k: costs[k])
    assert res.output == tuple(ref)
    assert (res.records[0].width, res.records[0].accepted, res.records[0].committed[-1]) == (5, 4, 41)
    assert (res.records[1].width, res.records[1].k1_reason) == (1, "correction")
    assert res.records[2].provenance[0] == 7
