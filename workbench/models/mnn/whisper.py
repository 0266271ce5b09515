"""Whisper on MNN behind the torch backend's interfaces (``Target``, decoder session, producer).

``MnnWhisperBundle`` stands where ``WhisperBundle`` does (``features``, ``config``, ``protocol``,
``codec``), but its model is two MNN modules loaded from an export dir alone, as a phone would.
``MnnDecoderState`` is a ``DecoderSession``: the self-attention KV lives in MNN ``Var`` s that are
fed straight back into the next forward (a numpy round trip costs ~6 ms per step); rollback slices
the position axis. Logits are returned as torch tensors so ``drafting`` and the Target's greedy
tie-break are shared with the torch engine unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import WhisperConfig, WhisperFeatureExtractor

from workbench.models.mnn.export import (
    DEC_IN,
    DEC_OUT,
    DECODER,
    ENC_IN,
    ENC_OUT,
    ENCODER,
    MnnExportError,
    check_export,
    export_whisper,
    reexport_command,
)
from workbench.models.mnn.runtime import MnnSettings, const, load_module, read
from workbench.models.tokenizer import TextCodec
from workbench.models.whisper import SAMPLE_RATE, WhisperProtocol, WhisperTarget
from workbench.models.whisper_convert import AS2D_META


@dataclass
class MnnWhisperBundle:
    encoder: Any  # MNN module: features -> cross_k, cross_v
    decoder: Any  # MNN module: tokens, positions, past KV, cross KV -> logits, new KV
    config: WhisperConfig
    protocol: WhisperProtocol
    codec: TextCodec | None
    settings: MnnSettings
    export: Path
    name: str = "whisper-mnn"
    engine: str = "mnn"
    _decoders: dict[int, Any] = field(default_factory=dict, repr=False)  # threads -> decoder module

    def decoder_with(self, threads: int) -> Any:
        """The decoder on a runtime of ``threads`` threads (loaded once): MNN fixes a module's threads
        when it loads, and a decode that gains cores mid-window (``driver.JoiningCores``) switches to
        it. KV and cross-KV ``Var`` s are plain CPU tensors, so either module continues the other's."""
        if threads == self.settings.threads:
            return self.decoder
        if threads not in self._decoders:
            self._decoders[threads] = load_module(self.export / DECODER, DEC_IN, DEC_OUT, self.settings, threads)
        return self._decoders[threads]

    def features(self, audio: np.ndarray) -> np.ndarray:
        """Log-mel features ``[1, M, 2*S]`` (same extractor and padding as the torch bundle)."""
        cfg = self.config
        fe = WhisperFeatureExtractor(feature_size=cfg.num_mel_bins, sampling_rate=SAMPLE_RATE)
        x = fe(np.asarray(audio, dtype=np.float32), sampling_rate=SAMPLE_RATE, return_tensors="np").input_features
        n = 2 * cfg.max_source_positions
        x = x[..., :n] if x.shape[-1] >= n else np.pad(x, ((0, 0), (0, 0), (0, n - x.shape[-1])))
        return np.ascontiguousarray(x, dtype=np.float32)

    def decoder_state(self, features: np.ndarray) -> MnnDecoderState:
        return MnnDecoderState(self, features)


