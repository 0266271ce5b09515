"""The torch and MNN engines of the Python on-device runner: the workbench's native driver, real weights.

``models.target.name`` names a ``conf/model`` pair (``dir`` optionally points at local weights);
the producer runs in its own process beside the verifier, as on the host (``workbench.native``).
``engine.kind: mnn`` runs the same pair on MNN (``workbench.models.mnn``; threads and precision
from ``models.target``).
Windows carry audio (``.npy`` float32 16 kHz, or a sound file). Each measured run becomes round,
stage and publication lines; publications are the producer's batches with their publish times.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .protocol import Request
from .runtime import RunnerFailure, resolve


def _audio(base: Path, entry: dict[str, Any], max_seconds: float | None = 30.0) -> np.ndarray:
    """The window's samples; ``max_seconds`` is the target's own audio limit (Whisper 30 s, Qwen longer)."""
    path = resolve(base, entry.get("audio") or entry.get("features"))
    if path is None or not path.is_file():
        raise RunnerFailure("missing_file", f"window {entry['window_id']!r}: audio {path} does not exist",
                            entry["window_id"])
    if path.suffix == ".npy":
        return np.load(path, allow_pickle=False).astype(np.float32)
    from workbench.data.audio import load_audio

    return load_audio(path, max_seconds=max_seconds)


def model_config(req: Request, base: Path) -> dict[str, Any]:
    from workbench.models.registry import load_model_config

    spec = req.models["target"]
    if spec.backend != "cpu":
        raise RunnerFailure("unsupported_backend", f"models.target.backend {spec.backend!r}: the Python runner "
                            "runs models on cpu only (the C++ runner serves opencl)", status=2)
    try:
        cfg = load_model_config(spec.name)
    except (FileNotFoundError, KeyError, ValueError) as err:
        raise RunnerFailure("missing_file", f"models.target.name {spec.name!r}: {err}", status=2) from None
    for role, block in (("target", "target"), ("producer", "drafter"), ("drafter", "serial_drafter")):
        m = req.models.get(role)
        if m is not None and m.dir and block in cfg:
            cfg[block]["local_path"] = str(resolve(base, m.dir))
    cfg["engine"] = req.engine["kind"]
    if cfg["engine"] == "mnn":
        mnn = dict(cfg.get("mnn") or {})
        mnn.update(threads=spec.threads, backend="cpu")
        if spec.precision in ("low", "normal", "high"):
            mnn["precision"] = spec.precision
        cfg["mnn"] = mnn
    if "drafter" in cfg and req.producer.get("batch_tokens"):
        cfg["drafter"]["batch_tokens"] = int(req.producer["batch_tokens"])
    return cfg


def placement(req: Request, role: str) -> Any:
    from workbench.native.producer import Placement

    m = req.models.get(role)
    return None if m is None else Placement(m.threads, tuple(m.cpus) or None)


def emit_trajectory(out: Any, common: dict[str, Any], req: Any, r: Any) -> None:
    """One run's round, stage and publication lines (shared by the window and on-demand modes)."""
    for rec in r.records:
        out("round", **common, config=req.config, **rec.as_row())
    for resource, stage, start, end, rnd in r.stages:
        out("stage", **common, resource=resource, stage=stage, start=start, end=max(start, end), round=rnd)
    for offset, t, toks in _publications(r):
        out("publication", **common, source_id=req.scheme.get("source") or "producer",
            producer_id="p0", offset=offset, publish_time=t, tokens=toks, confidences=None)


def _publications(run: Any) -> list[tuple[int, float, list[int]]]:
    """(offset, publish time, tokens) per batch: consecutive tokens published at one time."""
    out: list[tuple[int, float, list[int]]] = []
    for i, (tok, t) in enumerate(zip(run.producer_tokens, run.producer_times, strict=True)):
        if out and out[-1][1] == t:
            out[-1][2].append(int(tok))
        else:
            out.append((i, float(t), [int(tok)]))
    return out


