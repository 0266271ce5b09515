"""Evaluation of the Hydra jobs: replay every (device, method, window), then one summary per (device, method).

Everything a job reports comes out of ``evaluate``: per-window, per-round and per-stage frames
for every (device, method), plus the summary metrics -- the same frames whether the rounds came
from replay or from the native clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import polars as pl
from omegaconf import DictConfig, OmegaConf
from tqdm import tqdm

from workbench import metrics as M
from workbench.decoding import DECOUPLED
from workbench.replay.engine import producer_plan, replay
from workbench.replay.profile import DeviceProfile
from workbench.replay.result import ReplayConfig
from workbench.replay.sources import priced_as, profile_source
from workbench.replay.trajectory import Window
from workbench.tracking.partial import record

from .base import ConfigError
from .budgets import device_budget
from .config import replay_configs, source_roles
from .sweep_baseline import BaselineStore, ConfigRows, baseline_key


def evaluate(windows: Sequence[Window], names: Sequence[str], profiles: Sequence[DeviceProfile],
             cfg: DictConfig, source: str, keep_rounds: bool = True,
             store: BaselineStore | None = None) -> dict[str, pl.DataFrame]:
    """Replay every (device, method, window), each device at its own budget (``jobs.budgets``, A.2);
    return windows/rounds/stages frames. With a sweep's ``store`` (``jobs.sweep_baseline``), target-only
    is replayed once per device and data across the sweep's jobs; ``target_only_reuse`` says where each
    device's rows came from."""
    win_rows, rounds, stages, reuses = [], [], [], []
    roles = source_roles(cfg)
    if "as2d_wo_bc" in names:
        blind = [w.window_id for w in windows if source in w.sources and w.sources[source].confidences is None]
        if blind:
            raise ConfigError("methods", f"as2d_wo_bc stops on confidence, but source {source!r} publishes none "
                              f"(e.g. window {blind[0]}; Tok_T-converted tokens carry no probability). Drop "
                              "as2d_wo_bc or use a same-vocabulary producer, e.g. model=whisper_base_int8")
    todo = [(p, n, rc) for p in profiles for n in names
            for rc in replay_configs(cfg, n, profile_source(p, source, roles), p, device_budget(cfg, p))]
    target = None if store is None else {  # the target's identity, part of target-only's key
        "model": str(cfg.model.name), "target": OmegaConf.to_container(cfg.model.target, resolve=True)}
    for profile, name, rc in tqdm(todo, desc="replay", unit="config"):
        priced = priced_as(windows, profile, roles)
        if store is not None and target is not None and rc.scheme == "target_only":
            key = baseline_key(priced, profile, rc, target)
            rows, reuse = store.rows(priced, profile, key, partial(replay_config, priced, profile, name, rc, True))
            reuses.append({"device": profile.name, "key": reuse.key, "reused": reuse.reused,
                           "computed_by": reuse.computed_by, "path": str(reuse.path)})
            if reuse.reused:  # kept on the FAILED run if a later window raises, like the replayed rows
                for row in rows.windows.iter_rows(named=True):
                    record("replay_windows", row)
        else:
            rows = replay_config(priced, profile, name, rc, keep_rounds)
        win_rows.append(rows.windows)
        if keep_rounds:
            rounds.append(rows.rounds)
            stages.append(rows.stages)
    out = {"windows": M.tps_per_window(pl.concat(win_rows, how="diagonal_relaxed"))}
    if keep_rounds:
        out["rounds"] = pl.concat(rounds, how="diagonal_relaxed")
        out["stages"] = pl.concat(stages, how="diagonal_relaxed")
    if reuses:
        out["target_only_reuse"] = pl.DataFrame(reuses)
    return out


