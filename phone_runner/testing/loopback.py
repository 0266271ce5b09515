"""The loopback device: a device description (YAML) + sandbox + fake adbd, registered with adb.

The description supplies ``getprop`` values and a fake sysfs tree (cpufreq per core, online
cores, thermal zones, battery) written under the sandbox root, where a test can change it while
a run is in progress (:meth:`LoopbackDevice.set_online`, :meth:`set_max_freq`, :meth:`set_temp`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from workbench.models.cache import cache_root

from .fake_adbd import FakeAdbd
from .minishell import Sandbox

DEFAULT_DESCRIPTION = Path(__file__).with_name("loopback.yaml")
CPU = "/sys/devices/system/cpu"
THERMAL = "/sys/class/thermal"
BATTERY = "/sys/class/power_supply/battery"


def _ranges(ids: list[int]) -> str:
    """The kernel's cpulist format: ``0-4,6-7``."""
    runs: list[list[int]] = []
    for i in sorted(ids):
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


class LoopbackDevice:
    def __init__(self, root: str | Path, description: str | Path | dict[str, Any] = DEFAULT_DESCRIPTION,
                 *, port: int = 0, **over: Any) -> None:
        desc = description if isinstance(description, dict) else yaml.safe_load(Path(description).read_text())
        self.desc = {**desc, **over}
        self.root = Path(root).resolve()
        self.free_kb = int(self.desc.get("storage_free_kb", 1 << 24))
        (self.root / "data/local/tmp").mkdir(parents=True, exist_ok=True)
        self._write_sysfs()
        self.box = Sandbox(self.root, props={k: str(v) for k, v in self.desc["props"].items()},
                           free_kb=lambda: self.free_kb,
                           extra_env={"PYTHONPATH": os.pathsep.join(filter(None, [str(_repo_root()),
                                                                                  os.environ.get("PYTHONPATH")])),
                                      # this host stands in for the phone: its converted weights too
                                      "AS2D_CACHE": str(cache_root())})
        self.adbd = FakeAdbd(self.box, port=port, serial=str(self.desc["serial"]),
                             authorized=bool(self.desc.get("authorized", True)),
                             product=self.desc["props"].get("ro.product.name", "loopback"),
                             model=self.desc["props"].get("ro.product.model", "Loopback").replace(" ", "_"),
                             device=self.desc["props"].get("ro.product.device", "loopback"))

    # sysfs ---------------------------------------------------------------------------------
    def _file(self, device_path: str, value: object) -> None:
        p = self.root / device_path.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_name(f".{p.name}.tmp")
        tmp.write_text(f"{value}\n")
        os.replace(tmp, p)  # a reader never sees a half-written value

    def read(self, device_path: str) -> str:
        return (self.root / device_path.lstrip("/")).read_text().strip()

    def _write_sysfs(self) -> None:
        cores: list[int] = []
        for ci, cl in enumerate(self.desc["clusters"]):
            for c in cl["cores"]:
                cores.append(c)
                base = f"{CPU}/cpu{c}"
                self._file(f"{base}/online", 1)
                self._file(f"{base}/topology/cluster_id", ci)
                f = f"{base}/cpufreq"
                self._file(f"{f}/cpuinfo_min_freq", cl["min_khz"])
                self._file(f"{f}/cpuinfo_max_freq", cl["max_khz"])
                self._file(f"{f}/scaling_min_freq", cl["min_khz"])
                self._file(f"{f}/scaling_max_freq", cl.get("ceiling_khz", cl["max_khz"]))
                self._file(f"{f}/scaling_cur_freq", cl.get("cur_khz", cl["max_khz"]))
                self._file(f"{f}/scaling_governor", cl.get("governor", "schedutil"))
                self._file(f"{f}/related_cpus", " ".join(map(str, cl["cores"])))
        cores.sort()
        self._file(f"{CPU}/possible", _ranges(cores))
        self._file(f"{CPU}/present", _ranges(cores))
        self._refresh_online()
        for i, z in enumerate(self.desc.get("thermal", [])):
            self._file(f"{THERMAL}/thermal_zone{i}/type", z["type"])
            self._file(f"{THERMAL}/thermal_zone{i}/temp", z["temp_mc"])
        b = self.desc.get("battery")
        if b:
            for key, name in (("capacity", "capacity"), ("temp_dc", "temp"), ("current_now_ua", "current_now"),
                              ("voltage_now_uv", "voltage_now"), ("status", "status")):
                self._file(f"{BATTERY}/{name}", b[key])

    def _refresh_online(self) -> None:
        cores = sorted(c for cl in self.desc["clusters"] for c in cl["cores"])
        online = [c for c in cores if self.read(f"{CPU}/cpu{c}/online") == "1"]
        self._file(f"{CPU}/online", _ranges(online))

    def set_online(self, core: int, online: bool) -> None:
        self._file(f"{CPU}/cpu{core}/online", int(online))
        self._refresh_online()

    def set_max_freq(self, core: int, khz: int) -> None:
        self._file(f"{CPU}/cpu{core}/cpufreq/scaling_max_freq", khz)
        cur = int(self.read(f"{CPU}/cpu{core}/cpufreq/scaling_cur_freq"))
        self._file(f"{CPU}/cpu{core}/cpufreq/scaling_cur_freq", min(cur, khz))

    def set_temp(self, zone: int, milli_c: int) -> None:
        self._file(f"{THERMAL}/thermal_zone{zone}/temp", milli_c)

    # adb -----------------------------------------------------------------------------------
    @property
    def serial(self) -> str:
        return self.adbd.address  # what the adb server calls a TCP device

    def start(self) -> LoopbackDevice:
        self.adbd.start()
        return self

    def stop(self) -> None:
        self.adbd.stop()

    def connect(self, adb_port: int, adb: str = "adb") -> str:
        """``adb connect`` through the real adb server listening on ``adb_port``; returns its answer."""
        env = {**os.environ, "ANDROID_ADB_SERVER_PORT": str(adb_port)}
        out = subprocess.run([adb, "connect", self.adbd.address], env=env, capture_output=True, text=True,
                             timeout=30)
        return (out.stdout + out.stderr).strip()

    def disconnect(self, adb_port: int, adb: str = "adb") -> None:
        env = {**os.environ, "ANDROID_ADB_SERVER_PORT": str(adb_port)}
        subprocess.run([adb, "disconnect", self.adbd.address], env=env, capture_output=True, timeout=30)


