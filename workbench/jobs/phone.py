"""Jobs on Android phones over adb: ``phone_info``, ``calibrate_phone``, ``native_phone``.

* ``phone_info`` -- every attached phone (or ``phone.serial``): getprop + sysfs -> Table 6 rows.
* ``calibrate_phone`` -- the runner's calibrate mode (D.2) -> ``<phone.profile_dir>/<phone.name>.yaml``
  in the profile schema: measured with a real engine (torch, mnn); with the reference engine a
  protocol check, refused unless ``phone.write_protocol_check=true``. Profile and raw lines are
  MLflow artifacts.
* ``native_phone`` -- the methods on test windows on the phone under the device-condition protocol,
  audited like replay, plus replay-vs-phone agreement under ``device`` (D.3). The runner's output
  files, as pulled, are MLflow artifacts (``phone/<config>.jsonl``).

Device problems (no phone, several phones, unauthorized, full disk) are one ``PhoneError`` line.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
from omegaconf import DictConfig, OmegaConf

from .base import JobResult
from .phone_agreement import AGREEMENT_SCHEMA as AGREEMENT_SCHEMA  # the agreement table's columns (D.3)
from .phone_agreement import (
    JudgedProfiles,
    WindowAgreement,
    agreement_table,
    config_agreement,
    job_metrics,
    summary_row,
)
from .phone_checks import phone_cfg as _phone_cfg
from .phone_checks import validate as validate  # the job's pre-run checks (workbench.run)
from .phone_decomposition import DECOMPOSITION_SCHEMA, decomposition_rows
from .phone_probe import (
    DriftProbe,
    Prober,
    anchor_entries,
    bracketed,
    calibration_window,
    interleaved,
    own_anchor_ratios,
    round_ms,
    without_anchors,
)


def replays_dataset(cfg: DictConfig) -> bool:
    """Only the reference engine's native_phone replays the dataset's windows; the rest run audio."""
    return cfg.job == "native_phone" and (cfg.phone.get("engine") or {}).get("kind", "reference") == "reference"


def _real_models(cfg: DictConfig, kind: str, dirs: dict[str, str]) -> dict[str, dict[str, Any]]:
    """The request's ``models`` for a real engine: the conf/model pair by name, on the phone's engine;
    ``dirs``: role -> device folder of a pushed model (``phone.models``)."""
    name = str(cfg.model.name)
    roles = ("target", "producer", *(["drafter"] if "drafter" in dirs else []))  # drafter: SD / ASP on cpp
    return {role: {"name": name, "format": kind, **({"dir": dirs[role]} if role in dirs else {})} for role in roles}


def _decode(cfg: DictConfig, pc: Any) -> Any:
    """The C++ runner has no tokenizer or feature extractor: the host sends the target's prompt ids,
    EOS id and encoder features (``phone_runner.inputs``). The Python runner loads the pair itself."""
    if pc.runner != "cpp":
        return None
    from phone_runner.inputs import decode_inputs

    return decode_inputs(OmegaConf.to_container(cfg.model, resolve=True), features=True)


def run(cfg: DictConfig, out: Path) -> JobResult:
    return {"phone_info": phone_info, "calibrate_phone": calibrate_phone, "native_phone": native_phone}[cfg.job](
        cfg, out)


def phone_info(cfg: DictConfig, out: Path) -> JobResult:
    from phone_runner.adb import PhoneError, client, select_device
    from phone_runner.info import device_info, table6_row

    pc = _phone_cfg(cfg)
    c = client()
    if pc.serial is not None:
        devs = [select_device(pc.serial, c)]
    else:
        ready = [i.serial for i in c.list() if i.state == "device"]
        if not ready:
            select_device(None, c)  # raises the right one-line error (none / unauthorized / offline)
            raise PhoneError("no usable device")
        devs = [c.device(s) for s in ready]
    infos = [device_info(d) for d in devs]
    table6 = pl.DataFrame([table6_row(i) for i in infos])
    cores = pl.DataFrame([{**pc_row, "serial_hash": i["serial_hash"]} for i in infos for pc_row in i["per_core"]])
    thermal = pl.DataFrame([{**z, "serial_hash": i["serial_hash"]} for i in infos for z in i["thermal"]],
                           schema_overrides={"temp_c": pl.Float64})
    battery = pl.DataFrame([{**i["battery"], "serial_hash": i["serial_hash"]} for i in infos])
    return JobResult({"devices": float(len(infos))},
                     {"table6": table6, "cores": cores, "thermal": thermal, "battery": battery}, {}, table6,
                     {"serial_hashes": ",".join(i["serial_hash"] for i in infos)})


def calibrate_phone(cfg: DictConfig, out: Path) -> JobResult:
    from phone_runner.adb import select_device
    from phone_runner.calibration import PROTOCOL_CHECK, REAL_ENGINES, calibration_plan, fit_profile, profile_yaml
    from phone_runner.hostrun import WindowStore, run_request
    from phone_runner.info import device_info
    from phone_runner.records import frames
    from phone_runner.session import audio_entries, build_request, new_run_id
    from workbench.io import atomic_write_text
    from workbench.replay.result import ReplayConfig

    from .config import device_profile

    pc = _phone_cfg(cfg)
    dev = select_device(pc.serial)
    info = device_info(dev)
    pc.deploy_runner(dev)
    base = device_profile(cfg.device)
    base_raw = OmegaConf.to_container(cfg.device, resolve=True)
    plan = calibration_plan(OmegaConf.to_container(cfg.phone.get("calibrate") or {}, resolve=True))
    run_id = new_run_id()
    kind = str(pc.engine.get("kind"))
    windows: list[Any] = []
    models = None
    if kind != "reference":  # real forwards need audio: one calibration window of the demo corpus's dev split
        calib = calibration_window(cfg)
        windows = audio_entries(dev, calib, out, _decode(cfg, pc))
        models = _real_models(cfg, kind, pc.deploy_models(dev))
    req = build_request(run_id, ReplayConfig("target_only"), windows, base, pc, mode="calibrate", calibrate=plan,
                        models=models)
    local = out / "phone" / "calibrate.jsonl"
    run, _ = run_request(dev, req, runner=pc.argv(), run_rel=f"runs/{run_id}", store=WindowStore(out / "phone_state"),
                         local_out=local, timeout_s=pc.timeout_s, idle_timeout_s=pc.idle_timeout_s, resumable=False)
    measures, publications, rounds = frames(run)["measures"], None, None
    if kind != "reference":
        steps, publications, rounds = _native_measures(cfg, dev, pc, windows, base, models, out,
                                                       info["serial_hash"], plan.get("reps", 5))
        measures = pl.concat([measures, steps], how="diagonal_relaxed")
    name = str(cfg.phone.name)
    engine = str((run.header or {}).get("engine", {}).get("kind", kind))  # what the runner says it ran
    raw = fit_profile(measures, base, base_raw, name=name, model=info["model"], serial_hash=info["serial_hash"],
                      engine=engine, publications=publications, rounds=rounds,
                      anchor_window=str(windows[0]["window_id"]) if windows else None)
    target = Path(cfg.phone.get("profile_dir") or "conf/device") / f"{name}.yaml"
    atomic_write_text(target, profile_yaml(raw))
    atomic_write_text(out / "phone" / f"{name}.yaml", profile_yaml(raw))
    idle = {int(k): v["v"] for k, v in raw["verifier"]["idle_ms"].items()}
    metrics = {f"verify_idle_ms.K{k}": v for k, v in idle.items()}
    metrics["measures"] = float(measures.height)
    summary = pl.DataFrame({"width": list(idle), "idle_ms": list(idle.values())})
    return JobResult(metrics, {"measures": measures}, {}, summary,
                     {"profile": str(target), "serial_hash": info["serial_hash"], "device_model": info["model"],
                      "engine": engine, "profile_kind": "measured" if engine in REAL_ENGINES else PROTOCOL_CHECK},
                     files=[out / "phone" / f"{name}.yaml", local])


def _native_measures(cfg: DictConfig, dev: Any, pc: Any, windows: list[Any], base: Any, models: Any, out: Path,
                     serial_hash: str, reps: int) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Target-only and As²d run natively on the calibration window (the host's D.2 rule), each
    ``reps`` times: ``target_step`` measures (target-only decode time over rounds per repetition: the
    step replay charges then carries the runner's own work around each forward, which a timed forward
    alone leaves out), As²d's publication records (the producer as it ran beside the target,
    ``calibration.live_producer``) and its round records (the verifier beside the producer,
    ``calibration.live_concurrent``). Private resume folders, one per run id: a calibration never reuses
    windows of an earlier run, so a failure here says it cannot resume."""
    import dataclasses

    from phone_runner.records import audit
    from phone_runner.session import build_request, new_run_id, phone_windows, run_config
    from workbench.replay.result import ReplayConfig
    from workbench.replay.sources import profile_source

    from .config import replay_configs, source_roles

    max_output = int(cfg.model.get("max_new_tokens", 224))
    as2d = replay_configs(cfg, "as2d", profile_source(base, "producer", source_roles(cfg)), base)[0]
    got, refs = {}, {}
    for rc in (ReplayConfig("target_only"), as2d):
        run_id = new_run_id()
        own = dataclasses.replace(pc, repetitions=max(1, int(reps)), warmups=max(1, pc.warmups),
                                  state_dir=str(out / "phone_state" / f"native_{rc.scheme}_{run_id}"))
        req = build_request(run_id, rc, windows, base, own, max_output=max_output, models=models)
        res = run_config(dev, own, req, None, base, out, serial_hash=serial_hash, rest=False, resumable=False)
        if rc.scheme == "target_only":  # the phone's own greedy output is the reference As²d must equal
            refs = phone_windows(res.frames, None, max_output)
        audit(res.run, refs, base)  # exactness (C.4), readiness, widths, order: a violation raises
        got[rc.scheme] = res.frames
    steps = pl.DataFrame({"op": "target_step", "ms": round_ms(got["target_only"])}, schema={"op": pl.Utf8,
                                                                                            "ms": pl.Float64})
    return steps, got["as2d"]["publications"], got["as2d"]["rounds"]


