"""Tok_T: cross-vocabulary conversion never revises published tokens."""

from __future__ import annotations

import random

import pytest

from tests.models.test_tokenizer import MERGES, _byte_level
from workbench.models.drafting import ProducedToken
from workbench.models.tokenizer import TextCodec
from workbench.models.vocab import VocabularyConverter, convert_stream

TEXTS = [
    " the cat and the dog, there is this.",
    " He said: that is 1,234 and 56!",
    " naïve   spacing  there",
    " to",
]


@pytest.fixture
def codecs():
    src = TextCodec(_byte_level(MERGES))  # rich merges: whole words
    dst = TextCodec(_byte_level(MERGES[:5]))  # fewer merges: a genuinely different tokenization
    return src, dst


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_chunked_stream_equals_whole_text_conversion(codecs, text, seed):
    src, dst = codecs
    ids = src.encode(text)
    assert src.encode(text) != dst.encode(text) or len(ids) <= 2
    conv = VocabularyConverter(src, dst)
    rng = random.Random(seed)
    out, i = [], 0
    while i < len(ids):
        n = rng.randint(1, 4)
        published = list(out)
        out += conv.feed(ids[i : i + n])
        assert out[: len(published)] == published  # append-only
        i += n
    out += conv.finish()
    assert out == conv.convert(ids) == dst.encode(text)
    assert dst.decode(out) == text


def test_partial_word_is_held_back(codecs):
    src, dst = codecs
    conv = VocabularyConverter(src, dst)
    assert conv.feed(src.encode(" the")) == []  # could still become " there"
    got = conv.feed(src.encode("re"))
    assert got == []
    got = conv.feed(src.encode(" cat"))
    assert dst.decode(got) == " there"


def test_eos_flushes_and_maps_to_target_eos(codecs):
    src, dst = codecs
    conv = VocabularyConverter(src, dst, source_eos=999, target_eos=777)
    out = conv.feed(src.encode(" the cat")) + conv.feed([999])
    assert out[-1] == 777 and dst.decode(out[:-1]) == " the cat"
    with pytest.raises(RuntimeError):
        conv.feed([1])


def test_convert_stream_has_no_invented_confidence(codecs):
    src, dst = codecs
    produced = [ProducedToken(t, 0.9, float(i)) for i, t in enumerate(src.encode(" the cat and the dog"))]
    out = list(convert_stream(produced, VocabularyConverter(src, dst)))
    assert [p.token for p in out] == dst.encode(" the cat and the dog")
    assert all(p.confidence is None for p in out)


def test_each_converted_token_carries_the_drafter_forwards_run_by_then(codecs):
    """A word is released by the drafter token that starts the next one (or by the flush at the end):
    its target tokens carry the forwards consumed by then, which replay prices the producer by."""
    src, dst = codecs
    ids = src.encode(" the cat and the dog")
    produced = [ProducedToken(t, None, float(i)) for i, t in enumerate(ids)]
    out = list(convert_stream(produced, VocabularyConverter(src, dst)))
    counts = [p.forwards for p in out]
    assert counts == sorted(counts) and counts[-1] == len(ids)  # the final flush after the last forward
    # replaying the stream a forward at a time releases each token no earlier than its count says
    for n in range(1, len(ids) + 1):
        early = list(convert_stream(produced[:n], VocabularyConverter(src, dst)))
        released = [p for p in out if p.forwards is not None and p.forwards < n]
        assert [p.token for p in early][: len(released)] == [p.token for p in released]
    assert counts[0] >= 2  # the first word is final only once the second starts


def test_a_stop_request_ends_the_stream_inside_a_held_back_word(codecs):
    """A drafter looping inside one "word" yields no target token; the stop request must still be
    seen after the next drafter token, not only when the loop reaches its cap (the drain rule)."""
    src, dst = codecs
    loop = src.encode(" the")[:1] + src.encode("(...)") * 200  # no space after the first word
    pulled: list[int] = []

    def produced():
        for i, t in enumerate(loop):
            pulled.append(t)
            yield ProducedToken(t, None, float(i))

    stop_after = 5
    out = list(convert_stream(produced(), VocabularyConverter(src, dst), stop=lambda: len(pulled) >= stop_after))
    assert len(pulled) == stop_after  # the drafter was not driven to its cap
    assert out == []  # the held-back word is never flushed after a stop
    # without a stop request the same stream runs to its end and flushes the held-back word
    pulled.clear()
    full = list(convert_stream(produced(), VocabularyConverter(src, dst)))
    assert len(pulled) == len(loop) and dst.decode([p.token for p in full]) == src.decode(loop)
