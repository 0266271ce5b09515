"""Prefix-conditioned drafter (KV reuse, catch-up, ASP stop) and the decoupled producer."""

from __future__ import annotations

import itertools

import pytest

from tests.models.conftest import tiny_audio, tiny_whisper
from workbench.decoding.buffer import PublicationBuffer
from workbench.decoding.protocols import Drafter
from workbench.models.drafting import publication_batches, publish_all
from workbench.models.whisper import WhisperTarget, whisper_drafter, whisper_producer


def _reference(bundle, audio, n):
    t = WhisperTarget(bundle, audio=audio)
    out = [t.prefill()]
    while len(out) < n and out[-1] != bundle.protocol.eos_id:
        out.append(t.verify(out[-1], [])[0])
        t.keep(0)
    return out


@pytest.fixture
def pair():
    # a drafter that differs from the target, so rounds see both accepts and rejections
    return tiny_whisper(seed=0), tiny_whisper(seed=0)


def test_drafter_on_same_model_proposes_the_reference(pair):
    bundle, _ = pair
    audio = tiny_audio()
    ref = _reference(bundle, audio, 12)
    d = whisper_drafter(bundle, audio=audio)
    assert isinstance(d, Drafter)
    p = d.propose(ref[:1], 5)
    assert list(p.tokens) == ref[1:6]
    assert p.catchup == 1 and p.forwards == 5  # root forward + 4 chained drafts
    assert all(0 < c <= 1 for c in p.confidences)


def test_kv_reuse_after_rejection_equals_a_fresh_drafter(pair):
    bundle, _ = pair
    audio = tiny_audio(seed=2)
    ref = _reference(bundle, audio, 12)
    d = whisper_drafter(bundle, audio=audio)
    d.propose(ref[:1], 6)
    # pretend the target accepted 2 drafts and corrected the third to a different token
    prefix = ref[:3] + [(ref[3] + 1) % 96]
    reused = d.propose(prefix, 4)
    fresh = whisper_drafter(bundle, audio=audio).propose(prefix, 4)
    assert reused.tokens == fresh.tokens
    assert reused.confidences == pytest.approx(fresh.confidences, abs=1e-6)
    assert reused.catchup == 1  # only the correction was missing from the drafter's KV
    assert fresh.catchup == 4 and fresh.forwards == reused.forwards + 1  # batched catch-up forward


def test_full_acceptance_catches_up_last_draft_and_bonus(pair):
    bundle, _ = pair
    audio = tiny_audio(seed=3)
    ref = _reference(bundle, audio, 12)
    d = whisper_drafter(bundle, audio=audio)
    d.propose(ref[:1], 3)
    p = d.propose(ref[:5], 2)  # 3 drafts accepted + bonus: last draft and bonus are missing
    assert p.catchup == 2 and list(p.tokens) == ref[5:7]


def test_asp_stop_below_includes_the_low_confidence_token(pair):
    bundle, _ = pair
    audio = tiny_audio()
    ref = _reference(bundle, audio, 12)
    full = whisper_drafter(bundle, audio=audio).propose(ref[:1], 8)
    threshold = sorted(full.confidences)[len(full.confidences) // 2]
    first_low = next(i for i, c in enumerate(full.confidences) if c < threshold)
    asp = whisper_drafter(bundle, audio=audio).propose(ref[:1], 8, stop_below=threshold)
    assert asp.tokens == full.tokens[: first_low + 1]
    assert asp.confidences[-1] < threshold


def test_reference_ranks_are_top1_on_own_greedy_path(pair):
    bundle, other = pair
    audio = tiny_audio()
    ref = _reference(bundle, audio, 10)
    assert whisper_drafter(bundle, audio=audio).reference_ranks(ref) == [1] * (len(ref) - 1)
    ranks = whisper_drafter(tiny_whisper(seed=7), audio=audio).reference_ranks(ref)
    assert len(ranks) == len(ref) - 1 and set(ranks) <= {1, 2, 3} and 3 in ranks


def test_producer_yields_the_same_model_greedy_path_with_times(pair):
    bundle, _ = pair
    audio = tiny_audio(seed=4)
    ref = _reference(bundle, audio, 20)
    prod = whisper_producer(bundle, audio=audio, max_new_tokens=20)
    items = list(prod)
    assert [p.token for p in items] == ref
    times = [p.t_generated for p in items]
    assert times == sorted(times) and prod.forwards == len(items)
    assert all(0 < p.confidence <= 1 for p in items)


def test_publication_batches_of_eight_into_the_buffer(pair):
    bundle, _ = pair
    items = list(whisper_producer(bundle, audio=tiny_audio(seed=5), max_new_tokens=20))
    sizes = [len(b) for b, _ in publication_batches(items)]
    assert sizes[:-1] == [8] * (len(sizes) - 1) and sum(sizes) == len(items)
    buf = PublicationBuffer(vocab_size=96)
    publish_all(iter(items), buf.publish)
    assert [t for b in buf for t in b.tokens] == [p.token for p in items]
    assert [b.publish_time for b in buf] == [b[-1].t_generated for b, _ in publication_batches(items)]


def test_producer_is_decoupled_from_target_state(pair):
    bundle, _ = pair
    audio = tiny_audio(seed=6)
    a = [p.token for p in whisper_producer(bundle, audio=audio, max_new_tokens=12)]
    # running a target on the same bundle in between must not change the producer's sequence
    t = WhisperTarget(bundle, audio=audio)
    t.verify(t.prefill(), [5, 6, 7])
    t.keep(1)
    b = [p.token for p in itertools.islice(whisper_producer(bundle, audio=audio, max_new_tokens=12), 12)]
    assert a == b
