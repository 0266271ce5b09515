"""Tiny random models built from configs: real architectures, milliseconds per forward."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import WhisperConfig, WhisperForConditionalGeneration

from workbench.models.whisper import WhisperBundle, WhisperProtocol

TINY_WHISPER = dict(
    vocab_size=96,
    d_model=32,
    encoder_layers=2,
    decoder_layers=2,
    encoder_attention_heads=4,
    decoder_attention_heads=4,
    encoder_ffn_dim=64,
    decoder_ffn_dim=64,
    num_mel_bins=16,
    max_source_positions=16,
    max_target_positions=64,
    decoder_start_token_id=1,
    eos_token_id=3,
    pad_token_id=3,
    bos_token_id=3,
)


def tiny_whisper(seed: int = 0, **overrides) -> WhisperBundle:
    torch.manual_seed(seed)
    cfg = WhisperConfig(**{**TINY_WHISPER, **overrides})
    model = WhisperForConditionalGeneration(cfg).eval()
    # larger weights than the default init spread the logits, so greedy ties do not arise
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0.0, 0.3)
    proto = WhisperProtocol(prompt_ids=[1, 2], eos_id=3, suppress_ids=[0], begin_suppress_ids=[3])
    return WhisperBundle(model, proto, codec=None, name="tiny-whisper")


def tiny_audio(seconds: float = 0.4, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(int(16000 * seconds)) / 16000
    return (0.3 * np.sin(2 * np.pi * 220 * t) + 0.05 * rng.standard_normal(t.size)).astype(np.float32)


@pytest.fixture
def whisper_bundle() -> WhisperBundle:
    return tiny_whisper()
