"""Whisper backends: loading a converted model, the decoder state, and the greedy ``Target``.

The encoder runs once per request (audio state, outside the decode clock). The decoder keeps an
``EncoderDecoderCache(DynamicCache(), DynamicCache())``; we write the decode loop ourselves because
``generate(encoder_outputs=...)`` does not work in transformers 5. Rollback uses
``DynamicCache.crop(-n)``, which touches only the self-attention half.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from transformers import (
    DynamicCache,
    EncoderDecoderCache,
    WhisperConfig,
    WhisperFeatureExtractor,
    WhisperForConditionalGeneration,
)

from workbench.models.kernel_plan import KernelPlan
from workbench.models.packed_linear import KernelSwitch
from workbench.models.tokenizer import TextCodec
from workbench.models.whisper_convert import AS2D_META

SAMPLE_RATE = 16000


@dataclass
class WhisperProtocol:
    """Protocol S for Whisper transcription: fixed prompt, EOS, suppressed ids, output cap."""

    prompt_ids: list[int]
    eos_id: int
    suppress_ids: list[int]
    begin_suppress_ids: list[int]
    max_new_tokens: int = 224


@dataclass
class WhisperBundle:
    model: WhisperForConditionalGeneration
    protocol: WhisperProtocol
    codec: TextCodec | None
    name: str = "whisper"
    # The decoder's kernel switch when its linears are packed (``pack_decoder``); its ``plan`` (this
    # machine's calibration, ``models.kernel_plan``) also pads a forward to a cheaper wider width.
    kernels: KernelSwitch | None = None

    @property
    def config(self) -> WhisperConfig:
        return self.model.config

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def features(self, audio: np.ndarray) -> torch.Tensor:
        """Log-mel features padded/cut to exactly ``2*max_source_positions`` frames.

        The audio is validated first (``data.audio.validate_audio``): NaN/inf, a wrong shape or more
        than 30 s -- which the feature extractor would cut silently -- is one clear error."""
        from workbench.data.audio import WHISPER_MAX_SECONDS, validate_audio

        cfg = self.config
        audio = validate_audio(audio, SAMPLE_RATE, WHISPER_MAX_SECONDS, source=f"{self.name or 'whisper'} input")
        fe = WhisperFeatureExtractor(feature_size=cfg.num_mel_bins, sampling_rate=SAMPLE_RATE)
        feats = fe(np.asarray(audio, dtype=np.float32), sampling_rate=SAMPLE_RATE, return_tensors="pt")
        x = feats.input_features
        n = 2 * cfg.max_source_positions
        x = x[..., :n] if x.shape[-1] >= n else torch.nn.functional.pad(x, (0, n - x.shape[-1]))
        return x.to(self.device, dtype=next(self.model.parameters()).dtype)


def load_whisper(
    model_dir: str | Path, device: str = "cpu", dtype: torch.dtype = torch.float32, name: str | None = None
) -> WhisperBundle:
    """Load a converted (or any transformers) Whisper dir with our protocol file if present."""
    model_dir = Path(model_dir)
    model = WhisperForConditionalGeneration.from_pretrained(model_dir, dtype=dtype).to(device).eval()
    meta_path = model_dir / AS2D_META
    tok_path = model_dir / "tokenizer.json"
    codec = TextCodec.from_file(tok_path) if tok_path.exists() else None
    if meta_path.exists():
        meta = json.loads(meta_path.read_text())
        proto = WhisperProtocol(
            meta["prompt_ids"], meta["eos_id"], meta["suppress_ids"], meta["begin_suppress_ids"]
        )
    else:
        cfg = model.config
        proto = WhisperProtocol([cfg.decoder_start_token_id], cfg.eos_token_id, [], [])
    return WhisperBundle(model, proto, codec, name or model_dir.name)


def pack_decoder(bundle: WhisperBundle, kernels: str = "packed") -> int:
    """Packed kernels (``models.packed_linear``) for the decoder and output projection: the layers a
    K-wide verify runs, all on one ``KernelSwitch`` (``bundle.kernels``). The encoder runs once per
    request on 1,500 rows and keeps its own. ``kernels``: the switch's default before any plan."""
    from workbench.models.packed_linear import PackedLinear, pack_linears

    switch = KernelSwitch(default=kernels)
    n = pack_linears(bundle.model.model.decoder, switch)
    bundle.model.proj_out = PackedLinear(bundle.model.proj_out, switch)
    bundle.kernels = switch
    return n + 1


