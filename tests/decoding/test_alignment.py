"""Each alignment case of Appendix C.3, pinned round by round, and the Figure 4 example."""

from workbench.decoding import As2d, PublicationBuffer, ReadCursor, ReferenceTarget, decode

A, B, C, D, E, F, X, Y, R, EOS, Z = range(1, 12)
VOCAB = 16


def run(reference, stream, budget=8, span=8, times=None, anchor_order="next_token", guard=False):
    times = times or [0.0] * len(stream)
    buf = PublicationBuffer.from_stream(stream, times, vocab_size=VOCAB)
    scheme = As2d(buf, budget, max_output=64, eos_id=EOS, span=span, anchor_order=anchor_order, guard=guard)
    res = decode(scheme, ReferenceTarget(reference, EOS, VOCAB))
    assert res.output == tuple(reference)
    return [(r.root, r.chain, r.accepted, r.committed, r.cursor_after) for r in res.records]


def test_figure4_accept_AB_correct_C_to_X_then_D_reanchors_and_EF_verified():
    # Producer: R A B C D E F; target: R A B X D E F. Root R is known after prefill.
    rounds = run([R, A, B, X, D, E, F, EOS], [R, A, B, C, D, E, F], budget=4)
    # (b) the target checks A B C D, agrees on A B, predicts X: commits A B X.
    assert rounds[0] == (R, (A, B, C, D), 2, (A, B, X), 3)
    # The correction X is processed in a plain step, which yields D; the read cursor stays at
    # the mismatch slot 3 until something past it matches.
    assert rounds[1] == (X, (), 0, (D,), 3)
    # (c) D matches the buffer and is the root for verifying ready E F.
    assert rounds[2][:4] == (D, (E, F), 2, (E, F, EOS))


def test_full_acceptance_advances_cursor():
    rounds = run([R, A, B, C, D, EOS], [R, A, B, C, D, EOS], budget=2)
    assert [r[4] for r in rounds] == [3, 6]  # bonus C at slot 3, then D EOS accepted
    assert rounds[0][:3] == (R, (A, B), 2)


def test_insertion_keeps_the_mismatch_position():
    # Target inserts X before C; the next target token C equals the candidate at the mismatch.
    rounds = run([R, A, B, X, C, D, E, EOS], [R, A, B, C, D, E, EOS])
    assert rounds[0][2:4] == (2, (A, B, X))
    assert rounds[1] == (X, (), 0, (C,), 3)  # plain step; slot 3 stays eligible
    assert rounds[2][:3] == (C, (D, E, EOS), 3)  # anchored at the old mismatch slot 3


def test_substitution_anchors_after_the_mismatch():
    rounds = run([R, A, X, C, D, EOS], [R, A, B, C, D, EOS])
    assert rounds[0][3] == (A, X)
    assert rounds[1][:2] == (X, ())
    assert rounds[2][:3] == (C, (D, EOS), 2)


def test_deletion_reanchors_on_the_next_target_token_after_processing_the_correction():
    # The producer has an extra B; the target's correction C is the next published token.
    rounds = run([R, A, C, D, E, EOS], [R, A, B, C, D, E, EOS])
    assert rounds[0][3] == (A, C)
    assert rounds[1][:4] == (C, (), 0, (D,))  # paper order (C.3, Fig. 4c): the correction is processed first
    assert rounds[2][:3] == (D, (E, EOS), 2)  # then the next target token D is found ahead


def test_correction_first_order_reanchors_on_the_correction_without_a_plain_step():
    rounds = run([R, A, C, D, E, EOS], [R, A, B, C, D, E, EOS], anchor_order="correction_first")
    assert rounds[0][3] == (A, C)
    assert rounds[1][:3] == (C, (D, E, EOS), 3)


def test_repeated_token_anchor_takes_the_nearest_match_and_stays_exact():
    # Correction X, next target token A; A repeats in the window: nearest eligible match wins.
    reference = [R, A, X, A, C, EOS]
    stream = [R, A, B, D, A, A, C, EOS]
    rounds = run(reference, stream)
    assert rounds[0][3] == (A, X)
    assert rounds[1][:2] == (X, ())
    # anchor for root A is the first A at/after the floor (slot 4), so chain = A C EOS: A rejected.
    assert rounds[2][0] == A and rounds[2][1][0] == A and rounds[2][2] == 0


def test_no_match_retires_positions_and_target_continues_alone():
    rounds = run([R, X, Y, X, Y, X, EOS], [R, A, B, C, D, E, F], span=2)
    assert all(len(chain) == 0 for _, chain, *_ in rounds[1:])
    cursors = [r[4] for r in rounds]
    assert cursors == sorted(cursors)  # the cursor only moves forward


def test_exhausted_record_lets_target_finish_alone():
    buf = PublicationBuffer.from_stream([R, A], [0.0, 0.0], vocab_size=VOCAB)
    scheme = As2d(buf, 4, max_output=64, eos_id=EOS)
    res = decode(scheme, ReferenceTarget([R, A, B, C, EOS], EOS, VOCAB))
    assert res.output == (R, A, B, C, EOS)
    assert [r.k1_reason for r in res.records[1:]] == ["exhausted"] * (len(res.records) - 1)


def test_not_ready_when_producer_is_behind():
    # Nothing is published before t=100; the target never waits.
    times = [100.0] * 4
    rounds_ref = [R, A, B, C, EOS]
    buf = PublicationBuffer.from_stream([R, A, B, C], times, vocab_size=VOCAB)
    res = decode(As2d(buf, 4, 64, EOS), ReferenceTarget(rounds_ref, EOS, VOCAB))
    assert {r.k1_reason for r in res.records} == {"not_ready"}
    assert res.time == len(res.records)  # one unit-cost plain step per token


