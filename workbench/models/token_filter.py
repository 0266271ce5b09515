"""Auxiliary audio-token reduction filter (D.6.2) for Qwen-family audio-LM targets.

An offline-fitted linear ridge predictor scores the projected encoder tokens (the audio features
that replace the audio placeholders in the LM sequence) by predicted target-attention importance.
At runtime the tokens are split into ``keep_per`` consecutive equal-time bins per ``per`` tokens
(75 of every 100) and the highest-scoring token of each bin is kept, preserving temporal coverage
and order; the kept tokens take consecutive target positions. Selection happens before the LM
prefill. The target is not fine-tuned. Weights are saved as safetensors + a JSON sidecar.

Training labels: the attention the instruction tokens pay to each audio position, averaged over
layers and heads, in the unfiltered target (eager attention), on the demo corpus offline.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from .audio_lm import MROPE_MODEL_TYPES, AudioLMSession, AudioLMTarget

KEEP, PER = 75, 100


def kept_count(n: int, keep: int = KEEP, per: int = PER) -> int:
    """Tokens kept out of ``n``: ``keep`` of every ``per`` (at least one)."""
    return max(1, (n * keep) // per) if n else 0


def select_by_bins(scores: Sequence[float] | torch.Tensor, keep: int = KEEP, per: int = PER) -> list[int]:
    """Indices kept: one highest-scoring token in each of ``kept_count(n)`` equal-time bins, in order.
    Ties go to the earliest token (deterministic)."""
    s = torch.as_tensor(scores, dtype=torch.float64).flatten()
    n, k = len(s), kept_count(len(s), keep, per)
    out = []
    for j in range(k):
        lo, hi = (j * n) // k, ((j + 1) * n) // k
        out.append(lo + int(torch.argmax(s[lo:hi])))
    return out


@dataclass
class RidgeImportance:
    """score(x) = x . weight + bias, fitted in closed form with an L2 penalty ``alpha``."""

    weight: torch.Tensor
    bias: float
    alpha: float = 1.0

    @classmethod
    def fit(cls, x: torch.Tensor, y: torch.Tensor, alpha: float = 1.0) -> RidgeImportance:
        x, y = x.double(), y.double().flatten()
        if x.shape[0] != y.shape[0] or x.shape[0] < 2:
            raise ValueError(f"ridge fit needs matching rows (>= 2), got x {tuple(x.shape)} and y {tuple(y.shape)}")
        xm, ym = x.mean(0), y.mean()
        xc = x - xm
        a = xc.T @ xc + alpha * torch.eye(x.shape[1], dtype=torch.float64)
        w = torch.linalg.solve(a, xc.T @ (y - ym))
        return cls(w.float(), float(ym - xm @ w), alpha)

    def score(self, x: torch.Tensor) -> torch.Tensor:
        return x.float() @ self.weight + self.bias

    def save(self, path: Path) -> Path:
        from safetensors.torch import save_file

        from workbench.io import atomic_write_text

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{id(self)}.tmp")
        save_file({"weight": self.weight.contiguous()}, str(tmp))
        tmp.replace(path)
        atomic_write_text(path.with_suffix(".json"), json.dumps({"bias": self.bias, "alpha": self.alpha,
                                                                 "keep": KEEP, "per": PER, "dim": len(self.weight)}))
        return path

    @classmethod
    def load(cls, path: Path) -> RidgeImportance:
        from safetensors.torch import load_file

        path = Path(path)
        meta_path = path.with_suffix(".json")
        if not path.exists() or not meta_path.exists():
            raise FileNotFoundError(f"token filter {path} (+ {meta_path.name}) not found: fit it with "
                                    "workbench.models.token_filter.fit_filter and save()")
        meta = json.loads(meta_path.read_text())
        return cls(load_file(str(path))["weight"], float(meta["bias"]), float(meta["alpha"]))


# ------------------------------------------------------------------------------ the LM sequence
class _Captured(Exception):
    pass


def merged_embeds(model: torch.nn.Module, ids: Sequence[int], audio_inputs: Mapping[str, Any]) -> torch.Tensor:
    """The LM input embeddings of ``ids`` with the projected audio features merged in, computed by
    the model's own merge (encoder only: the language model is stopped at its first call)."""
    lm = model.model.language_model if hasattr(model, "model") and hasattr(model.model, "language_model") \
        else model.language_model
    seen: dict[str, torch.Tensor] = {}

    def grab(_mod: Any, args: tuple, kwargs: dict) -> None:
        seen["embeds"] = kwargs.get("inputs_embeds")
        raise _Captured

    handle = lm.register_forward_pre_hook(grab, with_kwargs=True)
    try:
        with torch.inference_mode():
            model(input_ids=torch.tensor([list(ids)]), **dict(audio_inputs))
    except _Captured:
        pass
    finally:
        handle.remove()
    if seen.get("embeds") is None:
        raise RuntimeError(f"{type(model).__name__}: could not capture the merged LM input embeddings")
    return seen["embeds"][0]