@dataclass(frozen=True)
class PhoneInputs:
    """What ``native_phone`` sends and what it judges against, for a real or the reference engine."""

    entries: list[Any]  # the request's windows: audio entries (real engine) or the dataset's replay windows
    ids: list[str]  # the windows' ids, in request order
    names: list[str]  # the methods, in the order they run on the phone
    source: str | None  # the profile's name of the producer source
    models: dict[str, dict[str, Any]] | None  # the request's models (real engine), else the runner's own
    max_output: int
    refs: dict[str, Any]  # the greedy references: the dataset's windows; a real engine's come from its target-only


def _real_inputs(cfg: DictConfig, pc: Any, dev: Any, profile: Any, roles: dict[str, list[str]], limit: Any,
                 names: list[str], out: Path) -> PhoneInputs:
    """Real models decode audio windows, and the phone's own target-only output is the reference each
    other method must equal (C.4), so target-only runs first. The audio is pushed before the models."""
    from phone_runner.session import audio_entries
    from workbench.native.windows import demo_windows
    from workbench.replay.sources import profile_source

    # the target's own audio limit, as for the calibration (anchor) window: both come from one packing
    audio = demo_windows(float(cfg.phone.get("max_seconds") or 25.0),
                         model=OmegaConf.to_container(cfg.model, resolve=True))[1][: int(limit) if limit else None]
    entries, ids = audio_entries(dev, audio, out, _decode(cfg, pc)), [w.window_id for w in audio]
    ordered = ["target_only", *[n for n in names if n != "target_only"]]
    source = profile_source(profile, "producer", roles)
    models = _real_models(cfg, str(pc.engine.get("kind")), pc.deploy_models(dev))
    return PhoneInputs(entries, ids, ordered, source, models, int(cfg.model.get("max_new_tokens", 224)), {})


