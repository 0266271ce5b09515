"""Publication buffer: immutable batches, snapshots by time, and clear input errors."""

import dataclasses
import random

import pytest

from workbench.decoding import As2d, PublicationBuffer, ReferenceTarget, decode

from .strategies import EOS, VOCAB, make_window


def test_snapshot_shows_only_batches_published_by_t():
    buf = PublicationBuffer.from_stream(list(range(1, 11)), [float(i) for i in range(10)], batch_tokens=4)
    assert [b.offset for b in buf] == [0, 4, 8]
    assert [b.publish_time for b in buf] == [3.0, 7.0, 9.0]
    assert len(buf.snapshot(2.9)) == 0
    assert len(buf.snapshot(3.0)) == 4
    assert buf.snapshot(8.0).tokens() == (1, 2, 3, 4, 5, 6, 7, 8)
    assert not buf.snapshot(8.0).complete and buf.snapshot(9.0).complete
    with pytest.raises(IndexError, match="not published"):
        buf.snapshot(3.5)[4]


def test_confidence_is_none_when_the_source_has_none():
    buf = PublicationBuffer()
    buf.publish([1, 2, 3], 0.0)  # a chunk source: one atomic chunk, no confidence
    assert buf.batches[0].confidences is None
    assert buf.snapshot().confidence(1) is None
    buf.publish([4], 1.0, confidences=[0.7])
    assert buf.snapshot().confidence(3) == 0.7


def test_batches_are_immutable():
    b = PublicationBuffer().publish([1, 2], 0.0, [0.5, 0.5])
    with pytest.raises(dataclasses.FrozenInstanceError):
        b.tokens = (9, 9)
    assert isinstance(b.tokens, tuple) and isinstance(b.confidences, tuple)


def test_cursor_moves_never_mutate_published_batches():
    seen_rejections = 0
    for seed in range(200):
        w = make_window(seed, random.Random(seed).choice(["noisy", "repeated", "random"]))
        before = [(b, dataclasses.astuple(b)) for b in w.buffer.batches]
        flat = list(w.buffer.snapshot().tokens())
        res = decode(As2d(w.buffer, 5, w.max_output, EOS, span=4), ReferenceTarget(w.reference, EOS, VOCAB))
        seen_rejections += sum(r.outcome == "correction" and r.width > 1 for r in res.records)
        assert [(b, dataclasses.astuple(b)) for b in w.buffer.batches] == before
        assert all(b is a for b, (a, _) in zip(w.buffer.batches, before, strict=True))
        assert list(w.buffer.snapshot().tokens()) == flat
    assert seen_rejections > 100  # the cursor really was realigned many times


@pytest.mark.parametrize(
    "call, field",
    [
        (lambda b: b.publish([1, 99], 0.0), "tokens"),
        (lambda b: b.publish([-1], 0.0), "tokens"),
        (lambda b: (b.publish([1], 2.0), b.publish([2], 1.0)), "publish_time"),
        (lambda b: b.publish([], 0.0), "tokens"),
        (lambda b: b.publish([1, 2], 0.0, [0.5]), "confidences"),
    ],
)
def test_bad_publication_names_the_field(call, field):
    with pytest.raises(ValueError, match=field):
        call(PublicationBuffer(vocab_size=10))


def test_unordered_generation_times_are_rejected():
    with pytest.raises(ValueError, match="publish_time"):
        PublicationBuffer.from_stream([1, 2, 3], [0.0, 5.0, 1.0], batch_tokens=2)
