"""One measured phone run of one configuration: conditions -> run -> resume store -> records -> audits.

``PhoneConfig`` is the ``phone:`` block of the Hydra config. ``run_config`` is what the jobs call
for each method: it checks and rests the phone (D.2.3-D.2.4), monitors it at 1 Hz while the
runner streams, keeps every finished window repetition (a rerun resumes the rest), audits the
merged run exactly like replay, and flags (never drops) windows whose conditions were violated.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import adbutils
import polars as pl

from workbench.errors import ConfigError
from workbench.io import atomic_write_text

from .conditions import ConditionPolicy, Conditions, flag_windows, write_series
from .deploy import deploy, device_path
from .hostrun import RunFailed, WindowStore, run_request
from .info import hashed_serial
from .payloads import pricing_from_profile, window_payload
from .protocol import VERSION
from .records import PhoneRun, audit, frames, read_lines

RUNNER_BINARY = "bin/as2d_runner"
BUILD_HOST = "`cmake -S phone_runner/runner -B phone_runner/runner/build && cmake --build phone_runner/runner/build`"
# ``phone:`` keys the jobs read themselves (not part of one configuration's run)
JOB_KEYS = frozenset({"conditions", "profile_dir", "max_windows", "max_seconds", "calibrate", "name", "min_free_mb",
                      "write_protocol_check", "producer_probe"})


@dataclass(frozen=True)
class PhoneConfig:
    serial: str | None = None
    runner: str = "python"  # python: `python3 -m phone_runner.device`; cpp: the pushed C++ runner
    python: str = "python3"
    runner_binary: str | None = None  # local build of phone_runner/runner (cpp)
    engine: Mapping[str, Any] = field(default_factory=lambda: {"kind": "reference", "clock": "virtual"})
    repetitions: int = 1
    warmups: int = 0
    timeout_s: float = 3600.0
    idle_timeout_s: float = 300.0
    state_dir: str = "outputs/phone_state"
    models: Mapping[str, str] = field(default_factory=dict)  # role -> local model folder, pushed to the phone
    conditions: ConditionPolicy = field(default_factory=ConditionPolicy)

    @classmethod
    def from_mapping(cls, m: Mapping[str, Any]) -> PhoneConfig:
        known = set(cls.__dataclass_fields__) - {"conditions"}
        unknown = set(m) - known - JOB_KEYS
        if unknown:
            raise ValueError(f"phone: unknown setting(s) {sorted(unknown)}; known: {sorted(known | {'conditions'})}")
        kw = {k: v for k, v in m.items() if k in known}
        return cls(**kw, conditions=ConditionPolicy.from_config(m.get("conditions") or {}))

    def argv(self) -> list[str]:
        if self.runner == "python":
            return [self.python, "-m", "phone_runner.device"]
        if self.runner == "cpp":
            return [device_path(RUNNER_BINARY)]
        raise ValueError(f"phone.runner: {self.runner!r}; choose python or cpp")

    def deploy_runner(self, dev: adbutils.AdbDevice, progress: bool = True) -> dict[str, str]:
        if self.runner != "cpp":
            return {}
        missing = self.missing_binary()
        if missing is not None:
            raise missing
        return deploy(dev, {RUNNER_BINARY: Path(str(self.runner_binary))}, progress=progress)

    def missing_binary(self) -> ConfigError | None:
        """The C++ runner needs a built ``phone.runner_binary`` to push; the error that says how to build it."""
        if self.runner != "cpp" or (self.runner_binary and Path(self.runner_binary).is_file()):
            return None
        return ConfigError("phone.runner_binary", f"{self.runner_binary!r} is not a file: the C++ runner is pushed "
                           "from a local build", fix=f"build it ({BUILD_HOST} for this host and the loopback phone; "
                           "phone_runner/runner/build_android.sh for a phone, see phone_runner/README.md) and set "
                           "phone.runner_binary to its as2d_runner")

    def deploy_models(self, dev: adbutils.AdbDevice, progress: bool = True) -> dict[str, str]:
        """Push each role's model folder to ``models/<folder name>/`` (every file sha256-checked; files
        already there with the same sha256 stay, so a model is pushed once per phone); returns role ->
        the request's ``models.<role>.dir``, relative to the request's folder (``runs/<id>/``) like the
        audio inputs, so it holds on a phone and on the loopback phone alike."""
        out: dict[str, str] = {}
        for role, local in self.models.items():
            if local is None:
                continue
            folder = Path(local)
            if not folder.is_dir():
                raise ConfigError(f"phone.models.{role}", f"{local!r} is not a model folder",
                                  fix="give the local folder of an exported model (it holds config.json)")
            rel = f"models/{folder.resolve().name}"
            deploy(dev, {rel: folder}, progress=progress)
            out[role] = f"../../{rel}"
        return out


def build_request(run_id: str, cfg: Any, windows: Sequence[Any], profile: Any, pc: PhoneConfig, *,
                  mode: str = "run", calibrate: Mapping[str, Any] | None = None, max_output: int = 1024,
                  models: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A protocol-v1 request for one replay configuration ``cfg`` (a ``ReplayConfig``); ``windows``
    are replay ``Window``s (reference engine) or ready request entries (dicts, real engines)."""
    batch = None
    if cfg.source and cfg.source in profile.sources:
        batch = profile.source(cfg.source).batch_tokens
    return {"v": VERSION, "run_id": run_id, "mode": mode,
            "scheme": {"name": cfg.scheme, "source": cfg.source, "config": cfg.label, "settings": cfg.settings},
            "engine": dict(pc.engine), "models": dict(models or {}), "producer": {"batch_tokens": batch or 8},
            "windows": [w if isinstance(w, dict) else window_payload(w) for w in windows],
            "repetitions": pc.repetitions, "warmups": pc.warmups,
            "max_output": max_output, "pricing": pricing_from_profile(profile), "calibrate": calibrate,
            "output": "out.jsonl"}


