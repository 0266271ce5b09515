"""Jobs ``budget_select`` (D.2.6) and ``oracle`` (D.4.3, Table 2).

Selection sees the development split only -- ``select_budget`` refuses anything else -- and runs
per device. The oracle reports on the test split: per window, the minimum-time eligible (source,
budget) at zero selection cost, against the fixed selected pair and against each device's own
deployed pair (the run's source at ``jobs.budgets.device_budget``: b = 7 on K70 Pro, Xiaomi 11 Pro,
Xiaomi 14, b = 3 on Note 9 Pro under ``budget_from: profile``; A.2, D.2.6).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import polars as pl
from omegaconf import DictConfig

from workbench.figures.paper import budget_tradeoff
from workbench.metrics import oracle_gap
from workbench.replay.catalog import as2d_catalog, run_catalog
from workbench.replay.profile import DeviceProfile
from workbench.replay.selection import (
    SHORTLIST,
    confirm_budget,
    dev_test_from_labels,
    fixed_config_times,
    hindsight_oracle,
    select_budget,
    split_three,
    split_windows,
    splits_from_labels,
)
from workbench.replay.sources import priced_as, profile_source
from workbench.replay.trajectory import Window
from workbench.tracking.run_records import source_names
from workbench.tracking.store import flatten

from .base import ConfigError, JobResult
from .budgets import budget_origin, check_device_budgets, device_budget
from .config import devices, source_roles
from .corpus_accounting import corpus_accounting
from .windows import check_dataset_root, cohort_tables, load_windows


def _budgets(cfg: DictConfig) -> list[int]:
    budgets = list(cfg.budgets)
    bad = [b for b in budgets if not isinstance(b, int) or not 1 <= b <= 24]
    if bad:
        raise ConfigError("budgets", f"budgets must be integers in [1, 24], got {bad}")
    return budgets


def _shortlist(cfg: DictConfig) -> int | None:
    """``validation_shortlist``: how many dev-screened settings validation ranks; null = the full grid."""
    n = cfg.get("validation_shortlist", SHORTLIST)
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise ConfigError("validation_shortlist", f"must be an integer >= 1, or null for the full source x budget "
                                                  f"grid (D.2.6), got {n!r}")
    return n


def validate(cfg: DictConfig) -> None:
    budgets = _budgets(cfg)
    _shortlist(cfg)
    check_dataset_root(cfg)
    frac = cfg.dataset.dev_fraction
    if not 0 < frac < 1:
        raise ConfigError("dataset.dev_fraction", f"must be in (0, 1), got {frac}")
    vfrac = cfg.validation_fraction
    if isinstance(vfrac, bool) or not isinstance(vfrac, (int, float)) or not 0 <= vfrac < 1 - frac:
        raise ConfigError("validation_fraction",
                          f"must be in [0, 1 - dataset.dev_fraction = {1 - frac:g}), got {vfrac!r}")
    profiles = devices(cfg)
    check_device_budgets(cfg, profiles)
    for p in profiles:
        for b in sorted({*budgets, device_budget(cfg, p)}):
            try:
                p.verify_ms(b + 1)
            except ValueError as err:
                raise ConfigError("budgets", f"device {p.name!r} does not price width K={b + 1}: {err}") from err


def _splits(ws: list[Window], cfg: DictConfig, labels: Mapping[str, str] | None) -> tuple:
    """(dev, validation or None, test): the cohort's own splits when its labels name dev windows (D.2.6;
    validation when it drew one), else a seeded split with ``validation_fraction`` of the windows
    confirming the dev screen. A cohort's dev and test rows are never split again."""
    present = {labels.get(w.window_id) for w in ws} if labels else set()
    if labels and {"dev", "validation"} <= present:
        return splits_from_labels(ws, labels, seed=int(cfg.seed))
    if labels and {"dev", "test"} <= present:
        dev, test = dev_test_from_labels(ws, labels, seed=int(cfg.seed))
        return dev, None, test
    n_dev = max(1, round(len(ws) * cfg.dataset.dev_fraction))
    n_val = round(len(ws) * cfg.validation_fraction)
    if n_val:
        return split_three(ws, n_dev, n_val, seed=int(cfg.seed))
    dev, test = split_windows(ws, n_dev, seed=int(cfg.seed))
    return dev, None, test


