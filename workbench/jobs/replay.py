"""Jobs ``replay`` (one or more devices, several methods) and ``ablation`` (w/o TD, w/o BC).

Saved trajectories are priced with calibrated per-device costs; every replay is audited
(committed output equals the greedy reference, candidates were published before use, widths
exist in the profile), so ``exactness_mismatches`` is 0 or the job fails loudly.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
from omegaconf import DictConfig

from workbench import metrics as M
from workbench.figures.paper import decomposition, tps_cdf
from workbench.replay.metadata import device_table

from .base import ConfigError, JobResult
from .budgets import budget_table, check_device_budgets, device_budget
from .config import budget, check_widths, devices, methods
from .corpus_accounting import corpus_accounting
from .evaluate import evaluate, per_window_method, summarize
from .sweep_baseline import sweep_store
from .windows import check_dataset_root, cohort_tables, load_windows, quality_report


def validate(cfg: DictConfig) -> None:
    budget(cfg)
    check_dataset_root(cfg)
    names = methods(cfg)
    if cfg.job == "ablation" and not {"as2d_wo_td", "as2d_wo_bc"} <= set(names):
        raise ConfigError("methods", "the ablation job compares as2d with as2d_wo_td and as2d_wo_bc")
    profiles = devices(cfg)
    check_device_budgets(cfg, profiles)
    for profile in profiles:
        check_widths(profile, names, cfg, device_budget(cfg, profile))


def work_tables(frames: dict[str, pl.DataFrame], per: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """Table 10 (work behind each configuration's TPS) and Table 11 (per-window change by regime)."""
    out = {"work_by_config": M.work_by_config(frames["windows"], frames["rounds"])} if "rounds" in frames else {}
    if (per["method"] == "target_only").any() and per["method"].n_unique() > 1:
        datasets = frames["windows"].select("window_id", "dataset").unique()
        out["regime_changes"] = M.regime_changes(per.join(datasets, on="window_id", how="left"))
    return out


def run(cfg: DictConfig, out: Path) -> JobResult:
    windows = load_windows(cfg)
    source = cfg.source or next(iter(windows[0].sources), None)
    profiles = devices(cfg)
    frames = evaluate(windows, methods(cfg), profiles, cfg, source, store=sweep_store())  # target-only once a sweep
    summary, flat = summarize(frames)
    flat["exactness_mismatches"] = 0.0  # audited per replay; a mismatch raises before this line
    flat["windows"] = float(len(windows))
    quality, quality_tables = quality_report(cfg, windows)  # describes the target: every method reproduces it
    flat.update(quality)
    corpus_metrics, corpus = corpus_accounting(cfg, windows)  # D.1.2: requests, distinct audio, hours, tokens
    flat.update(corpus_metrics)
    per = per_window_method(frames["windows"])
    figures = {"tps_cdf": tps_cdf(per)}
    if "D" in summary.columns:
        dec = summary.unpivot(index=["device", "method"], on=["D", "V", "O", "H"], variable_name="term",
                              value_name="seconds").with_columns(pl.format("{}/{}", "device", "method").alias("method"))
        figures["decomposition"] = decomposition(dec)
    tags = {"synthetic": str(bool(cfg.dataset.synthetic)), "source": str(source)}
    tables = {**frames, "per_window": per, "summary": summary, "device_budgets": budget_table(cfg, profiles),
              "corpus_accounting": corpus,
              **cohort_tables(cfg), **quality_tables}
    tables.update(work_tables(frames, per))
    phones = [p for p in profiles if p.metadata is not None]
    if phones:  # Table 6 (D.1.1): what each replayed phone is and how the paper deployed on it
        tables["device_metadata"] = device_table(phones)
    return JobResult(flat, tables, figures, summary, tags)
