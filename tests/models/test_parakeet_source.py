"""Parakeet CTC external chunked source on a tiny random ParakeetForCTC loaded from a saved dir."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import (
    ParakeetCTCConfig,
    ParakeetFeatureExtractor,
    ParakeetForCTC,
    ParakeetProcessor,
    ParakeetTokenizer,
)

from tests.models.test_tokenizer import MERGES, _byte_level
from tests.models.tiny_audio_lms import spread
from workbench.decoding import PublicationBuffer
from workbench.models.external import CHUNK_SECONDS, SAMPLE_RATE, parakeet_ctc_chunks, publish_chunks
from workbench.models.registry import MissingWeightsError, ModelSpec, load_ctc_spec, load_model_config
from workbench.models.tokenizer import TextCodec

PIECES = ["<unk>", "▁", "▁the", "▁a", "▁cat", "▁sat", "▁on", "▁mat", *"abcdefghijklmnopqrstuvwxyz"]


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    n = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny model: thread hand-offs cost more than the arithmetic
    tok = Tokenizer(models.Unigram([(p, -1.0 - 0.01 * i) for i, p in enumerate(PIECES)], unk_id=0))
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    pk_tok = ParakeetTokenizer(tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>")
    processor = ParakeetProcessor(feature_extractor=ParakeetFeatureExtractor(feature_size=16), tokenizer=pk_tok)
    blank = processor.tokenizer.pad_token_id
    cfg = ParakeetCTCConfig(vocab_size=len(processor.tokenizer), pad_token_id=blank, encoder_config=dict(
        hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64, num_mel_bins=16,
        subsampling_conv_channels=8, conv_kernel_size=3))
    path = tmp_path_factory.mktemp("parakeet")
    spread(ParakeetForCTC(cfg), seed=0).save_pretrained(path)
    processor.save_pretrained(path)
    bundle = load_ctc_spec(ModelSpec(name="parakeet-tiny", family="parakeet_ctc", local_path=str(path)),
                           allow_network=False)
    yield bundle.model, bundle.processor
    torch.set_num_threads(n)


def _audio(seconds: float, seed: int) -> np.ndarray:
    return (0.1 * np.random.default_rng(seed).standard_normal(int(SAMPLE_RATE * seconds))).astype(np.float32)


def _greedy_ctc_text(model, processor, chunk: np.ndarray) -> str:
    """Independent greedy CTC: argmax per valid output frame, merge repeats, drop blanks, detokenize."""
    inputs = processor(chunk, sampling_rate=SAMPLE_RATE, return_tensors="pt")
    with torch.inference_mode():
        logits = model(**inputs).logits[0]
    valid = model._get_output_attention_mask(inputs["attention_mask"], target_length=logits.shape[0])[0]
    best = logits[valid].argmax(-1).tolist()
    ids = [k for k, _ in itertools.groupby(best) if k != model.config.pad_token_id]
    words = processor.tokenizer.decode(ids, group_tokens=False, skip_special_tokens=True)
    return "".join(f" {w}" for w in words.split())


def test_fixed_chunks_publish_greedy_ctc_text_in_target_ids(source):
    model, processor = source
    codec = TextCodec(_byte_level(MERGES))
    audio = _audio(6.0, seed=0)
    pubs = list(parakeet_ctc_chunks(audio, codec, model, processor))
    assert [p.chunk for p in pubs] == [0, 1, 2]  # ceil(6.0 / 2.56)
    assert all(p.confidences is None for p in pubs)
    assert [p.publish_time for p in pubs] == sorted(p.publish_time for p in pubs)
    n = int(CHUNK_SECONDS * SAMPLE_RATE)
    assert any(p.text for p in pubs)
    for p in pubs:
        assert p.text == _greedy_ctc_text(model, processor, audio[p.chunk * n : (p.chunk + 1) * n])
        assert codec.decode(p.tokens) == p.text


def test_a_chunk_depends_only_on_its_own_samples(source):
    model, processor = source
    codec = TextCodec(_byte_level(MERGES))
    a = _audio(6.0, seed=1)
    b = a.copy()
    b[int(2 * CHUNK_SECONDS * SAMPLE_RATE) :] = _audio(6.0, seed=2)[: len(b) - int(2 * CHUNK_SECONDS * SAMPLE_RATE)]
    pa, pb = (list(parakeet_ctc_chunks(x, codec, model, processor)) for x in (a, b))
    assert [p.tokens for p in pa[:2]] == [p.tokens for p in pb[:2]]


def test_chunks_publish_atomically_without_confidence(source):
    model, processor = source
    codec = TextCodec(_byte_level(MERGES))
    pubs = list(parakeet_ctc_chunks(_audio(6.0, seed=3), codec, model, processor))
    buf = PublicationBuffer(source_id="parakeet_ctc", vocab_size=codec.vocab_size)
    n = publish_chunks(pubs, buf.publish)
    non_empty = [p for p in pubs if p.tokens]
    assert n == len(buf.batches) == len(non_empty)
    assert [b.tokens for b in buf] == [tuple(p.tokens) for p in non_empty]
    assert all(b.confidences is None for b in buf)


def test_registered_parakeet_needs_weights():
    spec = ModelSpec.from_dict(load_model_config("qwen3_asr")["parakeet_ctc"])
    with pytest.raises(MissingWeightsError, match="parakeet-ctc-0.6b"):
        load_ctc_spec(spec, allow_network=False)
    with pytest.raises(ValueError, match="CTC families"):
        load_ctc_spec(ModelSpec(name="q", family="qwen3_asr"), allow_network=False)


def test_ctc_chunks_in_a_qwen_vocabulary_keep_as2d_exact(source):
    """Cross-vocabulary external source end to end: Parakeet text -> Qwen2-Audio tokenizer ids ->
    buffer -> As²d on a tiny Qwen2-Audio target; output equals target-only."""
    from tests.models.tiny_processors import qwen2_audio_for, qwen2_audio_processor
    from workbench.decoding import audit_exact, decode, make_scheme
    from workbench.models.audio_lm import AudioLMTarget
    from workbench.models.prompts import qwen2_audio_prompt

    model, processor = source
    qproc = qwen2_audio_processor()
    target_model = qwen2_audio_for(qproc)
    audio = _audio(3.0, seed=4)
    codec = TextCodec(qproc.tokenizer.backend_tokenizer)
    pubs = list(parakeet_ctc_chunks(audio, codec, model, processor))
    prompt = qwen2_audio_prompt(qproc, audio[: SAMPLE_RATE // 2])
    vocab = target_model.config.get_text_config().vocab_size
    reference = decode(make_scheme("target_only", max_output=16, eos_id=prompt.eos_id),
                       AudioLMTarget(target_model, **prompt.as_kwargs())).output
    buf = PublicationBuffer(source_id="parakeet_ctc", vocab_size=vocab)
    assert publish_chunks(pubs, buf.publish) >= 1
    buf.finish(buf.batches[-1].publish_time)
    res = decode(make_scheme("as2d", max_output=16, eos_id=prompt.eos_id, source=buf, budget=3),
                 AudioLMTarget(target_model, **prompt.as_kwargs()))
    audit_exact(res.output, reference, "As²d with a Parakeet CTC source")
    # the buffer holds exactly the CTC text in the target's vocabulary (random models rarely align,
    # so acceptance is not asserted here; exactness is)
    assert qproc.tokenizer.decode([t for b in buf for t in b.tokens]) == "".join(p.text for p in pubs)


def test_a_stop_request_before_a_chunks_forward_ends_the_stream_without_it(source):
    """The stop request is asked before each chunk's features and again before its forward: one that
    arrives between them (chunk 1) runs no further forward and publishes nothing of chunk 1. Features
    prepared beforehand (``parakeet_ctc_features``, the producer's audio preparation) give the same
    chunks."""
    from workbench.models.external import parakeet_ctc_features

    model, processor = source
    codec = TextCodec(_byte_level(MERGES))
    audio = _audio(6.0, seed=4)
    forwards: list[int] = []
    hook = model.register_forward_hook(lambda *_: forwards.append(1))
    try:
        full = list(parakeet_ctc_chunks(audio, codec, model, processor))
        per_chunk, forwards[:] = len(forwards) // len(full), []
        asked: list[int] = []

        def stop() -> bool:
            asked.append(1)
            return len(asked) == 4  # chunk 0: features, forward; chunk 1: features, then the request
        stopped = list(parakeet_ctc_chunks(audio, codec, model, processor, stop=stop))
        assert len(forwards) == per_chunk >= 1  # chunk 0's forward only
        prepared = list(parakeet_ctc_chunks(audio, codec, model, processor,
                                            features=parakeet_ctc_features(audio, processor)))
    finally:
        hook.remove()
    assert [p.chunk for p in stopped] == [0] and stopped[0].tokens == full[0].tokens
    assert [p.tokens for p in prepared] == [p.tokens for p in full]
