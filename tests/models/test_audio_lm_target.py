"""Qwen3-ASR target on a tiny random config: pathwise equivalence and commit-and-repair."""

from __future__ import annotations

import pytest
import torch
from transformers import Qwen3ASRConfig, Qwen3ASRForConditionalGeneration

from workbench.decoding.protocols import Drafter, Target
from workbench.models.audio_lm import AudioLMTarget, audio_lm_drafter, qwen3_asr_audio_tokens

AUDIO_TOKEN, EOS = 100, 101


def tiny_qwen3_asr(seed: int = 0) -> Qwen3ASRForConditionalGeneration:
    cfg = Qwen3ASRConfig(
        audio_config=dict(num_mel_bins=128, encoder_layers=1, encoder_attention_heads=2, encoder_ffn_dim=32,
                          d_model=16, output_dim=32, downsample_hidden_size=8),
        text_config=dict(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=512),
        audio_token_id=AUDIO_TOKEN, timestamp_token_id=103, eos_token_id=EOS, pad_token_id=102,
    )
    torch.manual_seed(seed)
    model = Qwen3ASRForConditionalGeneration(cfg).eval()
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0.0, 0.3)  # spread logits: no accidental greedy ties
    return model


@pytest.fixture(scope="module")
def setup():
    model = tiny_qwen3_asr()
    torch.manual_seed(1)
    feats, mask = torch.randn(1, 128, 200), torch.ones(1, 200, dtype=torch.long)
    n = qwen3_asr_audio_tokens(model, feats, mask)
    assert n == 26  # 13 audio tokens per 100 frames
    audio_ids = [5] + [AUDIO_TOKEN] * n + [6]
    inputs = {"input_features": feats, "input_features_mask": mask}
    return model, audio_ids, [7, 8, 9], inputs


def _target(setup) -> AudioLMTarget:
    model, audio_ids, instr, inputs = setup
    return AudioLMTarget(model, audio_ids, instr, inputs, EOS, suppress_ids=[AUDIO_TOKEN])


def _steps(t: AudioLMTarget, root: int, n: int):
    toks, logits, cur = [], [], root
    for _ in range(n):
        cur = t.verify(cur, [])[0]
        t.keep(0)
        toks.append(cur)
        logits.append(t.last_logits[0].clone())
    return toks, logits


@pytest.mark.parametrize("k", [2, 5])
def test_verify_equals_single_steps(setup, k):
    ref = _target(setup)
    assert isinstance(ref, Target)
    root = ref.prefill()
    toks, step_logits = _steps(ref, root, k)
    blk = _target(setup)
    assert blk.prefill() == root
    assert blk.verify(root, toks[: k - 1]) == toks[:k]
    torch.testing.assert_close(blk.last_logits, torch.stack(step_logits), rtol=0, atol=1e-5)


def test_crop_and_correction_equal_fresh_run(setup):
    ref = _target(setup)
    root = ref.prefill()
    toks, _ = _steps(ref, root, 5)
    chain = [toks[0], (toks[1] + 1) % 128, toks[2]]
    spec = _target(setup)
    spec.prefill()
    greedy = spec.verify(root, chain)
    assert greedy[:2] == toks[:2]
    spec.keep(1)
    assert spec.committed_entries == 2
    spec.verify(greedy[1], [toks[2]])
    fresh = _target(setup)
    fresh.prefill()
    for tok in (root, toks[0]):
        fresh.verify(tok, [])
        fresh.keep(0)
    fresh.verify(toks[1], [toks[2]])
    torch.testing.assert_close(spec.last_logits, fresh.last_logits, rtol=0, atol=1e-5)
    assert AUDIO_TOKEN not in toks


def test_drafter_on_audio_lm_reuses_kv(setup):
    model, audio_ids, instr, inputs = setup
    ref = _target(setup)
    root = ref.prefill()
    toks, _ = _steps(ref, root, 6)
    d = audio_lm_drafter(model, audio_ids, instr, inputs, EOS, max_len=64, suppress_ids=[AUDIO_TOKEN])
    assert isinstance(d, Drafter)
    p1 = d.propose([root], 3)
    p2 = d.propose([root, *toks[:4]], 2)
    assert list(p2.tokens) == toks[4:6] and p2.catchup == 2
    assert list(p1.tokens) == toks[:3] and p1.catchup == 1