def _reference_inputs(cfg: DictConfig, profile: Any, roles: dict[str, list[str]], limit: Any,
                      names: list[str]) -> PhoneInputs:
    """The reference engine replays the dataset's windows, priced under the profile's source names;
    their greedy outputs are the references."""
    from workbench.replay.sources import priced_as, profile_source

    from .windows import load_windows

    windows = priced_as(load_windows(cfg), profile, roles)[: int(limit) if limit else None]
    source = profile_source(profile, cfg.get("source") or next(iter(windows[0].sources), None), roles)
    return PhoneInputs(windows, [w.window_id for w in windows], names, source, None,
                       max(w.max_output for w in windows), {w.window_id: w for w in windows})


@dataclass
class PhoneRuns:
    """What the configurations' runs add up to, in the order they ran."""

    raw: list[Path]  # the runner's output files as pulled (the probes' too): MLflow artifacts beside the tables
    rows: list[dict[str, Any]] = field(default_factory=list)  # one summary row per configuration
    tables: dict[str, list[pl.DataFrame]] = field(default_factory=dict)  # per record kind, one frame per config
    agreement: list[WindowAgreement] = field(default_factory=list)  # D.3 per window
    terms: list[dict[str, Any]] = field(default_factory=list)  # D.3 decomposition of decoupled configurations
    flagged: int = 0
    resumed: int = 0

    def add_frames(self, label: str, fr: dict[str, pl.DataFrame], monitor: pl.DataFrame) -> None:
        for k in ("windows", "rounds", "stages", "publications"):
            if fr[k].height:
                self.tables.setdefault(k, []).append(fr[k].with_columns(pl.lit(label).alias("config")))
        if monitor.height:
            self.tables.setdefault("monitor", []).append(monitor.with_columns(pl.lit(label).alias("config")))


