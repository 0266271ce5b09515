"""Decoder-only audio language model targets (Qwen3-ASR, Qwen2-Audio, Qwen2.5-Omni thinker).

Protocol S (Appendix C.2): the audio prefill (prompt head + audio placeholders, with the audio
features) produces the retained audio KV C_u before the clock; the instruction prefill follows
and yields the first known root. ``verify`` is ONE forward over ``[root, *chain]`` and ``keep``
crops rejected entries with ``DynamicCache.crop(-n)``. While decoding with a cache we pass no
full attention mask: positions come from the cache length (Omni: plus its rope deltas).

Qwen2.5-Omni keeps its M-RoPE deltas on the shared model object (``model.model.rope_deltas``),
so a target, drafter or producer session over the same model would read each other's deltas.
Each session therefore captures the deltas of its own audio prefill and passes explicit 3-D
positions afterwards.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from transformers import DynamicCache

from workbench.models.drafting import AutoregressiveProducer, PrefixDrafter

MROPE_MODEL_TYPES = frozenset({"qwen2_5_omni_thinker"})


class AudioLMSession:
    """Retained state of a decoder-only audio LM: audio KV + token prefix (``DecoderSession``)."""

    def __init__(self, model: torch.nn.Module, audio_ids: Sequence[int], audio_inputs: Mapping[str, Any],
                 suppress_ids: Sequence[int] = ()):
        self.model = model
        self.cache = DynamicCache()
        self.length = 0
        self._mask = torch.zeros(model.config.get_text_config().vocab_size)
        if suppress_ids:
            self._mask[torch.tensor(list(suppress_ids))] = float("-inf")
        self._rope_deltas: torch.Tensor | None = None
        extra = dict(audio_inputs)
        mrope = model.config.model_type in MROPE_MODEL_TYPES
        if mrope:
            # the mask over the audio prompt is what makes Omni compute its rope index (deltas)
            extra.setdefault("attention_mask", torch.ones(1, len(audio_ids), dtype=torch.long))
        self.audio_logits = self._run(audio_ids, extra)
        if mrope:
            self._rope_deltas = model.model.rope_deltas.detach().clone().reshape(1, 1, 1)
        self.audio_len = self.length

    def _positions(self, n: int, dev: torch.device) -> dict[str, torch.Tensor]:
        if self._rope_deltas is None:
            return {}
        pos = torch.arange(self.length, self.length + n, device=dev).view(1, 1, n) + self._rope_deltas.to(dev)
        return {"position_ids": pos.expand(3, 1, n)}

    def _run(self, ids: Sequence[int], extra: dict[str, Any]) -> torch.Tensor:
        dev = next(self.model.parameters()).device
        inp = torch.tensor([list(ids)], dtype=torch.long, device=dev)
        extra = {k: v.to(dev) if isinstance(v, torch.Tensor) else v for k, v in extra.items()}
        if not extra:
            extra = self._positions(len(ids), dev)
        with torch.inference_mode():
            out = self.model(input_ids=inp, cache=self.cache, use_cache=True, **extra)
        self.cache = out.cache if getattr(out, "cache", None) is not None else out.past_key_values
        self.length += len(ids)
        return out.logits[0].float().cpu() + self._mask

    def forward(self, ids: Sequence[int]) -> torch.Tensor:
        return self._run(ids, {})

    def crop(self, n_remove: int) -> None:
        if n_remove > 0:
            self.cache.crop(-n_remove)
            self.length -= n_remove

    def begin_mask(self) -> torch.Tensor:
        return torch.zeros_like(self._mask)


class AudioLMTarget:
    """Greedy audio-LM target implementing ``workbench.decoding.protocols.Target``."""

    def __init__(self, model: torch.nn.Module, audio_ids: Sequence[int], instruction_ids: Sequence[int],
                 audio_inputs: Mapping[str, Any], eos_id: int | None, suppress_ids: Sequence[int] = ()):
        if not instruction_ids:
            raise ValueError("instruction_ids must be non-empty: the first root follows the instruction")
        self.model = model
        self.audio_ids, self.instruction_ids = list(audio_ids), list(instruction_ids)
        self.audio_inputs = audio_inputs
        self.suppress_ids = list(suppress_ids)
        self.eos_id: int | None = eos_id
        self.vocab_size: int = model.config.get_text_config().vocab_size
        self.session: AudioLMSession | None = None
        self.last_logits: torch.Tensor | None = None
        self._pending = 0

    def audio_prefill(self) -> None:
        """Build the audio KV C_u (separately timeable; ``prefill`` calls it if needed)."""
        self.session = AudioLMSession(self.model, self.audio_ids, self.audio_inputs, self.suppress_ids)

    @property
    def audio_prepared(self) -> bool:
        """The audio KV exists and holds nothing after it, so ``prefill`` runs only the instruction."""
        return self.session is not None and self.session.length == self.session.audio_len

    def prefill(self) -> int:
        if self.session is None:
            self.audio_prefill()
        self.last_logits = self.session.forward(self.instruction_ids)[-1:]
        self._pending = 0
        return int(torch.argmax(self.last_logits[0]))

    def verify(self, root: int, chain: Sequence[int]) -> list[int]:
        if self.session is None:
            raise RuntimeError("verify() before prefill()")
        if self._pending:
            raise RuntimeError("verify() twice without keep(): rejected entries would stay in the cache")
        ids = [int(root), *map(int, chain)]
        self.last_logits = self.session.forward(ids)
        self._pending = len(ids)
        return torch.argmax(self.last_logits, dim=-1).tolist()

    def keep(self, n_accepted: int) -> None:
        k = self._pending
        if not 0 <= n_accepted <= k - 1:
            raise ValueError(f"keep({n_accepted}) after a width-{k} verify")
        self.session.crop(k - 1 - n_accepted)
        self._pending = 0

    @property
    def committed_entries(self) -> int:
        if self.session is None:
            return 0
        return self.session.length - self.session.audio_len - len(self.instruction_ids)


def audio_lm_drafter(model: torch.nn.Module, audio_ids: Sequence[int], instruction_ids: Sequence[int],
                     audio_inputs: Mapping[str, Any], eos_id: int | None, max_len: int,
                     suppress_ids: Sequence[int] = ()) -> PrefixDrafter:
    """Prefix-conditioned drafter on a (smaller) same-vocabulary audio LM, e.g. Qwen3-ASR 0.6B.
    ``max_len`` caps instruction + generated tokens (the audio KV comes on top)."""
    session = AudioLMSession(model, audio_ids, audio_inputs, suppress_ids)
    return PrefixDrafter(session, instruction_ids, eos_id, max_len + session.length)


def audio_lm_producer(model: torch.nn.Module, audio_ids: Sequence[int], instruction_ids: Sequence[int],
                      audio_inputs: Mapping[str, Any], eos_id: int | None, max_new_tokens: int,
                      suppress_ids: Sequence[int] = (),
                      clock: Callable[[], float] = time.perf_counter) -> AutoregressiveProducer:
    """Target-decoupled producer on a same-vocabulary audio LM; its audio prefill runs inside the
    producer's own clock (the session is built when iteration starts)."""
    def factory() -> AudioLMSession:
        return AudioLMSession(model, audio_ids, audio_inputs, suppress_ids)

    return AutoregressiveProducer(factory, instruction_ids, eos_id, max_new_tokens, clock)


def qwen3_asr_audio_tokens(model: torch.nn.Module, input_features: torch.Tensor,
                           input_features_mask: torch.Tensor) -> int:
    """Audio placeholder count for Qwen3-ASR (13 per 100 frames), taken from the encoder itself."""
    with torch.inference_mode():
        emb = model.get_audio_features(input_features, input_features_mask, return_dict=True).pooler_output
    return int(emb.shape[-2])