def test_read_cursor_is_monotone():
    cur = ReadCursor()
    for anchor, acc in [(0, 3), (None, 0), (None, 0), (7, 0), (None, 0)]:
        nxt = cur.after_call(anchor, acc)
        assert nxt.expected > cur.expected and nxt.cursor >= cur.cursor
        cur = nxt


def test_the_read_cursor_never_moves_back_when_a_passed_position_anchors():
    # A spurious far match: buffer A B, reference X Y Z W B. B is found behind the expected slot (4),
    # at position 1, which was never retired: the read cursor goes 0 -> 2, never 4 -> 2.
    rounds = run([X, Y, Z, D, B, EOS], [A, B])
    cursors = [0] + [r[4] for r in rounds]
    assert cursors == sorted(cursors) and cursors[-1] == 2


def test_multi_token_target_insertion_is_recovered_within_the_lookback():
    # The target says "Seven of clubs" (three tokens X Y Z) where the producer wrote "7" (one token, C):
    # the producer's continuation D E F sits behind the target's position once it has caught up.
    reference = [R, A, B, X, Y, Z, D, E, F, EOS]
    stream = [R, A, B, C, D, E, F, EOS]
    rounds = run(reference, stream, budget=4)
    last = rounds[-1]
    assert last[0] == D and last[1] == (E, F, EOS) and last[2] == 3  # re-anchored on D, E F EOS accepted
    # with a one-step look-back the producer's D retires before the target reaches it
    buf = PublicationBuffer.from_stream(stream, [0.0] * len(stream), vocab_size=VOCAB)
    res = decode(As2d(buf, 4, 64, EOS, lookback=1), ReferenceTarget(reference, EOS, VOCAB))
    assert res.output == tuple(reference)
    assert sum(r.accepted for r in res.records[1:]) == 0


# -- guarded anchor (beyond the paper, C.3) ----------------------------------------------------

def test_find_guarded_prefers_the_match_the_committed_context_confirms():
    snap = PublicationBuffer.from_stream([R, A, B, X, A, C], [0.0] * 6, vocab_size=VOCAB).snapshot()
    cur = ReadCursor(1, 1)
    # find_anchor takes the first A (slot 1, the expected one): confirmed by being expected.
    assert cur.find_anchor(snap, A, 8) == 1 and cur.find_guarded(snap, A, X, 8) == (1, False)
    far = ReadCursor(2, 2)
    # Past the expected slots, the A preceded by X (slot 4) is confirmed by the committed X ...
    assert far.find_guarded(snap, A, X, 8) == (4, False)
    # ... and with another token before the root, the first far A is only a tentative match.
    assert far.find_guarded(snap, C, B, 8) == (5, True)
    assert far.find_guarded(snap, Z, B, 8) == (None, False)


def test_a_refuted_far_match_no_longer_retires_the_true_alignment():
    # Producer lost two tokens: target 5 6 6 3 5 6, producer 5 3 5 6. After the correction the root 6
    # matches only the far 6 at slot 3, preceded by 5 (the target said 6): a spurious match.
    P, Q, S = 5, 6, 3
    reference, stream = [P, Q, Q, S, P, Q, EOS], [P, S, P, Q, EOS]
    paper = run(reference, stream, budget=3)
    # The paper's rule verifies it, the target refutes it, and the cursor moves past slot 1: the true
    # continuation 3 5 6 is retired and the target decodes alone to the end.
    assert paper[2] == (Q, (EOS,), 0, (S,), 4)
    assert all(r[2] == 0 for r in paper[3:]) and len(paper) == 6
    guarded = run(reference, stream, budget=3, guard=True)
    # Guarded: the refuted match leaves the cursor at slot 1, so the root 3 anchors there and
    # 5 6 EOS are verified in one call.
    assert guarded[2] == (Q, (EOS,), 0, (S,), 1)
    assert guarded[3] == (S, (P, Q, EOS), 3, (P, Q, EOS), 5) and len(guarded) == 4


def test_a_guarded_match_with_nothing_after_it_is_not_taken():
    # The root R matches only the last published token, far from the expected slot 2 and after Z where
    # the target said B: nothing follows to test it with. The paper's rule anchors there anyway (and
    # would move the cursor past slots 2-3); the guard leaves the round unmatched.
    buf = PublicationBuffer.from_stream([A, B, C, Z, R], [0.0] * 5, vocab_size=VOCAB)
    for guard, anchor in ((False, 4), (True, None)):
        scheme = As2d(buf, 4, max_output=64, eos_id=EOS, guard=guard)
        scheme.start(B)
        scheme.output.append(R)
        scheme.cursor = ReadCursor(2, 2)
        call = scheme.plan(1.0)
        assert (call.chain, call.anchor) == ((), anchor)


def test_leave_eos_verifies_up_to_the_eos_and_the_bonus_commits_it():
    for leave, widths in ((False, [5]), (True, [4])):
        buf = PublicationBuffer.from_stream([R, A, B, C, EOS], [0.0] * 5, vocab_size=VOCAB)
        scheme = As2d(buf, 8, max_output=64, eos_id=EOS, guard=True, leave_eos=leave)
        res = decode(scheme, ReferenceTarget([R, A, B, C, EOS], EOS, VOCAB))
        assert res.output == (R, A, B, C, EOS) and [r.width for r in res.records] == widths
