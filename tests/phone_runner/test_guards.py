"""Guards around a phone run: no resume across runners (another kind, another build of the same
runner, another engine), no leftover runner overlapping a new run, and a runner that stops once its
host is gone (broken pipe)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from phone_runner.hostrun import RunFailed
from phone_runner.runner import runner_binary
from phone_runner.session import PhoneConfig, build_request
from phone_runner.testing.loopback import LoopbackDevice
from workbench.replay.engine import ReplayConfig
from workbench.replay.profile import load_profile
from workbench.replay.synthetic import SyntheticSpec, synthetic_windows
from workbench.run import execute

from .test_phone_jobs import job_cfg, runs

REPO = Path(__file__).resolve().parents[2]


def test_a_resume_across_runners_is_refused(loopback: LoopbackDevice, tmp_path: Path) -> None:
    over = ("phone.engine.clock=virtual", "methods=[target_only]")
    first = execute(job_cfg(tmp_path, "native_phone", *over))  # the Python runner finishes every window
    assert first.metrics["resumed_windows"] == 0
    with pytest.raises(RunFailed, match=r"from runner python .*this run uses cpp [0-9a-f]{12}") as err:
        execute(job_cfg(tmp_path, "native_phone", *over, "phone.runner=cpp", f"phone.runner_binary={runner_binary()}"))
    assert "\n" not in str(err.value) and "phone.runner=python" in str(err.value)  # one line with the fix
    assert err.value.kept.startswith("3 window(s) left untouched")
    assert [r.info.status for r in sorted(runs(tmp_path), key=lambda r: r.info.start_time)] == ["FINISHED", "FAILED"]
    again = execute(job_cfg(tmp_path, "native_phone", *over))  # the same runner still resumes
    assert again.metrics["resumed_windows"] == 3


def _long_request(tmp: Path) -> dict:
    """A reference-engine request paced on the real clock for minutes: a runner that would outlive its host."""
    windows = synthetic_windows(SyntheticSpec(n_windows=1, mean_tokens=40, seed=3))
    pc = PhoneConfig(engine={"kind": "reference", "clock": "real", "drain": "boundary"}, repetitions=500)
    return build_request("leftover", ReplayConfig("target_only"), windows, load_profile("k70_pro"), pc)


def test_a_leftover_runner_is_found_by_its_pid_file_and_stopped(loopback: LoopbackDevice, tmp_path: Path,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    root = loopback.root / "data/local/tmp/as2d"
    (root / "runs/leftover").mkdir(parents=True)
    req = root / "runs/leftover/request.json"
    req.write_text(json.dumps(_long_request(tmp_path)))
    pid_file = root / "runner.pid"
    left = subprocess.Popen([sys.executable, "-m", "phone_runner.device", "--request", str(req), "--pid-file",
                             str(pid_file)], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert pid_file.read_text().split()[0] == str(left.pid)
        with caplog.at_level(logging.WARNING, logger="phone_runner.hostrun"):
            res = execute(job_cfg(tmp_path, "native_phone", "phone.engine.clock=virtual", "methods=[target_only]"))
        assert left.wait(timeout=10) != 0  # stopped by the host before its run
        said = [r.getMessage() for r in caplog.records if "leftover runner" in r.getMessage()]
        assert said and f"pid {left.pid}" in said[0]
        assert res.tables["windows"].height == 3
        assert not pid_file.exists()  # the new runner removed its own pid file at exit
    finally:
        if left.poll() is None:
            left.kill()
            left.wait()


@pytest.mark.parametrize("runner", ["python", "cpp"])
def test_a_runner_stops_when_its_host_is_gone(tmp_path: Path, runner: str) -> None:
    """Broken pipe: the reader of stdout closes; the runner ends (exit 1) instead of running on,
    and its output file names why as its last line."""
    req = tmp_path / "request.json"
    req.write_text(json.dumps({**_long_request(tmp_path), "output": "out.jsonl"}))
    argv = ([sys.executable, "-m", "phone_runner.device"] if runner == "python" else [str(runner_binary())])
    proc = subprocess.Popen([*argv, "--request", str(req)], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.stdout is not None
    proc.stdout.readline()  # the header: the runner is running
    # Both runners write the stream through a copy of stdout and point fd 1 at stderr (what an MNN
    # build needs), so the failing write below is on a descriptor other than 1 and still is stdout's.
    assert os.readlink(f"/proc/{proc.pid}/fd/1") == os.devnull
    proc.stdout.close()  # the host goes away
    assert proc.wait(timeout=60) == 1
    last = json.loads((tmp_path / "out.jsonl").read_text().splitlines()[-1])
    assert last["type"] == "error" and "stdout" in last["message"] and "write failed" in last["message"]
    assert last["code"] == "internal" and last["window_id"] is None, last  # the stream failed, not a window


def test_a_resume_with_another_build_of_the_same_runner_is_refused(loopback: LoopbackDevice, tmp_path: Path) -> None:
    import shutil

    over = ("phone.engine.clock=virtual", "methods=[target_only]", "phone.runner=cpp")
    first = execute(job_cfg(tmp_path, "native_phone", *over, f"phone.runner_binary={runner_binary()}"))
    assert first.metrics["resumed_windows"] == 0
    rebuilt = tmp_path / "rebuilt" / "as2d_runner"  # the same runner kind, another sha256 (a rebuild)
    rebuilt.parent.mkdir()
    shutil.copy(runner_binary(), rebuilt)
    with rebuilt.open("ab") as fh:
        fh.write(b"\0")
    two_builds = r"from runner cpp ([0-9a-f]{12}) .*this run uses cpp (?!\1)[0-9a-f]{12}"
    with pytest.raises(RunFailed, match=two_builds) as err:
        execute(job_cfg(tmp_path, "native_phone", *over, f"phone.runner_binary={rebuilt}"))
    assert "\n" not in str(err.value) and err.value.kept.startswith("3 window(s) left untouched")
    assert [r.info.status for r in sorted(runs(tmp_path), key=lambda r: r.info.start_time)] == ["FINISHED", "FAILED"]


def test_a_changed_engine_never_resumes_another_engines_windows(tmp_path: Path) -> None:
    from phone_runner.hostrun import WindowStore
    from phone_runner.session import check_runner, runner_identity, state_key

    windows = synthetic_windows(SyntheticSpec(n_windows=1, mean_tokens=10, seed=1))
    virtual, real = ({"kind": "reference", "clock": clock} for clock in ("virtual", "real"))
    requests = [build_request("r", ReplayConfig("target_only"), windows, load_profile("k70_pro"), PhoneConfig(engine=e))
                for e in (virtual, real)]
    assert state_key(requests[0], "phone") != state_key(requests[1], "phone")  # its own resume folder
    store = WindowStore(tmp_path / "store")  # and a store another engine wrote is refused outright
    check_runner(store, runner_identity(PhoneConfig(engine=virtual), virtual))
    store.save(("w", 0), ['{"type": "window"}'])
    with pytest.raises(RunFailed, match=r"clock=virtual\).*uses python \(engine reference, clock=real\)"):
        check_runner(store, runner_identity(PhoneConfig(engine=real), real))
    check_runner(store, runner_identity(PhoneConfig(engine=virtual), virtual))  # the same engine resumes
