"""Fixtures: one real adb server per test session (on its own port) and loopback devices.

The adb server is Debian's ``adb``; it runs on a private port so the tests never touch a server
(or phones) the user has on 5037, and it is killed at the end of the session.

They are registered once, by ``tests/conftest.py``: a session fixture imported into a second conftest
is a second fixture, whose own server would repoint ``ANDROID_ADB_SERVER_PORT`` away from the phones
the first one's tests connect.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from phone_runner.testing.loopback import LoopbackDevice, start_loopback
from phone_runner.testing.loopback import adb_server as private_adb_server


@pytest.fixture(scope="session")
def adb_server() -> Iterator[int]:
    """The port of a real adb server started for this session."""
    adb = shutil.which("adb")
    assert adb, "Debian's adb is not installed: run scripts/setup.sh as root (apt-get install adb)"
    with private_adb_server(adb) as port:
        yield port


@pytest.fixture
def loopback(adb_server: int, tmp_path: Path) -> Iterator[LoopbackDevice]:
    """A connected, authorized loopback phone; unplugged and forgotten afterwards."""
    # the jobs under test find the server through the variable; it must name the server we connect to
    assert os.environ.get("ANDROID_ADB_SERVER_PORT") == str(adb_server), "a second adb server fixture is active"
    dev = start_loopback(tmp_path / "phone", adb_server)
    try:
        yield dev
    finally:
        dev.stop()
        dev.disconnect(adb_server)
