"""What the C++ runner checks of a real-engine request before any model loads, in every build (the
reference build here): the pushed Whisper export, each window's log-mel features (.npy header and
shape), the prompt an MNN LLM folder needs, and one vocabulary for target and producer."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from phone_runner.runner import runner_binary


def _whisper_export(root: Path, name: str, vocab: int = 51865) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"vocab_size": vocab, "num_mel_bins": 80,
                                                    "max_source_positions": 1500}))
    for f in ("as2d_mnn.json", "as2d_whisper.json", "encoder.mnn", "decoder.mnn"):
        (folder / f).write_text("{}")
    return folder


def _run(tmp: Path, features: np.ndarray | None, *, scheme: str = "target_only", producer_vocab: int = 51865,
         llm: bool = False, prompt: list[int] | None = None, features_path: str = "f.npy") -> dict:
    tmp.mkdir(parents=True, exist_ok=True)
    target = tmp / "llm" if llm else _whisper_export(tmp, "base")
    if llm:
        target.mkdir()
        (target / "config.json").write_text('{"llm_model": "llm.mnn"}')
    models = {"target": {"dir": str(target), "format": "mnn", "name": "m"}}
    if scheme != "target_only":
        models["producer"] = {"dir": str(_whisper_export(tmp, "small", producer_vocab)), "format": "mnn", "name": "p"}
    entry = {"window_id": "w0", "dataset": "demo", "audio": "clip.npy", "features": None, "prompt": prompt,
             "eos_id": 50257}
    if features is not None:
        np.save(tmp / "f.npy", features, allow_pickle=False)
        entry["features"] = features_path
    settings = {"budget": 3, "span": 16, "lookback": 4} if scheme == "as2d" else {}
    req = {"v": 1, "run_id": "t", "mode": "run", "engine": {"kind": "mnn", "clock": "real"}, "models": models,
           "scheme": {"name": scheme, "source": "producer" if scheme != "target_only" else None, "config": scheme,
                      "settings": settings},
           "producer": {"source": "producer", "batch_tokens": 8}, "windows": [entry], "repetitions": 1,
           "warmups": 0, "max_output": 224, "pricing": None, "output": "out.jsonl"}
    (tmp / "req.json").write_text(json.dumps(req))
    done = subprocess.run([str(runner_binary()), "--request", str(tmp / "req.json")], capture_output=True,
                          text=True, timeout=60)
    lines = done.stdout.splitlines()
    assert done.returncode == 2 and len(lines) == 2, done.stdout  # header, then one error line
    return json.loads(lines[-1])


GOOD = np.zeros((1, 80, 3000), dtype=np.float32)


@pytest.mark.parametrize("features, code, needle", [
    (GOOD, "unsupported_backend", "built without MNN"),  # every check passed; this build has no MNN
    (np.zeros((80, 3000), dtype=np.float32), "unsupported_backend", "built without MNN"),
    (None, "bad_request", "windows[0].features"),
    (np.zeros((1, 128, 3000), dtype=np.float32), "bad_request", "shape (1, 128, 3000)"),
    (np.zeros((1, 80, 3000), dtype=np.float64), "bad_request", "float32"),
])
def test_whisper_features_are_checked_before_any_model_loads(tmp_path: Path, features: np.ndarray | None,
                                                              code: str, needle: str) -> None:
    err = _run(tmp_path, features)
    assert err["type"] == "error" and err["code"] == code and needle in err["message"], err


def test_missing_features_are_missing_file(tmp_path: Path) -> None:
    err = _run(tmp_path, GOOD, features_path="gone.npy")
    assert err["code"] == "missing_file" and "gone.npy" in err["message"] and err["window_id"] == "w0"


def test_a_cross_vocabulary_producer_is_refused_by_the_cpp_runner(tmp_path: Path) -> None:
    err = _run(tmp_path, GOOD, scheme="as2d", producer_vocab=51864)
    assert err["code"] == "unsupported_backend" and "Tok_T" in err["message"] and "Python runner" in err["message"]


def test_an_mnn_llm_folder_needs_prompt_ids(tmp_path: Path) -> None:
    err = _run(tmp_path, None, llm=True)
    assert err["code"] == "bad_request" and "windows[0].prompt" in err["message"]
    assert "built without MNN" in _run(tmp_path / "again", None, llm=True, prompt=[1, 2])["message"]