def select_and_oracle(windows: list[Window], profile: DeviceProfile, cfg: DictConfig, *, oracle: bool = True,
                      labels: Mapping[str, str] | None = None,
                      ) -> tuple[dict[str, float], dict[str, pl.DataFrame], dict]:
    """Screen on the dev split, confirm on validation when there is one, freeze; then (optionally) the
    hindsight oracle on the test split. ``labels``: window id -> the cohort manifest's split."""
    roles = source_roles(cfg)
    ws = priced_as(windows, profile, roles)
    sources = [profile_source(profile, s, roles) for s in (cfg.sources or sorted({s for w in windows
                                                                                        for s in w.sources}))]
    sources = [s for s in sources if s in profile.sources]
    dev, validation, test = _splits(ws, cfg, labels)
    budgets, workers, d = _budgets(cfg), int(cfg.workers), profile.name
    sel = select_budget(dev, profile, sources, budgets, workers=workers)
    frozen = (sel.source, sel.budget)
    tables = {f"dev_budgets_{d}": sel.table.with_columns(pl.lit(d).alias("device"))}
    metrics = {f"{d}.selected_budget": float(sel.budget), f"{d}.dev_tps": sel.dev_tps}
    deployed = (profile_source(profile, str(cfg.source), roles), device_budget(cfg, profile))
    row = {"device": d, "method": "as2d", "selected": f"{sel.source}/b{sel.budget}", "dev_tps": sel.dev_tps,
           "deployed": f"{deployed[0]}/b{deployed[1]}", "deployed_budget": deployed[1],
           "budget_origin": budget_origin(cfg, profile), "dev_windows": len(dev), "test_windows": len(test)}
    metrics[f"{d}.deployed_budget"] = float(deployed[1])
    if validation is not None:  # D.2.6: confirm the dev shortlist on validation, freeze before test
        conf = confirm_budget(sel, validation, profile, shortlist=_shortlist(cfg), workers=workers)
        frozen = (conf.source, conf.budget)
        tables[f"validation_{d}"] = conf.table.with_columns(pl.lit(d).alias("device"))
        metrics.update({f"{d}.selected_budget": float(conf.budget), f"{d}.dev_tps": conf.dev_tps,
                        f"{d}.validation_settings": float(conf.table.height),
                        f"{d}.validation_tps": conf.validation_tps, f"{d}.dev_pick_retained": float(conf.retained)})
        row.update(selected=f"{conf.source}/b{conf.budget}", screened=f"{sel.source}/b{sel.budget}",
                   dev_tps=conf.dev_tps, validation_tps=conf.validation_tps, validation_windows=len(validation))
    row.update(source=frozen[0], budget=frozen[1])
    if oracle:
        catalog = run_catalog(test.windows, as2d_catalog(sources, budgets), profile, workers=workers)
        rep = hindsight_oracle(catalog, frozen)
        datasets = pl.DataFrame({"window_id": [w.window_id for w in ws], "dataset": [w.dataset for w in ws]})
        per = rep.per_window.join(datasets, on="window_id", how="left").with_columns(pl.lit(d).alias("device"))
        row.update(tps=rep.tps_selected, tps_oracle=rep.tps_oracle, oracle_gap=rep.gap)
        metrics.update({f"{d}.tps_selected": rep.tps_selected, f"{d}.tps_oracle": rep.tps_oracle,
                        f"{d}.oracle_gap": rep.gap})
        if deployed[0] in sources:
            per, tps_dep = _deployed(per, catalog, test.windows, sources, deployed, profile, workers)
            gap = oracle_gap(tps_dep, rep.tps_oracle)
            row.update(tps_deployed=tps_dep, oracle_gap_deployed=gap)
            metrics.update({f"{d}.tps_deployed": tps_dep, f"{d}.oracle_gap_deployed": gap})
        tables[f"oracle_{d}"] = per
    return metrics, tables, row


def _deployed(per: pl.DataFrame, catalog: pl.DataFrame, test: tuple[Window, ...], sources: list[str],
              deployed: tuple[str, int], profile: DeviceProfile, workers: int) -> tuple[pl.DataFrame, float]:
    """The deployed pair's per-window time (column ``deployed_time``) and pooled TPS on the test split.

    A deployed budget outside the oracle's ``budgets`` is replayed on its own: it never joins the
    oracle's search space."""
    if deployed[1] not in set(catalog["budget"]):
        catalog = run_catalog(test, as2d_catalog(sources, [deployed[1]]), profile, workers=workers)
    t = fixed_config_times(catalog, *deployed).select("window_id", pl.col("time").alias("deployed_time"))
    per = per.join(t, on="window_id", how="left")
    return per, float(per["tokens"].sum() / per["deployed_time"].sum())


def run(cfg: DictConfig, out: Path) -> JobResult:
    windows = load_windows(cfg)
    cohort = cohort_tables(cfg).get("cohort")
    labels = dict(zip(cohort["window_id"], cohort["split"], strict=True)) if cohort is not None else None
    metrics, tables, rows = {}, {}, []
    for profile in devices(cfg):
        m, t, row = select_and_oracle(windows, profile, cfg, oracle=cfg.job == "oracle", labels=labels)
        metrics.update(m)
        tables.update(t)
        rows.append(row)
    corpus_metrics, tables["corpus_accounting"] = corpus_accounting(cfg, windows)  # D.1.2
    metrics.update(corpus_metrics)
    budgets_all = pl.concat([t for k, t in tables.items() if k.startswith("dev_budgets_")])
    summary = pl.DataFrame(rows)
    figures = {"budget_tradeoff": budget_tradeoff(budgets_all, names=source_names(flatten(cfg)))}
    return JobResult(metrics, {**tables, "summary": summary, **cohort_tables(cfg)}, figures, summary,
                     {"synthetic": str(bool(cfg.dataset.synthetic))})
