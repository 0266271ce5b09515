"""``python -m phone_runner.testing.loopback`` starts a loopback phone by hand on the user's adb server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import adbutils

from phone_runner.testing.loopback import wait_state

REPO = Path(__file__).resolve().parents[2]


def test_the_loopback_phone_starts_by_hand_and_unplugs_on_sigterm(adb_server: int, tmp_path: Path) -> None:
    env = {**os.environ, "ANDROID_ADB_SERVER_PORT": str(adb_server), "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "phone_runner.testing.loopback", "--root", str(tmp_path / "p")],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(2)]
        serial = next(w for w in lines[1].split() if w.startswith("127.0.0.1:"))
        wait_state(adb_server, serial, ("device",))
        dev = adbutils.AdbClient(port=adb_server).device(serial)
        assert dev.shell(["getprop", "ro.product.model"]).strip() == "Loopback K70"
        assert f"phone.serial={serial}" in lines[1] + proc.stdout.readline()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
