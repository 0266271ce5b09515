"""Job ``sensitivity``: the oracle and the ablations under nominal, low and high concurrent ratios.

D.4.3 repeats the full oracle search "under nominal, low-ratio, and high-ratio scenarios"; D.5.1-D.5.3
replace the extrapolated concurrent/idle ratio of the w/o-BC arm by the profile's stated extremes.
``DeviceProfile.scenario`` makes each variant (only the extrapolated ratio changes: direct concurrent
figures, source, publication and idle costs stay fixed, and with ``fixed_widths: 8`` so do physical
K1-8, as D.4.3 states; the larger, modeled widths move). The deployed (source, budget) is selected
once on the development split under nominal costs and frozen before any scenario (D.2.6): a cost
scenario tests the cost assumption, it does not re-select the deployment.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl
from omegaconf import DictConfig

from workbench.replay.catalog import as2d_catalog, run_catalog
from workbench.replay.profile import DeviceProfile
from workbench.replay.selection import confirm_budget, hindsight_oracle, select_budget
from workbench.replay.sources import priced_as, profile_source
from workbench.replay.trajectory import Window

from . import oracle as oracle_job
from .base import ConfigError, JobResult
from .config import budget, check_widths, devices, methods, source_roles
from .evaluate import evaluate, summarize
from .oracle import _budgets, _splits
from .sweep_baseline import sweep_store
from .windows import cohort_tables, load_windows

SCENARIOS = ("nominal", "low", "high")


def scenarios(cfg: DictConfig) -> list[str]:
    """The configured scenarios, nominal first (the reference every change is measured against)."""
    names = list(cfg.scenarios)
    bad = [s for s in names if s not in SCENARIOS]
    if bad or not names or names[0] != "nominal" or len(set(names)) != len(names):
        raise ConfigError("scenarios", f"a list of distinct {list(SCENARIOS)} starting with 'nominal', got {names}")
    return names


def fixed_widths(cfg: DictConfig) -> int | None:
    """Widths whose concurrent cost stays nominal in every scenario (D.4.3: physical K1-8)."""
    k = cfg.fixed_widths
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise ConfigError("fixed_widths", f"a physical width >= 1, or null, got {k!r}")
    return k


def ratio(profile: DeviceProfile) -> float | None:
    """The concurrent/idle ratio a scenario sets: the constant factor, else the median-ratio fallback."""
    v = profile.verifier
    return v.factor if v.factor is not None else v.fallback_ratio


def validate(cfg: DictConfig) -> None:
    oracle_job.validate(cfg)  # budgets, dataset root, dev and validation shares, priced widths
    budget(cfg)
    names = methods(cfg)
    wanted = scenarios(cfg)
    for p in devices(cfg):
        for s in wanted:
            try:
                check_widths(p.scenario(s, fixed_widths(cfg)), names, cfg)
            except ValueError as err:
                if isinstance(err, ConfigError):
                    raise
                raise ConfigError("scenarios", f"device {p.name!r}: {err}") from err
        for b in _budgets(cfg):
            try:
                p.verify_ms(b + 1, concurrent=True)
            except ValueError as err:
                raise ConfigError("budgets", f"device {p.name!r} does not price width K={b + 1}: {err}") from err


def _oracle_rows(windows: list[Window], profile: DeviceProfile, wanted: list[str], cfg: DictConfig,
                 labels: Mapping[str, str] | None) -> tuple[list[dict[str, Any]], pl.DataFrame]:
    """Freeze the dev-selected pair under nominal costs; repeat the oracle search per scenario."""
    roles = source_roles(cfg)
    ws = priced_as(windows, profile, roles)
    named = cfg.sources or sorted({s for w in windows for s in w.sources})
    sources = [s for s in (profile_source(profile, s, roles) for s in named) if s in profile.sources]
    dev, validation, test = _splits(ws, cfg, labels)  # the oracle job's splits: dev, validation, test
    budgets, workers = _budgets(cfg), int(cfg.workers)
    sel = select_budget(dev, profile, sources, budgets, workers=workers)
    if validation is not None:  # D.2.6: the confirmed pair is the one frozen for test
        conf = confirm_budget(sel, validation, profile, workers=workers)
        sel = replace(sel, source=conf.source, budget=conf.budget, dev_tps=conf.dev_tps)
    rows, per = [], []
    for s in wanted:
        p = profile.scenario(s, fixed_widths(cfg))
        rep = hindsight_oracle(run_catalog(test.windows, as2d_catalog(sources, budgets), p, workers=workers),
                               (sel.source, sel.budget))
        rows.append({"device": profile.name, "scenario": s, "ratio": ratio(p),
                     "selected": f"{sel.source}/b{sel.budget}", "dev_tps": sel.dev_tps,
                     "tps_selected": rep.tps_selected, "tps_oracle": rep.tps_oracle, "oracle_gap": rep.gap,
                     "test_windows": len(test)})
        per.append(rep.per_window.with_columns(pl.lit(profile.name).alias("device"), pl.lit(s).alias("scenario")))
    return rows, pl.concat(per)


def _ablation_rows(windows: list[Window], profile: DeviceProfile, wanted: list[str], names: list[str],
                   cfg: DictConfig, source: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Every ablation arm replayed under each scenario: pooled TPS and the change from nominal."""
    summaries, per = [], []
    for s in wanted:
        p = profile.scenario(s, fixed_widths(cfg))
        frames = evaluate(windows, names, [p], cfg, source, keep_rounds=False, store=sweep_store())
        summary, _ = summarize(frames)
        tag = (pl.lit(profile.name).alias("device"), pl.lit(s).alias("scenario"))
        summaries.append(summary.select("method", "tps", *([c for c in ("speedup",) if c in summary.columns]))
                         .with_columns(*tag, pl.lit(ratio(p)).alias("ratio")))
        per.append(frames["windows"].with_columns(*tag))
    table = pl.concat(summaries, how="diagonal_relaxed")
    nominal = table.filter(pl.col("scenario") == "nominal").select("method", pl.col("tps").alias("tps_nominal"))
    table = table.join(nominal, on="method", how="left").with_columns(
        (100.0 * (pl.col("tps") / pl.col("tps_nominal") - 1.0)).alias("change_pct")).drop("tps_nominal")
    return table.select("device", "scenario", "ratio", "method", "tps", *(
        [c for c in ("speedup",) if c in table.columns]), "change_pct"), pl.concat(per, how="diagonal_relaxed")


