"""The C++ runner's protocol behaviour: bad input, partial output, and the real clock's threads.

Bad input (malformed request, missing model files, unsupported backend, a width beyond the
profile) is answered by exactly one ``error`` line and exit status 2. A runner killed mid-run
leaves output that is valid line by line. The real clock (producer on its own thread, paced by
the profile) passes the host's exactness and readiness audits (``phone_runner.records.audit``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from phone_runner.payloads import pricing_from_profile, window_payload
from phone_runner.protocol import validate_line
from phone_runner.records import audit, read_jsonl, read_lines
from phone_runner.runner import runner_binary
from workbench.replay.engine import ReplayConfig
from workbench.replay.profile import load_profile
from workbench.replay.synthetic import SyntheticSpec, synthetic_windows

SPEC = SyntheticSpec(n_windows=2, mean_tokens=24, sd_tokens=4, min_tokens=16, seed=3)


@pytest.fixture(scope="module")
def windows() -> list[Any]:
    return synthetic_windows(SPEC)


def make_request(windows: list[Any], cfg: ReplayConfig, profile: str = "k70_pro", clock: str = "virtual",
                 **over: Any) -> dict[str, Any]:
    req = {"v": 1, "run_id": "io-test", "mode": "run",
           "scheme": {"name": cfg.scheme, "source": cfg.source, "config": cfg.label, "settings": cfg.settings},
           "engine": {"kind": "reference", "clock": clock, "drain": "boundary"}, "models": {},
           "producer": {"source": cfg.source, "batch_tokens": 8}, "windows": [window_payload(w) for w in windows],
           "repetitions": 1, "warmups": 0, "max_output": 1024, "pricing": pricing_from_profile(load_profile(profile)),
           "output": "out.jsonl"}
    req.update(over)
    return req


def run(tmp: Path, req: dict[str, Any] | str) -> tuple[int, list[dict[str, Any]], Path]:
    path = tmp / "request.json"
    path.write_text(req if isinstance(req, str) else json.dumps(req))
    done = subprocess.run([str(runner_binary()), "--request", str(path)], capture_output=True, text=True, timeout=120)
    lines = [validate_line(t, i) for i, t in enumerate(done.stdout.splitlines(), 1)]
    return done.returncode, lines, tmp / "out.jsonl"


AS2D = ReplayConfig("as2d", source="qwen", budget=7)


def _real(r: dict, kind: str, **over: Any) -> dict:
    """``r`` on a real engine: its windows carry audio (PROTOCOL.md: real engines need audio or features)."""
    wins = [{**w, "audio": "clip.npy"} for w in r["windows"]]
    return {**r, "engine": {"kind": kind, "clock": "real"}, "windows": wins, **over}


@pytest.mark.parametrize("mutate, code, needle", [
    (lambda r: "{not json", "bad_request", "not valid JSON"),
    (lambda r: {**r, "v": 2}, "bad_request", "protocol version 2"),
    (lambda r: {k: v for k, v in r.items() if k != "windows"}, "bad_request", "'windows': missing"),
    (lambda r: {**r, "scheme": {**r["scheme"], "name": "medusa"}}, "bad_request", "'scheme.name'"),
    (lambda r: {**r, "mode": "ondemand"}, "bad_request", "'mode': 'ondemand'"),  # PROTOCOL.md: not in C++ yet
    (lambda r: {**r, "windows": [{**r["windows"][0], "reference": None}]}, "bad_request", "reference"),
    (lambda r: {**r, "engine": {"kind": "torch", "clock": "real"}}, "bad_request", "needs audio or features"),
    (lambda r: _real(r, "torch"), "unsupported_backend", "torch"),
    (lambda r: _real(r, "mnn", models={"target": {"dir": "models/target", "backend": "npu"}}),
     "unsupported_backend", "npu"),
    (lambda r: _real(r, "mnn", models={"target": {"dir": "models/target"}, "producer": {"dir": "models/draft"}}),
     "missing_file", "config.json"),
    (lambda r: _real(r, "mnn", models={"target": {"dir": "models/target", "precision": "fp8"}}),
     "unsupported_backend", "fp8"),
    (lambda r: {**r, "scheme": {**r["scheme"], "settings": {**r["scheme"]["settings"], "anchor_order": "sideways"}}},
     "bad_request", "anchor_order"),
    (lambda r: {**r, "pricing": pricing_from_profile(load_profile("xiaomi_14")),
                "scheme": {**r["scheme"], "settings": {**r["scheme"]["settings"], "budget": 20}}},
     "width_not_priced", "K=16"),
])
def test_bad_input_is_one_error_line_and_exit_2(windows: list[Any], tmp_path: Path, mutate: Any, code: str,
                                                needle: str) -> None:
    rc, lines, _ = run(tmp_path, mutate(make_request(windows, AS2D)))
    errors = [ln for ln in lines if ln["type"] == "error"]
    assert rc == 2 and len(errors) == 1 and lines[-1] is errors[-1], lines
    assert errors[0]["code"] == code and needle in errors[0]["message"], errors[0]
    assert {ln["type"] for ln in lines} <= {"header", "error"}  # no round was run


def test_stdout_and_output_file_hold_the_same_valid_lines(windows: list[Any], tmp_path: Path) -> None:
    rc, lines, out = run(tmp_path, make_request(windows, AS2D))
    assert rc == 0 and lines[0]["type"] == "header" and lines[-1]["type"] == "summary"
    file_lines = [validate_line(t, i) for i, t in enumerate(out.read_text().splitlines(), 1)]
    assert file_lines == lines
    assert lines[-1]["windows"] == 2 and lines[-1]["tokens"] == sum(len(w.reference) for w in windows)


def test_a_runner_killed_mid_run_leaves_valid_lines(windows: list[Any], tmp_path: Path) -> None:
    req = make_request(windows, ReplayConfig("target_only"), clock="real", repetitions=50)
    path = tmp_path / "request.json"
    path.write_text(json.dumps(req))
    proc = subprocess.Popen([str(runner_binary()), "--request", str(path)], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    got = [proc.stdout.readline() for _ in range(30)]  # header + rounds of a real-clock run under way
    os.kill(proc.pid, signal.SIGKILL)
    rest = proc.stdout.read()
    proc.wait(timeout=30)
    text = b"".join(got) + rest
    assert text.endswith(b"\n")
    run_ = read_lines(text.decode().splitlines(), "killed runner stdout")
    assert run_.summary is None and run_.header is not None and len(run_.of("round")) >= 29
    file_run = read_jsonl(tmp_path / "out.jsonl")  # the file copy too: whole lines only
    # (each line goes to stdout first, so the kill may land before its file copy)
    assert file_run.summary is None and len(file_run.of("round")) >= 28


@pytest.mark.parametrize("cfg", [AS2D, ReplayConfig("as2d_wo_bc", source="qwen", cap=12),
                                 ReplayConfig("asp"), ReplayConfig("sd", width=6)], ids=lambda c: c.label)
def test_real_clock_runs_pass_the_hosts_exactness_and_readiness_audits(windows: list[Any], tmp_path: Path,
                                                                       cfg: ReplayConfig) -> None:
    # A fast profile keeps the real clock short: every priced cost divided by 20.
    req = make_request(windows[:1], cfg, clock="real")
    p = req["pricing"]
    for key in ("step_s", "loop_s", "queue_s", "align_s"):
        p[key] /= 20
    for table in ("verify_idle_s", "verify_concurrent_s"):
        p[table] = {k: v / 20 for k, v in p[table].items()}
    for s in p["sources"].values():
        s["op_s"] /= 20
    t0 = time.perf_counter()
    rc, lines, out = run(tmp_path, req)
    assert rc == 0, lines[-1]
    phone = read_jsonl(out)
    assert audit(phone, {w.window_id: w for w in windows}, load_profile("k70_pro")) == 1
    rounds = phone.of("round")
    assert all(r["t_decide"] <= r["t_start"] <= r["t_end"] for r in rounds)
    win = phone.of("window")[0]
    assert win["t_eos"] <= win["time"] <= time.perf_counter() - t0  # real seconds, drain included
    if cfg.spec.decoupled:
        pubs = phone.of("publication")
        assert pubs and [p["offset"] for p in pubs] == sorted(p["offset"] for p in pubs)
        used = [pos for r in rounds for pos in r["provenance"] if pos >= 0]
        assert used, "the producer thread published nothing the verifier used"


def test_calibrate_mode_measures_what_the_python_device_runner_measures(windows: list[Any], tmp_path: Path) -> None:
    plan = {"widths": [1, 2, 8], "offsets": [0, 64], "reps": 2, "warmups": 1, "with_producer": [False, True],
            "draft_forward": True, "asp": True, "chunk_sources": []}
    req = make_request([], AS2D, mode="calibrate", calibrate=plan)
    rc, lines, _ = run(tmp_path, req)
    assert rc == 0, lines[-1]
    ours = [ln for ln in lines if ln["type"] == "measure"]
    path = tmp_path / "py" / "request.json"
    path.parent.mkdir()
    path.write_text(json.dumps(req))
    subprocess.run([sys.executable, "-m", "phone_runner.device", "--request", str(path)], check=True,
                   capture_output=True, timeout=120)
    theirs = read_jsonl(path.parent / "out.jsonl").of("measure")
    assert len(ours) == len(theirs) > 2 * 3 * 2 * 2  # the verify sweep and the per-operation costs
    for a, b in zip(ours, theirs, strict=True):
        assert {k: v for k, v in a.items() if k != "ms"} == {k: v for k, v in b.items() if k != "ms"}
        assert a["ms"] == pytest.approx(b["ms"], rel=1e-12)
    widths = {m["width"] for m in ours if m["op"] == "verify" and m["concurrent"]}
    assert widths == {1, 2, 8}


def test_calibrating_a_width_the_profile_lacks_is_one_error_line(windows: list[Any], tmp_path: Path) -> None:
    plan = {"widths": [1, 30], "offsets": [0], "reps": 1, "with_producer": [False]}
    rc, lines, _ = run(tmp_path, make_request([], AS2D, mode="calibrate", calibrate=plan))
    assert rc == 2 and lines[-1]["type"] == "error" and lines[-1]["code"] == "width_not_priced"
    assert "K=30" in lines[-1]["message"]


def test_every_truncation_of_a_request_is_one_error_line(windows: list[Any], tmp_path: Path) -> None:
    text = json.dumps(make_request(windows[:1], AS2D))
    cuts = sorted({int(len(text) * f) for f in (0.0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99)} | {len(text) - 1})
    path = tmp_path / "cuts.jsonl"
    path.write_text("".join(text[:c] + "\n" for c in cuts if c > 0) + " \n")  # " " : whitespace only
    done = subprocess.run([str(runner_binary()), "--batch", str(path)], capture_output=True, text=True, timeout=60)
    lines = [validate_line(t, i) for i, t in enumerate(done.stdout.splitlines(), 1)]
    assert done.returncode == 2 and len(lines) == len([c for c in cuts if c > 0]) + 1
    assert all(ln["type"] == "error" and ln["code"] == "bad_request" for ln in lines)
