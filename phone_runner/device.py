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

from .protocol import ProtocolError, Request, line, parse_request, profile_from_pricing, window_from_payload
from .runtime import RunnerFailure, resolve

RUNNER = {"name": "phone_runner.device", "version": "1", "language": "python"}


class WriteFailed(Exception):
    """A line that could not be written whole: the run ends (PROTOCOL.md). ``to_stdout``: the host's
    stream is gone (broken pipe, host lost); otherwise the output file failed (full disk, read-only)."""

    def __init__(self, message: str, to_stdout: bool) -> None:
        super().__init__(message)
        self.to_stdout = to_stdout


class Out:
    """Every line to stdout and to the output file, whole and flushed; a failed write is fatal."""

    def __init__(self, path: Path | None, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stdout
        self.file: TextIO | None = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.file = open(path, "w", encoding="utf-8")  # noqa: SIM115
        self.count: dict[str, int] = {}

    def __call__(self, kind: str, **fields: Any) -> None:
        text = line(kind, **fields) + "\n"
        for stream, name in ((self.stream, "stdout"), (self.file, "output file")):
            if stream is None:
                continue
            try:
                stream.write(text)
                stream.flush()
            except OSError as err:
                raise WriteFailed(f"{name}: write failed ({err.strerror or err})", stream is self.stream) from None
        self.count[kind] = self.count.get(kind, 0) + 1

    def last(self, kind: str, to_stdout: bool, to_file: bool, **fields: Any) -> None:
        """The closing line of a failed run, to whichever stream still takes it."""
        text = line(kind, **fields) + "\n"
        for stream, ok in ((self.stream, to_stdout), (self.file, to_file)):
            if stream is not None and ok:
                try:
                    stream.write(text)
                    stream.flush()
                except OSError:
                    pass  # nothing left to report to; the exit status says it

    def close(self) -> None:
        if self.file is not None:
            try:
                self.file.close()
            except OSError:
                pass


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


def run_reference(req: Request, out: Out) -> dict[str, float]:
    from workbench.decoding import ExactnessError
    from workbench.replay.audit import ReplayAuditError
    from workbench.replay.profile import MissingWidthError

    from .reference import priced_profile, replay_config, run_window

    assert req.pricing is not None
    profile = priced_profile(req.pricing)
    cfg = replay_config(req.scheme)
    real = req.engine.get("clock") == "real"
    drain = req.engine.get("drain", "boundary")
    totals = {"rounds": 0, "tokens": 0, "time": 0.0}
    for entry in req.windows:
        wid = entry["window_id"]
        window = window_from_payload({**entry, "max_output": entry.get("max_output") or req.max_output})
        for rep in range(-req.warmups, req.repetitions):
            try:
                result, buffer = run_window(window, cfg, profile, drain)
            except MissingWidthError as err:
                raise RunnerFailure("width_not_priced", str(err), wid) from None
            except (ExactnessError, ReplayAuditError) as err:
                raise RunnerFailure("exactness", str(err), wid) from None
            if rep < 0:
                continue  # warm-ups print nothing
            t0 = time.perf_counter()

            def pace(t: float, _t0: float = t0) -> float:
                """Wait until priced time ``t``; returns the time the clock really shows (real clock)."""
                if not real:
                    return t
                delay = _t0 + t - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                return time.perf_counter() - _t0

            common = {"window_id": wid, "repetition": rep}
            # cleanup: producer time after target EOS beyond the charged boundary, as the C++ runner
            p_stop = max((end for res, _, _, end, _ in result.stages if res == "producer"), default=0.0)
            # a static plan's buffer also holds batches the stopped producer never reached
            pubs = [b for b in buffer or () if b.publish_time <= p_stop]
            pi = 0
            for rec in result.records:
                while pi < len(pubs) and pubs[pi].publish_time <= rec.t_end:
                    b = pubs[pi]
                    pace(b.publish_time)
                    out("publication", **common, source_id=b.source_id, producer_id=b.producer_id, offset=b.offset,
                        publish_time=b.publish_time, tokens=list(b.tokens),
                        confidences=None if b.confidences is None else list(b.confidences))
                    pi += 1
                pace(rec.t_end)
                row = rec.as_row()
                out("round", **common, config=cfg.label, **row)
            for b in pubs[pi:]:
                pace(b.publish_time)
                out("publication", **common, source_id=b.source_id, producer_id=b.producer_id, offset=b.offset,
                    publish_time=b.publish_time, tokens=list(b.tokens),
                    confidences=None if b.confidences is None else list(b.confidences))
            for resource, stage, start, end, rnd in result.stages:
                out("stage", **common, resource=resource, stage=stage, start=start, end=end, round=rnd)
            # real clock: the window's time is what the clock showed when its priced end was reached
            # (sleep overshoot and line writing included), not the priced value itself
            elapsed = pace(result.time)
            output = [int(t) for t in result.output]  # root first, even a window prefill already ended
            out("window", **common, config=cfg.label, scheme=cfg.scheme, tokens=result.tokens, time=elapsed,
                t_eos=result.t_eos, cleanup=max(0.0, p_stop - result.t_eos), rounds=len(result.untimed),
                output=output)
            totals["rounds"] += len(result.untimed)
            totals["tokens"] += result.tokens
            totals["time"] += result.time
    return totals


def calibrate_reference(req: Request, out: Out) -> None:
    """Reference calibration: the priced costs, as ``measure`` lines (what a phone would measure)."""
    from workbench.replay.profile import MissingWidthError

    assert req.pricing is not None and req.calibrate is not None
    profile = profile_from_pricing(req.pricing)
    plan = req.calibrate
    reps = int(plan.get("reps", 5))
    for conc in plan.get("with_producer", [False, True]):
        for offset in plan.get("offsets", [0]):
            for k in plan.get("widths", range(1, 17)):
                try:
                    ms = profile.verify_ms(k, bool(conc))
                except MissingWidthError as err:
                    raise RunnerFailure("width_not_priced", str(err)) from None
                for rep in range(reps):
                    out("measure", op="verify", width=k, offset=offset, concurrent=bool(conc), source=None,
                        repetition=rep, ms=ms)
    for rep in range(reps):
        out("measure", op="target_step", width=1, offset=None, concurrent=False, source=None, repetition=rep,
            ms=profile.target_step_ms)
        if plan.get("draft_forward", True):
            out("measure", op="draft_forward", width=1, offset=None, concurrent=False,
                source=profile.serial_drafter, repetition=rep, ms=profile.source(profile.serial_drafter).op_ms)
        if plan.get("asp", True) and profile.asp is not None:
            out("measure", op="asp_paired", width=None, offset=None, concurrent=False, source=None, repetition=rep,
                ms=profile.asp.paired_branch_ms)
            out("measure", op="asp_prob_row", width=None, offset=None, concurrent=False, source=None,
                repetition=rep, ms=profile.asp.prob_row_ms)
            for k, ms in profile.asp.kv_refresh_ms.items():
                out("measure", op="asp_refresh", width=k, offset=None, concurrent=False, source=None,
                    repetition=rep, ms=ms)
        for name, s in profile.sources.items():
            op = "chunk_service" if s.kind == "chunk" else "producer_forward"
            out("measure", op=op, width=None, offset=None, concurrent=False, source=name, repetition=rep, ms=s.op_ms)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m phone_runner.device", description=__doc__.splitlines()[0])
    ap.add_argument("--request", required=True, help="request JSON (protocol v1)")
    ap.add_argument("--output", default=None, help="JSONL file (default: the request's 'output')")
    ap.add_argument("--pid-file", default=None, help="write this process's id here (the host stops a leftover runner)")
    args = ap.parse_args(argv)
    pid_file = Path(args.pid_file) if args.pid_file else None
    if pid_file is not None:
        tmp = pid_file.with_name(pid_file.name + ".tmp")
        tmp.write_text(f"{os.getpid()} phone_runner.device\n")
        os.replace(tmp, pid_file)
    started = time.time()
    req_path = Path(args.request)
    proto = _protocol_stdout()
    out = Out(None, proto)
    try:
        try:
            raw = json.loads(req_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise RunnerFailure("missing_file", f"request {req_path} does not exist", status=2) from None
        except json.JSONDecodeError as err:
            raise RunnerFailure("bad_request", f"request {req_path}: not valid JSON ({err})", status=2) from None
        try:
            req = parse_request(raw)
        except ProtocolError as err:
            raise RunnerFailure("bad_request", str(err), status=2) from None
        except (TypeError, AttributeError, KeyError, ValueError) as err:  # a shape parse_request did not foresee
            raise RunnerFailure("bad_request", f"request {req_path}: malformed ({type(err).__name__}: {err})",
                                status=2) from None
        try:
            out = Out(resolve(req_path.parent, args.output or req.output), proto)
        except OSError as err:
            raise RunnerFailure("missing_file", f"output {args.output or req.output}: cannot write "
                                f"({err.strerror or err})", status=2) from None
        out("header", run_id=req.run_id, runner=RUNNER, mode=req.mode, engine=req.engine, scheme=req.scheme,
            device=_device_facts(), started_unix=started)
        if req.engine["kind"] == "reference":
            if req.mode == "calibrate":
                calibrate_reference(req, out)
                totals = {"rounds": 0, "tokens": 0, "time": 0.0}
            else:
                totals = run_reference(req, out)
        elif req.engine["kind"] in ("torch", "mnn"):
            from .native_engine import calibrate_torch, run_torch

            if req.mode == "calibrate":
                calibrate_torch(req, req_path.parent, out)
                totals = {"rounds": 0, "tokens": 0, "time": 0.0}
            elif req.mode == "ondemand":  # on-demand (Section 5.4): request-time prefill + decode, request lines
                from .ondemand import run_ondemand_native

                totals = run_ondemand_native(req, req_path.parent, out)
            else:
                totals = run_torch(req, req_path.parent, out)
        else:
            raise RunnerFailure("unsupported_backend", f"engine {req.engine['kind']!r} is not available in the "
                                "Python runner", status=2)
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
        if pid_file is not None and pid_file.exists() and pid_file.read_text().split()[:1] == [str(os.getpid())]:
            pid_file.unlink()


if __name__ == "__main__":
    sys.exit(main())
