"""Spoken-QA cumulative-prefix publication (D.1.2): growing prefixes, unchanged token-arrival times."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from workbench.decoding import PublicationBuffer
from workbench.decoding.cumulative import (
    BATCHES,
    CUMULATIVE_PREFIX,
    CumulativePrefixPublisher,
    PrefixShrankError,
    cumulative_buffer,
    publication_for_task,
)


def test_each_token_is_readable_at_its_own_arrival_not_at_a_batch_end() -> None:
    tokens, times = [5, 6, 7, 8, 9], [0.10, 0.20, 0.30, 0.40, 0.50]
    qa = cumulative_buffer(tokens, times)
    batched = PublicationBuffer.from_stream(tokens, times, batch_tokens=8)
    # at 0.25 s the QA buffer shows the two tokens that had arrived; an 8-token batch shows nothing yet
    assert qa.snapshot(0.25).tokens() == (5, 6) and batched.snapshot(0.25).tokens() == ()
    assert [qa.publish_time_of(i) for i in range(5)] == times
    assert qa.snapshot().complete and qa.finish_time == 0.50


def test_observations_publish_only_what_they_add_at_the_tokens_arrival_times() -> None:
    buf = PublicationBuffer("qa", vocab_size=100)
    pub = CumulativePrefixPublisher(buf.publish)
    assert pub.observe([3, 4], [1.0, 2.0]) == 2
    assert pub.observe([3, 4], [1.0, 2.0]) == 0  # the same prefix again adds nothing
    # observed late (say at 9 s), the new tokens keep the times they arrived at
    assert pub.observe([3, 4, 5, 6], [1.0, 2.0, 3.0, 3.0], [0.9, 0.8, 0.7, 0.6]) == 2
    assert buf.snapshot().tokens() == (3, 4, 5, 6)
    assert [buf.publish_time_of(i) for i in range(4)] == [1.0, 2.0, 3.0, 3.0]
    assert [len(b) for b in buf.batches] == [1, 1, 2]  # two tokens with one arrival time: one batch
    assert buf.batches[2].confidences == (0.7, 0.6) and buf.batches[0].confidences is None


def test_a_prefix_that_shrinks_or_rewrites_is_refused_and_nothing_is_published() -> None:
    buf = PublicationBuffer("qa")
    pub = CumulativePrefixPublisher(buf.publish)
    pub.observe([1, 2, 3], [0.1, 0.2, 0.3])
    with pytest.raises(PrefixShrankError, match="only grow"):
        pub.observe([1, 2], [0.1, 0.2])
    with pytest.raises(PrefixShrankError, match="token 1 changed from 2 to 9"):
        pub.observe([1, 9, 3, 4], [0.1, 0.2, 0.3, 0.4])
    with pytest.raises(ValueError, match="must not decrease"):
        pub.observe([1, 2, 3, 4], [0.1, 0.2, 0.3, 0.25])
    assert buf.snapshot().tokens() == (1, 2, 3)


def test_task_picks_the_publication_rule() -> None:
    assert publication_for_task("qa") == CUMULATIVE_PREFIX
    assert publication_for_task("asr") == publication_for_task("translation") == publication_for_task(None) == BATCHES
    with pytest.raises(ValueError, match="unknown task 'summary'"):
        publication_for_task("summary")


@given(st.lists(st.tuples(st.integers(0, 50), st.floats(0, 1)), max_size=30), st.data())
def test_growing_observations_equal_the_one_shot_buffer(items, data) -> None:
    """Any split of a trajectory into growing observations gives the same buffer contents and times."""
    tokens = [t for t, _ in items]
    times = sorted(x for _, x in items)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(tokens)), max_size=5)))
    buf = PublicationBuffer("qa")
    pub = CumulativePrefixPublisher(buf.publish)
    for k in [*cuts, len(tokens)]:
        pub.observe(tokens[:k], times[:k])
    one = cumulative_buffer(tokens, times) if tokens else None
    assert buf.snapshot().tokens() == tuple(tokens)
    for t in times:
        assert buf.snapshot(t).tokens() == tuple(x for x, a in zip(tokens, times, strict=True) if a <= t)
        assert one is not None and one.snapshot(t).tokens() == buf.snapshot(t).tokens()