def use_kernel_plan(bundle: WhisperBundle, plan: KernelPlan | None) -> None:
    """Run ``bundle``'s decoder forwards by ``plan`` (None: back to its configured kernels)."""
    if bundle.kernels is None:
        raise ValueError(f"{bundle.name}: a kernel plan needs packed decoder linears; set the model's kernels: auto")
    bundle.kernels.plan = plan


def load_whisper_meta(model_dir: str | Path) -> dict:
    """Protocol and size facts of a converted Whisper dir without loading any weights."""
    model_dir = Path(model_dir)
    cfg = WhisperConfig.from_pretrained(model_dir)
    meta_path = model_dir / AS2D_META
    prompt = json.loads(meta_path.read_text())["prompt_ids"] if meta_path.exists() else [cfg.decoder_start_token_id]
    eos = json.loads(meta_path.read_text())["eos_id"] if meta_path.exists() else cfg.eos_token_id
    return {"eos_id": eos, "vocab_size": cfg.vocab_size, "max_target_positions": cfg.max_target_positions,
            "prompt_len": len(prompt)}


class WhisperDecoderState:
    """Encoder output for one request plus the decoder KV on a token prefix."""

    def __init__(self, bundle: WhisperBundle, input_features: torch.Tensor):
        self.bundle = bundle
        self.model = bundle.model
        with torch.inference_mode():
            self.encoder_out = self.model.model.encoder(input_features).last_hidden_state
        self.cache = EncoderDecoderCache(DynamicCache(), DynamicCache())
        self.length = 0  # decoder entries held in self.cache
        v = self.model.config.vocab_size
        self._mask = torch.zeros(v, dtype=torch.float32)
        if bundle.protocol.suppress_ids:
            self._mask[torch.tensor(bundle.protocol.suppress_ids)] = float("-inf")
        self._begin = torch.zeros(v, dtype=torch.float32)
        if bundle.protocol.begin_suppress_ids:
            self._begin[torch.tensor(bundle.protocol.begin_suppress_ids)] = float("-inf")

    def forward(self, ids: Sequence[int]) -> torch.Tensor:
        """ONE decoder forward over ``ids`` on top of the cache; returns masked fp32 logits [K, V].

        Under a kernel plan the forward may run padded to a wider width (the last id repeated): causal
        attention keeps the real rows' logits, and the padding's KV entries are cropped, so the cache
        ends as an unpadded forward leaves it."""
        ids = list(ids)
        k = len(ids)
        switch = self.bundle.kernels
        rows = k
        if switch is not None and switch.plan is not None and switch.forced is None:
            rows = switch.plan.rows_for(k, self.model.config.max_target_positions - self.length)
        inp = torch.tensor([ids + ids[-1:] * (rows - k)], dtype=torch.long, device=self.encoder_out.device)
        with torch.inference_mode():
            out = self.model(
                encoder_outputs=(self.encoder_out,), decoder_input_ids=inp, cache=self.cache, use_cache=True
            )
        self.cache = out.cache if getattr(out, "cache", None) is not None else out.past_key_values
        if rows > k:
            self.cache.self_attention_cache.crop(-(rows - k))
        self.length += k
        logits = out.logits[0, :k].float().cpu()
        return logits + self._mask

    def prepare_cross(self) -> None:
        """Fill the cross-attention KV now: one decoder forward of the first prompt token, whose
        self-attention entry is then dropped. The cross KV depends only on the encoder output, so
        later forwards reuse it bit for bit; the self-attention cache is left empty."""
        if self.length:
            raise RuntimeError("prepare_cross() after decoder forwards: the cross KV already exists")
        self.forward(self.bundle.protocol.prompt_ids[:1])
        self.crop(1)

    def begin_mask(self) -> torch.Tensor:
        """Extra mask for the first generated token only (e.g. no leading space or EOS)."""
        return self._begin

    def crop(self, n_remove: int) -> None:
        """Drop the last ``n_remove`` decoder entries (rejected chain tokens)."""
        if n_remove <= 0:
            return
        self.cache.self_attention_cache.crop(-n_remove)
        self.length -= n_remove