def load_mnn_export(out: str | Path, settings: MnnSettings | None = None, name: str | None = None,
                    source: str | Path | None = None, quant: str | None = None) -> MnnWhisperBundle:
    """Load an export dir (validated first: a bad file is one error naming it and the re-export command)."""
    out = Path(out)
    settings = settings or MnnSettings()
    manifest = check_export(out, source, quant)
    src = source or manifest.get("source")
    cmd = reexport_command(src or "MODEL_DIR", manifest.get("quant"))
    try:
        cfg = WhisperConfig.from_pretrained(out)
        meta = json.loads((out / AS2D_META).read_text()) if (out / AS2D_META).is_file() else None
    except (OSError, ValueError) as err:
        raise MnnExportError(f"MNN export corrupt: {out / 'config.json'} or {out / AS2D_META} unreadable ({err}); "
                             f"re-export with: {cmd}") from None
    if meta is not None:
        proto = WhisperProtocol(meta["prompt_ids"], meta["eos_id"], meta["suppress_ids"], meta["begin_suppress_ids"])
    else:
        proto = WhisperProtocol([cfg.decoder_start_token_id], cfg.eos_token_id, [], [])
    tok = out / "tokenizer.json"
    modules = []
    for fname, ins, outs in ((ENCODER, ENC_IN, ENC_OUT), (DECODER, DEC_IN, DEC_OUT)):
        mod = load_module(out / fname, ins, outs, settings)
        if mod is None:
            raise MnnExportError(f"MNN export corrupt: MNN could not load {out / fname}; re-export with: {cmd}")
        modules.append(mod)
    return MnnWhisperBundle(modules[0], modules[1], cfg, proto, TextCodec.from_file(tok) if tok.is_file() else None,
                            settings, out, name or out.name)


def load_mnn_whisper(model_dir: str | Path, settings: MnnSettings | None = None, quant: str | None = None,
                     name: str | None = None, progress: bool = True) -> MnnWhisperBundle:
    """Export (cached per weights hash) and load a transformers Whisper dir on MNN."""
    out = export_whisper(model_dir, quant=quant, progress=progress)
    return load_mnn_export(out, settings, name, source=model_dir, quant=quant)


def load_mnn_spec(spec: Any, settings: MnnSettings | None = None, progress: bool = True) -> MnnWhisperBundle:
    """A registry ``ModelSpec`` on MNN: same weights resolution as torch, then export + load.

    ``quantize: dynamic_int8`` maps to MNN's int8 weights with ``memory=low``, under which MNN
    computes in dynamic int8 (its counterpart of torch's dynamic quantization)."""
    from dataclasses import replace

    from workbench.models.registry import resolve_weights

    if spec.family != "whisper":
        raise ValueError(f"{spec.name} is a {spec.family} model; the MNN engine runs whisper only")
    settings = settings or MnnSettings()
    quant = None
    if spec.quantize == "dynamic_int8":
        quant, settings = "int8", replace(settings, memory="low")
    elif spec.quantize:
        raise ValueError(f"{spec.name}: unknown quantize {spec.quantize!r}")
    return load_mnn_whisper(resolve_weights(spec), settings, quant=quant, name=spec.name, progress=progress)


