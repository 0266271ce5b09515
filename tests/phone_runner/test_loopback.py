"""The loopback device through the real adb server: shell v1/v2, sync, getprop, sysfs, faults."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import adbutils
import pytest

from phone_runner.testing.loopback import LoopbackDevice, start_loopback, wait_state


def _dev(port: int, lb: LoopbackDevice) -> adbutils.AdbDevice:
    return adbutils.AdbClient(port=port).device(lb.serial)


def test_shell_v1_v2_getprop_and_sysfs(adb_server: int, loopback: LoopbackDevice) -> None:
    d = _dev(adb_server, loopback)
    assert d.shell(["getprop", "ro.product.cpu.abi"]) == "arm64-v8a"
    assert "[ro.build.version.sdk]: [34]" in d.shell("getprop")
    v1, v2 = d.shell2("echo out; cat /nope"), d.shell2("echo out; cat /nope", v2=True)
    assert v1.returncode == v2.returncode == 1
    assert v2.stdout.strip() == "out" and "No such file" in v2.stderr
    assert d.shell("cat /sys/devices/system/cpu/online") == "0-7"
    loopback.set_online(5, False)  # the test changes the phone while connected
    assert d.shell("cat /sys/devices/system/cpu/online") == "0-4,6-7"
    loopback.set_max_freq(7, 1_000_000)
    assert d.shell("cat /sys/devices/system/cpu/cpu7/cpufreq/scaling_max_freq") == "1000000"


def test_sync_push_pull_stat_list_and_the_adb_cli(adb_server: int, loopback: LoopbackDevice, tmp_path: Path) -> None:
    d = _dev(adb_server, loopback)
    payload = os.urandom(300_000)  # several WRTE packets each way
    d.sync.push(payload, "/data/local/tmp/as2d/blob.bin")
    assert d.sync.read_bytes("/data/local/tmp/as2d/blob.bin") == payload
    assert (loopback.root / "data/local/tmp/as2d/blob.bin").read_bytes() == payload
    assert d.sync.stat("/data/local/tmp/as2d/blob.bin").size == len(payload)
    assert not d.sync.exists("/data/local/tmp/as2d/missing")
    assert "blob.bin" in [f.path for f in d.sync.list("/data/local/tmp/as2d")]
    # the adb command-line client, unchanged, through the same server
    env = {**os.environ, "ANDROID_ADB_SERVER_PORT": str(adb_server)}
    src = tmp_path / "up.txt"
    src.write_text("from the adb cli\n")
    subprocess.run(["adb", "-s", loopback.serial, "push", str(src), "/data/local/tmp/up.txt"], env=env, check=True,
                   capture_output=True, timeout=60)
    subprocess.run(["adb", "-s", loopback.serial, "pull", "/data/local/tmp/up.txt", str(tmp_path / "down.txt")],
                   env=env, check=True, capture_output=True, timeout=60)
    assert (tmp_path / "down.txt").read_text() == "from the adb cli\n"


def test_the_shell_is_confined_to_the_sandbox_and_parses_like_sh(adb_server: int, loopback: LoopbackDevice,
                                                                  tmp_path: Path) -> None:
    d = _dev(adb_server, loopback)
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    assert d.shell2(["cat", str(outside)]).returncode == 1  # host paths do not exist on the phone
    assert d.shell2("cat ../../../../../../" + str(outside)).returncode == 1
    assert d.shell2("sh -c id").returncode == 127  # no host programs
    # Unquoted separators and substitutions run like on a phone (what makes injection tests real) ...
    d.shell("echo a; touch /data/local/tmp/by_semicolon; echo $(touch /data/local/tmp/by_subst)")
    assert (loopback.root / "data/local/tmp/by_semicolon").exists()
    assert (loopback.root / "data/local/tmp/by_subst").exists()
    # ... and quoted ones are plain text.
    assert d.shell(["echo", "x; touch /data/local/tmp/q", "$(touch /data/local/tmp/q2)"]).startswith("x; touch")
    assert not (loopback.root / "data/local/tmp/q").exists()
    assert not (loopback.root / "data/local/tmp/q2").exists()
    # Redirections read left to right, as in sh: stderr follows stdout into the file only after ``>``.
    d.shell("cat /nope >/data/local/tmp/both 2>&1")
    assert "No such file" in (loopback.root / "data/local/tmp/both").read_text()
    early = d.shell2("cat /nope 2>&1 >/data/local/tmp/out_only", v2=True)
    assert "No such file" in early.stdout and (loopback.root / "data/local/tmp/out_only").read_text() == ""
    assert "No such file" not in d.shell2('cat /nope 2>"&1"', v2=True).stdout  # quoted: a file name, not &1
    dangling = d.shell2("echo x >", v2=True)  # a redirection with no file is a syntax error, not a crash
    assert dangling.returncode == 2 and "at the end of the command" in dangling.stderr


def test_unauthorized_and_unplugged_states(adb_server: int, tmp_path: Path) -> None:
    locked = start_loopback(tmp_path / "locked", adb_server, authorized=False)
    phone = start_loopback(tmp_path / "phone", adb_server)
    try:
        phone.stop()  # unplug
        assert wait_state(adb_server, phone.serial, ("offline", "absent")) in ("offline", "absent")
    finally:
        for dev in (locked, phone):
            dev.stop()
            dev.disconnect(adb_server)


def test_port_range_the_adb_server_scans_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="5555-5585"):
        LoopbackDevice(tmp_path, port=5560)


def test_a_private_adb_server_is_gone_even_when_kill_server_misses_it(monkeypatch) -> None:
    """``adb kill-server`` that does not reach the server (here: never sent) leaves no server behind:
    the private server is ended by its own port on the way out."""
    from phone_runner.testing import loopback as L

    real_run = subprocess.run

    def run(argv, *a, **kw):  # every adb call as is, except the kill-server that would end it
        if list(argv)[-1:] == ["kill-server"]:
            return subprocess.CompletedProcess(argv, 0, b"", b"")
        return real_run(argv, *a, **kw)

    monkeypatch.setattr(L.subprocess, "run", run)
    with L.adb_server() as port:
        assert L.server_pids(port), "the private server runs while in use"
    deadline = time.monotonic() + 10
    while L.server_pids(port) and time.monotonic() < deadline:  # SIGKILL is delivered, then reaped
        time.sleep(0.1)
    assert L.server_pids(port) == []
