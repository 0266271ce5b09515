"""Devices through a real adb server (adbutils): discovery and one clear line per device problem.

The server is started if it is not running (``adb start-server``, argv list). Its port is adb's
own ``ANDROID_ADB_SERVER_PORT`` (default 5037). A serial is only ever passed to adb as a transport
id, never to a shell.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time

import adbutils

from .errors import PhoneError  # a device problem, worded as one line that says what to do


def server_port() -> int:
    return int(os.environ.get("ANDROID_ADB_SERVER_PORT", "5037"))


def adb_executable() -> str:
    found = shutil.which("adb")
    if found:
        return found
    return adbutils.adb_path()  # adbutils' bundled adb


def client(start: bool = True, timeout: float = 20.0) -> adbutils.AdbClient:
    """A client of a running adb server; starts one if needed."""
    c = adbutils.AdbClient(host="127.0.0.1", port=server_port(), socket_timeout=timeout)
    try:
        c.server_version()
        return c
    except (adbutils.AdbError, OSError) as err:
        if not start:
            raise PhoneError(f"no adb server on port {server_port()} ({err}); run `adb start-server`") from None
    env = {**os.environ, "ANDROID_ADB_SERVER_PORT": str(server_port())}
    done = subprocess.run([adb_executable(), "start-server"], env=env, capture_output=True, text=True,
                          timeout=60)
    if done.returncode != 0:
        raise PhoneError(f"could not start the adb server: {done.stderr.strip() or done.stdout.strip()}")
    deadline = time.monotonic() + timeout
    while True:
        try:
            c.server_version()
            return c
        except (adbutils.AdbError, OSError):
            if time.monotonic() > deadline:
                raise PhoneError(f"the adb server did not answer on port {server_port()}") from None
            time.sleep(0.2)


def select_device(serial: str | None = None, c: adbutils.AdbClient | None = None) -> adbutils.AdbDevice:
    """The one device to use, or a ``PhoneError`` that says exactly what is wrong."""
    c = c or client()
    infos = c.list()
    if not infos:
        raise PhoneError("no Android device: connect a phone with USB debugging enabled "
                         "(Settings > Developer options), then check `adb devices`")
    if serial is None:
        if len(infos) > 1:
            listed = ", ".join(f"{i.serial} ({i.state})" for i in infos)
            raise PhoneError(f"several devices are attached ({listed}): choose one with phone.serial=<serial>")
        info = infos[0]
    else:
        info = next((i for i in infos if i.serial == serial), None)
        if info is None:
            listed = ", ".join(i.serial for i in infos)
            raise PhoneError(f"no device with serial {serial!r}; `adb devices` lists: {listed}")
    if info.state == "unauthorized":
        raise PhoneError(f"device {info.serial} is unauthorized: unlock the phone and accept the 'Allow USB "
                         "debugging?' prompt (RSA key), then rerun")
    if info.state != "device":
        raise PhoneError(f"device {info.serial} is {info.state}: replug the cable or run `adb reconnect`, then rerun")
    return c.device(info.serial)
