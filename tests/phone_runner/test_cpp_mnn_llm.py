"""The C++ runner's MNN LLM adapter (MnnLlmModel) on a tiny Qwen3 exported with llmexport, in the host
build on the MNN pip wheel's library: SD with a perturbed drafter (rejections roll the KV back with
eraseHistory) commits exactly the target's greedy output, which the Python MNN.llm target also gives."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from transformers import Qwen3Config, Qwen3ForCausalLM

from phone_runner.runner import runner_binary
from tests.models.tiny_audio_lms import perturbed, spread
from tests.models.tiny_processors import byte_tokenizer
from workbench.models.mnn.llm import MnnLlmTarget, export_llm, load_llm

PROMPT = [5, 6, 7, 8, 9]


@pytest.fixture(scope="module")
def exports(tmp_path_factory) -> tuple[Path, Path, int]:
    tok = byte_tokenizer({})
    eos = tok.convert_tokens_to_ids("<|im_end|>")
    cfg = Qwen3Config(vocab_size=len(tok) + 8, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=512,
                      tie_word_embeddings=False, eos_token_id=eos)
    target = spread(Qwen3ForCausalLM(cfg), 0)
    root = tmp_path_factory.mktemp("qwen3")
    for name, model in (("target", target), ("drafter", perturbed(target, scale=0.15, seed=7))):
        model.save_pretrained(root / name)
        tok.save_pretrained(root / name)
    return export_llm(root / "target"), export_llm(root / "drafter"), eos


def _run(tmp: Path, target: Path, drafter: Path, scheme: str, settings: dict, eos: int) -> tuple[list[int], list]:
    spec = {"format": "mnn", "name": "qwen3-tiny", "backend": "cpu", "threads": 1, "cpus": [], "precision": "normal"}
    req = {"v": 1, "run_id": scheme, "mode": "run", "engine": {"kind": "mnn", "clock": "real"},
           "scheme": {"name": scheme, "source": None, "config": scheme, "settings": settings},
           "models": {"target": {**spec, "dir": str(target)}, "drafter": {**spec, "dir": str(drafter)}},
           "producer": {"batch_tokens": 8}, "repetitions": 1, "warmups": 0, "max_output": 24, "pricing": None,
           "windows": [{"window_id": "w0", "dataset": "tiny", "audio": "none.npy", "features": None,
                        "prompt": PROMPT, "eos_id": eos, "max_output": None, "reference": None}],
           "output": "out.jsonl"}
    (tmp / f"{scheme}.json").write_text(json.dumps(req))
    done = subprocess.run([str(runner_binary(mnn="wheel")), "--request", str(tmp / f"{scheme}.json")],
                          capture_output=True, text=True, timeout=300)
    lines = [json.loads(x) for x in done.stdout.splitlines()]  # stdout holds protocol lines only
    assert done.returncode == 0, lines[-1]
    (window,) = [x for x in lines if x["type"] == "window"]
    rounds = [x for x in lines if x["type"] == "round"]
    assert window["rounds"] == len(rounds)
    return window["output"], rounds


@pytest.mark.slow
def test_the_cpp_llm_adapter_reproduces_the_target_greedy_output(exports: tuple[Path, Path, int],
                                                                 tmp_path: Path) -> None:
    target, drafter, eos = exports
    alone, _ = _run(tmp_path, target, drafter, "target_only", {}, eos)
    sd, rounds = _run(tmp_path, target, drafter, "sd", {"width": 4}, eos)
    assert sd == alone
    assert any(r["accepted"] < len(r["chain"]) for r in rounds)  # a rejection rolled the KV back
    py = MnnLlmTarget(load_llm(target), PROMPT, eos, 0)
    out = [py.prefill()]
    while out[-1] != eos and len(out) < 24:
        out.append(py.verify(out[-1], [])[0])
        py.keep(0)
    assert alone == out and len(out) > 3
