"""HF assisted generation as a bench method: transformers' ``generate(assistant_model=...)`` on the
same encoder-decoder target, with the workbench's prompt and suppression, charged after prefill.

HF ``generate`` has no post-prefill boundary of its own, so its charged time is wall time minus the
target's prefill (encoder + prompt) and the assistant's encoder, both measured on the same window
just before the call (the bench's A.3 clock for every other method starts after prefill).
"""

from __future__ import annotations

import copy
import time
from typing import Any

import torch

from .methods import Method
from .windows import AudioWindow


def hf_run(m: Method, w: AudioWindow) -> tuple[list[int], float]:
    """HF assisted ``generate`` with our protocol (prompt, suppression); returns (output, charged s)."""
    from transformers.generation.utils import GenerationMixin

    from workbench.models.whisper import WhisperDecoderState, WhisperTarget

    s = m.setup
    assert s is not None, f"{m.name}: an HF method runs on a host setup"
    proto = s.target.protocol
    t0 = time.perf_counter()
    WhisperTarget(s.target, w.audio).prefill()
    t_pre = time.perf_counter() - t0
    feats = s.target.features(w.audio)
    t0 = time.perf_counter()
    WhisperDecoderState(m.assistant, m.assistant.features(w.audio))
    t_pre += time.perf_counter() - t0
    gc = copy.deepcopy(s.target.model.generation_config)
    gc.suppress_tokens, gc.begin_suppress_tokens = list(proto.suppress_ids), list(proto.begin_suppress_ids)
    gc.do_sample, gc.num_beams, gc.max_new_tokens, gc.max_length = False, 1, s.max_output, None
    kw: dict[str, Any] = {"assistant_model": m.assistant.model}
    if m.tokenizers is not None:
        kw.update(tokenizer=m.tokenizers[0], assistant_tokenizer=m.tokenizers[1])
    t0 = time.perf_counter()
    # Whisper's own generate() rejects decoder_input_ids with an assistant; the generic one is HF's
    # assisted generation proper, on the same encoder-decoder model.
    out = GenerationMixin.generate(s.target.model, input_features=feats, generation_config=gc,
                                   decoder_input_ids=torch.tensor([proto.prompt_ids]), **kw)
    wall = time.perf_counter() - t0
    return out[0].tolist()[len(proto.prompt_ids):], max(wall - t_pre, 1e-9)


__all__ = ["hf_run"]
