"""Property cases for C.3: one-token outputs, and a read cursor that only moves forward."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.decoding import (
    SCHEMES,
    PublicationBuffer,
    ReferenceTarget,
    TrajectoryDrafter,
    decode,
    make_scheme,
    scheme_spec,
)
from workbench.decoding.alignment import ANCHOR_ORDERS
from workbench.replay import ReplayConfig, load_profile, replay
from workbench.replay.trajectory import DraftTable, SourceTrack, Window

EOS, VOCAB = 0, 8  # a tiny vocabulary: repeated tokens and accidental anchors are common
TOKEN = st.integers(1, VOCAB - 1)


@st.composite
def aligned_window(draw):
    """A greedy reference and a producer stream made from it by a few edits, with publish times."""
    ref = [*draw(st.lists(TOKEN, max_size=30)), EOS]
    stream = list(ref)
    for _ in range(draw(st.integers(0, 8))):
        op, at = draw(st.sampled_from("sid")), draw(st.integers(0, len(stream)))
        if op == "i" or not stream:
            stream.insert(at, draw(TOKEN))
        elif at < len(stream):
            if op == "s":
                stream[at] = draw(TOKEN)
            else:
                del stream[at]
    times = sorted(draw(st.lists(st.floats(0, 30), min_size=len(stream), max_size=len(stream))))
    confs = draw(st.lists(st.floats(0, 1), min_size=len(stream), max_size=len(stream)))
    return ref, stream, times, confs


@settings(max_examples=400, deadline=None)
@given(win=aligned_window(), name=st.sampled_from(["as2d", "as2d_wo_bc"]), order=st.sampled_from(ANCHOR_ORDERS),
       span=st.integers(1, 10), lookback=st.none() | st.integers(1, 10), budget=st.integers(1, 12))
def test_the_read_cursor_only_moves_forward_and_never_proposes_a_retired_position(win, name, order, span,
                                                                                  lookback, budget):
    ref, stream, times, confs = win
    buf = PublicationBuffer.from_stream(stream, times, confs, vocab_size=VOCAB)
    chain = {"budget": budget} if name == "as2d" else {"cap": budget}
    scheme = make_scheme(name, max_output=64, eos_id=EOS, source=buf, span=span, lookback=lookback,
                         anchor_order=order, **chain)
    res = decode(scheme, ReferenceTarget(ref, EOS, VOCAB), verify_cost=lambda k: 1.0 + 0.1 * k)
    assert res.output == tuple(ref)
    cursor = 0
    for r in res.records:
        assert r.cursor_before == cursor <= r.cursor_after  # continuous and monotone
        assert all(p >= r.cursor_before for p in r.provenance)  # retired positions are never proposed
        cursor = r.cursor_after


def _one_token_drafts() -> DraftTable:
    return DraftTable(np.zeros((0, 0), dtype=np.int64), np.zeros((0, 0)), np.zeros(0, dtype=np.int64))


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(SCHEMES), eos_first=st.booleans(), first=TOKEN,
       stream=st.lists(st.integers(0, VOCAB - 1), max_size=12))
def test_a_one_token_output_needs_no_round_in_any_scheme_or_clock(name, eos_first, first, stream):
    # Prefill already ends the output: EOS as the first token, or an output cap of one.
    reference, cap = ((EOS,), 64) if eos_first else ((first,), 1)
    buf = PublicationBuffer.from_stream(stream, [0.0] * len(stream), [0.9] * len(stream), vocab_size=VOCAB)
    drafter = TrajectoryDrafter(reference, {})
    costs = {1: 1.0, 2: 1.1} if scheme_spec(name).needs_costs else None
    res = decode(make_scheme(name, max_output=cap, eos_id=EOS, drafter=drafter, source=buf, costs=costs),
                 ReferenceTarget(reference, EOS, VOCAB))
    assert res.output == reference and res.records == () and res.time == 0.0
    # the same window under the phone-profile replay clock: audited, one token, nothing charged
    track = SourceTrack("qwen", tuple(stream), (0.9,) * len(stream), (1,) * len(stream))
    window = Window("one", "test", reference, EOS, VOCAB, cap, _one_token_drafts(), {"qwen": track}).validate()
    source = "qwen" if scheme_spec(name).decoupled else None
    r = replay(window, ReplayConfig(name, source=source), load_profile("k70_pro"))
    assert r.output == reference and r.tokens == 1 and r.time == 0.0
