"""The on-device runner in Python: ``python -m phone_runner.device --request REQ [--output OUT]``.

It speaks protocol v1 (``PROTOCOL.md``) for any adb device that has Python (Termux, Linux boards)
and for the loopback device. Engines:

* ``reference`` -- the workbench replay engine on the window's greedy reference and producer
  trajectory, priced by the request's ``pricing``; ``clock: virtual`` emits at once, ``clock:
  real`` paces every line to its priced time (threads are not needed: the clock is the model);
* ``torch`` / ``mnn`` -- the workbench's native driver with real weights (``phone_runner.native_engine``).

Lines go to stdout and to the output file, each written whole and flushed, so a killed runner
leaves a valid prefix. Exit 0 on success, 2 on a bad request, 1 on a failure during the run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from .protocol import ProtocolError, Request, parse_request
from .reference_lines import calibrate_reference, run_reference
from .runner_output import Out, WriteFailed
from .runtime import RunnerFailure, resolve

RUNNER = {"name": "phone_runner.device", "version": "1", "language": "python"}
__all__ = ["RUNNER", "Out", "WriteFailed", "calibrate_reference", "main", "run_reference"]


def _device_facts() -> dict[str, Any]:
    return {"machine": platform.machine(), "system": platform.system(), "cores": os.cpu_count(),
            "python": platform.python_version()}


def _protocol_stdout() -> TextIO:
    """The protocol's own copy of stdout; fd 1 then points at stderr, so whatever a native
    library prints (MNN announces CPU features on stdout) cannot corrupt the JSONL stream."""
    sys.stdout.flush()
    proto = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)
    return proto


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m phone_runner.device", description=__doc__.splitlines()[0])
    ap.add_argument("--request", required=True, help="request JSON (protocol v1)")
    ap.add_argument("--output", default=None, help="JSONL file (default: the request's 'output')")
    ap.add_argument("--pid-file", default=None, help="write this process's id here (the host stops a leftover runner)")
    return ap.parse_args(argv)


def _write_pid_file(path: Path) -> None:
    """``<pid> <runner name>``, written atomically (PROTOCOL.md, Invocation: ``--pid-file``)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(f"{os.getpid()} phone_runner.device\n")
    os.replace(tmp, path)


def _remove_pid_file(path: Path | None) -> None:
    """Remove the pid file on exit, unless another runner has written its own there since."""
    if path is not None and path.exists() and path.read_text().split()[:1] == [str(os.getpid())]:
        path.unlink()


def _read_request(req_path: Path) -> Request:
    """The parsed request; any fault in it is a ``bad_request`` (or ``missing_file``) with exit status 2."""
    try:
        raw = json.loads(req_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RunnerFailure("missing_file", f"request {req_path} does not exist", status=2) from None
    except json.JSONDecodeError as err:
        raise RunnerFailure("bad_request", f"request {req_path}: not valid JSON ({err})", status=2) from None
    try:
        return parse_request(raw)
    except ProtocolError as err:
        raise RunnerFailure("bad_request", str(err), status=2) from None
    except (TypeError, AttributeError, KeyError, ValueError) as err:  # a shape parse_request did not foresee
        raise RunnerFailure("bad_request", f"request {req_path}: malformed ({type(err).__name__}: {err})",
                            status=2) from None


def _open_output(base: Path, output: str, proto: TextIO) -> Out:
    """An output file that cannot be opened is ``missing_file``, exit status 2 (PROTOCOL.md, Invocation)."""
    try:
        return Out(resolve(base, output), proto)
    except OSError as err:
        raise RunnerFailure("missing_file", f"output {output}: cannot write ({err.strerror or err})",
                            status=2) from None


def _run_engine(req: Request, base: Path, out: Out) -> dict[str, float]:
    """The request's engine and mode; returns the summary's totals (all zero for a calibration)."""
    no_totals = {"rounds": 0, "tokens": 0, "time": 0.0}
    if req.engine["kind"] == "reference":
        if req.mode == "calibrate":
            calibrate_reference(req, out)
            return no_totals
        return run_reference(req, out)
    if req.engine["kind"] in ("torch", "mnn"):
        from .native_engine import calibrate_torch, run_torch

        if req.mode == "calibrate":
            calibrate_torch(req, base, out)
            return no_totals
        if req.mode == "ondemand":  # on-demand (Section 5.4): request-time prefill + decode, request lines
            from .ondemand import run_ondemand_native

            return run_ondemand_native(req, base, out)
        return run_torch(req, base, out)
    raise RunnerFailure("unsupported_backend", f"engine {req.engine['kind']!r} is not available in the "
                        "Python runner", status=2)


def main(argv: Sequence[str] | None = None) -> int:
    """Exit status 0 done (last line ``summary``), 2 bad request, 1 a failure during the run; a failed
    run's last line is its ``error`` (PROTOCOL.md, Invocation)."""
    args = _parse_args(argv)
    pid_file = Path(args.pid_file) if args.pid_file else None
    if pid_file is not None:
        _write_pid_file(pid_file)
    started = time.time()
    req_path = Path(args.request)
    proto = _protocol_stdout()
    out = Out(None, proto)
    try:
        req = _read_request(req_path)
        out = _open_output(req_path.parent, args.output or req.output, proto)
        out("header", run_id=req.run_id, runner=RUNNER, mode=req.mode, engine=req.engine, scheme=req.scheme,
            device=_device_facts(), started_unix=started)
        totals = _run_engine(req, req_path.parent, out)
        out("summary", windows=out.count.get("window", 0), rounds=int(totals["rounds"]), tokens=int(totals["tokens"]),
            time=float(totals["time"]), wall_s=time.time() - started)
        return 0
    except WriteFailed as err:  # host gone: the reason goes to the file; file failed: to stdout
        out.last("error", not err.to_stdout, err.to_stdout, code="internal", message=str(err), window_id=None)
        return 1
    except RunnerFailure as err:
        out.last("error", True, True, code=err.code, message=str(err), window_id=err.window_id)
        return err.status
    except Exception as err:  # noqa: BLE001 - the protocol's last line names any failure
        out.last("error", True, True, code="internal", message=f"{type(err).__name__}: {err}", window_id=None)
        return 1
    finally:
        out.close()
        _remove_pid_file(pid_file)


if __name__ == "__main__":
    sys.exit(main())
