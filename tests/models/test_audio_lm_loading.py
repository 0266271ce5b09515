"""Registry loading of decoder-only audio LMs from a weights directory (model + processor) and
the chat-template prompt helpers, end to end on tiny random models saved with save_pretrained."""

from __future__ import annotations

import importlib.util
import inspect

import numpy as np
import pytest
import torch
from safetensors.torch import save_file
from transformers import Qwen2_5OmniConfig

from tests.models.conftest import tiny_audio
from tests.models.tiny_audio_lms import omni_window, tiny_omni_thinker
from tests.models.tiny_processors import (
    qwen2_audio_for,
    qwen2_audio_processor,
    qwen3_asr_for,
    qwen3_asr_processor,
    save_release,
)
from workbench.decoding import decode, make_scheme
from workbench.models.audio_lm import AudioLMTarget, qwen3_asr_audio_tokens
from workbench.models.prompts import PROMPTS, audio_prompt
from workbench.models.registry import MissingWeightsError, ModelSpec, load_audio_lm_spec, load_model_config


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny models: thread hand-offs cost more than the arithmetic
    yield
    torch.set_num_threads(n)


def _spec(name: str, family: str, path) -> ModelSpec:
    return ModelSpec(name=name, family=family, hub_id=f"Qwen/{name}", local_path=str(path))


def _greedy(model, prompt, n: int = 8) -> tuple[int, ...]:
    t = AudioLMTarget(model, **prompt.as_kwargs())
    return decode(make_scheme("target_only", max_output=n, eos_id=prompt.eos_id), t).output


def test_qwen2_audio_release_dir_loads_and_prompts(tmp_path):
    proc = qwen2_audio_processor()
    model = qwen2_audio_for(proc)
    bundle = load_audio_lm_spec(_spec("qwen2-audio-tiny", "qwen2_audio", save_release(model, proc, tmp_path)),
                                allow_network=False)
    assert type(bundle.model) is type(model) and not bundle.model.training
    tok = bundle.processor.tokenizer
    p = audio_prompt("qwen2_audio", bundle.processor, tiny_audio(0.5), instruction="Transcribe.", system=None)
    head = tok.decode(p.audio_ids)
    assert head.startswith("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nAudio 1: ")
    assert head.endswith("<|audio_eos|>")
    assert tok.decode(p.instruction_ids) == "\nTranscribe.<|im_end|>\n<|im_start|>assistant\n"
    # placeholders = the encoder's output length for the real (unpadded) frames
    frames = p.audio_inputs["feature_attention_mask"].sum(-1)
    assert p.audio_ids.count(model.config.audio_token_id) == int(
        model.model.audio_tower._get_feat_extract_output_lengths(frames)[1]) > 0
    assert set(p.audio_inputs) == {"input_features", "feature_attention_mask"}
    assert p.eos_id == tok.convert_tokens_to_ids("<|im_end|>") and model.config.audio_token_id in p.suppress_ids
    out = _greedy(bundle.model, p)
    assert out == _greedy(model, p)  # the loaded weights are the saved ones
    assert model.config.audio_token_id not in out


def test_qwen3_asr_release_dir_loads_and_prompts(tmp_path):
    proc = qwen3_asr_processor()
    model = qwen3_asr_for(proc)
    bundle = load_audio_lm_spec(_spec("qwen3-asr-tiny", "qwen3_asr", save_release(model, proc, tmp_path)),
                                allow_network=False)
    tok = bundle.processor.tokenizer
    p = audio_prompt("qwen3_asr", bundle.processor, tiny_audio(2.0), **{**load_model_config("qwen3_asr")["prompt"],
                                                                        "language": "en"})
    assert tok.decode(p.audio_ids).endswith("<|audio_end|>")
    assert tok.decode(p.instruction_ids) == "<|im_end|>\n<|im_start|>assistant\nlanguage English<asr_text>"
    # the processor's placeholder count agrees with the encoder's own output (13 per 100 frames)
    feats, mask = p.audio_inputs["input_features"], p.audio_inputs["input_features_mask"]
    assert p.audio_ids.count(model.config.audio_token_id) == qwen3_asr_audio_tokens(model, feats, mask) == 26
    assert _greedy(bundle.model, p) == _greedy(model, p)


def test_prompt_rejects_bad_audio():
    proc = qwen2_audio_processor()
    for bad in (np.zeros(0, np.float32), np.full(800, np.nan, np.float32), np.zeros((2, 800), np.float32)):
        with pytest.raises(ValueError, match="mono"):
            audio_prompt("qwen2_audio", proc, bad)
    with pytest.raises(ValueError, match="no prompt helper"):
        audio_prompt("whisper", proc, tiny_audio())