def run_torch(req: Request, base: Path, out: Any) -> dict[str, float]:
    from workbench.decoding import scheme_spec
    from workbench.native.driver import NativeHost
    from workbench.native.episodes import host_setup, run_scheme
    from workbench.native.windows import AudioWindow

    name = req.scheme["name"]
    try:
        setup = host_setup(model_config(req, base), overrides={name: req.settings},
                           verifier=placement(req, "target"), producer=placement(req, "producer"))
    except ValueError as err:  # PairError / MissingWeightsError / EngineConfigError: one line, before any run
        code = "unsupported_backend" if "engine" in str(err) or "mnn" in str(err) else "missing_file"
        raise RunnerFailure(code, str(err), status=2) from None
    decoupled = scheme_spec(name).decoupled
    totals = {"rounds": 0, "tokens": 0, "time": 0.0}
    with NativeHost(setup.producer if decoupled else None, setup.verifier) as host:
        for entry in req.windows:
            wid = entry["window_id"]
            aw = AudioWindow(wid, (), _audio(base, entry, setup.pair.max_audio_seconds))
            for rep in range(-req.warmups, req.repetitions):
                r = run_scheme(host, setup, aw, name)
                if rep < 0:
                    continue
                common = {"window_id": wid, "repetition": rep}
                emit_trajectory(out, common, req, r)
                out("window", **common, config=req.config, scheme=name, tokens=len(r.output), time=r.time,
                    t_eos=r.t_eos, cleanup=r.cleanup, rounds=len(r.records), output=[int(x) for x in r.output])
                totals["rounds"] += len(r.records)
                totals["tokens"] += len(r.output)
                totals["time"] += r.time
    return totals


def calibrate_torch(req: Request, base: Path, out: Any) -> None:
    """Calibrate mode with real weights (D.2): time target forwards at each width K and prefix
    offset, idle and with the producer generating beside it, and the producer's service per token, alone
    and beside the verify sweep (their ratio is the source's measured ``concurrent_factor``).
    Every ``measure`` line is one timed forward (``time.perf_counter``); nothing is copied from
    ``pricing``. What this engine does not time (serial drafter, ASP extras, chunk sources) is absent,
    so the host's fit takes it from its base profile under a stated ``derived:`` rule."""
    from workbench.native.episodes import host_setup
    from workbench.native.sweep import ProducerLoad, verify_sweep
    from workbench.native.windows import AudioWindow

    plan = req.calibrate or {}
    if not req.windows:
        raise RunnerFailure("bad_request", "calibrate mode with a real engine needs one audio window to run the "
                            "model on (windows[0])", status=2)
    try:
        setup = host_setup(model_config(req, base), verifier=placement(req, "target"),
                           producer=placement(req, "producer"))
    except ValueError as err:
        raise RunnerFailure("missing_file", str(err), status=2) from None
    setup.verifier.apply()  # the target's threads and cores, as in a run (models.target)
    entry = req.windows[0]
    aw = AudioWindow(entry["window_id"], (), _audio(base, entry, setup.pair.max_audio_seconds))
    widths, offsets = [int(k) for k in plan["widths"]], [int(o) for o in plan["offsets"]]
    reps, warm = int(plan["reps"]), int(plan["warmups"])
    source = req.producer.get("source") or setup.source
    producer = setup.producer
    if producer is None and (any(plan["with_producer"]) or (source is not None and plan.get("producer_forward", True))):
        raise RunnerFailure("bad_request", "calibrate mode times the producer beside the verifier, but the request "
                            "names no producer model (models.producer)", status=2)

    def emit(rows: list[dict[str, Any]], concurrent: bool) -> None:
        for r in rows:
            out("measure", op="verify", width=int(r["width"]), offset=int(r["offset"]), concurrent=concurrent,
                source=None, repetition=int(r["rep"]), ms=float(r["ms"]))

    for concurrent in plan["with_producer"]:
        if not concurrent:
            emit(verify_sweep(setup.pair, aw, widths, reps, warm, concurrent=False, offsets=offsets), False)
            continue
        assert producer is not None  # checked above, before any forward
        with ProducerLoad(producer, aw.audio, setup.max_output) as load:
            load.passes(None)  # back to back until the sweep is done (coexistence, D.2.1)
            rows = verify_sweep(setup.pair, aw, widths, reps, warm, concurrent=True, offsets=offsets)
            beside = load.end_load()
        emit(rows, True)
        if source is not None and plan.get("producer_forward", True):  # its service beside the verifier
            for rep, (n, seconds) in enumerate(beside):
                if n:
                    out("measure", op="producer_forward", width=None, offset=None, concurrent=True, source=source,
                        repetition=rep, ms=1000.0 * seconds / n)
    if source is not None and plan.get("producer_forward", True):
        assert producer is not None  # checked above, before any forward
        with ProducerLoad(producer, aw.audio, setup.max_output) as load:
            passes, _ = load.passes(warm + reps)
        for rep, (n, seconds) in enumerate(passes[warm:]):
            if n:
                out("measure", op="producer_forward", width=None, offset=None, concurrent=False, source=source,
                    repetition=rep, ms=1000.0 * seconds / n)
