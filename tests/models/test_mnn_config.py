"""``engine: torch | mnn`` and the ``mnn`` runtime block: validated before any work, one clear line."""

from __future__ import annotations

import pytest

from workbench.models.mnn.runtime import EngineConfigError, MnnSettings, check_engine, require_host_backend
from workbench.models.registry import CONF_DIR, load_model_config

MODELS = sorted(p.stem for p in CONF_DIR.glob("*.yaml"))


@pytest.mark.parametrize("name", MODELS)
def test_every_model_names_its_engine_and_valid_mnn_settings(name):
    cfg = load_model_config(name)
    assert cfg["engine"] in ("torch", "mnn")
    assert check_engine(cfg) == ("torch", None) or cfg["engine"] == "mnn"
    MnnSettings.from_dict(cfg["mnn"])  # the block is valid even while the engine is torch


def _whisper(**over):
    cfg = load_model_config("whisper_base")
    cfg.update(over)
    return cfg


def test_mnn_engine_on_whisper_returns_settings():
    engine, s = check_engine(_whisper(engine="mnn", mnn={"threads": 2, "precision": "low", "backend": "CPU"}))
    assert engine == "mnn" and s.threads == 2 and s.precision == "low" and s.backend_key == "cpu"


@pytest.mark.parametrize(("block", "pattern"), [
    ({"backend": "cuda-ish"}, r"mnn\.backend='cuda-ish' is unknown; choose one of cpu, opencl, vulkan, metal"),
    ({"precision": "fp8"}, r"mnn\.precision='fp8' is unknown; choose one of low, normal, high"),
    ({"memory": "huge"}, r"mnn\.memory='huge' is unknown"),
    ({"threads": 0}, r"mnn\.threads=0: must be an integer >= 1"),
    ({"thread": 2}, r"unknown key\(s\) \['thread'\]"),
])
def test_bad_mnn_settings_are_one_line_naming_key_and_choices(block, pattern):
    for engine in ("torch", "mnn"):  # checked whatever the engine: a typo never waits for the switch
        with pytest.raises(EngineConfigError, match=pattern) as err:
            check_engine(_whisper(engine=engine, mnn=block))
        assert "\n" not in str(err.value) and "whisper_base" in str(err.value)


def test_unknown_engine_is_one_line():
    with pytest.raises(EngineConfigError, match=r"engine='onnx' is unknown; choose torch or mnn"):
        check_engine(_whisper(engine="onnx"))


def test_qwen3_asr_on_mnn_names_what_is_missing_and_never_falls_back():
    cfg = load_model_config("qwen3_asr")
    cfg["engine"] = "mnn"
    with pytest.raises(EngineConfigError, match=r"engine mnn cannot run target qwen3-asr-1\.7b \(qwen3_asr\): "
                                                r"llmexport 0\.0\.5 has no qwen3_asr exporter") as err:
        check_engine(cfg)
    assert "\n" not in str(err.value)


def test_phone_backend_is_refused_on_the_host_with_the_fix():
    s = MnnSettings.from_dict({"backend": "OpenCL"})
    with pytest.raises(EngineConfigError, match=r"phone backend; the host's MNN package runs cpu \(set model\.mnn"):
        require_host_backend(s)