def _config_runner(dev: Any, pc: Any, profile: Any, inputs: PhoneInputs, anchor: list[Any], out: Path,
                   serial_hash: str, *, real: bool, rest: bool) -> Callable[[Any], Any]:
    """``run(rc)``: one configuration on the phone. The anchor window rides before, between and after
    the windows in the configuration's own request (``phone_probe``); with probes the configuration
    takes no rest of its own (the probe before it did), so each follows its probe at once."""
    from phone_runner.session import build_request, new_run_id, run_config

    def run(rc: Any) -> Any:
        ride = interleaved(anchor[0], list(inputs.entries)) if anchor else inputs.entries
        req = build_request(new_run_id(), rc, ride, profile, pc, max_output=inputs.max_output, models=inputs.models)
        return run_config(dev, pc, req, None if real else inputs.refs, profile, out, serial_hash=serial_hash,
                          rest=rest)

    return run


def _judge_config(runs: PhoneRuns, rc: Any, res: Any, probe: DriftProbe | None, refs: dict[str, Any], *,
                  inputs: PhoneInputs, profile: Any, real: bool, anchored: bool, device_model: str,
                  clock: Any) -> dict[str, Any]:
    """One configuration's run: audited (C.4; a real engine's here, the reference's in ``run_config``),
    its anchor copies turned into drift ratios and dropped, its records, D.3 agreement, decomposition
    and summary row added to ``runs``. Returns the references for the next configuration: a real
    engine's target-only output once it ran."""
    from phone_runner.records import audit
    from phone_runner.session import phone_windows

    runs.raw.extend([res.raw] if res.raw else [])
    fr = res.frames
    if real:
        if rc.scheme == "target_only":
            refs = phone_windows(fr, None, inputs.max_output)
        audit(res.run, refs, profile)  # exactness vs target-only, readiness, widths, order
    agree = phone_windows(fr, rc.source, inputs.max_output, refs) if real else refs
    ratio: float | None = None
    ratios: dict[str, float] = {}
    if anchored:  # the configuration's own anchors around each window, then they leave the tables
        ratios, copies = own_anchor_ratios(fr, agree, inputs.ids, rc, profile)
        ratio = statistics.geometric_mean(copies)
        fr = without_anchors(fr, profile.anchor_window)
    n_flag = sum(1 for v in fr["windows"]["condition_flag"] if v)
    runs.flagged += n_flag
    runs.resumed += res.resumed
    runs.add_frames(rc.label, fr, res.monitor)
    profiles = JudgedProfiles.around(profile, ratios, probe)
    if real and rc.spec.decoupled:  # where its error comes from, under the judged profile
        runs.terms += decomposition_rows(fr, agree, inputs.ids, rc,
                                         {wid: profiles.own.get(wid, profile) for wid in inputs.ids})
    judged = config_agreement(fr, agree, inputs.ids, rc, profiles, ratios, probe)
    runs.agreement += judged
    runs.rows.append(summary_row(device_model, clock, rc, fr, judged, ratio, probe, n_flag))
    return refs


