"""Fixtures: one real adb server per test session (on its own port) and loopback devices.

The adb server is Debian's ``adb``; it runs on a private port so the tests never touch a server
(or phones) the user has on 5037, and it is killed at the end of the session.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from phone_runner.testing.loopback import LoopbackDevice

from .loopback_fixtures import _free_port, start_loopback


@pytest.fixture(scope="session")
def adb_server() -> Iterator[int]:
    """The port of a real adb server started for this session."""
    adb = shutil.which("adb")
    assert adb, "Debian's adb is not installed: run scripts/setup.sh as root (apt-get install adb)"
    port = _free_port()
    env = {**os.environ, "ANDROID_ADB_SERVER_PORT": str(port)}
    subprocess.run([adb, "start-server"], env=env, check=True, capture_output=True, timeout=60)
    old = os.environ.get("ANDROID_ADB_SERVER_PORT")
    os.environ["ANDROID_ADB_SERVER_PORT"] = str(port)  # phone_runner.adb reads it like adb does
    try:
        yield port
    finally:
        subprocess.run([adb, "kill-server"], env=env, capture_output=True, timeout=60)
        if old is None:
            os.environ.pop("ANDROID_ADB_SERVER_PORT", None)
        else:
            os.environ["ANDROID_ADB_SERVER_PORT"] = old


@pytest.fixture
def loopback(adb_server: int, tmp_path: Path) -> Iterator[LoopbackDevice]:
    """A connected, authorized loopback phone; unplugged and forgotten afterwards."""
    dev = start_loopback(tmp_path / "phone", adb_server)
    try:
        yield dev
    finally:
        dev.stop()
        dev.disconnect(adb_server)
