"""The embedded default (``python -m workbench.run``): the whole workbench on real speech, offline.

1. demo corpus: piper speech of project texts + real LibriVox/cards clips (cached);
2. traces from the real offline Whisper pair (cached, resumable);
3. replay of every method under the host profile and the four phone profiles, each phone at its own
   deployed budget (``budget_from: profile``; the host at ``model.budget``);
4. budget selection on the dev split and the hindsight oracle on the test split, per device (a paper
   dataset, ``dataset=<name> dataset.root=DIR dataset.split=all``: its cohort's own dev and test rows);
5. native host runs of the methods on the test windows (producer in its own process);
6. one summary table, figures, and everything logged to MLflow by the entry point.
"""

from __future__ import annotations

import logging
from pathlib import Path

import polars as pl
from omegaconf import DictConfig

from workbench.figures.paper import (
    batching_saving,
    budget_tradeoff,
    decomposition,
    replay_error,
    timeline,
    tps_cdf,
)
from workbench.tracking.run_records import source_names
from workbench.tracking.store import flatten

from .base import ConfigError, JobResult
from .budgets import budget_table, check_device_budgets, device_budget
from .config import budget, check_models, check_widths, device_profile, methods, repeat_rule
from .corpus_accounting import corpus_accounting
from .demo_traces import demo_corpus, demo_windows, load_model_pair
from .evaluate import evaluate, per_window_method, summarize
from .oracle import select_and_oracle
from .windows import check_dataset_root, cohort_labels

log = logging.getLogger(__name__)


def _profiles(cfg: DictConfig) -> list:
    names = list(cfg.devices or [])
    profiles = []
    for n in names:
        try:
            profiles.append(device_profile(str(n), cfg))
        except (ConfigError, FileNotFoundError) as err:
            if n == "host":  # the host profile comes from `experiment=calibrate_host`
                log.warning("no host profile (%s); run `python -m workbench.run experiment=calibrate_host`", err)
                continue
            raise
    return profiles


def validate(cfg: DictConfig) -> None:
    budget(cfg)
    names = methods(cfg)
    if cfg.dataset.synthetic:
        raise ConfigError("dataset", "the demo runs on real speech: use dataset=demo")
    if cfg.dataset.get("loader"):  # a paper dataset: the cohort's dev rows select, its test rows report
        if str(cfg.dataset.get("split")) != "all":
            raise ConfigError("dataset.split", f"the demo selects on the cohort's dev rows and reports its test rows, "
                              f"and split={cfg.dataset.get('split')} holds one split",
                              fix="set dataset.split=all")
        check_dataset_root(cfg)
    if cfg.native.enabled:
        repeat_rule(cfg.native)
    check_models(cfg)  # before the profiles: a fresh machine's host profile is calibrated with these weights
    profiles = _profiles(cfg)
    check_device_budgets(cfg, profiles)
    for p in profiles:
        check_widths(p, names, cfg, device_budget(cfg, p))


def saving_frame(profiles: list) -> pl.DataFrame:
    """R(K) = 100 (1 - V(K) / (K V(1))) per profile (eq. 2, Fig. 8)."""
    rows = []
    for p in profiles:
        v1 = p.verify_ms(1)
        for k in p.verifier.widths():
            if 2 <= k <= 16:
                rows.append({"device": p.name, "K": k, "saving_pct": 100 * (1 - p.verify_ms(k) / (k * v1)),
                             "provenance": "this run (host)" if p.name == "host" else "paper (phones)"})
    return pl.DataFrame(rows)


def run(cfg: DictConfig, out: Path) -> JobResult:
    pair = load_model_pair(cfg)
    windows = demo_windows(cfg, pair)
    labels = cohort_labels(cfg, windows)  # a paper dataset's own dev/test rows: never split again
    profiles = _profiles(cfg)
    names = methods(cfg)
    frames = evaluate(windows, names, profiles, cfg, cfg.source)
    summary, metrics = summarize(frames)
    summary = summary.with_columns(pl.lit("replay").alias("clock"))
    tables = {**frames, "per_window": per_window_method(frames["windows"])}
    sel_rows = []
    for p in profiles:
        m, t, row = select_and_oracle(windows, p, cfg, oracle=True, labels=labels)
        metrics.update(m)
        tables.update(t)
        sel_rows.append(row)
    tables["selection"] = pl.DataFrame(sel_rows)
    tables["device_budgets"] = budget_table(cfg, profiles)  # each phone at its deployed budget (A.2, D.2.6)
    corpus_metrics, tables["corpus_accounting"] = corpus_accounting(cfg, windows)  # D.1.2
    metrics.update(corpus_metrics)
    figures = {
        "tps_cdf": tps_cdf(tables["per_window"]),
        "batching_saving": batching_saving(saving_frame(profiles)),
        "budget_tradeoff": budget_tradeoff(pl.concat([t for k, t in tables.items() if k.startswith("dev_budgets_")]),
                                          names=source_names(flatten(cfg))),
    }
    if cfg.native.enabled:
        from .native_demo import native_runs

        host = next((p for p in profiles if p.name == "host"), None)
        nat = native_runs(cfg, pair, windows, host, labels, store=out / "native_runs.json")
        tables.update(nat.tables)
        metrics.update(nat.metrics)
        summary = pl.concat([summary, nat.summary], how="diagonal_relaxed")
        if nat.timeline is not None:
            figures["timeline"] = timeline(*nat.timeline)
        if "agreement" in nat.tables:
            figures["replay_error"] = replay_error(nat.tables["agreement"])
    dec = summary.filter(pl.col("D").is_not_null()).unpivot(
        index=["device", "method"], on=["D", "V", "O", "H"], variable_name="term", value_name="seconds"
    ).with_columns(pl.format("{}/{}", "device", "method").alias("method"))
    figures["decomposition"] = decomposition(dec)
    metrics["windows"] = float(len(windows))
    metrics["exactness_mismatches"] = float(metrics.get("native.mismatches", 0.0))
    tags = {"synthetic": "False", "corpus_windows": str(len(demo_corpus(cfg).clips))}
    # the D.3 run store, when native runs wrote one: an MLflow artifact beside the tables
    return JobResult(metrics, {**tables, "summary": summary}, figures, summary, tags, files=[out / "native_runs.json"])
