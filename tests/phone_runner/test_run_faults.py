"""Mid-run failures on the loopback phone: each is one accurate line (what, where, what was kept,
the command to continue) and a FAILED MLflow run -- a read-only runner folder, a runner that dies
in the middle of a line, a disk that fills during the run, a calibration killed half way (in its
sweep or in its native runs), a runner binary that is not there."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import adbutils
import pytest

from phone_runner.deploy import deploy
from phone_runner.runner import runner_binary
from phone_runner.testing.loopback import LoopbackDevice
from workbench.errors import ConfigError, PhoneError
from workbench.run import execute

from .test_phone_jobs import job_cfg, runs

HEADER = ('{"v": 1, "type": "header", "run_id": "x", "runner": {}, "mode": "%s", "engine": {"kind": "reference"}, '
          '"scheme": {}, "device": {}, "started_unix": 0.0}')
SCRIPT = """#!{python}
import os, sys
sys.stdout.write({header!r} + "\\n")
{body}
sys.stdout.flush()
{end}
"""


def _fake_runner(loopback: LoopbackDevice, tmp: Path, mode: str, body: str, end: str) -> str:
    """A runner that misbehaves as told, pushed to the phone; returns its device path."""
    script = tmp / "fake_runner"
    script.write_text(SCRIPT.format(python=sys.executable, header=HEADER % mode, body=body, end=end))
    script.chmod(0o755)
    dev = adbutils.AdbClient(port=int(os.environ["ANDROID_ADB_SERVER_PORT"])).device(loopback.serial)
    deploy(dev, {"bin/fake": script}, progress=False)
    return "/data/local/tmp/as2d/bin/fake"


def _failed_line(tmp: Path, experiment: str, *over: str) -> PhoneError:
    with pytest.raises(PhoneError) as err:
        execute(job_cfg(tmp, experiment, *over))
    assert "\n" not in str(err.value)  # the one line run.py prints (kept: goes on its own line)
    assert [r.info.status for r in runs(tmp)][-1] == "FAILED"
    return err.value


def test_a_read_only_runner_folder_says_so_not_free_space(loopback: LoopbackDevice, tmp_path: Path) -> None:
    loopback.box.read_only.add("/data/local/tmp/as2d/bin")
    err = _failed_line(tmp_path, "native_phone", "phone.runner=cpp", f"phone.runner_binary={runner_binary()}",
                       "methods=[target_only]", "phone.engine.clock=virtual")
    assert "push of bin/as2d_runner to /data/local/tmp/as2d/bin/as2d_runner failed" in str(err)
    assert "/data/local/tmp/as2d/bin is not writable (" in str(err) and "Read-only file system" in str(err)
    assert "free space" not in str(err) and "ls -ld /data/local/tmp/as2d/bin" in err.fix
    assert err.kept == "0 of 1 file(s) pushed and sha256-checked; the rest are pushed on the rerun"


def test_a_runner_dying_mid_line_names_its_exit_status(loopback: LoopbackDevice, tmp_path: Path) -> None:
    fake = _fake_runner(loopback, tmp_path, "run", 'sys.stdout.write(\'{"v": 1, "type": "rou\')',
                        "sys.stderr.write('segfault-like crash\\n'); os._exit(3)")
    err = _failed_line(tmp_path, "native_phone", f"phone.python={fake}", "methods=[target_only]",
                       "phone.engine.clock=virtual")
    assert "line 2: the runner exited with status 3 in the middle of a line" in str(err)
    assert "segfault-like crash" in str(err) and "rerun the same command to resume" in str(err)
    assert err.kept.startswith("0 finished window(s) in ")


def test_a_line_outside_the_protocol_says_what_to_fix_before_the_rerun(loopback: LoopbackDevice,
                                                                      tmp_path: Path) -> None:
    fake = _fake_runner(loopback, tmp_path, "run", "sys.stdout.write('CPU features: neon\\n')", "")
    err = _failed_line(tmp_path, "native_phone", f"phone.python={fake}", "methods=[target_only]",
                       "phone.engine.clock=virtual")
    assert "line 2" in str(err)
    assert err.fix.startswith("the runner wrote a line outside phone_runner/PROTOCOL.md")
    assert "rebuild or fix the runner, then rerun the same command to resume" in err.fix


@pytest.mark.parametrize("runner", ["python", "cpp"])
def test_a_disk_that_fills_mid_run_says_no_space(loopback: LoopbackDevice, tmp_path: Path, runner: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import phone_runner.session

    monkeypatch.setattr(phone_runner.session, "new_run_id", lambda: "diskfull")
    out = loopback.root / "data/local/tmp/as2d/runs/diskfull/out.jsonl"
    out.parent.mkdir(parents=True)
    out.symlink_to("/dev/full")  # every write to the output file: ENOSPC, as on a phone that filled up
    over = ("phone.runner=cpp", f"phone.runner_binary={runner_binary()}") if runner == "cpp" else ()
    err = _failed_line(tmp_path, "native_phone", *over, "methods=[target_only]", "phone.engine.clock=virtual")
    assert "runner error internal: output file: write failed (No space left on device)" in str(err)
    assert "not valid JSON" not in str(err) and "free space on the phone" in err.fix


def test_a_killed_calibration_says_it_cannot_resume(loopback: LoopbackDevice, tmp_path: Path) -> None:
    measure = ('{"v": 1, "type": "measure", "op": "verify", "width": 1, "offset": 0, "concurrent": false, '
               '"source": null, "repetition": 0, "ms": 12.5}')
    fake = _fake_runner(loopback, tmp_path, "calibrate", f"sys.stdout.write({measure!r} + '\\n')",
                        "os.kill(os.getpid(), 9)")
    err = _failed_line(tmp_path, "calibrate_phone", f"phone.python={fake}", "phone.name=killed",
                       f"phone.profile_dir={tmp_path}/profiles", "phone.write_protocol_check=true")
    assert "the runner exited with status" in str(err) and "no summary" in str(err)
    assert err.kept == "nothing: a calibration cannot resume (its 1 measure line(s) are discarded)"
    assert "calibrate again from the start" in err.fix and "resume:" not in str(err)
    assert not (tmp_path / "profiles").exists()


NATIVE_FAULT = """#!{python}
import json, os, sys
request = sys.argv[sys.argv.index("--request") + 1]
obj = json.load(open(request))
if obj["mode"] == "calibrate":  # the width sweep passes: the reference engine's, which loads no model
    obj.update(engine={{"kind": "reference", "clock": "virtual"}}, models={{}}, windows=[])
    json.dump(obj, open(request, "w"))
    os.execv(sys.executable, [sys.executable, *sys.argv[1:]])  # -m phone_runner.device --request ...