def native_phone(cfg: DictConfig, out: Path) -> JobResult:
    """Each method's configurations on the phone, one request each, audited for exactness (C.4) and
    judged against their replay under ``device`` (D.3). With a drift anchor in the profile (a real
    engine's calibration), each configuration also runs between target probes on the anchor window
    (``phone_probe.bracketed``)."""
    from tqdm.auto import tqdm

    from phone_runner.adb import select_device
    from phone_runner.info import device_info

    from .config import device_profile, methods, replay_configs, source_roles

    pc = _phone_cfg(cfg)
    profile = device_profile(cfg.device)
    roles = source_roles(cfg)
    limit = cfg.phone.get("max_windows")
    real = pc.engine.get("kind") != "reference"
    names = methods(cfg)
    dev = select_device(pc.serial)
    info = device_info(dev)
    pc.deploy_runner(dev)
    inputs = (_real_inputs(cfg, pc, dev, profile, roles, limit, names, out) if real
              else _reference_inputs(cfg, profile, roles, limit, names))
    runs = PhoneRuns(raw=[])
    configs = [rc for name in inputs.names for rc in replay_configs(cfg, name, inputs.source, profile)]
    anchor = anchor_entries(cfg, dev, profile, out, _decode(cfg, pc)) if real else []
    prober = Prober(dev, pc, anchor, profile, inputs.models, info["serial_hash"], inputs.max_output,
                    runs.raw) if anchor else None
    as2d_probe = replay_configs(cfg, "as2d", inputs.source, profile)[0] if anchor and cfg.phone.get("producer_probe") \
        else None
    run = _config_runner(dev, pc, profile, inputs, anchor, out, info["serial_hash"], real=real, rest=prober is None)
    refs = inputs.refs
    for rc, res, probe in bracketed(prober, tqdm(configs, desc="phone configs"), as2d_probe, out / "probes", run):
        refs = _judge_config(runs, rc, res, probe, refs, inputs=inputs, profile=profile, real=real,
                             anchored=bool(anchor), device_model=info["model"], clock=pc.engine.get("clock", "real"))
    return _native_result(runs, info, pc, len(inputs.ids))


def _native_result(runs: PhoneRuns, info: dict[str, Any], pc: Any, n_windows: int) -> JobResult:
    """The job's metrics, tables (records per kind, then ``table6``, ``agreement``, ``decomposition``,
    ``summary``), tags and the runner's files."""
    from phone_runner.info import table6_row

    summary = pl.DataFrame(runs.rows)
    metrics = job_metrics(runs.rows, flagged=runs.flagged, resumed=runs.resumed, windows=n_windows)
    out_tables = {k: pl.concat(v, how="diagonal_relaxed") for k, v in runs.tables.items()}
    out_tables["table6"] = pl.DataFrame([table6_row(info)])
    out_tables["agreement"] = agreement_table(runs.agreement)
    out_tables["decomposition"] = pl.DataFrame(runs.terms, schema=DECOMPOSITION_SCHEMA)
    return JobResult(metrics, {**out_tables, "summary": summary}, {}, summary,
                     {"serial_hash": info["serial_hash"], "device_model": info["model"],
                      "flagged_windows": str(runs.flagged), "runner": pc.runner,
                      "engine": str(pc.engine.get("kind"))}, files=runs.raw)
