"""On-demand requests in the phone_runner protocol (Section 5.4, D.6.1; ``PROTOCOL.md``).

A request file in mode ``ondemand`` carries the host's request trace: one window per request, cut
from the trace at its checkpoint (the latest ``window_s`` seconds, capped at the target's audio
limit), and an ``ondemand`` object saying when the audio state is prepared, the request time s_u
of each window and the instruction suffix prefilled at the request. A runner prepares each
window's audio state before the request (``prepare: before_request``; ``at_request`` builds it
inside the timed request, as residual preparation), starts the request clock at s_u, prefills the
instruction suffix, decodes through EOS and writes one ``request`` line with the latency pieces
(they add up to ``latency_s``: consecutive timestamps on one clock) before the ``window`` line.

The host builds the request with :func:`ondemand_request` from a ``workbench.native.ondemand``
``RequestTrace``; :func:`request_windows` reads it back. The Python runner runs it with
:func:`run_ondemand_native` (torch / mnn engine); the C++ runner answers mode ``ondemand`` with a
``bad_request`` error line (it does not implement it yet).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .ondemand_checks import PIECES, PREPARE, SAMPLE_RATE, check_ondemand, check_request_line
from .protocol import DEVICE_ROOT, ModelSpec, parse_request


# ------------------------------------------------------------------------------ host side
def ondemand_request(trace: Any, staging: Path, *, run_id: str, scheme: Mapping[str, Any],
                     models: Mapping[str, Mapping[str, Any]], engine: str = "torch", window_s: float = 60.0,
                     max_audio_s: float | None = None, instruction: str | None = None,
                     prepare: str = "before_request", max_output: int = 224, warmups: int = 1,
                     repetitions: int = 1, batch_tokens: int | None = None, trace_id: str = "demo-600s"
                     ) -> dict[str, Any]:
    """The mode-``ondemand`` request for ``trace`` (a ``RequestTrace``): each checkpoint's window
    is written to ``staging/<window_id>.npy`` (float32 16 kHz), named relative to the request file.
    ``batch_tokens``: the producer's publication batch (None: the model pair's own). Returns the
    request object, already validated."""
    seconds = min(window_s, max_audio_s) if max_audio_s else window_s
    staging = Path(staging)
    staging.mkdir(parents=True, exist_ok=True)
    windows, requests = [], []
    for c in trace.checkpoints:
        w = trace.window(c, seconds)
        name = f"{w.window_id}.npy"
        tmp = staging / f".{name}.{id(w)}.tmp.npy"
        np.save(tmp, np.asarray(w.audio, dtype=np.float32), allow_pickle=False)
        tmp.replace(staging / name)
        windows.append({"window_id": w.window_id, "dataset": trace_id, "audio": name, "features": None,
                        "prompt": None, "max_output": None, "reference": None})
        requests.append({"window_id": w.window_id, "request_s": float(c),
                         "audio_start_s": float(c) - len(w.audio) / SAMPLE_RATE})
    obj = {"v": 1, "run_id": run_id, "mode": "ondemand", "scheme": dict(scheme),
           "engine": {"kind": engine, "clock": "real", "drain": "boundary"},
           "models": {k: {**ModelSpec(**v).__dict__, "cpus": list(v.get("cpus") or ())} for k, v in models.items()},
           "producer": {"source": scheme.get("source") or "producer",
                        **({} if batch_tokens is None else {"batch_tokens": batch_tokens})},
           "windows": windows, "repetitions": repetitions, "warmups": warmups, "max_output": max_output,
           "pricing": None, "calibrate": None, "output": f"{DEVICE_ROOT}/{run_id}.jsonl",
           "ondemand": {"trace_id": trace_id, "trace_s": float(trace.seconds), "window_s": float(seconds),
                        "prepare": prepare, "instruction": instruction, "requests": requests}}
    parse_request(obj)
    return obj


def request_windows(req: Any, base: Path) -> list[tuple[str, float, np.ndarray]]:
    """(window_id, request time s_u, audio) per request of a parsed mode-``ondemand`` request."""
    from .runtime import resolve

    out = []
    for w, r in zip(req.windows, req.ondemand["requests"], strict=True):
        path = resolve(base, w.get("audio"))
        out.append((w["window_id"], float(r["request_s"]), np.load(path, allow_pickle=False).astype(np.float32)))
    return out


# ------------------------------------------------------------------------------ Python runner
def run_ondemand_native(req: Any, base: Path, out: Any) -> dict[str, float]:
    """The Python runner's mode ``ondemand`` (torch / mnn engine): ``workbench.native.ondemand``'s
    request protocol per window; round, stage, publication, request and window lines."""
    from workbench.decoding import scheme_spec
    from workbench.native.driver import NativeHost
    from workbench.native.episodes import host_setup
    from workbench.native.ondemand import RequestTiming, run_request
    from workbench.native.windows import AudioWindow

    from .native_engine import emit_trajectory, model_config, placement
    from .runtime import RunnerFailure

    name, od = req.scheme["name"], req.ondemand
    try:
        setup = host_setup(model_config(req, base), overrides={name: req.settings},
                           verifier=placement(req, "target"), producer=placement(req, "producer"))
    except ValueError as err:
        raise RunnerFailure("missing_file", str(err), status=2) from None
    totals = {"rounds": 0, "tokens": 0, "time": 0.0}
    with NativeHost(setup.producer if scheme_spec(name).decoupled else None, setup.verifier) as host:
        for wid, s_u, audio in request_windows(req, base):
            aw = AudioWindow(wid, (), audio)
            for rep in range(-req.warmups, req.repetitions):
                r, target, _ = run_request(host, setup, aw, name, instruction=od.get("instruction"),
                                           prepare=od["prepare"] == "before_request")
                if rep < 0:
                    continue
                t = RequestTiming.of(target, r)
                common = {"window_id": wid, "repetition": rep}
                emit_trajectory(out, common, req, r)
                out("request", **common, request_s=s_u, prepared_s=target.prepared_s, **t.pieces,
                    latency_s=t.latency_s, ttft_s=t.ttft_s, cleanup_s=t.cleanup_s)
                out("window", **common, config=req.config, scheme=name, tokens=len(r.output), time=r.time,
                    t_eos=r.t_eos, cleanup=r.cleanup, rounds=len(r.records), output=[int(x) for x in r.output])
                totals["rounds"] += len(r.records)
                totals["tokens"] += len(r.output)
                totals["time"] += r.time
    return totals


def request_rows(lines: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The ``request`` lines of a runner's output as rows (host side)."""
    return [{k: v for k, v in x.items() if k not in ("v", "type")} for x in lines if x.get("type") == "request"]


__all__ = ["PIECES", "PREPARE", "check_ondemand", "check_request_line", "ondemand_request",
           "request_rows", "request_windows", "run_ondemand_native"]