def greedy(logits: torch.Tensor) -> list[int]:
    """Deterministic greedy tie-break: ``argmax`` returns the lowest id among equal maxima."""
    return torch.argmax(logits, dim=-1).tolist()


class WhisperTarget:
    """Greedy Whisper target implementing ``workbench.decoding.protocols.Target``."""

    def __init__(
        self, bundle: WhisperBundle, audio: np.ndarray | None = None, features: torch.Tensor | None = None
    ):
        if (audio is None) == (features is None):
            raise ValueError("pass exactly one of audio or features")
        self.bundle = bundle
        self.features = bundle.features(audio) if features is None else features
        self.eos_id: int | None = bundle.protocol.eos_id
        self.vocab_size: int = bundle.config.vocab_size
        self.state: WhisperDecoderState | None = None
        self.last_logits: torch.Tensor | None = None  # logits of the latest forward, for audits
        self._pending = 0  # entries processed by the latest verify, before keep()

    @property
    def prompt_len(self) -> int:
        return len(self.bundle.protocol.prompt_ids)

    def audio_prefill(self) -> None:
        """Prepare the audio state before a request (Section 5.4, Fig. 1(a)): the encoder output and
        the decoder's cross-attention KV. ``prefill`` then runs only the prompt."""
        self.state = WhisperDecoderState(self.bundle, self.features)
        self.state.prepare_cross()

    @property
    def audio_prepared(self) -> bool:
        """The audio state exists, so ``prefill`` runs no encoder (on-demand requests, D.6.1)."""
        return self.state is not None and self.state.length == 0

    def prefill(self) -> int:
        """Prompt prefill (plus the encoder first, as residual audio preparation, unless
        ``audio_prefill`` ran): returns the first known root (outside the decode clock)."""
        if not self.audio_prepared:
            self.state = WhisperDecoderState(self.bundle, self.features)
        logits = self.state.forward(self.bundle.protocol.prompt_ids)[-1:] + self.state.begin_mask()
        self.last_logits = logits
        self._pending = 0
        return greedy(logits)[0]

    def verify(self, root: int, chain: Sequence[int]) -> list[int]:
        if self.state is None:
            raise RuntimeError("verify() before prefill()")
        if self._pending:
            raise RuntimeError("verify() twice without keep(): rejected entries would stay in the cache")
        ids = [int(root), *map(int, chain)]
        self.last_logits = self.state.forward(ids)
        self._pending = len(ids)
        return greedy(self.last_logits)

    def keep(self, n_accepted: int) -> None:
        k = self._pending
        if not 0 <= n_accepted <= k - 1:
            raise ValueError(f"keep({n_accepted}) after a width-{k} verify")
        self.state.crop(k - 1 - n_accepted)
        self._pending = 0

    @property
    def committed_entries(self) -> int:
        """Decoder tokens in the retained state after the prompt."""
        return 0 if self.state is None else self.state.length - self.prompt_len


def whisper_drafter(bundle: WhisperBundle, audio: np.ndarray | None = None, features: torch.Tensor | None = None):
    """Prefix-conditioned Whisper drafter (``Drafter`` protocol) for SD / ASP baselines."""
    from workbench.models.drafting import PrefixDrafter

    feats = bundle.features(audio) if features is None else features
    p = bundle.protocol
    return PrefixDrafter(WhisperDecoderState(bundle, feats), p.prompt_ids, p.eos_id,
                         bundle.config.max_target_positions)


def whisper_producer(
    bundle: WhisperBundle,
    audio: np.ndarray | None = None,
    features: torch.Tensor | None = None,
    max_new_tokens: int | None = None,
):
    """Target-decoupled Whisper producer; feature extraction and encoder run inside its clock."""
    from workbench.models.drafting import AutoregressiveProducer

    p = bundle.protocol
    cap = bundle.config.max_target_positions - len(p.prompt_ids)
    n = min(max_new_tokens or p.max_new_tokens, cap)

    def session() -> WhisperDecoderState:
        return WhisperDecoderState(bundle, bundle.features(audio) if features is None else features)

    return AutoregressiveProducer(session, p.prompt_ids, p.eos_id, n)
