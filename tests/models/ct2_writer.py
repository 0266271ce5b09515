"""Write CTranslate2 binary v6 files from a transformers Whisper model (test helper).

Mirrors the layout the converter must undo: fused q/k/v (zero key bias), fused cross k/v,
gamma/beta norms, an aliased output projection.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

CODES = {np.dtype("float32"): 0, np.dtype("int8"): 1, np.dtype("int16"): 2, np.dtype("int32"): 3,
         np.dtype("float16"): 4}


def _s(text: str) -> bytes:
    data = text.encode() + b"\0"
    return struct.pack("<H", len(data)) + data


def write_ct2(path: Path, variables: dict[str, np.ndarray], aliases: dict[str, str], version: int = 6) -> None:
    out = bytearray(struct.pack("<I", version) + _s("WhisperSpec") + struct.pack("<II", 3, len(variables)))
    for name, arr in variables.items():
        arr = np.asarray(arr, order="C")  # ascontiguousarray would turn scalars into rank 1
        out += _s(name) + bytes([arr.ndim]) + struct.pack(f"<{arr.ndim}I", *arr.shape)
        out += bytes([CODES[arr.dtype]]) + struct.pack("<I", arr.nbytes) + arr.tobytes()
    out += struct.pack("<I", len(aliases))
    for a, t in aliases.items():
        out += _s(a) + _s(t)
    Path(path).write_bytes(bytes(out))


def whisper_to_ct2(model, dtype=np.float16) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    sd = {k: v.detach().numpy().astype(dtype) for k, v in model.state_dict().items()}
    cfg = model.config
    v: dict[str, np.ndarray] = {
        "encoder/num_heads": np.array(cfg.encoder_attention_heads, np.int16),
        "decoder/num_heads": np.array(cfg.decoder_attention_heads, np.int16),
        "decoder/scale_embeddings": np.array(0, np.int8),
    }

    def lin(src: str, dst: str) -> None:
        v[f"{dst}/weight"] = sd[f"{src}.weight"]
        v[f"{dst}/bias"] = sd[f"{src}.bias"]

    def norm(src: str, dst: str) -> None:
        v[f"{dst}/gamma"], v[f"{dst}/beta"] = sd[f"{src}.weight"], sd[f"{src}.bias"]

    def fused(src: str, dst: str, names: tuple[str, ...]) -> None:
        v[f"{dst}/weight"] = np.concatenate([sd[f"{src}.{n}.weight"] for n in names])
        zeros = np.zeros(cfg.d_model, dtype)
        v[f"{dst}/bias"] = np.concatenate([sd.get(f"{src}.{n}.bias", zeros) for n in names])

    lin("model.encoder.conv1", "encoder/conv1")
    lin("model.encoder.conv2", "encoder/conv2")
    v["encoder/position_encodings/encodings"] = sd["model.encoder.embed_positions.weight"]
    norm("model.encoder.layer_norm", "encoder/layer_norm")
    for i in range(cfg.encoder_layers):
        s, d = f"model.encoder.layers.{i}", f"encoder/layer_{i}"
        fused(f"{s}.self_attn", f"{d}/self_attention/linear_0", ("q_proj", "k_proj", "v_proj"))
        lin(f"{s}.self_attn.out_proj", f"{d}/self_attention/linear_1")
        norm(f"{s}.self_attn_layer_norm", f"{d}/self_attention/layer_norm")
        lin(f"{s}.fc1", f"{d}/ffn/linear_0")
        lin(f"{s}.fc2", f"{d}/ffn/linear_1")
        norm(f"{s}.final_layer_norm", f"{d}/ffn/layer_norm")
    v["decoder/embeddings/weight"] = sd["model.decoder.embed_tokens.weight"]
    v["decoder/position_encodings/encodings"] = sd["model.decoder.embed_positions.weight"]
    norm("model.decoder.layer_norm", "decoder/layer_norm")
    for i in range(cfg.decoder_layers):
        s, d = f"model.decoder.layers.{i}", f"decoder/layer_{i}"
        fused(f"{s}.self_attn", f"{d}/self_attention/linear_0", ("q_proj", "k_proj", "v_proj"))
        lin(f"{s}.self_attn.out_proj", f"{d}/self_attention/linear_1")
        norm(f"{s}.self_attn_layer_norm", f"{d}/self_attention/layer_norm")
        lin(f"{s}.encoder_attn.q_proj", f"{d}/attention/linear_0")
        fused(f"{s}.encoder_attn", f"{d}/attention/linear_1", ("k_proj", "v_proj"))
        lin(f"{s}.encoder_attn.out_proj", f"{d}/attention/linear_2")
        norm(f"{s}.encoder_attn_layer_norm", f"{d}/attention/layer_norm")
        lin(f"{s}.fc1", f"{d}/ffn/linear_0")
        lin(f"{s}.fc2", f"{d}/ffn/linear_1")
        norm(f"{s}.final_layer_norm", f"{d}/ffn/layer_norm")
    return v, {"decoder/projection/weight": "decoder/embeddings/weight"}
