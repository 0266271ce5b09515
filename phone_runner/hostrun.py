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
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import adbutils

from workbench.io import atomic_write_bytes, atomic_write_text

from .adb import PhoneError
from .deploy import device_path
from .leftover import pid_file, stop_leftover
from .protocol import ProtocolError, parse_request, validate_line
from .records import Key, PhoneRun, read_lines
from .shell_stream import ShellStream

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


@dataclass(frozen=True)
class _Retry:
    """How a failed run is worded: what it kept and what to do next. A ``native_phone`` run resumes
    from the kept windows; a calibration (``resumable`` False) always starts again."""

    store: WindowStore
    resumable: bool
    request: dict[str, Any]

    def kept(self, run: PhoneRun) -> str:
        if self.resumable:
            return f"{len(run.finished)} finished window(s) in {self.store.dir}"
        lost = (f"{len(run.of('measure'))} measure line(s)" if self.request["mode"] == "calibrate" else
                f"{len(run.finished)} finished window(s) of its native {self.request['scheme']['name']} run")
        return f"nothing: a calibration cannot resume (its {lost} are discarded)"

    def again(self) -> str:
        return ("rerun the same command to calibrate again from the start" if not self.resumable else
                "rerun the same command to resume: the finished window(s) are skipped")

    def failed(self, what: str, run: PhoneRun, cls: type[RunFailed] = RunFailed, fix: str = "") -> RunFailed:
        return cls(what, run, kept=self.kept(run), fix=f"{fix}, then {self.again()}" if fix else self.again())


@dataclass
class _Lines:
    """The streamed lines of one run: each validated as it arrives (its line number named), added to
    ``run``, and every finished window repetition persisted at once with its span on the host clock."""

    run: PhoneRun
    store: WindowStore
    on_line: Callable[[dict[str, Any]], None] | None
    count: int = 0
    spans: dict[Key, tuple] = field(default_factory=dict)
    group: list[str] = field(default_factory=list)  # the open window's round, stage and publication lines
    t_prev: float = field(default_factory=time.time)

    def take(self, raw: bytes) -> None:
        self.count += 1
        source = self.run.source
        obj = validate_line(raw, self.count, source)
        self.run.add(obj, f"{source} line {self.count}")
        text = raw.decode()
        if obj["type"] == "header":
            self.store.save_header(text)
        elif obj["type"] in ("round", "stage", "publication"):
            self.group.append(text)
        elif obj["type"] == "window":
            key = (obj["window_id"], obj["repetition"])
            self.store.save(key, [*self.group, text])
            self.group = []
            now = time.time()
            self.spans[key] = (self.t_prev, now)
            self.t_prev = now
        if self.on_line is not None:
            self.on_line(obj)


@dataclass(frozen=True)
class _Paths:
    """The run's files on the phone (``device_path``: under the device root only)."""

    request: str
    output: str


def run_request(dev: adbutils.AdbDevice, request: dict[str, Any], *, runner: Sequence[str], run_rel: str,
                store: WindowStore, local_out: Path, timeout_s: float = 3600.0, idle_timeout_s: float = 300.0,
                on_line: Callable[[dict[str, Any]], None] | None = None, resumable: bool = True
                ) -> tuple[PhoneRun, dict[Key, tuple]]:
    """Run ``request`` (windows already resumed by the caller) and return the validated run and
    the wall-clock span of every finished window repetition. ``resumable``: whether a rerun continues
    from the kept windows (``native_phone``) or must start again (every run of ``calibrate_phone``: its
    measure lines and its native runs' windows are never reused)."""
    request = {**request, "output": "out.jsonl"}
    paths = _push_request(dev, request, run_rel)
    v2 = "shell_v2" in (dev.get_features() or "")
    source = f"{dev.serial}:{paths.output}"
    retry = _Retry(store, resumable, request)
    lines = _Lines(PhoneRun(source), store, on_line)
    argv = [*runner, "--request", paths.request, "--pid-file", pid_file()]
    stream = _stream(dev, argv, v2, lines, retry, timeout_s, idle_timeout_s)
    _check_outcome(dev.serial, stream, lines, retry)
    _keep_output(dev, paths.output, lines.run, local_out)
    return lines.run, lines.spans


def _push_request(dev: adbutils.AdbDevice, request: dict[str, Any], run_rel: str) -> _Paths:
    """Validate ``request`` before the phone is touched, stop a leftover runner (never two runners on
    one phone, PROTOCOL.md Invocation), then push it."""
    parse_request(request)
    said = stop_leftover(dev)
    if said:
        log.warning(said)
    paths = _Paths(device_path(f"{run_rel}/request.json"), device_path(f"{run_rel}/out.jsonl"))
    try:
        dev.sync.push(json.dumps(request).encode(), paths.request, mode=0o644)
    except (adbutils.AdbError, OSError) as err:
        raise DeviceLost(f"device {dev.serial}: could not push the request ({err})") from None
    return paths