def run(cfg: DictConfig, out: Path) -> JobResult:
    windows = load_windows(cfg)
    names, wanted = methods(cfg), scenarios(cfg)
    source = cfg.source or next(iter(windows[0].sources), None)
    cohort = cohort_tables(cfg).get("cohort")
    labels = dict(zip(cohort["window_id"], cohort["split"], strict=True)) if cohort is not None else None
    oracle_rows, oracle_per, abl, abl_windows = [], [], [], []
    for profile in devices(cfg):
        rows, per = _oracle_rows(windows, profile, wanted, cfg, labels)
        oracle_rows += rows
        oracle_per.append(per)
        t, w = _ablation_rows(windows, profile, wanted, names, cfg, source)
        abl.append(t)
        abl_windows.append(w)
    oracle = pl.DataFrame(oracle_rows)
    ablation = pl.concat(abl)
    metrics: dict[str, float] = {}
    for r in oracle.iter_rows(named=True):
        for k in ("tps_selected", "tps_oracle", "oracle_gap"):
            metrics[f"{r['device']}.{r['scenario']}.{k}"] = r[k]
    for r in ablation.iter_rows(named=True):
        metrics[f"{r['device']}.{r['scenario']}.{r['method']}.tps"] = r["tps"]
    # The printed table names the scenario in the device column (k70_pro@high), as scenario() names it.
    shown = ablation.with_columns(pl.when(pl.col("scenario") == "nominal").then(pl.col("device"))
                                  .otherwise(pl.format("{}@{}", "device", "scenario")).alias("device"))
    oracle_shown = oracle.with_columns(pl.lit("oracle").alias("method"), pl.col("tps_selected").alias("tps"),
                                       pl.when(pl.col("scenario") == "nominal").then(pl.col("device"))
                                       .otherwise(pl.format("{}@{}", "device", "scenario")).alias("device"))
    summary = pl.concat([shown, oracle_shown.select("device", "method", "selected", "tps", "tps_oracle",
                                                    "oracle_gap")], how="diagonal_relaxed")
    tables = {"sensitivity_oracle": oracle, "sensitivity_oracle_windows": pl.concat(oracle_per),
              "sensitivity_ablation": ablation, "windows": pl.concat(abl_windows, how="diagonal_relaxed"),
              "summary": summary, **({"cohort": cohort} if cohort is not None else {})}
    tags = {"synthetic": str(bool(cfg.dataset.synthetic)), "source": str(source), "scenarios": ",".join(wanted)}
    return JobResult(metrics, tables, {}, summary, tags)
