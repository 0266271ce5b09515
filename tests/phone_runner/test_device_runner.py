"""The Python on-device runner (reference engine): its JSONL equals replay and passes the audits."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from phone_runner.payloads import pricing_from_profile, window_payload
from phone_runner.records import audit, frames, read_jsonl
from workbench import metrics
from workbench.replay.audit import ReplayAuditError
from workbench.replay.engine import ReplayConfig, replay
from workbench.replay.profile import load_profile
from workbench.replay.synthetic import SyntheticSpec, paper_like_sources, synthetic_windows

WINDOWS = synthetic_windows(SyntheticSpec(n_windows=2, mean_tokens=40, sd_tokens=5, sources=paper_like_sources()))
PROFILE = load_profile("k70_pro")


def request(tmp: Path, scheme: dict, **over: object) -> Path:
    req = {"v": 1, "run_id": "t", "mode": "run", "scheme": scheme, "engine": {"kind": "reference", "clock": "virtual"},
           "models": {}, "producer": {"batch_tokens": 8}, "windows": [window_payload(w) for w in WINDOWS],
           "repetitions": 1, "warmups": 1, "max_output": 1024, "pricing": pricing_from_profile(PROFILE),
           "output": "out/run.jsonl", **over}
    path = tmp / "req.json"
    path.write_text(json.dumps(req))
    return path


def run_device(req: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "phone_runner.device", "--request", str(req)], capture_output=True,
                          timeout=120)


@pytest.mark.parametrize("name, settings, source", [
    ("target_only", {}, None), ("sd", {"width": 4}, None), ("asp", {}, None),
    ("as2d", {"budget": 5}, "qwen"), ("as2d_wo_bc", {}, "qwen"), ("as2d_wo_td", {"budget": 3}, None)])
def test_reference_runner_equals_replay(tmp_path: Path, name: str, settings: dict, source: str | None) -> None:
    cfg = ReplayConfig(name, source=source, **settings)
    done = run_device(request(tmp_path, {"name": name, "source": source, "config": cfg.label, "settings": settings}))
    assert done.returncode == 0, done.stderr.decode()
    file_text = (tmp_path / "out/run.jsonl").read_bytes()
    assert done.stdout == file_text  # streamed and written copies agree line for line
    run = read_jsonl(tmp_path / "out/run.jsonl")
    assert audit(run, {w.window_id: w for w in WINDOWS}, PROFILE) == len(WINDOWS)
    f = frames(run)
    expect = [replay(w, cfg, PROFILE) for w in WINDOWS]
    assert f["windows"]["time"].to_list() == [r.time for r in expect]
    assert f["rounds"].height == sum(len(r.untimed) for r in expect)
    tps = sum(r.tokens for r in expect) / sum(r.time for r in expect)
    assert metrics.tps_pooled(f["windows"]) == pytest.approx(tps)
    if cfg.spec.decoupled:  # the producer's publications came through, time-ordered per window
        assert f["publications"].height > 0


def test_a_tampered_publication_fails_the_readiness_audit(tmp_path: Path) -> None:
    done = run_device(request(tmp_path, {"name": "as2d", "source": "qwen", "settings": {"budget": 5}}))
    assert done.returncode == 0
    lines = [json.loads(x) for x in (tmp_path / "out/run.jsonl").read_text().splitlines()]
    used = next(r for r in lines if r["type"] == "round" and any(p >= 0 for p in r["provenance"]))
    for p in lines:  # claim every publication of that window came out after its use
        if p["type"] == "publication" and p["window_id"] == used["window_id"]:
            p["publish_time"] += 10.0
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps(x) + "\n" for x in lines))
    with pytest.raises(ReplayAuditError, match="published at"):
        audit(read_jsonl(bad), {w.window_id: w for w in WINDOWS}, PROFILE)


def test_bad_requests_end_in_one_error_line(tmp_path: Path) -> None:
    done = run_device(request(tmp_path, {"name": "as2d", "source": "qwen", "settings": {"budget": 5}}, v=2))
    assert done.returncode == 2
    (only,) = done.stdout.decode().splitlines()
    err = json.loads(only)
    assert err["type"] == "error" and err["code"] == "bad_request" and "'v'" in err["message"]
    # a width the profile does not price is an error, never a zero cost
    narrow = {**pricing_from_profile(PROFILE)}
    narrow["verify_idle_s"] = {k: v for k, v in narrow["verify_idle_s"].items() if int(k) <= 3}
    narrow["verify_concurrent_s"] = {k: v for k, v in narrow["verify_concurrent_s"].items() if int(k) <= 3}
    done = run_device(request(tmp_path, {"name": "sd", "settings": {"width": 8}}, pricing=narrow))
    assert done.returncode == 1
    last = json.loads(done.stdout.decode().splitlines()[-1])
    assert last["code"] == "width_not_priced" and "K=8" in last["message"]
    # several resident sources are host replay only: refused by name, not a crash
    done = run_device(request(tmp_path, {"name": "as2d", "source": "qwen+parakeet", "settings": {"budget": 5}}))
    assert done.returncode == 2
    last = json.loads(done.stdout.decode().splitlines()[-1])
    assert last["code"] == "bad_request" and "'qwen+parakeet'" in last["message"]


@pytest.mark.parametrize("target, code, needle", [
    ({"name": "whisper_base", "backend": "opencl"}, "unsupported_backend", "opencl"),
    ({"name": "no_such_model"}, "missing_file", "no_such_model"),
])
def test_real_engine_problems_are_one_error_line_before_any_model_loads(tmp_path: Path, target: dict, code: str,
                                                                       needle: str) -> None:
    entry = {"window_id": "w0", "dataset": "demo", "audio": "clip.npy"}
    done = run_device(request(tmp_path, {"name": "target_only", "settings": {}}, windows=[entry],
                              engine={"kind": "torch", "clock": "real"}, models={"target": target}))
    assert done.returncode == 2
    err = json.loads(done.stdout.decode().splitlines()[-1])
    assert err["type"] == "error" and err["code"] == code and needle in err["message"]
