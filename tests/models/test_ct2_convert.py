"""The CTranslate2 reader and the Whisper converter, on a tiny model written in CT2 format."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import WhisperConfig, WhisperForConditionalGeneration

from tests.models.conftest import tiny_whisper
from tests.models.ct2_writer import whisper_to_ct2, write_ct2
from workbench.models.ct2 import read_ct2
from workbench.models.whisper_convert import ct2_to_whisper_state, read_ct2_parts


def test_reader_decodes_every_dtype(tmp_path):
    vals = {
        "a": np.arange(6, dtype=np.float32).reshape(2, 3),
        "b": np.array([-3, 4], np.int8),
        "c": np.array(7, np.int16),
        "d": np.array([1, 2, 3], np.int32),
        "e": np.array([0.5, -2.0], np.float16),
    }
    write_ct2(tmp_path / "m.bin", vals, {"alias": "a"})
    m = read_ct2(tmp_path / "m.bin")
    for k, v in vals.items():
        np.testing.assert_array_equal(m.variables[k], v)
        assert m.variables[k].dtype == v.dtype
    np.testing.assert_array_equal(m.get("alias"), vals["a"])


def test_reader_rejects_other_versions_and_truncation(tmp_path):
    write_ct2(tmp_path / "v5.bin", {"a": np.zeros(2, np.float32)}, {}, version=5)
    with pytest.raises(ValueError, match="version 5"):
        read_ct2(tmp_path / "v5.bin")
    write_ct2(tmp_path / "ok.bin", {"a": np.zeros(64, np.float32)}, {})
    (tmp_path / "cut.bin").write_bytes((tmp_path / "ok.bin").read_bytes()[:100])
    with pytest.raises(ValueError, match="truncated"):
        read_ct2(tmp_path / "cut.bin")


def test_whisper_roundtrip_through_ct2_split_in_parts(tmp_path):
    src = tiny_whisper(seed=3).model
    variables, aliases = whisper_to_ct2(src, dtype=np.float32)
    write_ct2(tmp_path / "model.bin", variables, aliases)
    blob = (tmp_path / "model.bin").read_bytes()
    cut = len(blob) // 3  # split mid-variable, as the two-part PyPI package does
    (tmp_path / "p1").write_bytes(blob[:cut])
    (tmp_path / "p2").write_bytes(blob[cut:])
    state, cfg = ct2_to_whisper_state(read_ct2_parts([tmp_path / "p1", tmp_path / "p2"]))
    assert cfg["encoder_layers"] == 2 and cfg["decoder_attention_heads"] == 4 and cfg["vocab_size"] == 96
    dst = WhisperForConditionalGeneration(WhisperConfig(**cfg, pad_token_id=3, tie_word_embeddings=True)).eval()
    missing, unexpected = dst.load_state_dict({k: torch.from_numpy(np.array(a)) for k, a in state.items()},
                                              strict=False)
    assert set(missing) <= {"proj_out.weight"} and not unexpected
    dst.tie_weights()
    for k, v in src.state_dict().items():
        torch.testing.assert_close(dst.state_dict()[k], v, rtol=0, atol=0, msg=k)
    feats = torch.randn(1, 16, 32)
    ids = torch.tensor([[1, 2, 5, 9]])
    with torch.no_grad():
        torch.testing.assert_close(
            dst(input_features=feats, decoder_input_ids=ids).logits,
            src(input_features=feats, decoder_input_ids=ids).logits,
        )


def test_nonzero_key_bias_is_rejected(tmp_path):
    variables, aliases = whisper_to_ct2(tiny_whisper().model, dtype=np.float32)
    b = variables["encoder/layer_0/self_attention/linear_0/bias"].copy()
    b[40] = 1.0  # inside the key slice [32, 64)
    variables["encoder/layer_0/self_attention/linear_0/bias"] = b
    write_ct2(tmp_path / "model.bin", variables, aliases)
    with pytest.raises(ValueError, match="key bias"):
        ct2_to_whisper_state(read_ct2(tmp_path / "model.bin"))