def replay_config(windows: Sequence[Window], profile: DeviceProfile, name: str, rc: ReplayConfig,
                  keep_rounds: bool) -> ConfigRows:
    """One configuration of method ``name`` on every window (audited per replay), as ``ConfigRows``."""
    plans: dict[str, Any] = {}
    win_rows, rounds, stages, outputs = [], [], [], {}
    keys = {"device": profile.name, "method": name, "config": rc.label}
    for w in windows:
        plan = None
        if rc.scheme in DECOUPLED:
            plan = plans.setdefault(w.window_id, producer_plan(w, rc.source, profile))
        r = replay(w, rc, profile, plan=plan)
        outputs[w.window_id] = r.output
        win_rows.append({**keys, "window_id": w.window_id, "dataset": w.dataset, "tokens": r.tokens,
                         "useful_tokens": r.useful_tokens, "time": r.time})
        record("replay_windows", win_rows[-1])  # kept on the FAILED run if a later window raises
        if keep_rounds:
            rounds.append(r.rounds_frame().with_columns(*(pl.lit(v).alias(k) for k, v in keys.items())))
            stages.append(r.stages_frame().with_columns(*(pl.lit(v).alias(k) for k, v in keys.items()
                                                          if k != "config")))
    return ConfigRows(pl.DataFrame(win_rows),
                      pl.concat(rounds, how="diagonal_relaxed") if rounds else None,
                      pl.concat(stages, how="diagonal_relaxed") if stages else None, outputs)


def per_window_method(windows: pl.DataFrame) -> pl.DataFrame:
    """One TPS per (device, method, window): SD averages its widths' TPS within the window (D.1.3)."""
    return windows.group_by(["device", "method", "window_id"], maintain_order=True).agg(
        pl.col("tps").mean(), pl.col("tokens").first(), pl.col("time").mean())


def summarize(frames: dict[str, pl.DataFrame]) -> tuple[pl.DataFrame, dict[str, float]]:
    """Summary table per (device, method) and the flat metric dict logged to MLflow."""
    w = frames["windows"]
    per = per_window_method(w)
    rows, flat = [], {}
    for (device, method), g in w.group_by(["device", "method"], maintain_order=True):
        by_cfg = g.group_by("config", maintain_order=True).agg(  # fixed order: the mean is bit-reproducible
            (pl.col("tokens").sum() / pl.col("time").sum()).alias("tps"))
        row: dict[str, Any] = {"device": device, "method": method, "tps": float(by_cfg["tps"].mean())}
        base = per.filter((pl.col("device") == device) & (pl.col("method") == "target_only"))
        subset = per.filter((pl.col("device") == device) & (pl.col("method") == method))
        if base.height and method != "target_only":
            j = subset.join(base.select("window_id", pl.col("tps").alias("tps_t")), on="window_id")
            row["slowdown_share"] = float((j["tps"] < j["tps_t"]).mean())
        if "rounds" in frames:
            r = frames["rounds"].filter((pl.col("device") == device) & (pl.col("method") == method))
            row.update(acceptance=M.acceptance(r), coverage=M.coverage(r, int(g["tokens"].sum())),
                       readiness=M.readiness(r), k_gt1_share=M.multi_token_share(r),
                       mean_accepted_length=M.mean_accepted_length(r))
        if "stages" in frames:
            s = frames["stages"].filter((pl.col("device") == device) & (pl.col("method") == method))
            ov = M.overlap_table(s, keys=("window_id", "config")) if s.height else None
            if ov is not None and ov.height:
                n_cfg = ov["config"].n_unique()  # SD spans K=5..8: report per configuration, not their sum
                for term in ("D", "V", "O", "H", "T"):
                    row[term] = float(ov[term].sum()) / n_cfg
        rows.append(row)
        for k, v in row.items():
            if k not in ("device", "method") and v is not None:
                flat[f"{device}.{method}.{k}"] = v
    summary = pl.DataFrame(rows)
    base = summary.filter(pl.col("method") == "target_only").select("device", pl.col("tps").alias("tps_t"))
    if base.height:
        summary = summary.join(base, on="device", how="left").with_columns(
            (pl.col("tps") / pl.col("tps_t")).alias("speedup")).drop("tps_t")
        for r in summary.iter_rows(named=True):
            flat[f"{r['device']}.{r['method']}.speedup"] = r["speedup"]
    return summary, flat