class MnnDecoderState:
    """Cross KV for one request plus the decoder self-attention KV on a token prefix (MNN ``Var`` s)."""

    def __init__(self, bundle: MnnWhisperBundle, features: np.ndarray | None = None, cross: tuple | None = None):
        """``cross``: the cross KV of another state on the same audio (it is read-only), instead of
        running the encoder on ``features`` again."""
        self.bundle = bundle
        cfg = bundle.config
        if (features is None) == (cross is None):
            raise ValueError("pass exactly one of features or cross")
        if cross is None:
            cross = bundle.encoder.forward([const(np.asarray(features, dtype=np.float32))])
        self.cross_k, self.cross_v = cross
        heads = cfg.decoder_attention_heads
        empty = np.zeros((cfg.decoder_layers, 1, heads, 0, cfg.d_model // heads), dtype=np.float32)
        self.past_k, self.past_v = const(empty), const(empty)
        self.length = 0  # decoder entries held in the KV
        self.decoder = bundle.decoder
        self._mask = torch.zeros(cfg.vocab_size, dtype=torch.float32)
        if bundle.protocol.suppress_ids:
            self._mask[torch.tensor(bundle.protocol.suppress_ids)] = float("-inf")
        self._begin = torch.zeros(cfg.vocab_size, dtype=torch.float32)
        if bundle.protocol.begin_suppress_ids:
            self._begin[torch.tensor(bundle.protocol.begin_suppress_ids)] = float("-inf")

    def fork(self) -> MnnDecoderState:
        """A fresh (empty-KV) state on the same request, sharing this one's cross KV."""
        return MnnDecoderState(self.bundle, cross=(self.cross_k, self.cross_v))

    def raw(self, ids: Sequence[int]) -> np.ndarray:
        """ONE decoder forward over ``ids`` on top of the KV; unmasked fp32 logits ``[K, V]`` (a copy)."""
        k = len(ids)
        if self.length + k > self.bundle.config.max_target_positions:
            raise ValueError(f"decoder positions exhausted: {self.length} + {k} > "
                             f"{self.bundle.config.max_target_positions}")
        tokens = const(np.asarray([ids], dtype=np.int32))
        positions = const(np.arange(self.length, self.length + k, dtype=np.int32))
        logits, self.past_k, self.past_v = self.decoder.forward(
            [tokens, positions, self.past_k, self.past_v, self.cross_k, self.cross_v])
        self.length += k
        return read(logits)[0]

    def forward(self, ids: Sequence[int]) -> torch.Tensor:
        """Masked fp32 logits ``[K, V]`` (the ``DecoderSession`` contract)."""
        return torch.from_numpy(self.raw(ids)) + self._mask

    def begin_mask(self) -> torch.Tensor:
        return self._begin

    def use_threads(self, threads: int) -> None:
        """Run the next forwards on ``threads`` threads (same KV, same request)."""
        self.decoder = self.bundle.decoder_with(threads)

    def crop(self, n_remove: int) -> None:
        """Drop the last ``n_remove`` entries by slicing the KV's position axis."""
        if n_remove <= 0:
            return
        if n_remove > self.length:
            raise ValueError(f"crop({n_remove}) with only {self.length} entries")
        keep = self.length - n_remove
        # Rejections are rare next to steps, so one numpy copy of the kept KV is cheap enough here.
        self.past_k = const(read(self.past_k)[:, :, :, :keep])
        self.past_v = const(read(self.past_v)[:, :, :, :keep])
        self.length = keep


class MnnWhisperTarget(WhisperTarget):
    """Greedy Whisper target on MNN: the torch ``WhisperTarget`` with an MNN decoder state."""

    def audio_prefill(self) -> None:
        """Prepare the audio state before a request: the MNN encoder's cross KV (Section 5.4)."""
        self.state = self.bundle.decoder_state(self.features)

    def prefill(self) -> int:
        from workbench.models.whisper import greedy

        if not self.audio_prepared:
            self.state = self.bundle.decoder_state(self.features)
        logits = self.state.forward(self.bundle.protocol.prompt_ids)[-1:] + self.state.begin_mask()
        self.last_logits = logits
        self._pending = 0
        return greedy(logits)[0]

    def prepare_threads(self, threads: int) -> None:
        """Load the decoder for ``threads`` threads now, before the decode clock starts, so that
        ``use_threads`` switches to it without loading a module mid-window (``NativeHost.run``)."""
        self.bundle.decoder_with(threads)

    def use_threads(self, threads: int) -> None:
        """Verify on ``threads`` threads from now on (``driver.JoiningCores``; torch's count is global)."""
        self.state.use_threads(threads)


def mnn_drafter(bundle: MnnWhisperBundle, audio: np.ndarray):
    """Prefix-conditioned drafter (SD / ASP) on MNN."""
    from workbench.models.drafting import PrefixDrafter

    p = bundle.protocol
    return PrefixDrafter(bundle.decoder_state(bundle.features(audio)), p.prompt_ids, p.eos_id,
                         bundle.config.max_target_positions)


def mnn_producer(bundle: MnnWhisperBundle, audio: np.ndarray, max_new_tokens: int | None = None):
    """Target-decoupled producer on MNN; feature extraction and encoder run inside its clock."""
    from workbench.models.drafting import AutoregressiveProducer

    p = bundle.protocol
    n = min(max_new_tokens or p.max_new_tokens, bundle.config.max_target_positions - len(p.prompt_ids))
    return AutoregressiveProducer(lambda: bundle.decoder_state(bundle.features(audio)), p.prompt_ids, p.eos_id, n)
