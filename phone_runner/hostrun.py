"""Run one request on a phone: push it, launch the runner (argv list), stream and validate JSONL.

* The command is an argv list; adbutils quotes each argument (``shlex.quote``) into the one
  string adb's ``shell:`` service takes, so no config value is ever parsed by the phone's shell.
* Shell protocol v2 when the phone has it (exit status, separate stderr), v1 otherwise.
* Every line is validated as it arrives; a bad line stops the run with its line number.
* Each finished window repetition is persisted at once (``WindowStore``), so an unplugged phone
  keeps what finished and a rerun resumes with the rest.
* The output file is pulled only after checking it exists (adbutils' ``sync.pull`` of a missing
  file silently creates an empty folder), parsed as JSON only, and must match the stream.
"""

from __future__ import annotations

import hashlib
import json
import logging
import struct
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import adbutils

from workbench.io import atomic_write_bytes, atomic_write_text

from .adb import PhoneError
from .deploy import device_path
from .leftover import pid_file, stop_leftover
from .protocol import ProtocolError, parse_request, validate_line
from .records import Key, PhoneRun, read_lines

log = logging.getLogger(__name__)


class RunFailed(PhoneError):
    """The run did not complete; ``run`` holds what was validated before the failure."""

    def __init__(self, message: str, run: PhoneRun | None = None, *, kept: str = "", fix: str = "") -> None:
        super().__init__(message, fix=fix, kept=kept)
        self.run = run


class DeviceLost(RunFailed):
    """The phone went away mid-run (unplugged, adb restarted)."""


class WindowStore:
    """Finished window repetitions of one request, one JSONL file each, written atomically."""

    def __init__(self, directory: Path) -> None:
        self.dir = Path(directory)

    @staticmethod
    def _name(key: Key) -> str:
        return hashlib.sha256(f"{key[0]}\x00{key[1]}".encode()).hexdigest()[:20] + ".jsonl"

    def save(self, key: Key, lines: Sequence[str]) -> None:
        atomic_write_text(self.dir / self._name(key), "".join(x + "\n" for x in lines))

    def save_header(self, text: str) -> None:
        """The run's header, kept as soon as it arrives (finished windows are useless without it)."""
        atomic_write_text(self.dir / "header.json", text)

    def header(self) -> str | None:
        p = self.dir / "header.json"
        return p.read_text(encoding="utf-8") if p.exists() else None

    def done(self, key: Key) -> bool:
        return (self.dir / self._name(key)).exists()

    def lines(self) -> list[str]:
        out: list[str] = []
        for f in sorted(self.dir.glob("*.jsonl")):
            out.extend(f.read_text(encoding="utf-8").splitlines())
        return out


class _Stream:
    """stdout lines (and stderr, exit code) of a shell command, v2 packets or a v1 byte stream."""

    def __init__(self, dev: adbutils.AdbDevice, argv: list[str], v2: bool) -> None:
        from adbutils._utils import list2cmdline  # shlex.quote per argument

        self.cmd = list2cmdline(argv)
        self.v2 = v2
        if v2:
            self.conn = dev.open_transport()
            self.conn.send_command(f"shell,v2,raw:{self.cmd}")
            self.conn.check_okay()
        else:
            self.conn = dev.open_shell(self.cmd)
        self.exit_code: int | None = None
        self.stderr = bytearray()
        self.buf = bytearray()

    def _read(self, n: int) -> bytes:
        data = bytearray()
        while len(data) < n:
            chunk = self.conn.conn.recv(n - len(data))
            if not chunk:
                raise EOFError
            data += chunk
        return bytes(data)

    def chunks(self, idle_timeout: float) -> Any:
        self.conn.conn.settimeout(idle_timeout)
        while True:
            if self.v2:
                head = self._read(5)
                kind, n = head[0], struct.unpack("<I", head[1:])[0]
                data = self._read(n) if n else b""
                if kind == 1:
                    yield data
                elif kind == 2:
                    self.stderr += data
                elif kind == 3:
                    self.exit_code = data[0] if data else 255
                    return
            else:
                data = self.conn.conn.recv(65536)
                if not data:
                    return
                yield data

    def close(self) -> None:
        try:
            self.conn.close()  # the phone's adbd kills the command when its stream closes
        except OSError:
            pass


