"""Prompts for decoder-only audio LMs from their own processors and chat templates.

Each helper renders the model's real chat template (shipped with the weights), runs the processor
on the audio, and splits the token ids at the last audio end marker: everything up to it is the
audio prefill that builds the retained state C_u, the rest (closing the user turn and opening the
assistant turn) is the instruction prefill that yields the first known root. The audio therefore
goes first in the user turn, so C_u does not depend on the instruction text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

# per-request instructions of the translation and spoken-QA cohorts: pass as ``instruction=``
from workbench.data.datasets.instructions import task_instruction  # noqa: F401

SAMPLE_RATE = 16000
OMNI_SYSTEM = ("You are Qwen, a virtual human developed by the Qwen Team, Alibaba Group, capable of perceiving "
               "auditory and visual inputs, as well as generating text and speech.")
DEFAULT_INSTRUCTION = "Transcribe the speech."
TEXT_KEYS = frozenset({"input_ids", "attention_mask", "num_audio_tokens", "mm_token_type_ids"})


@dataclass
class AudioPrompt:
    """What ``AudioLMTarget`` / ``audio_lm_drafter`` / ``audio_lm_producer`` take as fixed input."""

    audio_ids: list[int]
    instruction_ids: list[int]
    audio_inputs: dict[str, torch.Tensor]
    eos_id: int | None
    suppress_ids: list[int] = field(default_factory=list)  # audio placeholders: never generated

    def as_kwargs(self) -> dict[str, Any]:
        return {"audio_ids": self.audio_ids, "instruction_ids": self.instruction_ids,
                "audio_inputs": self.audio_inputs, "eos_id": self.eos_id, "suppress_ids": self.suppress_ids}


def _token_id(tokenizer: Any, token: str) -> int | None:
    tid = tokenizer.convert_tokens_to_ids(token)
    return None if tid is None or tid == tokenizer.unk_token_id else int(tid)


def _eos_id(tokenizer: Any) -> int | None:
    """Chat models end the assistant turn with ``<|im_end|>``; fall back to the tokenizer's EOS."""
    im_end = _token_id(tokenizer, "<|im_end|>")
    return im_end if im_end is not None else tokenizer.eos_token_id


def split_audio_prompt(batch: Any, tokenizer: Any, audio_token: str, audio_eos_token: str) -> AudioPrompt:
    """Split processor output (batch of one) into audio prefill, instruction prefill and features."""
    ids = [int(t) for t in batch["input_ids"][0]]
    end_id, audio_id = _token_id(tokenizer, audio_eos_token), _token_id(tokenizer, audio_token)
    if end_id is None or end_id not in ids:
        raise ValueError(f"prompt has no audio end marker {audio_eos_token!r}: is the audio in the chat template?")
    cut = len(ids) - ids[::-1].index(end_id)
    if cut == len(ids):
        raise ValueError("nothing follows the audio: the instruction prefill must yield the first known root")
    feats = {k: v for k, v in batch.items() if k not in TEXT_KEYS and isinstance(v, torch.Tensor)}
    if not feats:
        raise ValueError("processor returned no audio features")
    suppress = [t for t in (audio_id, _token_id(tokenizer, audio_eos_token)) if t is not None]
    return AudioPrompt(ids[:cut], ids[cut:], feats, _eos_id(tokenizer), suppress)


def _check_audio(audio: np.ndarray) -> np.ndarray:
    audio = np.asarray(audio, dtype=np.float32)
    if audio.ndim != 1 or audio.size == 0 or not np.isfinite(audio).all():
        raise ValueError(f"audio must be a non-empty finite mono array at {SAMPLE_RATE} Hz, got shape {audio.shape}")
    from workbench.data.audio import WHISPER_MAX_SECONDS, validate_audio

    # the processors' Whisper-style feature extractors cut at 30 s without a word: refuse instead
    return validate_audio(audio, SAMPLE_RATE, WHISPER_MAX_SECONDS, source="audio LM input")


def qwen3_asr_prompt(processor: Any, audio: np.ndarray, language: str | None = None,
                     context: str | None = None) -> AudioPrompt:
    """Qwen3-ASR transcription request (the processor's own ``apply_transcription_request``).
    ``language`` forces ``language <NAME><asr_text>`` into the assistant turn; ``context`` is
    the optional system prompt (hotwords)."""
    batch = processor.apply_transcription_request(_check_audio(audio), language=language, prompt=context)
    return split_audio_prompt(batch, processor.tokenizer, processor.audio_token, processor.audio_eos_token)


def _chat_prompt(processor: Any, audio: np.ndarray, instruction: str, system: str | None) -> AudioPrompt:
    audio = _check_audio(audio)
    conv: list[dict[str, Any]] = []
    if system is not None:
        conv.append({"role": "system", "content": [{"type": "text", "text": system}]})
    conv.append({"role": "user", "content": [{"type": "audio", "audio": audio},
                                             {"type": "text", "text": instruction}]})
    text = processor.apply_chat_template(conv, add_generation_prompt=True, tokenize=False)
    batch = processor(text=text, audio=[audio], sampling_rate=SAMPLE_RATE, return_tensors="pt")
    return split_audio_prompt(batch, processor.tokenizer, processor.audio_token, processor.audio_eos_token)


def qwen2_audio_prompt(processor: Any, audio: np.ndarray, instruction: str = DEFAULT_INSTRUCTION,
                       system: str | None = None) -> AudioPrompt:
    """Qwen2-Audio(-Instruct) chat prompt; its template adds the default system turn itself."""
    return _chat_prompt(processor, audio, instruction, system)


def qwen2_5_omni_prompt(processor: Any, audio: np.ndarray, instruction: str = DEFAULT_INSTRUCTION,
                        system: str | None = OMNI_SYSTEM) -> AudioPrompt:
    """Qwen2.5-Omni thinker chat prompt with the model card's system prompt."""
    return _chat_prompt(processor, audio, instruction, system)


PROMPTS = {"qwen3_asr": qwen3_asr_prompt, "qwen2_audio": qwen2_audio_prompt, "qwen2_5_omni": qwen2_5_omni_prompt}


def audio_prompt(family: str, processor: Any, audio: np.ndarray, **kwargs: Any) -> AudioPrompt:
    """Dispatch on the registry family name; ``kwargs`` is a ``conf/model`` ``prompt:`` section,
    where ``None`` means the family's default (pass ``system=""`` for an empty system turn)."""
    if family not in PROMPTS:
        raise ValueError(f"no prompt helper for family {family!r}; known: {sorted(PROMPTS)}")
    return PROMPTS[family](processor, audio, **{k: v for k, v in kwargs.items() if v is not None})
