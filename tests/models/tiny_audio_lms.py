"""Tiny random decoder-only audio LMs (Qwen2-Audio, Qwen2.5-Omni thinker) and their inputs.

Each ``AudioLMCase`` holds a model plus one window's fixed input (audio prompt ids, features,
instruction ids), the way a prompt helper would produce it from a processor.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import torch
from transformers import Qwen2AudioConfig, Qwen2AudioForConditionalGeneration
from transformers.models.qwen2_5_omni import (
    Qwen2_5OmniThinkerConfig,
    Qwen2_5OmniThinkerForConditionalGeneration,
)

VOCAB = 128
AUDIO, AUDIO_BOS, AUDIO_EOS, EOS = 100, 104, 105, 101
MEL_BINS = 16
TEXT = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=512)


def spread(model: torch.nn.Module, seed: int) -> torch.nn.Module:
    """Larger weights than the default init spread the logits, so greedy ties do not arise."""
    torch.manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0.0, 0.3)
    return model.eval()


def perturbed(model: torch.nn.Module, scale: float, seed: int) -> torch.nn.Module:
    """A second model of the same family and vocabulary that agrees with ``model`` often but not
    always: only its output head is perturbed, so drafts see both acceptances and rejections."""
    other = copy.deepcopy(model)
    head = other.get_output_embeddings().weight
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        head.add_(scale * torch.randn(head.shape, generator=g))
    return other.eval()


def qwen2_audio_config() -> Qwen2AudioConfig:
    return Qwen2AudioConfig(
        audio_config=dict(num_mel_bins=MEL_BINS, encoder_layers=1, encoder_attention_heads=2, encoder_ffn_dim=32,
                          d_model=16, max_source_positions=16),
        text_config=dict(model_type="qwen2", **TEXT),
        audio_token_index=AUDIO, eos_token_id=EOS, pad_token_id=102,
    )


def omni_thinker_config() -> Qwen2_5OmniThinkerConfig:
    return Qwen2_5OmniThinkerConfig(
        audio_config=dict(num_mel_bins=MEL_BINS, encoder_layers=1, encoder_attention_heads=2, encoder_ffn_dim=32,
                          d_model=16, output_dim=32, n_window=8, max_source_positions=64),
        vision_config=dict(depth=1, hidden_size=16, intermediate_size=32, num_heads=2, out_hidden_size=32,
                           fullatt_block_indexes=[0]),
        text_config=dict(**TEXT, rope_parameters=dict(rope_type="default", rope_theta=1e4, mrope_section=[1, 1, 2])),
        audio_token_index=AUDIO, audio_start_token_id=AUDIO_BOS, audio_end_token_id=AUDIO_EOS,
        image_token_index=106, video_token_index=107, vision_start_token_id=108, user_token_id=109,
        eos_token_id=EOS, pad_token_id=102,
    )


def tiny_qwen2_audio(seed: int = 0) -> Qwen2AudioForConditionalGeneration:
    return spread(Qwen2AudioForConditionalGeneration(qwen2_audio_config()), seed)


def tiny_omni_thinker(seed: int = 0) -> Qwen2_5OmniThinkerForConditionalGeneration:
    return spread(Qwen2_5OmniThinkerForConditionalGeneration(omni_thinker_config()), seed)


@dataclass
class AudioLMCase:
    model: torch.nn.Module
    audio_ids: list[int]
    instruction_ids: list[int]
    audio_inputs: dict[str, Any]


def qwen2_audio_window(model: torch.nn.Module, seed: int, frames: int = 24) -> AudioLMCase:
    """Qwen2-Audio pads features to 2*max_source_positions frames; the mask marks the real ones."""
    g = torch.Generator().manual_seed(seed)
    total = 2 * model.config.audio_config.max_source_positions
    feats = torch.randn(1, MEL_BINS, total, generator=g)
    mask = torch.zeros(1, total, dtype=torch.long)
    mask[:, :frames] = 1
    n = int(model.model.audio_tower._get_feat_extract_output_lengths(mask.sum(-1))[1])
    audio_ids = [5, 6, AUDIO_BOS, *[AUDIO] * n, AUDIO_EOS]
    return AudioLMCase(model, audio_ids, [7, 8, 9], {"input_features": feats, "feature_attention_mask": mask})


def omni_window(model: torch.nn.Module, seed: int, frames: int = 40) -> AudioLMCase:
    g = torch.Generator().manual_seed(seed)
    feats = torch.randn(1, MEL_BINS, frames, generator=g)
    mask = torch.ones(1, frames, dtype=torch.long)
    n = int(model.model.audio_tower._get_feat_extract_output_lengths(mask.sum(-1))[1])
    audio_ids = [109, 5, AUDIO_BOS, *[AUDIO] * n, AUDIO_EOS]
    return AudioLMCase(model, audio_ids, [7, 8, 9], {"input_features": feats, "feature_attention_mask": mask})


def qwen3_asr_window(model: torch.nn.Module, seed: int, frames: int = 200) -> AudioLMCase:
    """Qwen3-ASR: 128 mel bins, 13 audio tokens per 100 frames."""
    g = torch.Generator().manual_seed(seed)
    feats = torch.randn(1, 128, frames, generator=g)
    mask = torch.ones(1, frames, dtype=torch.long)
    audio_ids = [5, AUDIO_BOS, *[AUDIO] * (13 * frames // 100), AUDIO_EOS]
    return AudioLMCase(model, audio_ids, [7, 8, 9], {"input_features": feats, "input_features_mask": mask})
