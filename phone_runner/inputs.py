"""What a real engine on the phone needs besides the audio: the target's decode inputs (PROTOCOL.md).

A stock phone runs the C++ runner, which has no tokenizer and no feature extractor. So the host
reads the target's decode protocol from its weights folder (``as2d_whisper.json``: the prompt ids
the tokenizer gives ``<|startoftranscript|><|lang|><|transcribe|><|notimestamps|>``, and the EOS id)
and, for an encoder-decoder target, computes the encoder's input (log-mel features, padded like
``workbench.models.mnn.whisper``) and pushes it as ``.npy`` beside the audio. Each window's request
entry then carries ``prompt``, ``eos_id`` and ``features``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .errors import PhoneError


@dataclass(frozen=True)
class DecodeInputs:
    """The target's decode protocol as the request carries it."""

    prompt: tuple[int, ...]
    eos_id: int
    mel_bins: int | None  # an encoder-decoder target's feature rows (None: no features sent)
    frames: int | None  # feature columns: 2 * max_source_positions for Whisper

    def features(self, audio: np.ndarray) -> np.ndarray:
        """Log-mel features ``[1, mel_bins, frames]`` float32 (the MNN Whisper encoder's input)."""
        from transformers import WhisperFeatureExtractor

        from workbench.models.whisper import SAMPLE_RATE

        if self.mel_bins is None or self.frames is None:
            raise ValueError("this target takes no encoder features")
        fe = WhisperFeatureExtractor(feature_size=self.mel_bins, sampling_rate=SAMPLE_RATE)
        x = fe(np.asarray(audio, dtype=np.float32), sampling_rate=SAMPLE_RATE, return_tensors="np").input_features
        n = self.frames
        x = x[..., :n] if x.shape[-1] >= n else np.pad(x, ((0, 0), (0, 0), (0, n - x.shape[-1])))
        return np.ascontiguousarray(x, dtype=np.float32)


def decode_inputs(model_cfg: Mapping[str, Any], *, features: bool) -> DecodeInputs:
    """The target's prompt ids and EOS id (and, with ``features``, its feature shape) from its weights
    folder, without loading the model. Whisper targets only: an audio LM's prompt holds the audio."""
    from workbench.models.registry import ModelSpec, resolve_weights

    block = dict(model_cfg["target"])
    if block.get("family") != "whisper":
        raise PhoneError(f"model.target.family {block.get('family')!r}: the phone's real engines get prompt ids "
                         "and features for Whisper targets only; use model=whisper_base (or another Whisper pair)")
    folder = resolve_weights(ModelSpec.from_dict(block))
    meta_path, cfg_path = folder / "as2d_whisper.json", folder / "config.json"
    try:
        cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
        if meta_path.is_file():
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            prompt, eos = [int(t) for t in meta["prompt_ids"]], int(meta["eos_id"])
        else:  # a plain transformers folder: its decoder start token, as workbench.models.whisper does
            prompt, eos = [int(cfg["decoder_start_token_id"])], int(cfg["eos_token_id"])
    except (OSError, ValueError, KeyError) as err:
        raise PhoneError(f"model.target: {folder} has no readable decode protocol ({err}); delete that folder "
                         "so the weights are converted again, or point model.target.local_path at good ones") from None
    if not features:
        return DecodeInputs(tuple(prompt), eos, None, None)
    return DecodeInputs(tuple(prompt), eos, int(cfg["num_mel_bins"]), 2 * int(cfg["max_source_positions"]))


def save_npy(path: Path, array: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, np.ascontiguousarray(array, dtype=np.float32), allow_pickle=False)