def _stream(dev: adbutils.AdbDevice, argv: list[str], v2: bool, lines: _Lines, retry: _Retry, timeout_s: float,
            idle_timeout_s: float) -> ShellStream:
    """Run the runner and take its lines until its stream ends; a fault is worded as ``RunFailed``
    with what was kept. The stream is closed either way, which stops the runner on the phone."""
    run = lines.run
    deadline = time.monotonic() + timeout_s
    stream = ShellStream(dev, argv, v2)
    try:
        for batch in stream.lines(idle_timeout_s):
            for raw in batch:
                lines.take(raw)
            if time.monotonic() > deadline:
                raise retry.failed(f"device {dev.serial}: the runner took longer than phone.timeout_s = "
                                   f"{timeout_s:.0f} s; stopped it", run,
                                   fix="raise phone.timeout_s if the run needs longer")
    except ProtocolError as err:  # the same runner would break the protocol again: say what to fix first
        raise retry.failed(f"device {dev.serial}: {err}", run,
                           fix="the runner wrote a line outside phone_runner/PROTOCOL.md (a library printing on "
                               "stdout, or a runner built from another protocol version): rebuild or fix the "
                               "runner") from None
    except (TimeoutError, adbutils.AdbTimeout):
        raise retry.failed(f"device {dev.serial}: no runner output for phone.idle_timeout_s = "
                           f"{idle_timeout_s:.0f} s; stopped it", run,
                           fix="raise phone.idle_timeout_s for slow models") from None
    except (EOFError, ConnectionError, OSError) as err:
        raise retry.failed(f"device {dev.serial} went away mid-run ({type(err).__name__}: {err})", run, DeviceLost,
                           fix=PLUG_IN_FIX) from None
    finally:
        stream.close()
    return stream


def _check_outcome(serial: str, stream: ShellStream, lines: _Lines, retry: _Retry) -> None:
    """A finished stream must end on a whole line, and the run on a ``summary`` line (PROTOCOL.md,
    Invocation); a runner ``error`` line is reported with what to change before a rerun."""
    run, source = lines.run, lines.run.source
    if stream.buf.strip():
        status = f"the runner exited with status {stream.exit_code}" if stream.exit_code is not None else \
            "the runner's stream ended"
        raise retry.failed(f"{source} line {lines.count + 1}: {status} in the middle of a line "
                           f"{bytes(stream.buf)[:80]!r} (stderr: {stream.stderr_tail()})", run,
                           fix="see the runner's stderr above")
    if run.error is not None:
        msg, code = run.error["message"], run.error["code"]
        where = f" in window {run.error['window_id']!r}" if run.error.get("window_id") else ""
        what = f"device {serial}: runner error {code}{where}: {msg}"
        if code == "exactness":  # a rerun repeats it: no "then rerun" after its fix
            raise RunFailed(what, run, kept=retry.kept(run), fix=EXACTNESS_FIX)
        raise retry.failed(what, run, fix=error_fix(code, msg))
    if run.summary is None:
        if stream.v2 and stream.exit_code is not None:
            raise retry.failed(f"device {serial}: the runner exited with status {stream.exit_code} and no summary "
                               f"(stderr: {stream.stderr_tail()})", run)
        raise retry.failed(f"device {serial}: the runner's stream ended without a summary (phone unplugged?)", run,
                           DeviceLost, fix=PLUG_IN_FIX)


def _keep_output(dev: adbutils.AdbDevice, out_dpath: str, run: PhoneRun, local_out: Path) -> None:
    """Pull the runner's output file, which must hold the streamed windows and summary, to ``local_out``."""
    pulled = pull_text(dev, out_dpath)
    check = read_lines(pulled.splitlines(), f"{run.source} (pulled)")
    if len(check.of("window")) != len(run.of("window")) or check.summary != run.summary:
        raise RunFailed(f"{run.source}: the pulled file disagrees with the streamed output", run)
    atomic_write_bytes(local_out, pulled.encode())


PLUG_IN_FIX = "plug the phone in again (`adb devices` lists it as device)"
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


def pull_text(dev: adbutils.AdbDevice, dpath: str) -> str:
    """A device file's text; a missing file is an error (never an empty folder on the host)."""
    if not dev.sync.exists(dpath):
        raise RunFailed(f"device {dev.serial}: {dpath} does not exist (the runner wrote no output)")
    return dev.sync.read_bytes(dpath).decode("utf-8")
