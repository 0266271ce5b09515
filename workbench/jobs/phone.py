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

import math
import statistics
from pathlib import Path
from typing import Any

import polars as pl
from omegaconf import DictConfig, OmegaConf

from .base import JobResult
from .phone_checks import phone_cfg as _phone_cfg
from .phone_checks import validate as validate  # the job's pre-run checks (workbench.run)
from .phone_decomposition import DECOMPOSITION_SCHEMA, decomposition_rows
from .phone_probe import (
    Prober,
    anchor_entries,
    bracketed,
    calibration_window,
    interleaved,
    own_anchor_ratios,
    round_ms,
    window_times,
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


AGREEMENT_SCHEMA = {"config": pl.Utf8, "window_id": pl.Utf8, "tokens": pl.Int64, "time_native": pl.Float64,
                    "time_replay": pl.Float64, "signed_error_pct": pl.Float64, "noise_floor_pct": pl.Float64,
                    "drift_ratio": pl.Float64, "drift_ratio_probe": pl.Float64, "drift_ratio_before": pl.Float64,
                    "drift_ratio_after": pl.Float64,
                    "drift_ratio_producer": pl.Float64,
                    "time_replay_anchored": pl.Float64, "anchored_error_pct": pl.Float64,
                    "probe_anchored_error_pct": pl.Float64,
                    "producer_anchored_error_pct": pl.Float64}


def native_phone(cfg: DictConfig, out: Path) -> JobResult:
    from tqdm.auto import tqdm

    from phone_runner.adb import select_device
    from phone_runner.info import device_info, table6_row
    from phone_runner.records import audit
    from phone_runner.session import audio_entries, build_request, new_run_id, phone_windows, run_config
    from workbench import metrics as M
    from workbench.native.noise_floor import median_noise_pct
    from workbench.replay.drift import scaled
    from workbench.replay.engine import replay
    from workbench.replay.sources import priced_as, profile_source

    from .config import device_profile, methods, replay_configs, source_roles
    from .windows import load_windows

    pc = _phone_cfg(cfg)
    profile = device_profile(cfg.device)
    roles = source_roles(cfg)
    limit = cfg.phone.get("max_windows")
    real = pc.engine.get("kind") != "reference"
    names = methods(cfg)
    dev = select_device(pc.serial)
    info = device_info(dev)
    pc.deploy_runner(dev)
    if real:  # real models: audio windows; the phone's own target-only output is the reference
        from workbench.native.windows import demo_windows

        audio = demo_windows(float(cfg.phone.get("max_seconds") or 25.0))[1][: int(limit) if limit else None]
        entries, ids = audio_entries(dev, audio, out, _decode(cfg, pc)), [w.window_id for w in audio]
        names = ["target_only", *[n for n in names if n != "target_only"]]
        source = profile_source(profile, "producer", roles)
        kind = str(pc.engine.get("kind"))
        models = _real_models(cfg, kind, pc.deploy_models(dev))
        max_output = int(cfg.model.get("max_new_tokens", 224))
        refs: dict[str, Any] = {}
    else:
        windows = priced_as(load_windows(cfg), profile, roles)[: int(limit) if limit else None]
        entries, ids, models = windows, [w.window_id for w in windows], None
        refs = {w.window_id: w for w in windows}
        source = profile_source(profile, cfg.get("source") or next(iter(windows[0].sources), None), roles)
        max_output = max(w.max_output for w in windows)
    rows, tables, flagged, resumed = [], {}, 0, 0
    raw: list[Path] = []  # the runner's output files as pulled: MLflow artifacts beside the tables
    agreement: list[dict[str, Any]] = []  # D.3 per window: the native median beside its replay
    terms: list[dict[str, Any]] = []  # D.3 decomposition of each decoupled configuration's windows
    configs = [rc for name in names for rc in replay_configs(cfg, name, source, profile)]
    anchor = anchor_entries(cfg, dev, profile, out, _decode(cfg, pc)) if real else []
    prober = Prober(dev, pc, anchor, profile, models, info["serial_hash"], max_output, raw) if anchor else None
    as2d_probe = replay_configs(cfg, "as2d", source, profile)[0] if anchor and cfg.phone.get("producer_probe") \
        else None

    def run(rc: Any) -> Any:  # the probes take the configurations' rests; each follows its probe at once
        # the anchor window rides before, between and after the windows in the configuration's own request
        ride = interleaved(anchor[0], list(entries)) if anchor else entries
        req = build_request(new_run_id(), rc, ride, profile, pc, max_output=max_output, models=models)
        return run_config(dev, pc, req, None if real else refs, profile, out, serial_hash=info["serial_hash"],
                          rest=prober is None)

    for rc, res, probe in bracketed(prober, tqdm(configs, desc="phone configs"), as2d_probe, out / "probes", run):
        raw.extend([res.raw] if res.raw else [])
        fr = res.frames
        if real:
            if rc.scheme == "target_only":
                refs = phone_windows(fr, None, max_output)
            audit(res.run, refs, profile)  # exactness vs target-only, readiness, widths, order
        agree = phone_windows(fr, rc.source, max_output, refs) if real else refs
        ratio, ratios = None, {}
        if anchor:  # the configuration's own anchors around each window, then they leave the tables
            ratios, copies = own_anchor_ratios(fr, agree, ids, rc, profile)
            ratio = statistics.geometric_mean(copies)
            fr = without_anchors(fr, profile.anchor_window)
        n_flag = sum(1 for v in fr["windows"]["condition_flag"] if v)
        flagged += n_flag
        resumed += res.resumed
        for k in ("windows", "rounds", "stages", "publications"):
            if fr[k].height:
                tables.setdefault(k, []).append(fr[k].with_columns(pl.lit(rc.label).alias("config")))
        if res.monitor.height:
            tables.setdefault("monitor", []).append(res.monitor.with_columns(pl.lit(rc.label).alias("config")))
        errs, floors, anchored_errs, probe_errs, core_errs = [], [], [], [], []
        # the profile at this configuration's own speed around each window
        own = {wid: scaled(profile, r) for wid, r in ratios.items()}
        now = probe.target(profile) if probe else None  # at the probes' speed over the bracket
        cores = probe.each_core(profile) if probe else None
        if real and rc.spec.decoupled:  # where its error comes from, under the judged profile
            terms += decomposition_rows(fr, agree, ids, rc, {wid: own.get(wid, profile) for wid in ids})
        for wid in ids:  # replay under the device profile vs the phone (D.3), median repetition
            times = window_times(fr, wid)
            w = agree[wid]
            native_tps = w.n_tokens / times[len(times) // 2]
            replayed = replay(w, rc, profile)
            errs.append(100 * (replayed.tps / native_tps - 1))
            floors.append(median_noise_pct(times, key=wid))  # what the median's own spread allows
            again = replay(w, rc, own[wid]) if own else None
            if again:
                anchored_errs.append(100 * (again.tps / native_tps - 1))
            probed = replay(w, rc, now) if now else None
            if probed:
                probe_errs.append(100 * (probed.tps / native_tps - 1))
            both = replay(w, rc, cores) if cores else None
            if both:
                core_errs.append(100 * (both.tps / native_tps - 1))
            agreement.append({"config": rc.label, "window_id": wid, "tokens": w.n_tokens,
                              "time_native": times[len(times) // 2], "time_replay": replayed.time,
                              "signed_error_pct": errs[-1], "noise_floor_pct": floors[-1],
                              "drift_ratio": ratios.get(wid),
                              "drift_ratio_probe": probe.ratio if probe else None,
                              "drift_ratio_before": probe.before if probe else None,
                              "drift_ratio_after": probe.after if probe else None,
                              "drift_ratio_producer": probe.producer_ratio if probe else None,
                              "time_replay_anchored": again.time if again else None,
                              "anchored_error_pct": anchored_errs[-1] if again else None,
                              "probe_anchored_error_pct": probe_errs[-1] if probed else None,
                              "producer_anchored_error_pct": core_errs[-1] if both else None})
        known = [f for f in floors if math.isfinite(f)]
        rows.append({"device": info["model"], "method": rc.label, "clock": pc.engine.get("clock", "real"),
                     "tps": M.tps_pooled(fr["windows"]), "acceptance": M.acceptance(fr["rounds"]),
                     "coverage": M.coverage(fr["rounds"]), "readiness": M.readiness(fr["rounds"]),
                     "agreement_mae_pct": statistics.fmean(abs(e) for e in errs),
                     "agreement_signed_pct": statistics.fmean(errs),
                     "agreement_noise_floor_pct": statistics.fmean(known) if known else math.nan,
                     "agreement_anchored_mae_pct": statistics.fmean(abs(e) for e in anchored_errs)
                     if anchored_errs else math.nan,
                     "agreement_probe_anchored_mae_pct": statistics.fmean(abs(e) for e in probe_errs)
                     if probe_errs else math.nan,
                     "agreement_producer_anchored_mae_pct": statistics.fmean(abs(e) for e in core_errs)
                     if core_errs else math.nan,
                     "drift_ratio": ratio if ratio else math.nan,
                     "drift_ratio_probe": probe.ratio if probe else math.nan,
                     "drift_ratio_producer": probe.producer_ratio if probe and probe.producer_ratio else math.nan,
                     "flagged": n_flag})
    summary = pl.DataFrame(rows)
    metrics: dict[str, float] = {"exactness_mismatches": 0.0, "flagged_windows": float(flagged),
                                 "resumed_windows": float(resumed), "windows": float(len(ids))}
    for r in rows:
        for k in ("tps", "acceptance", "coverage", "readiness", "agreement_mae_pct", "agreement_noise_floor_pct",
                  "agreement_anchored_mae_pct", "agreement_probe_anchored_mae_pct",
                  "agreement_producer_anchored_mae_pct", "drift_ratio", "drift_ratio_probe", "drift_ratio_producer"):
            if isinstance(r[k], float) and math.isfinite(r[k]):
                metrics[f"phone.{r['method']}.{k}"] = r[k]
    out_tables = {k: pl.concat(v, how="diagonal_relaxed") for k, v in tables.items()}
    out_tables["table6"] = pl.DataFrame([table6_row(info)])
    out_tables["agreement"] = pl.DataFrame(agreement, schema=AGREEMENT_SCHEMA)
    out_tables["decomposition"] = pl.DataFrame(terms, schema=DECOMPOSITION_SCHEMA)
    return JobResult(metrics, {**out_tables, "summary": summary}, {}, summary,
                     {"serial_hash": info["serial_hash"], "device_model": info["model"],
                      "flagged_windows": str(flagged), "runner": pc.runner,
                      "engine": str(pc.engine.get("kind"))}, files=raw)