def state_key(request: Mapping[str, Any], serial: str) -> str:
    """Same phone, same configuration (engine included) -> same resume folder (windows and run ids
    excluded). Which runner wrote it is checked separately (:func:`check_runner`)."""
    stable = {k: v for k, v in request.items() if k not in ("windows", "run_id", "output")}
    return hashlib.sha256((serial + json.dumps(stable, sort_keys=True)).encode()).hexdigest()[:16]


def runner_identity(pc: PhoneConfig, engine: Mapping[str, Any]) -> dict[str, Any]:
    """The rest of the resume key: runner kind, the pushed binary's sha256 (C++) or the phone's
    interpreter (Python), and the engine. Windows from another runner are never mixed into a run."""
    from .deploy import sha256_file

    binary = Path(pc.runner_binary) if pc.runner == "cpp" and pc.runner_binary else None
    return {"runner": pc.runner, "binary_sha256": sha256_file(binary) if binary and binary.is_file() else None,
            "python": pc.python if pc.runner == "python" else None, "engine": dict(engine)}


def _who(identity: Mapping[str, Any]) -> str:
    sha = str(identity.get("binary_sha256") or "")[:12]
    engine = dict(identity.get("engine") or {})
    said = ", ".join([str(engine.pop("kind", None)), *(f"{k}={v}" for k, v in sorted(engine.items()))])
    return f"{identity.get('runner')}{' ' + sha if sha else ''} (engine {said})"


def check_runner(store: WindowStore, identity: Mapping[str, Any]) -> None:
    """Refuse to resume windows another runner (kind, binary or engine) wrote; else record ours."""
    path = store.dir / "runner.json"
    if path.exists():
        had = json.loads(path.read_text(encoding="utf-8"))
        kept = len(list(store.dir.glob("*.jsonl")))
        if had != dict(identity) and kept:
            raise RunFailed(f"resume store {store.dir} holds {kept} window(s) from runner {_who(had)}; this run "
                            f"uses {_who(identity)}: a resume across runners would mix their timings",
                            kept=f"{kept} window(s) left untouched in {store.dir}",
                            fix=f"rerun with phone.runner={had.get('runner')} (the same binary and phone.engine) to "
                                f"resume, or delete {store.dir} to start over")
        if had == dict(identity):
            return
    store.dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(dict(identity), sort_keys=True))


@dataclass
class ConfigRun:
    run: PhoneRun
    frames: dict[str, pl.DataFrame]
    monitor: pl.DataFrame
    flagged: dict[tuple[str, int], str]
    pre_run: list[str]
    resumed: int  # window repetitions taken from an earlier, interrupted run
    raw: Path | None = None  # the runner's output file this run pulled (None: every window was resumed)