def run_request(dev: adbutils.AdbDevice, request: dict[str, Any], *, runner: Sequence[str], run_rel: str,
                store: WindowStore, local_out: Path, timeout_s: float = 3600.0, idle_timeout_s: float = 300.0,
                on_line: Callable[[dict[str, Any]], None] | None = None, resumable: bool = True
                ) -> tuple[PhoneRun, dict[Key, tuple]]:
    """Run ``request`` (windows already resumed by the caller) and return the validated run and
    the wall-clock span of every finished window repetition. ``resumable``: whether a rerun continues
    from the kept windows (``native_phone``) or must start again (every run of ``calibrate_phone``: its
    measure lines and its native runs' windows are never reused)."""
    request = {**request, "output": "out.jsonl"}
    parse_request(request)  # fail here, before the phone is touched
    said = stop_leftover(dev)  # never two runners on one phone
    if said:
        log.warning(said)
    req_dpath, out_dpath = device_path(f"{run_rel}/request.json"), device_path(f"{run_rel}/out.jsonl")
    try:
        dev.sync.push(json.dumps(request).encode(), req_dpath, mode=0o644)
    except (adbutils.AdbError, OSError) as err:
        raise DeviceLost(f"device {dev.serial}: could not push the request ({err})") from None
    v2 = "shell_v2" in (dev.get_features() or "")
    source = f"{dev.serial}:{out_dpath}"
    run = PhoneRun(source)

    def kept(r: PhoneRun) -> str:
        if resumable:
            return f"{len(r.finished)} finished window(s) in {store.dir}"
        lost = (f"{len(r.of('measure'))} measure line(s)" if request["mode"] == "calibrate" else
                f"{len(r.finished)} finished window(s) of its native {request['scheme']['name']} run")
        return f"nothing: a calibration cannot resume (its {lost} are discarded)"

    def again() -> str:
        return ("rerun the same command to calibrate again from the start" if not resumable else
                "rerun the same command to resume: the finished window(s) are skipped")

    def failed(what: str, r: PhoneRun, cls: type[RunFailed] = RunFailed, fix: str = "") -> RunFailed:
        return cls(what, r, kept=kept(r), fix=f"{fix}, then {again()}" if fix else again())


    spans: dict[Key, tuple] = {}
    group: list[str] = []
    n = 0
    t_prev = time.time()
    deadline = time.monotonic() + timeout_s
    stream = _Stream(dev, [*runner, "--request", req_dpath, "--pid-file", pid_file()], v2)
    try:
        for data in stream.chunks(idle_timeout_s):
            stream.buf += data
            while b"\n" in stream.buf:
                raw, _, rest = bytes(stream.buf).partition(b"\n")
                stream.buf = bytearray(rest)
                n += 1
                obj = validate_line(raw, n, source)
                run.add(obj, f"{source} line {n}")
                text = raw.decode()
                if obj["type"] == "header":
                    store.save_header(text)
                elif obj["type"] in ("round", "stage", "publication"):
                    group.append(text)
                elif obj["type"] == "window":
                    key = (obj["window_id"], obj["repetition"])
                    store.save(key, [*group, text])
                    group = []
                    now = time.time()
                    spans[key] = (t_prev, now)
                    t_prev = now
                if on_line is not None:
                    on_line(obj)
            if time.monotonic() > deadline:
                raise failed(f"device {dev.serial}: the runner took longer than phone.timeout_s = {timeout_s:.0f} s; "
                             "stopped it", run, fix="raise phone.timeout_s if the run needs longer")
    except ProtocolError as err:  # the same runner would break the protocol again: say what to fix first
        raise failed(f"device {dev.serial}: {err}", run,
                     fix="the runner wrote a line outside phone_runner/PROTOCOL.md (a library printing on "
                         "stdout, or a runner built from another protocol version): rebuild or fix the "
                         "runner") from None
    except (TimeoutError, adbutils.AdbTimeout):
        raise failed(f"device {dev.serial}: no runner output for phone.idle_timeout_s = {idle_timeout_s:.0f} s; "
                     "stopped it", run, fix="raise phone.idle_timeout_s for slow models") from None
    except (EOFError, ConnectionError, OSError) as err:
        raise failed(f"device {dev.serial} went away mid-run ({type(err).__name__}: {err})", run, DeviceLost,
                     fix="plug the phone in again (`adb devices` lists it as device)") from None
    finally:
        stream.close()
    if stream.buf.strip():
        status = f"the runner exited with status {stream.exit_code}" if stream.exit_code is not None else \
            "the runner's stream ended"
        raise failed(f"{source} line {n + 1}: {status} in the middle of a line {bytes(stream.buf)[:80]!r} "
                     f"(stderr: {_tail(stream)})", run, fix="see the runner's stderr above")
    if run.error is not None:
        msg, code = run.error["message"], run.error["code"]
        where = f" in window {run.error['window_id']!r}" if run.error.get("window_id") else ""
        what = f"device {dev.serial}: runner error {code}{where}: {msg}"
        if code == "exactness":  # a rerun repeats it: no "then rerun" after its fix
            raise RunFailed(what, run, kept=kept(run), fix=EXACTNESS_FIX)
        raise failed(what, run, fix=error_fix(code, msg))
    if run.summary is None:
        if v2 and stream.exit_code is not None:
            raise failed(f"device {dev.serial}: the runner exited with status {stream.exit_code} and no summary "
                         f"(stderr: {_tail(stream)})", run)
        raise failed(f"device {dev.serial}: the runner's stream ended without a summary (phone unplugged?)", run,
                     DeviceLost, fix="plug the phone in again (`adb devices` lists it as device)")
    pulled = pull_text(dev, out_dpath)
    check = read_lines(pulled.splitlines(), f"{source} (pulled)")
    if len(check.of("window")) != len(run.of("window")) or check.summary != run.summary:
        raise RunFailed(f"{source}: the pulled file disagrees with the streamed output", run)
    atomic_write_bytes(local_out, pulled.encode())
    return run, spans


