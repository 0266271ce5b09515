"""Jobs ``budget_select`` (D.2.6) and ``oracle`` (D.4.3, Table 2).

Selection sees the development split only -- ``select_budget`` refuses anything else -- and the
oracle reports on the test split: per window, the minimum-time eligible (source, budget) at zero
selection cost, against the fixed selected pair.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
from omegaconf import DictConfig

from workbench.figures.paper import budget_tradeoff
from workbench.replay.catalog import as2d_catalog, run_catalog
from workbench.replay.selection import hindsight_oracle, select_budget, split_windows

from .base import ConfigError, JobResult
from .common import devices
from .windows import load_windows


def _budgets(cfg: DictConfig) -> list[int]:
    budgets = list(cfg.get("budgets") or range(1, 25))
    bad = [b for b in budgets if not isinstance(b, int) or not 1 <= b <= 24]
    if bad:
        raise ConfigError("budgets", f"budgets must be integers in [1, 24], got {bad}")
    return budgets


def validate(cfg: DictConfig) -> None:
    budgets = _budgets(cfg)
    frac = cfg.dataset.get("dev_fraction", 0.25)
    if not 0 < frac < 1:
        raise ConfigError("dataset.dev_fraction", f"must be in (0, 1), got {frac}")
    for p in devices(cfg):
        for b in budgets:
            try:
                p.verify_ms(b + 1)
            except ValueError as err:
                raise ConfigError("budgets", f"device {p.name!r} does not price width K={b + 1}: {err}") from err


def run(cfg: DictConfig, out: Path) -> JobResult:
    windows = load_windows(cfg)
    sources = list(cfg.get("sources") or sorted({s for w in windows for s in w.sources}))
    n_dev = max(1, round(len(windows) * cfg.dataset.get("dev_fraction", 0.25)))
    dev, test = split_windows(windows, n_dev, seed=int(cfg.get("seed", 0)))
    budgets = _budgets(cfg)
    metrics, rows, tables, figures = {}, [], {}, {}
    for profile in devices(cfg):
        sel = select_budget(dev, profile, sources, budgets, workers=int(cfg.get("workers", 2)))
        d = profile.name
        tables[f"dev_budgets_{d}"] = sel.table.with_columns(pl.lit(d).alias("device"))
        metrics[f"{d}.selected_budget"] = sel.budget
        metrics[f"{d}.dev_tps"] = sel.dev_tps
        row = {"device": d, "selected": f"{sel.source}/b{sel.budget}", "dev_tps": sel.dev_tps}
        if cfg.job == "oracle":
            catalog = run_catalog(test.windows, as2d_catalog(sources, budgets), profile,
                                  workers=int(cfg.get("workers", 2)))
            rep = hindsight_oracle(catalog, (sel.source, sel.budget))
            tables[f"oracle_{d}"] = rep.per_window.with_columns(pl.lit(d).alias("device"))
            row.update(tps=rep.tps_selected, tps_oracle=rep.tps_oracle, oracle_gap=rep.gap)
            metrics.update({f"{d}.tps_selected": rep.tps_selected, f"{d}.tps_oracle": rep.tps_oracle,
                            f"{d}.oracle_gap": rep.gap})
        rows.append(row)
    budgets_all = pl.concat([t for k, t in tables.items() if k.startswith("dev_budgets_")])
    figures["budget_tradeoff"] = budget_tradeoff(budgets_all)
    summary = pl.DataFrame(rows)
    metrics["dev_windows"], metrics["test_windows"] = float(len(dev)), float(len(test))
    return JobResult(metrics, {**tables, "summary": summary}, figures, summary,
                     {"synthetic": str(bool(cfg.dataset.get("synthetic")))})