def _repo_root() -> Path:
    return Path(__file__).resolve().parents[2]


def free_port() -> int:
    """A TCP port free on 127.0.0.1 at the time of asking."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def adb_server(adb: str | None = None) -> Iterator[int]:
    """A real adb server on a free port of its own, yielding that port. ``ANDROID_ADB_SERVER_PORT`` points
    at it meanwhile (``phone_runner.adb`` reads it as adb does), so a server or phones on 5037 are never
    touched; the server is killed and the variable restored on the way out, also on an exception."""
    from phone_runner.adb import adb_executable

    adb = adb or adb_executable()
    port = free_port()
    env = {**os.environ, "ANDROID_ADB_SERVER_PORT": str(port)}
    old = os.environ.get("ANDROID_ADB_SERVER_PORT")
    try:
        subprocess.run([adb, "start-server"], env=env, check=True, capture_output=True, timeout=60)
        os.environ["ANDROID_ADB_SERVER_PORT"] = str(port)
        yield port
    finally:
        subprocess.run([adb, "kill-server"], env=env, capture_output=True, timeout=60)
        for pid in server_pids(port):  # adb can leave its forked server behind when kill-server misses it
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if old is None:
            os.environ.pop("ANDROID_ADB_SERVER_PORT", None)
        else:
            os.environ["ANDROID_ADB_SERVER_PORT"] = old


def server_pids(port: int) -> list[int]:
    """Processes of an adb server listening on ``port`` (``adb -L tcp:<port> fork-server server``)."""
    mark = f"tcp:{port}".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:  # gone meanwhile, or not ours to read
                continue
            if argv and Path(argv[0].decode(errors="replace")).name == "adb" and mark in argv and b"server" in argv:
                pids.append(int(entry.name))
    return pids


def wait_state(port: int, serial: str, states: tuple[str, ...], timeout: float = 20.0) -> str:
    """The state (``device``, ``unauthorized``, ``offline``, ``absent``) the adb server on ``port`` reports
    for ``serial`` once it is one of ``states``; a device that stays otherwise for ``timeout`` s is an error."""
    import adbutils

    from phone_runner.errors import PhoneError

    client = adbutils.AdbClient(port=port)
    deadline = time.monotonic() + timeout
    state = "absent"
    while time.monotonic() < deadline:
        state = next((d.state for d in client.list() if d.serial == serial), "absent")
        if state in states:
            return state
        time.sleep(0.1)
    raise PhoneError(f"loopback device {serial} stayed {state!r}, expected {states}")


def start_loopback(root: str | Path, adb_port: int, **over: Any) -> LoopbackDevice:
    """A loopback phone under ``root``, connected to the adb server on ``adb_port`` and in the state its
    description asks for (``device``, or ``unauthorized`` with ``authorized=False``)."""
    dev = LoopbackDevice(root, **over).start()
    dev.connect(adb_port)
    want = ("device",) if over.get("authorized", True) else ("unauthorized",)
    wait_state(adb_port, dev.serial, want)
    return dev


def main(argv: list[str] | None = None) -> int:
    """``python -m phone_runner.testing.loopback``: a loopback phone by hand, connected to the adb server
    (``ANDROID_ADB_SERVER_PORT``, default 5037) until Ctrl-C; then the phone jobs run against it."""
    import argparse
    import signal
    import tempfile
    import threading

    from phone_runner.adb import client, server_port

    ap = argparse.ArgumentParser(prog="python -m phone_runner.testing.loopback", description=main.__doc__)
    ap.add_argument("--root", default=None, help="sandbox folder (the phone's filesystem); default: a new temp dir")
    ap.add_argument("--description", default=str(DEFAULT_DESCRIPTION), help="device description YAML")
    ap.add_argument("--port", type=int, default=0, help="fake adbd TCP port (0: any free port)")
    args = ap.parse_args(argv)
    root = Path(args.root or tempfile.mkdtemp(prefix="as2d-loopback-"))
    client()  # starts the adb server if it is not running
    dev = LoopbackDevice(root, args.description, port=args.port).start()
    print(dev.connect(server_port()), flush=True)
    print(f"loopback phone {dev.serial} (sandbox {root}) on adb server port {server_port()}; run e.g.\n"
          f"  python -m workbench.run experiment=phone_info phone.serial={dev.serial}\n"
          "Ctrl-C unplugs it.", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        dev.stop()
        dev.disconnect(server_port())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