EXACTNESS_FIX = ("the runner's output left the target's greedy output (C.4): a runner or engine fault, not a "
                 "setting, and a rerun repeats it; keep the raw lines for the report and run "
                 "`pytest tests/phone_runner` against this runner build")


def error_fix(code: str, message: str) -> str:
    """What to change before a rerun, for a runner ``error`` line (PROTOCOL.md); "" when a plain rerun
    is the fix (an ``internal`` fault with no cause the host recognizes)."""
    if "No space left" in message:
        return "free space on the phone (`adb shell df /data/local/tmp`)"
    if "Read-only" in message or "Permission" in message:
        return "make /data/local/tmp/as2d writable on the phone"
    return {
        "bad_request": "fix the request field it names",
        "width_not_priced": ("price that width: calibrate this phone over it (experiment=calibrate_phone sweeps "
                             "K1-K16), or choose a method.budget its device profile prices"),
        "missing_file": "correct the path it names (phone.models.<role> is pushed as models/<folder>/)",
        "unsupported_backend": ("choose a phone.engine.kind and model backend this runner supports (its message "
                                "names the one it lacks)"),
    }.get(code, "")


def _tail(stream: _Stream) -> str:
    tail = bytes(stream.stderr).decode(errors="replace").strip().splitlines()[-3:]
    return " | ".join(tail) or "none"


def pull_text(dev: adbutils.AdbDevice, dpath: str) -> str:
    """A device file's text; a missing file is an error (never an empty folder on the host)."""
    if not dev.sync.exists(dpath):
        raise RunFailed(f"device {dev.serial}: {dpath} does not exist (the runner wrote no output)")
    return dev.sync.read_bytes(dpath).decode("utf-8")
