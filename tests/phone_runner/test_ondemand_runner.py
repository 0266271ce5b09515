"""The Python on-device runner answers a mode-``ondemand`` request with the real Whisper pair on real
speech (the reduced demo corpus): request lines whose pieces add up, each before its window line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from phone_runner.ondemand import PIECES, ondemand_request, request_rows
from phone_runner.protocol import validate_line

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def test_the_python_runner_answers_an_ondemand_request(tmp_path: Path) -> None:
    from omegaconf import OmegaConf

    from workbench.data.corpus import corpus_from_config
    from workbench.native.ondemand import request_trace

    ds = OmegaConf.to_container(OmegaConf.load(ROOT / "conf/dataset/demo.yaml"))
    corpus = corpus_from_config({**ds, "max_windows": 4})  # the reduced demo's clips (shared cache)
    trace = request_trace([(c.window_id, corpus.load_audio(c)) for c in corpus.clips], 20.0, [10.0, 20.0])
    models = {"target": {"name": "whisper_base", "format": "torch"}, "producer": {"name": "whisper_base"}}
    req = ondemand_request(trace, tmp_path, run_id="od", scheme={"name": "as2d", "config": "as2d", "settings": {}},
                           models=models, window_s=8.0, max_audio_s=30.0, warmups=0)
    req["output"] = "out/od.jsonl"
    (tmp_path / "request.json").write_text(json.dumps(req))
    res = subprocess.run([sys.executable, "-m", "phone_runner.device", "--request", str(tmp_path / "request.json")],
                         cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-3000:]
    lines = [validate_line(t, i) for i, t in enumerate(res.stdout.splitlines(), 1)]  # pieces add up, or it raises
    kinds = [x["type"] for x in lines]
    assert kinds[0] == "header" and lines[0]["mode"] == "ondemand" and kinds[-1] == "summary"
    rows = request_rows(lines)
    assert [(r["window_id"], r["request_s"]) for r in rows] == [("req0010", 10.0), ("req0020", 20.0)]
    for r in rows:
        at = kinds.index("window", next(i for i, x in enumerate(lines) if x.get("window_id") == r["window_id"]))
        assert lines[at - 1]["type"] == "request" and lines[at - 1]["window_id"] == r["window_id"]
        assert r["latency_s"] == pytest.approx(sum(r[p] for p in PIECES), abs=1e-9)
        # Whisper: the encoder runs with the prompt, so no residual audio piece; the prefill is inside L_u
        assert r["residual_audio_s"] == 0 and r["instruction_prefill_s"] > 0 and r["decode_s"] > 0
    windows = [x for x in lines if x["type"] == "window"]
    assert all(w["tokens"] > 1 for w in windows)  # real speech: the pair transcribed something
    assert (tmp_path / "out/od.jsonl").read_text().splitlines() == res.stdout.splitlines()
