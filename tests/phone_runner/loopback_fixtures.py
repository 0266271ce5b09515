"""Loopback-phone helpers shared by the phone_runner tests (see conftest.py for the fixtures)."""

from __future__ import annotations

import socket
import time
from pathlib import Path

from phone_runner.testing.loopback import LoopbackDevice


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]



def _wait_state(port: int, serial: str, states: tuple[str, ...], timeout: float = 20.0) -> str:
    import adbutils

    client = adbutils.AdbClient(port=port)
    deadline = time.monotonic() + timeout
    state = "absent"
    while time.monotonic() < deadline:
        state = next((d.state for d in client.list() if d.serial == serial), "absent")
        if state in states:
            return state
        time.sleep(0.1)
    raise AssertionError(f"loopback device {serial} stayed {state!r}, expected {states}")


def start_loopback(root: Path, adb_port: int, **over: object) -> LoopbackDevice:
    dev = LoopbackDevice(root, **over).start()
    dev.connect(adb_port)
    want = ("device",) if over.get("authorized", True) else ("unauthorized",)
    _wait_state(adb_port, dev.serial, want)
    return dev
