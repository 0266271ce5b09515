"""Per-window sessions of decoder-only audio LMs (Qwen3-ASR, Qwen2-Audio, Qwen2.5-Omni thinker).

What ``models.pair`` (trace collection, native host runs) and the native producer process build
for one request: the family's own prompt from its own processor (``models.prompts``), then an
``AudioLMTarget``, a prefix-conditioned drafter or a target-decoupled producer on it.

The request's instruction (ASR, translation target, spoken-QA question: the cohort manifest's
``instruction`` column) goes to families whose prompt takes one; Qwen3-ASR's transcription request
has no free text (its ``language``/``context`` come from the ``prompt:`` block).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

AUDIO_LM_FAMILIES = ("qwen3_asr", "qwen2_audio", "qwen2_5_omni")


def is_audio_lm(family: str) -> bool:
    return family in AUDIO_LM_FAMILIES


def lm_codec(bundle: Any) -> Any:
    """The bundle's vocabulary as a ``TextCodec`` (Tok_T conversion, output decoding)."""
    from .tokenizer import TextCodec

    return TextCodec(bundle.processor.tokenizer.backend_tokenizer)


def lm_eos(bundle: Any) -> int | None:
    from .prompts import _eos_id

    return _eos_id(bundle.processor.tokenizer)


def lm_vocab_size(bundle: Any) -> int:
    return int(bundle.model.config.get_text_config().vocab_size)


def lm_max_positions(bundle: Any) -> int:
    return int(bundle.model.config.get_text_config().max_position_embeddings)


def lm_meta(path: Any) -> dict[str, int | None]:
    """eos id, vocabulary size and context length of a saved audio-LM release, without loading its
    weights (a fully cached trace run needs ids and limits only). Omni: the thinker's text config."""
    import json
    from pathlib import Path

    from transformers import AutoTokenizer

    from .prompts import _eos_id

    cfg = json.loads((Path(path) / "config.json").read_text())
    cfg = cfg.get("thinker_config", cfg)
    text = cfg.get("text_config", cfg)
    return {"eos_id": _eos_id(AutoTokenizer.from_pretrained(path)), "vocab_size": int(text["vocab_size"]),
            "max_positions": int(text["max_position_embeddings"])}


def prompt_kwargs(family: str, prompt: Mapping[str, Any] | None, instruction: str | None) -> dict[str, Any]:
    """The ``prompt:`` settings this family's prompt helper takes (others are another family's:
    a pair of two families shares one ``prompt:`` block), plus the request's instruction."""
    from .prompts import PROMPTS

    if family not in PROMPTS:
        raise ValueError(f"no prompt helper for family {family!r}; known: {sorted(PROMPTS)}")
    accepted = set(inspect.signature(PROMPTS[family]).parameters) - {"processor", "audio"}
    kw = {k: v for k, v in dict(prompt or {}).items() if k in accepted and v is not None}
    if instruction is not None and "instruction" in accepted:
        kw["instruction"] = instruction
    return kw


def lm_prompt(bundle: Any, prompt: Mapping[str, Any] | None, audio: Any, instruction: str | None = None) -> Any:
    """This request's ``AudioPrompt`` for ``bundle`` (its family's template, its own processor)."""
    from .prompts import audio_prompt

    if bundle.processor is None:
        raise ValueError(f"{bundle.name}: loaded without a processor; a per-window prompt needs one")
    return audio_prompt(bundle.family, bundle.processor, audio, **prompt_kwargs(bundle.family, prompt, instruction))


def lm_target(bundle: Any, prompt: Mapping[str, Any] | None, audio: Any, instruction: str | None = None) -> Any:
    from .audio_lm import AudioLMTarget

    return AudioLMTarget(bundle.model, **lm_prompt(bundle, prompt, audio, instruction).as_kwargs())


def lm_drafter(bundle: Any, prompt: Mapping[str, Any] | None, audio: Any, max_len: int,
               instruction: str | None = None) -> Any:
    """Prefix-conditioned drafter (SD, ASP, w/o TD); its audio prefill happens here."""
    from .audio_lm import audio_lm_drafter

    p = lm_prompt(bundle, prompt, audio, instruction)
    return audio_lm_drafter(bundle.model, p.audio_ids, p.instruction_ids, p.audio_inputs, p.eos_id, max_len,
                            p.suppress_ids)


def lm_producer(bundle: Any, prompt: Mapping[str, Any] | None, audio: Any, max_new_tokens: int,
                instruction: str | None = None) -> Any:
    """Target-decoupled producer; its audio prefill runs when iteration starts (its own clock)."""
    from .audio_lm import audio_lm_producer

    p = lm_prompt(bundle, prompt, audio, instruction)
    return audio_lm_producer(bundle.model, p.audio_ids, p.instruction_ids, p.audio_inputs, p.eos_id,
                             max_new_tokens, p.suppress_ids)


__all__ = ["AUDIO_LM_FAMILIES", "is_audio_lm", "lm_codec", "lm_drafter", "lm_eos", "lm_max_positions", "lm_meta",
           "lm_producer", "lm_prompt", "lm_target", "lm_vocab_size", "prompt_kwargs"]