def run_config(dev: adbutils.AdbDevice, pc: PhoneConfig, request: dict[str, Any], windows: Mapping[str, Any] | None,
               profile: Any, out_dir: Path, *, serial_hash: str | None = None, rest: bool = True,
               resumable: bool = True) -> ConfigRun:
    """``windows``: greedy references to audit against (``None``: the caller audits, e.g. real models
    whose reference is the phone's own target-only output). ``serial_hash``: the phone's own identity
    (``ro.serialno``), stable across reconnects. ``resumable=False``: a failure says the run cannot
    resume (a calibration's native runs keep nothing for a rerun)."""
    serial = serial_hash or hashed_serial(dev.serial)
    store = WindowStore(Path(pc.state_dir) / serial / state_key(request, serial))
    check_runner(store, runner_identity(pc, request["engine"]))
    reps = int(request["repetitions"])
    todo = [w for w in request["windows"] if not all(store.done((w["window_id"], r)) for r in range(reps))]
    resumed = sum(1 for w in request["windows"] for r in range(reps) if store.done((w["window_id"], r)))
    cond = Conditions(dev, pc.conditions)
    pre = cond.prepare() if rest else cond_violations(cond)
    label = request["scheme"]["config"].replace("/", "_")
    series = pl.DataFrame()
    spans: dict[tuple[str, int], tuple] = {}
    raw: Path | None = None
    if todo:
        raw = out_dir / "phone" / f"{label}.jsonl"
        run_rel = f"runs/{request['run_id']}"
        mon = cond.monitor()
        try:
            with mon:
                run, spans = run_request(dev, {**request, "windows": todo}, runner=pc.argv(), run_rel=run_rel,
                                         store=store, local_out=raw,
                                         timeout_s=pc.timeout_s, idle_timeout_s=pc.idle_timeout_s,
                                         resumable=resumable)
        finally:
            series = mon.stop()
            write_series(series, out_dir / "phone" / f"{label}.monitor.parquet")
    header = store.header()
    if header is None:
        raise RunFailed(f"resume store {store.dir} has finished windows but no header; delete it and rerun")
    merged = read_lines([header, *store.lines()], f"phone run {label}")
    keys = {(w["window_id"], r) for w in request["windows"] for r in range(reps)}
    merged.lines = {k: [x for x in v if (x.get("window_id"), x.get("repetition")) in keys]
                    for k, v in merged.lines.items()}
    if windows is not None:
        audit(merged, windows, profile)
    flagged = flag_windows(series, spans) if series.height else {}
    if pre:
        for key in spans:
            flagged.setdefault(key, "before the run: " + "; ".join(pre))
    fr = frames(merged, {"device": serial})
    if fr["windows"].height:
        fr["windows"] = fr["windows"].with_columns(pl.Series(
            "condition_flag", [flagged.get((w, r), "") for w, r in zip(fr["windows"]["window_id"],
                                                                        fr["windows"]["repetition"], strict=True)]))
    return ConfigRun(merged, fr, series, flagged, pre, resumed, raw)


def cond_violations(cond: Conditions) -> list[str]:
    from .conditions import violations

    return violations(cond.sample(), cond.cores, cond.policy)


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


def audio_entries(dev: adbutils.AdbDevice, audio: Sequence[Any], out_dir: Path,
                  decode: Any = None) -> list[dict[str, Any]]:
    """Push audio windows (``.npy``, sha256-skipped) and return their request entries. Paths are
    relative to the request's folder (``runs/<id>/``), so they hold on a phone and on loopback.
    ``decode`` (``inputs.DecodeInputs``): each entry also carries the target's prompt ids and EOS
    id, and -- when it has a feature shape -- the encoder's log-mel features, pushed as ``.npy``."""
    import numpy as np

    from .inputs import save_npy

    local = out_dir / "phone" / "inputs"
    local.mkdir(parents=True, exist_ok=True)
    files, entries = {}, []
    for w in audio:
        stem = hashlib.sha256(w.window_id.encode()).hexdigest()[:16]
        save_npy(local / f"{stem}.npy", np.asarray(w.audio))
        files[f"inputs/{stem}.npy"] = local / f"{stem}.npy"
        entry = {"window_id": w.window_id, "dataset": "demo", "audio": f"../../inputs/{stem}.npy",
                 "features": None, "prompt": None, "eos_id": None, "max_output": None, "reference": None}
        if decode is not None:
            entry.update(prompt=list(decode.prompt), eos_id=decode.eos_id)
            if decode.mel_bins is not None:
                save_npy(local / f"{stem}.features.npy", decode.features(w.audio))
                files[f"inputs/{stem}.features.npy"] = local / f"{stem}.features.npy"
                entry["features"] = f"../../inputs/{stem}.features.npy"
        entries.append(entry)
    deploy(dev, files, progress=False)
    return entries


def phone_windows(fr: Mapping[str, pl.DataFrame], source: str | None, max_output: int,
                  refs: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Replay ``Window``s from a real-model phone run: the reference is ``refs``' (or this run's own
    output, for target-only), the source is the producer stream the phone published (repetition 0)."""
    from workbench.replay.trajectory import SourceTrack, Window

    out = {}
    for row in fr["windows"].filter(pl.col("repetition") == 0).iter_rows(named=True):
        wid = row["window_id"]
        ref = tuple(refs[wid].reference) if refs else tuple(row["output"])
        sources = {}
        if source is not None and fr["publications"].height:
            pub = fr["publications"].filter((pl.col("window_id") == wid) & (pl.col("repetition") == 0))
            toks = tuple(t for batch in pub.sort("offset")["tokens"].to_list() for t in batch)
            sources[source] = SourceTrack(source, toks, None, (1,) * len(toks))  # priced per produced token
        eos = None if len(ref) >= max_output else ref[-1]
        out[wid] = Window(wid, "phone", ref, eos, 1 << 20, max(max_output, len(ref)), None, sources).validate()
    return out
