"""A runner left over from an earlier run (an unplugged cable, a killed host): found by its pid file
and stopped before the next run starts, so two runners never overlap on one phone.

Both runners take ``--pid-file`` and write ``<pid> <name>`` there at start (and remove it at exit).
The host trusts the file only after ``/proc/<pid>/cmdline`` shows one of the runners: a stale
file whose pid was reused by another process is removed, never acted on.
"""

from __future__ import annotations

import time

import adbutils

from .deploy import device_path

PID_FILE = "runner.pid"
RUNNER_MARKS = ("as2d_runner", "phone_runner.device")
STOP_WAIT_S = 5.0


def pid_file() -> str:
    return device_path(PID_FILE)


def _alive(dev: adbutils.AdbDevice, pid: str) -> bool:
    r = dev.shell2(["cat", f"/proc/{pid}/cmdline"], timeout=30)
    return r.returncode == 0 and any(m in r.output for m in RUNNER_MARKS)


def stop_leftover(dev: adbutils.AdbDevice) -> str | None:
    """Stop a live runner named by the pid file; returns the line to tell the user, or None."""
    path = pid_file()
    r = dev.shell2(["cat", path], timeout=30)
    words = r.output.split() if r.returncode == 0 else []
    if not words:
        return None
    pid = words[0]
    if not pid.isdigit() or not _alive(dev, pid):
        dev.shell2(["rm", "-f", path], timeout=30)  # stale: the runner is gone
        return None
    dev.shell2(["kill", pid], timeout=30)
    deadline = time.monotonic() + STOP_WAIT_S
    while _alive(dev, pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if _alive(dev, pid):
        dev.shell2(["kill", "-9", pid], timeout=30)
    dev.shell2(["rm", "-f", path], timeout=30)
    return (f"device {dev.serial}: stopped a leftover runner (pid {pid}, {' '.join(words[1:]) or 'runner'}) "
            "from an earlier run before starting this one")
