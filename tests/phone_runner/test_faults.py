"""Device problems are one clear line before any MLflow run; bad runner output fails with its line
number and leaves nothing half-written; config values never reach a shell."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import adbutils
import pytest

from phone_runner.deploy import deploy
from phone_runner.hostrun import RunFailed, WindowStore, run_request
from phone_runner.payloads import pricing_from_profile, window_payload
from phone_runner.testing.loopback import LoopbackDevice, start_loopback
from workbench.jobs.base import ConfigError
from workbench.replay.profile import load_profile
from workbench.replay.synthetic import SyntheticSpec, synthetic_windows
from workbench.run import execute

from .test_phone_jobs import job_cfg, runs

ROOT = Path(__file__).resolve().parents[2]


def _config_error(tmp: Path, *over: str) -> str:
    with pytest.raises(ConfigError) as err:
        execute(job_cfg(tmp, "native_phone", *over))
    assert runs(tmp) == []  # refused before an MLflow run exists
    text = str(err.value)
    assert "\n" not in text
    return text


def test_no_device_is_one_line_from_the_command_line(adb_server: int, tmp_path: Path) -> None:
    env = {**os.environ, "ANDROID_ADB_SERVER_PORT": str(adb_server)}
    done = subprocess.run([sys.executable, "-m", "workbench.run", "experiment=phone_info",
                           f"tracking.uri=sqlite:///{tmp_path}/m.db", f"hydra.run.dir={tmp_path}/out"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    (line,) = [x for x in done.stderr.splitlines() if x.startswith("config error")]
    assert "no Android device" in line and "USB debugging" in line


def test_several_unauthorized_and_full_phones_are_one_line_each(adb_server: int, tmp_path: Path) -> None:
    a = start_loopback(tmp_path / "a", adb_server)
    b = start_loopback(tmp_path / "b", adb_server)
    locked = start_loopback(tmp_path / "locked", adb_server, authorized=False)
    try:
        msg = _config_error(tmp_path)
        assert "several devices" in msg and a.serial in msg and b.serial in msg and "phone.serial=" in msg
        msg = _config_error(tmp_path, f"phone.serial={locked.serial}")
        assert "unauthorized" in msg and "Allow USB debugging" in msg
        a.free_kb = 1000  # a full phone
        msg = _config_error(tmp_path, f"phone.serial={a.serial}")
        assert msg.startswith("phone.min_free_mb:") and "full" in msg
        msg = _config_error(tmp_path, "phone.serial='127.0.0.1:1; touch /data/local/tmp/pwned; $(touch pwned2)'")
        assert "no device with serial" in msg
    finally:
        for dev in (a, b, locked):
            dev.stop()
            dev.disconnect(adb_server)
    for dev in (a, b, locked):
        assert not list(dev.root.rglob("pwned*")) and not list(Path.cwd().glob("pwned*"))


def test_a_full_disk_stops_a_deploy_with_one_line(loopback: LoopbackDevice, tmp_path: Path, adb_server: int) -> None:
    big = tmp_path / "model.bin"
    big.write_bytes(os.urandom(300_000))
    loopback.free_kb = 100
    dev = adbutils.AdbClient(port=adb_server).device(loopback.serial)
    with pytest.raises(Exception, match="not enough free space"):
        deploy(dev, {"models/m.bin": big}, progress=False)
    assert not (loopback.root / "data/local/tmp/as2d/models/m.bin").exists()


BAD_RUNNER = """#!{python}
import json, sys
print(json.dumps({{"v": 1, "type": "header", "run_id": "x", "runner": {{}}, "mode": "run", "engine": {{}},
                  "scheme": {{}}, "device": {{}}, "started_unix": 0.0}}), flush=True)
print({bad!r}, flush=True)
"""


@pytest.mark.parametrize("bad, needle", [
    ('{"v": 1, "type": "round", "window_id": ', "line 2: not valid JSON"),
    ('{"v": 2, "type": "summary", "windows": 0, "rounds": 0, "tokens": 0, "time": 0, "wall_s": 0}',
     "line 2: protocol version 2"),
])
def test_bad_runner_output_fails_with_the_line_number_and_writes_nothing(loopback: LoopbackDevice, tmp_path: Path,
                                                                         bad: str, needle: str) -> None:
    runner = tmp_path / "bad_runner"
    runner.write_text(BAD_RUNNER.format(python=sys.executable, bad=bad))
    runner.chmod(0o755)
    adb_port = int(os.environ["ANDROID_ADB_SERVER_PORT"])
    deploy(adbutils.AdbClient(port=adb_port).device(loopback.serial), {"bin/bad": runner}, progress=False)
    with pytest.raises(RunFailed, match=needle):
        execute(job_cfg(tmp_path, "native_phone", "phone.python=/data/local/tmp/as2d/bin/bad", "methods=[as2d]",
                        "phone.engine.clock=virtual"))
    (failed,) = runs(tmp_path)
    assert failed.info.status == "FAILED" and not failed.data.metrics
    assert not list((tmp_path / "out").rglob("*.jsonl")) and not (tmp_path / "out/tables").exists()


def test_no_config_value_reaches_a_shell(loopback: LoopbackDevice, tmp_path: Path, adb_server: int) -> None:
    dev = adbutils.AdbClient(port=adb_server).device(loopback.serial)
    evil = "x'; touch /data/local/tmp/pwned; echo \"$(touch /data/local/tmp/pwned2)\" `id`"
    local = tmp_path / "w.bin"
    local.write_bytes(b"weights")
    rel = f"models/{evil}/w.bin"
    assert deploy(dev, {rel: local}, progress=False) == {rel: "pushed"}
    assert deploy(dev, {rel: local}, progress=False) == {rel: "present"}  # sha256sum got the literal path
    assert (loopback.root / "data/local/tmp/as2d" / rel).read_bytes() == b"weights"
    w = synthetic_windows(SyntheticSpec(n_windows=1, mean_tokens=12, sd_tokens=1))[0]
    req = {"v": 1, "run_id": evil, "mode": "run", "scheme": {"name": "target_only", "settings": {}},
           "engine": {"kind": "reference", "clock": "virtual"},
           "models": {"target": {"dir": f"models/{evil}", "name": evil, "format": "reference"}},
           "producer": {"batch_tokens": 8}, "windows": [window_payload(w)], "repetitions": 1, "warmups": 0,
           "max_output": 64, "pricing": pricing_from_profile(load_profile("k70_pro")), "output": "x"}
    run, _ = run_request(dev, req, runner=["python3", "-m", "phone_runner.device"], run_rel=f"runs/{evil}",
                         store=WindowStore(tmp_path / "state"), local_out=tmp_path / "out.jsonl")
    assert run.summary is not None and run.header["run_id"] == evil
    assert json.loads((tmp_path / "out.jsonl").read_text().splitlines()[0])["run_id"] == evil
    tmp = loopback.root / "data/local/tmp"
    assert not (tmp / "pwned").exists() and not (tmp / "pwned2").exists()  # the literal names exist deeper down
    with pytest.raises(ValueError, match="leaves"):
        deploy(dev, {"../../../etc/x": local}, progress=False)
