"""The C++ runner with a real model: Whisper on MNN (the runner's Express-module adapter, built on the
MNN pip wheel's library) through the loopback phone. The host sends the prompt ids, the EOS id and the
log-mel features; the runner's output must equal the target's greedy output token for token."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from omegaconf import OmegaConf

from phone_runner.runner import runner_binary
from phone_runner.testing.loopback import LoopbackDevice
from workbench.run import execute

from .test_phone_jobs import job_cfg


def _export(model: dict) -> Path:
    from workbench.models.mnn.export import export_whisper
    from workbench.models.registry import ModelSpec, resolve_weights

    return export_whisper(resolve_weights(ModelSpec.from_dict(dict(model["target"]))), progress=False)


def _mnn_greedy(export: Path, audio: np.ndarray) -> list[int]:
    """The target's greedy output on the Python MNN path (workbench.models.mnn.whisper), step by step."""
    import torch

    from workbench.models.mnn.whisper import load_mnn_export

    b = load_mnn_export(export)
    st = b.decoder_state(b.features(audio))
    tok = int(torch.argmax(st.forward(b.protocol.prompt_ids)[-1] + st.begin_mask()))
    out = [tok]
    while tok != b.protocol.eos_id and len(out) < 224:
        tok = int(torch.argmax(st.forward([tok])[-1]))
        out.append(tok)
    return out


@pytest.mark.slow
def test_the_cpp_runner_runs_whisper_on_mnn_exactly(loopback: LoopbackDevice, tmp_path: Path) -> None:
    from transformers import WhisperFeatureExtractor

    from workbench.native.windows import demo_windows

    binary = runner_binary(mnn="wheel")
    cfg0 = job_cfg(tmp_path, "native_phone")
    model = OmegaConf.to_container(cfg0.model, resolve=True)
    export = _export(model)
    # exactness, not agreement: the replay's device stays job_cfg's phone profile, since the host profile
    # would cost a first-use calibration of this machine (minutes) that no assert here reads
    res = execute(job_cfg(tmp_path, "native_phone", "phone.runner=cpp", f"phone.runner_binary={binary}",
                          "phone.engine.kind=mnn", f"phone.models.target={export}", f"phone.models.producer={export}",
                          "phone.max_windows=1", "phone.max_seconds=6", "methods=[target_only,as2d]",
                          "phone.idle_timeout_s=900"))
    w = res.tables["windows"]
    out = {c: w.filter(pl.col("config") == c)["output"].to_list()[0] for c in w["config"].unique().to_list()}
    (as2d,) = [c for c in out if c.startswith("as2d/")]
    audio = demo_windows(6.0)[1][0].audio
    meta = json.loads((export / "as2d_whisper.json").read_text())
    assert out["target_only"] == _mnn_greedy(export, audio)  # the C++ adapter is the target, token for token
    assert out[as2d] == out["target_only"] and out["target_only"][-1] == meta["eos_id"]  # stopped at EOS
    assert len(out["target_only"]) < 224 and res.tables["publications"].height > 0
    assert res.metrics["exactness_mismatches"] == 0
    # what the host sent: the tokenizer's prompt ids, the EOS id, the log-mel features of the window
    (req_file,) = sorted((loopback.root / "data/local/tmp/as2d/runs").glob("*/request.json"))[:1]
    entry = json.loads(req_file.read_text())["windows"][0]
    assert entry["prompt"] == meta["prompt_ids"] and entry["eos_id"] == meta["eos_id"]
    feats = np.load(req_file.parent / entry["features"], allow_pickle=False)
    fe = WhisperFeatureExtractor(feature_size=80, sampling_rate=16000)
    want = fe(np.asarray(audio, dtype=np.float32), sampling_rate=16000, return_tensors="np").input_features
    assert feats.shape == (1, 80, 3000) and np.array_equal(feats, want.astype(np.float32))