def test_released_omni_layout_loads_only_the_thinker(tmp_path):
    """A Qwen2.5-Omni release holds thinker, talker and vocoder under one config; the weights
    of the thinker are ``thinker.``-prefixed."""
    thinker = tiny_omni_thinker()
    cfg = Qwen2_5OmniConfig(thinker_config=thinker.config.to_dict(), enable_audio_output=False)
    cfg.save_pretrained(tmp_path)
    state = {f"thinker.{k}": v.contiguous() for k, v in thinker.state_dict().items()}
    state["talker.model.embed_tokens.weight"] = torch.zeros(4, 4)  # present in releases, not loaded
    save_file(state, tmp_path / "model.safetensors", metadata={"format": "pt"})
    bundle = load_audio_lm_spec(_spec("qwen2.5-omni-tiny", "qwen2_5_omni", tmp_path), allow_network=False,
                                processor=False)
    assert type(bundle.model) is type(thinker) and bundle.processor is None
    for (k, a), (_, b) in zip(sorted(bundle.model.state_dict().items()), sorted(thinker.state_dict().items()),
                              strict=True):
        assert torch.equal(a, b), k
    case = omni_window(bundle.model, seed=0)
    t = AudioLMTarget(bundle.model, case.audio_ids, case.instruction_ids, case.audio_inputs, None)
    assert t.prefill() == AudioLMTarget(thinker, case.audio_ids, case.instruction_ids, case.audio_inputs,
                                        None).prefill()


@pytest.mark.skipif(importlib.util.find_spec("torchvision") is None,
                    reason="Qwen2_5OmniProcessor needs torchvision for its video processor")
def test_omni_prompt_with_a_processor(tmp_path):  # pragma: no cover - needs torchvision
    from transformers import (
        Qwen2_5OmniProcessor,
        Qwen2VLImageProcessor,
        Qwen2VLVideoProcessor,
        WhisperFeatureExtractor,
    )

    from tests.models.tiny_processors import byte_tokenizer

    tok = byte_tokenizer({"audio_token": "<|AUDIO|>", "audio_bos_token": "<|audio_bos|>",
                          "audio_eos_token": "<|audio_eos|>", "image_token": "<|IMAGE|>", "video_token": "<|VIDEO|>",
                          "vision_bos_token": "<|vision_bos|>", "vision_eos_token": "<|vision_eos|>"})
    template = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{% for c in m['content'] %}"
                "{% if c['type'] == 'audio' %}<|audio_bos|><|AUDIO|><|audio_eos|>{% else %}{{ c['text'] }}{% endif %}"
                "{% endfor %}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    proc = Qwen2_5OmniProcessor(Qwen2VLImageProcessor(), Qwen2VLVideoProcessor(),
                                WhisperFeatureExtractor(feature_size=16), tok, chat_template=template)
    p = audio_prompt("qwen2_5_omni", proc, tiny_audio(0.5))
    assert tok.decode(p.audio_ids).endswith("<|audio_eos|>")
    assert tok.decode(p.instruction_ids).endswith("<|im_start|>assistant\n")


def test_missing_weights_and_missing_processor_are_clear(tmp_path):
    spec = _spec("qwen2-audio-7b-instruct", "qwen2_audio", tmp_path / "nothing")
    with pytest.raises(MissingWeightsError, match="qwen2-audio-7b-instruct") as err:
        load_audio_lm_spec(spec, allow_network=False)
    assert "Qwen/qwen2-audio-7b-instruct" in str(err.value) and "no config.json" in str(err.value)
    proc = qwen2_audio_processor()
    save_release(qwen2_audio_for(proc), None, tmp_path / "weights-only")
    with pytest.raises(MissingWeightsError, match="no usable processor"):
        load_audio_lm_spec(_spec("q", "qwen2_audio", tmp_path / "weights-only"), allow_network=False)
    assert load_audio_lm_spec(_spec("q", "qwen2_audio", tmp_path / "weights-only"), allow_network=False,
                              processor=False).processor is None
    with pytest.raises(ValueError, match="audio LM families"):
        load_audio_lm_spec(ModelSpec(name="w", family="whisper"), allow_network=False)


@pytest.mark.parametrize("name", ["qwen3_asr", "qwen2_audio", "qwen2_5_omni"])
def test_registry_configs_name_audio_lm_families_without_weights(name):
    cfg = load_model_config(name)
    inspect.signature(PROMPTS[name]).bind(None, None, **cfg["prompt"])  # every prompt key is a helper argument
    for role in ("target", "drafter"):
        spec = ModelSpec.from_dict(cfg[role])
        with pytest.raises(MissingWeightsError, match=spec.name):
            load_audio_lm_spec(spec, allow_network=False)