sys.stdout.write({header!r} + "\\n")  # the native target-only run: killed after its header
sys.stdout.flush()
os._exit(3)
"""


def test_a_real_engine_calibration_failing_in_its_native_runs_says_it_cannot_resume(loopback: LoopbackDevice,
                                                                                   tmp_path: Path) -> None:
    script = tmp_path / "native_fault"
    script.write_text(NATIVE_FAULT.format(python=sys.executable, header=HEADER % "run"))
    script.chmod(0o755)
    dev = adbutils.AdbClient(port=int(os.environ["ANDROID_ADB_SERVER_PORT"])).device(loopback.serial)
    deploy(dev, {"bin/native_fault": script}, progress=False)
    err = _failed_line(tmp_path, "calibrate_phone", "phone.python=/data/local/tmp/as2d/bin/native_fault",
                       "phone.engine.kind=torch", "phone.name=native_fault", f"phone.profile_dir={tmp_path}/profiles",
                       "phone.max_seconds=6", "phone.calibrate.widths=[1]", "phone.calibrate.offsets=[0]")
    assert "the runner exited with status 3 and no summary" in str(err)
    assert err.kept.startswith("nothing: a calibration cannot resume (its 0 finished window(s) of its native "
                               "target_only run are discarded)")
    assert "calibrate again from the start" in err.fix and "resume:" not in str(err)
    assert not (tmp_path / "profiles").exists()


def test_a_missing_runner_binary_is_one_line_before_any_run(loopback: LoopbackDevice, tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        execute(job_cfg(tmp_path, "native_phone", "phone.runner=cpp", f"phone.runner_binary={tmp_path}/nowhere",
                        "methods=[target_only]", "phone.engine.clock=virtual"))
    assert err.value.key == "phone.runner_binary" and "\n" not in str(err.value)
    assert "cmake --build phone_runner/runner/build" in err.value.fix and "build_android.sh" in err.value.fix
    assert runs(tmp_path) == []  # refused before an MLflow run exists


def test_a_runner_binary_gone_after_the_checks_fails_the_run_in_one_line(loopback: LoopbackDevice, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    import phone_runner.info

    binary = tmp_path / "as2d_runner"
    shutil.copy(runner_binary(), binary)
    read = phone_runner.info.device_info

    def read_then_lose_the_binary(dev: adbutils.AdbDevice) -> dict:
        binary.unlink()  # removed between the job's checks and the push (a rebuild in another shell)
        return read(dev)

    monkeypatch.setattr(phone_runner.info, "device_info", read_then_lose_the_binary)
    with pytest.raises(ConfigError) as err:
        execute(job_cfg(tmp_path, "native_phone", "phone.runner=cpp", f"phone.runner_binary={binary}",
                        "methods=[target_only]", "phone.engine.clock=virtual"))
    assert err.value.key == "phone.runner_binary" and "\n" not in str(err.value)
    assert [r.info.status for r in runs(tmp_path)] == ["FAILED"]


@pytest.mark.parametrize(("code", "fix", "rerun"), [
    ("width_not_priced", "price that width: calibrate this phone over it", True),
    ("exactness", "the runner's output left the target's greedy output (C.4)", False),
])
def test_a_runner_error_says_what_to_change_before_a_rerun(loopback: LoopbackDevice, tmp_path: Path, code: str,
                                                           fix: str, rerun: bool) -> None:
    line = f'{{"v": 1, "type": "error", "code": "{code}", "message": "injected {code}", "window_id": "w0"}}'
    fake = _fake_runner(loopback, tmp_path, "run", f"sys.stdout.write({line!r} + '\\n')", "os._exit(2)")
    err = _failed_line(tmp_path, "native_phone", f"phone.python={fake}", "methods=[target_only]",
                       "phone.engine.clock=virtual")
    assert f"runner error {code} in window 'w0': injected {code}" in str(err)
    assert err.fix.startswith(fix)
    assert ("then rerun the same command to resume" in err.fix) is rerun  # a rerun repeats an exactness fault
