"""Shared pieces of the Hydra jobs: windows, devices, method configurations, evaluation frames.

Everything a job reports comes out of ``evaluate``: per-window, per-round and per-stage frames
for every (device, method), plus the summary metrics -- the same frames whether the rounds came
from replay or from the native clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl
from omegaconf import DictConfig, OmegaConf
from tqdm import tqdm

from workbench import metrics as M
from workbench.replay.engine import ReplayConfig, producer_plan, replay
from workbench.replay.profile import DeviceProfile, MissingWidthError, load_profile, parse_profile
from workbench.replay.trajectory import Window

from .base import ConfigError

CONF = Path(__file__).resolve().parents[2] / "conf"
DECOUPLED = ("as2d", "as2d_wo_bc")


def method_cfg(cfg: DictConfig, name: str) -> dict[str, Any]:
    """Settings of method ``name``: the composed ``method`` group if it is that one, else its file."""
    if cfg.method.get("name") == name:
        return OmegaConf.to_container(cfg.method, resolve=True)
    path = CONF / "method" / f"{name}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in (CONF / "method").glob("*.yaml"))
        raise ConfigError("methods", f"unknown method {name!r}; choose from {known}")
    return OmegaConf.to_container(OmegaConf.load(path), resolve=True)


def methods(cfg: DictConfig) -> list[str]:
    names = list(cfg.methods) if cfg.get("methods") else [cfg.method.name]
    for n in names:
        method_cfg(cfg, n)
    return names


def budget(cfg: DictConfig) -> int:
    b = cfg.model.get("budget")
    if isinstance(b, bool) or not isinstance(b, int) or not 1 <= b <= 24:
        raise ConfigError("model.budget", f"must be an integer proposal budget in [1, 24], got {b!r}")
    return b


def replay_configs(cfg: DictConfig, name: str, source: str | None,
                   profile: DeviceProfile | None = None) -> list[ReplayConfig]:
    """The replay configurations behind one method; standard SD averages its widths (D.1.3).

    ASP's cap is per device, as in the paper (24 on K70, 14 where K16+ was never measured,
    D.2.3): a cap beyond the profile's widest priced width is lowered to fit, and the config
    label (``asp/cap14``) says so.
    """
    m = method_cfg(cfg, name)
    b = budget(cfg)
    if profile is not None and name in ("asp", "as2d_wo_bc"):
        m["cap"] = min(int(m.get("cap", 24)), max(profile.verifier.widths()) - 1)
    if name == "target_only":
        return [ReplayConfig("target_only")]
    if name == "sd":
        return [ReplayConfig("sd", width=int(k)) for k in m.get("widths") or [m.get("width", 8)]]
    if name == "asp":
        return [ReplayConfig("asp", threshold=m.get("threshold", 0.4), cap=m.get("cap", 24))]
    if name == "as2d":
        return [ReplayConfig("as2d", source=source, budget=b, span=m.get("span", 8))]
    if name == "as2d_wo_td":
        return [ReplayConfig("as2d_wo_td", budget=b, threshold=m.get("threshold", 0.4))]
    if name == "as2d_wo_bc":
        return [ReplayConfig("as2d_wo_bc", source=source, threshold=m.get("threshold", 0.4),
                             cap=m.get("cap", 24), span=m.get("span", 8))]
    raise ConfigError("method.name", f"unknown method {name!r}")


def check_models(cfg: DictConfig, roles: Sequence[str] = ("target", "drafter", "serial_drafter")) -> None:
    """Fail before any work if a model's weights cannot be found (one error, three remedies)."""
    from workbench.models.registry import MissingWeightsError, ModelSpec, resolve_weights

    for role in roles:
        block = cfg.model.get(role)
        if block is None:
            continue
        try:
            resolve_weights(ModelSpec.from_dict(OmegaConf.to_container(block, resolve=True)))
        except MissingWeightsError as err:
            raise ConfigError(f"model.{role}", str(err)) from err


def device_profile(name_or_cfg: str | DictConfig) -> DeviceProfile:
    if isinstance(name_or_cfg, str):
        try:
            return load_profile(name_or_cfg)
        except FileNotFoundError as err:
            raise ConfigError("device", str(err)) from err
    raw = OmegaConf.to_container(name_or_cfg, resolve=True)
    return parse_profile(raw, file=f"conf/device/{raw.get('name', '?')}.yaml")


def devices(cfg: DictConfig) -> list[DeviceProfile]:
    """``devices: [..]`` for multi-device jobs, else the composed ``device`` group."""
    if cfg.get("devices"):
        return [device_profile(str(d)) for d in cfg.devices]
    return [device_profile(cfg.device)]


