"""Offline processors for tiny audio LMs: a byte-level BPE tokenizer with the families' special
tokens, the real feature extractors and processor classes, and tiny models whose vocabulary and
audio placeholder ids match the tokenizer. The Qwen2-Audio chat template is the one transformers
ships; the Qwen3-ASR and Omni templates below follow the released ones' turn structure."""

from __future__ import annotations

from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import (
    PreTrainedTokenizerFast,
    Qwen2AudioConfig,
    Qwen2AudioForConditionalGeneration,
    Qwen2AudioProcessor,
    Qwen3ASRConfig,
    Qwen3ASRForConditionalGeneration,
    Qwen3ASRProcessor,
    WhisperFeatureExtractor,
)
from transformers.models.qwen3_asr.feature_extraction_qwen3_asr import Qwen3ASRFeatureExtractor

from tests.models.tiny_audio_lms import spread

QWEN3_ASR_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for c in m['content'] %}"
    "{% if c['type'] == 'audio' %}<|audio_start|><|audio_pad|><|audio_end|>{% else %}{{ c['text'] }}{% endif %}"
    "{% endfor %}{% endif %}{% if not loop.last %}<|im_end|>\n{% endif %}{% endfor %}"
)
TINY_TEXT = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, max_position_embeddings=1024)


def byte_tokenizer(named: dict[str, str]) -> PreTrainedTokenizerFast:
    """256 byte tokens, no merges, chat markers and the family's named audio tokens."""
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    tok = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(alphabet)}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   extra_special_tokens=named, additional_special_tokens=["<|im_start|>"])


def qwen2_audio_processor() -> Qwen2AudioProcessor:
    tok = byte_tokenizer({"audio_token": "<|AUDIO|>", "audio_bos_token": "<|audio_bos|>",
                          "audio_eos_token": "<|audio_eos|>"})
    # 1 s chunks -> 100 frames, matching the tiny encoder's 2 * max_source_positions
    return Qwen2AudioProcessor(feature_extractor=WhisperFeatureExtractor(feature_size=16, chunk_length=1),
                               tokenizer=tok)


def qwen3_asr_processor() -> Qwen3ASRProcessor:
    tok = byte_tokenizer({"audio_token": "<|audio_pad|>", "audio_bos_token": "<|audio_start|>",
                          "audio_eos_token": "<|audio_end|>"})
    return Qwen3ASRProcessor(feature_extractor=Qwen3ASRFeatureExtractor(), tokenizer=tok,
                             chat_template=QWEN3_ASR_TEMPLATE)


def _ids(proc) -> dict[str, int]:
    tok = proc.tokenizer
    return {"vocab_size": len(tok) + 8, "audio": tok.convert_tokens_to_ids(proc.audio_token),
            "eos": tok.convert_tokens_to_ids("<|im_end|>"), "pad": tok.pad_token_id}


def qwen2_audio_for(proc: Qwen2AudioProcessor, seed: int = 0) -> Qwen2AudioForConditionalGeneration:
    i = _ids(proc)
    cfg = Qwen2AudioConfig(
        audio_config=dict(num_mel_bins=16, encoder_layers=1, encoder_attention_heads=2, encoder_ffn_dim=32,
                          d_model=16, max_source_positions=50),
        text_config=dict(model_type="qwen2", vocab_size=i["vocab_size"], **TINY_TEXT),
        audio_token_index=i["audio"], eos_token_id=i["eos"], pad_token_id=i["pad"],
    )
    return spread(Qwen2AudioForConditionalGeneration(cfg), seed)


def qwen3_asr_for(proc: Qwen3ASRProcessor, seed: int = 0) -> Qwen3ASRForConditionalGeneration:
    i = _ids(proc)
    cfg = Qwen3ASRConfig(
        audio_config=dict(num_mel_bins=128, encoder_layers=1, encoder_attention_heads=2, encoder_ffn_dim=32,
                          d_model=16, output_dim=32, downsample_hidden_size=8),
        text_config=dict(vocab_size=i["vocab_size"], head_dim=8, **TINY_TEXT),
        audio_token_id=i["audio"], eos_token_id=i["eos"], pad_token_id=i["pad"],
    )
    return spread(Qwen3ASRForConditionalGeneration(cfg), seed)


def save_release(model: torch.nn.Module, processor, path: Path) -> Path:
    """A weights directory as a user would have it: model and processor files side by side."""
    model.save_pretrained(path)
    if processor is not None:
        processor.save_pretrained(path)
    return path
