"""Pathwise equivalence and commit-and-repair (Appendix C.4) for the Whisper target."""

from __future__ import annotations

import pytest
import torch

from tests.models.conftest import tiny_audio
from workbench.decoding.protocols import Target
from workbench.models.whisper import WhisperTarget


def _steps(target: WhisperTarget, root: int, n: int) -> tuple[list[int], list[torch.Tensor]]:
    """n plain K=1 steps from a known root; returns the tokens and each step's logits."""
    toks, logits, cur = [], [], root
    for _ in range(n):
        cur = target.verify(cur, [])[0]
        target.keep(0)
        toks.append(cur)
        logits.append(target.last_logits[0].clone())
    return toks, logits


def test_is_a_target(whisper_bundle):
    t = WhisperTarget(whisper_bundle, audio=tiny_audio())
    assert isinstance(t, Target)
    assert t.vocab_size == 96 and t.eos_id == 3


def test_prefill_respects_begin_suppression(whisper_bundle):
    t = WhisperTarget(whisper_bundle, audio=tiny_audio())
    root = t.prefill()
    assert root not in (0, 3)
    assert torch.isinf(t.last_logits[0, 3]) and torch.isinf(t.last_logits[0, 0])


@pytest.mark.parametrize("k", [2, 4, 8])
def test_verify_width_k_equals_k_single_steps(whisper_bundle, k):
    audio = tiny_audio()
    ref = WhisperTarget(whisper_bundle, audio=audio)
    root = ref.prefill()
    toks, step_logits = _steps(ref, root, k)
    blk = WhisperTarget(whisper_bundle, audio=audio)
    assert blk.prefill() == root
    chain = toks[: k - 1]  # the reference path itself: every entry must be accepted
    greedy = blk.verify(root, chain)
    assert greedy == toks[:k]
    torch.testing.assert_close(blk.last_logits, torch.stack(step_logits), rtol=0, atol=1e-5)


def test_rejected_entries_are_cropped_and_state_equals_fresh_run(whisper_bundle):
    audio = tiny_audio(seed=1)
    ref = WhisperTarget(whisper_bundle, audio=audio)
    root = ref.prefill()
    toks, _ = _steps(ref, root, 6)
    wrong = (toks[2] + 1) % 96
    chain = [toks[0], toks[1], wrong, toks[3], toks[4]]

    spec = WhisperTarget(whisper_bundle, audio=audio)
    spec.prefill()
    greedy = spec.verify(root, chain)
    n_acc = next(i for i, (c, g) in enumerate(zip(chain, greedy, strict=False)) if c != g)
    assert n_acc == 2 and greedy[2] == toks[2]  # the correction is the reference token
    spec.keep(n_acc)
    assert spec.committed_entries == 1 + n_acc  # root + accepted; rejected entries gone
    after = spec.verify(greedy[n_acc], [toks[3]])  # correction carried as the next known root

    fresh = WhisperTarget(whisper_bundle, audio=audio)
    fresh.prefill()
    for tok in [root, toks[0], toks[1]]:
        fresh.verify(tok, [])
        fresh.keep(0)
    fresh_greedy = fresh.verify(toks[2], [toks[3]])
    assert after == fresh_greedy == toks[3:5]
    torch.testing.assert_close(spec.last_logits, fresh.last_logits, rtol=0, atol=1e-5)
    for a, b in zip(spec.state.cache.self_attention_cache.layers, fresh.state.cache.self_attention_cache.layers,
                    strict=True):
        torch.testing.assert_close(a.keys, b.keys, rtol=0, atol=1e-5)


def test_keep_rejects_out_of_range_and_double_verify(whisper_bundle):
    t = WhisperTarget(whisper_bundle, audio=tiny_audio())
    root = t.prefill()
    t.verify(root, [5, 6])
    with pytest.raises(ValueError):
        t.keep(3)
    t.keep(2)
    t.verify(7, [])
    with pytest.raises(RuntimeError):
        t.verify(8, [])


def test_dtype_and_device_are_configurable(whisper_bundle):
    whisper_bundle.model.to(torch.float64)
    t = WhisperTarget(whisper_bundle, audio=tiny_audio())
    assert t.features.dtype == torch.float64
    root = t.prefill()
    assert t.verify(root, [])[0] >= 0