def audio_positions(model: torch.nn.Module, ids: Sequence[int]) -> list[int]:
    tok = getattr(model.config, "audio_token_id", None) or getattr(model.config, "audio_token_index", None)
    return [i for i, t in enumerate(ids) if t == tok]


class FilteredAudioLMSession(AudioLMSession):
    """``AudioLMSession`` whose audio prefill runs the filtered embeddings (kept tokens only)."""

    def __init__(self, model: torch.nn.Module, audio_ids: Sequence[int], audio_inputs: Mapping[str, Any],
                 predictor: RidgeImportance, suppress_ids: Sequence[int] = ()) -> None:
        if model.config.model_type in MROPE_MODEL_TYPES:
            raise ValueError(f"token filter: {model.config.model_type} (M-RoPE positions) is not supported yet; "
                             "use a Qwen2-Audio or Qwen3-ASR target, or run without the filter")
        self.model = model
        from transformers import DynamicCache

        self.cache = DynamicCache()
        self.length = 0
        self._mask = torch.zeros(model.config.get_text_config().vocab_size)
        if suppress_ids:
            self._mask[torch.tensor(list(suppress_ids))] = float("-inf")
        self._rope_deltas = None
        embeds = merged_embeds(model, audio_ids, audio_inputs)
        pos = audio_positions(model, audio_ids)
        kept = select_by_bins(predictor.score(embeds[pos]))
        drop = set(pos) - {pos[i] for i in kept}
        rows = [i for i in range(len(audio_ids)) if i not in drop]
        self.kept, self.audio_tokens = len(kept), len(pos)
        with torch.inference_mode():
            out = model(inputs_embeds=embeds[rows].unsqueeze(0), cache=self.cache, use_cache=True)
        self.cache = out.cache if getattr(out, "cache", None) is not None else out.past_key_values
        self.length = len(rows)
        self.audio_logits = out.logits[0].float().cpu() + self._mask
        self.audio_len = self.length


class FilteredAudioLMTarget(AudioLMTarget):
    """An ``AudioLMTarget`` whose audio KV is built from the filtered audio tokens."""

    def __init__(self, *args: Any, predictor: RidgeImportance, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.predictor = predictor

    def audio_prefill(self) -> None:
        self.session = FilteredAudioLMSession(self.model, self.audio_ids, self.audio_inputs, self.predictor,
                                              self.suppress_ids)


# ------------------------------------------------------------------------------ offline fit
def attention_importance(model: torch.nn.Module, audio_ids: Sequence[int], instruction_ids: Sequence[int],
                         audio_inputs: Mapping[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
    """(projected audio tokens, their importance): attention from the instruction rows to each audio
    position, mean over layers and heads, in the unfiltered model (eager attention)."""
    ids = [*audio_ids, *instruction_ids]
    embeds = merged_embeds(model, ids, audio_inputs)
    prev = model.config._attn_implementation
    model.set_attn_implementation("eager")
    try:
        with torch.inference_mode():
            out = model(inputs_embeds=embeds.unsqueeze(0), output_attentions=True)
    finally:
        model.set_attn_implementation(prev)
    att = torch.stack([a[0] for a in out.attentions]).float()  # layers, heads, query, key
    rows = att[:, :, len(audio_ids):, :].mean(dim=(0, 1, 2))
    pos = audio_positions(model, audio_ids)
    return embeds[pos].float(), rows[pos]


def fit_filter(model: torch.nn.Module, cases: Sequence[tuple[Sequence[int], Sequence[int], Mapping[str, Any]]],
               alpha: float = 1.0) -> RidgeImportance:
    """Fit the ridge predictor on (audio ids, instruction ids, audio inputs) windows."""
    xs, ys = zip(*(attention_importance(model, a, i, f) for a, i, f in cases), strict=True)
    y = torch.cat([v / v.sum() * len(v) if float(v.sum()) > 0 else v for v in ys])  # per-window scale
    return RidgeImportance.fit(torch.cat(xs), y, alpha)


def word_error_rate(ref: str, hyp: str) -> float:
    from workbench.data.quality import wer

    return wer([ref], [hyp]) if ref.strip() else math.nan


__all__ = ["FilteredAudioLMSession", "FilteredAudioLMTarget", "KEEP", "PER", "RidgeImportance",
           "attention_importance", "fit_filter", "kept_count", "merged_embeds", "select_by_bins"]