def check_widths(profile: DeviceProfile, names: Sequence[str], cfg: DictConfig) -> None:
    """Fail before any work if a method needs a physical width the profile does not price."""
    for name in names:
        for rc in replay_configs(cfg, name, None, profile):
            widest = rc.widest_width
            try:
                profile.verify_ms(widest)
            except MissingWidthError as err:
                raise ConfigError("model.budget" if "as2d" in name else "method",
                                  f"{name} needs physical width K={widest}, but device {profile.name!r} "
                                  f"does not price it ({err})") from err


def source_roles(cfg: DictConfig) -> dict[str, list[str]]:
    """Role -> profile source names to try: the pair's own producer model, then ``source_roles``."""
    roles = {k: [v] for k, v in OmegaConf.to_container(cfg.get("source_roles") or {}, resolve=True).items()}
    producer = (cfg.get("model") or {}).get("drafter") or {}
    if producer.get("name"):
        roles.setdefault("producer", []).insert(0, str(producer["name"]))  # e.g. the host's measured tiny.en
    return roles


def profile_source(profile: DeviceProfile, source: str | None, roles: dict[str, list[str]]) -> str | None:
    """The profile's name for a trace source.

    Traces name sources by role (``producer``, ``chunk``); a phone profile prices the paper's
    sources (``qwen``, ``parakeet``) and the host profile the measured model (``whisper-tiny.en``).
    Order: the same name; the pair's producer model name; the configured ``source_roles`` name; else
    the profile's only source of the role's kind (autoregressive for ``producer``, chunk for
    ``chunk``). Never a guess among several.
    """
    if source is None or source in profile.sources:
        return source
    for name in roles.get(source, []):
        if name in profile.sources:
            return name
    kind = {"producer": "autoregressive", "chunk": "chunk"}.get(source)
    same = [n for n, c in profile.sources.items() if c.kind == kind]
    return same[0] if len(same) == 1 else (roles.get(source) or [source])[-1]


def priced_as(windows: Sequence[Window], profile: DeviceProfile, roles: dict[str, list[str]]) -> list[Window]:
    """Windows whose sources carry the profile's names (see ``profile_source``)."""
    out = []
    for w in windows:
        if all(s in profile.sources for s in w.sources):
            out.append(w)
            continue
        renamed = {}
        for s, track in w.sources.items():
            name = profile_source(profile, s, roles)
            renamed[name] = replace(track, source=name)
        out.append(replace(w, sources=renamed))
    return out


def evaluate(windows: Sequence[Window], names: Sequence[str], profiles: Sequence[DeviceProfile],
             cfg: DictConfig, source: str, keep_rounds: bool = True) -> dict[str, pl.DataFrame]:
    """Replay every (device, method, window); return windows/rounds/stages frames."""
    win_rows, rounds, stages = [], [], []
    roles = source_roles(cfg)
    if "as2d_wo_bc" in names:
        blind = [w.window_id for w in windows if source in w.sources and w.sources[source].confidences is None]
        if blind:
            raise ConfigError("methods", f"as2d_wo_bc stops on confidence, but source {source!r} publishes none "
                              f"(e.g. window {blind[0]}; Tok_T-converted tokens carry no probability). Drop "
                              "as2d_wo_bc or use a same-vocabulary producer, e.g. model=whisper_base_int8")
    todo = [(p, n, rc) for p in profiles for n in names
            for rc in replay_configs(cfg, n, profile_source(p, source, roles), p)]
    for profile, name, rc in tqdm(todo, desc="replay", unit="config"):
        plans: dict[str, Any] = {}
        for w in priced_as(windows, profile, roles):
            plan = None
            if rc.scheme in DECOUPLED:
                plan = plans.setdefault(w.window_id, producer_plan(w, rc.source, profile))
            r = replay(w, rc, profile, plan=plan)
            keys = {"device": profile.name, "method": name, "config": rc.label}
            win_rows.append({**keys, "window_id": w.window_id, "dataset": w.dataset, "tokens": r.tokens,
                             "time": r.time})
            if keep_rounds:
                rounds.append(r.rounds_frame().with_columns(*(pl.lit(v).alias(k) for k, v in keys.items())))
                stages.append(r.stages_frame().with_columns(*(pl.lit(v).alias(k) for k, v in keys.items()
                                                              if k != "config")))
    out = {"windows": M.tps_per_window(pl.DataFrame(win_rows))}
    if keep_rounds:
        out["rounds"] = pl.concat(rounds, how="diagonal_relaxed")
        out["stages"] = pl.concat(stages, how="diagonal_relaxed")
    return out


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
        by_cfg = g.group_by("config").agg((pl.col("tokens").sum() / pl.col("time").sum()).alias("tps"))
        row: dict[str, Any] = {"device": device, "method": method, "tps": float(by_cfg["tps"].mean())}
        base = per.filter((pl.col("device") == device) & (pl.col("method") == "target_only"))
        mine = per.filter((pl.col("device") == device) & (pl.col("method") == method))
        if base.height and method != "target_only":
            j = mine.join(base.select("window_id", pl.col("tps").alias("tps_t")), on="window_id")
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
