"""Job ``tasks``: Table 3 -- translation and spoken QA under the pair's own phone costs (D.1.2, D.4.4).

The run's windows (one task dataset: CoVoST 2 en->zh / zh->en, Spoken SQuAD; or synthetic
trajectories) are replayed with every method on each device, each device priced by the model
pair's own cost block (``replay.targets``: Omni-7B/3B under K70 costs) and spoken QA publishing
cumulative prefixes (``jobs.windows.with_publication``). Table 3's quantities, per (device,
dataset, method):

* TPS over **useful** tokens: "All TPS values pool useful target tokens over post-prefill,
  resource-complete replay time; useful tokens exclude EOS and the first token selected during
  prefill" (D.1.2); a method's fixed configurations are averaged as in Table 8;
* conditional acceptance (accepted / proposed candidates), accepted-token coverage (accepted
  candidates / useful tokens) and the share of verification rounds with K > 1 (D.4.4);
* As²d's gain over the fastest baseline (Table 3's Gain row).
"""

from __future__ import annotations

from pathlib import Path

import altair as alt
import polars as pl
from omegaconf import DictConfig

from workbench import metrics as M
from workbench.figures.paper import _title

from .base import JobResult
from .budgets import budget_table
from .config import devices, methods
from .corpus_accounting import corpus_accounting
from .evaluate import evaluate
from .replay import validate as replay_validate
from .sweep_baseline import sweep_store
from .windows import load_windows, quality_report

BASELINES = ("target_only", "sd", "asp")


def validate(cfg: DictConfig) -> None:
    replay_validate(cfg)


def task_table(frames: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """Table 3's rows: one per (device, dataset, method), see the module docstring; TPS over the
    windows frame's ``useful_tokens`` (``workbench.metrics.useful_tokens``)."""
    win = frames["windows"]
    rounds = frames["rounds"]
    rows = []
    for (device, dataset, method), g in win.group_by("device", "dataset", "method", maintain_order=True):
        by_cfg = M.task_tps(g, by=["config"])
        assert isinstance(by_cfg, pl.DataFrame)
        r = rounds.filter((pl.col("device") == device) & (pl.col("method") == method)
                          & pl.col("window_id").is_in(g["window_id"].unique().implode()))
        n_cfg = max(1, g["config"].n_unique())
        useful_total = int(g["useful_tokens"].sum())  # over every configuration of the method
        rows.append({"device": device, "dataset": dataset, "method": method, "windows": g["window_id"].n_unique(),
                     "useful_tokens": useful_total // n_cfg, "tps_useful": float(by_cfg["tps_useful"].mean()),
                     "acceptance": M.acceptance(r) if r.height else float("nan"),
                     "coverage": float(r["accepted"].sum() / useful_total) if useful_total else float("nan"),
                     "k_gt1_share": M.multi_token_share(r) if r.height else float("nan"),
                     "rounds": r.height // n_cfg})
    out = pl.DataFrame(rows)
    best = out.filter(pl.col("method").is_in(BASELINES)).group_by("device", "dataset").agg(
        pl.col("tps_useful").max().alias("fastest_baseline"))
    return (out.join(best, on=["device", "dataset"], how="left")
            .with_columns(pl.when(pl.col("method").str.starts_with("as2d"))
                          .then(100 * (pl.col("tps_useful") / pl.col("fastest_baseline") - 1)).alias("gain_pct"))
            .drop("fastest_baseline").sort("device", "dataset", "method"))


def task_chart(table: pl.DataFrame, subtitle: str) -> alt.TopLevelMixin:
    return alt.Chart(table.fill_nan(None)).mark_bar().encode(
        x=alt.X("method:N", title=None, sort=list(BASELINES) + ["as2d"]),
        y=alt.Y("tps_useful:Q", title="Pooled TPS over useful tokens"), color=alt.Color("method:N", legend=None),
        column=alt.Column("dataset:N", title=None), row=alt.Row("device:N", title=None),
        tooltip=["method", "tps_useful", "acceptance", "coverage", "k_gt1_share", "gain_pct"],
    ).properties(width=150, height=170, title=_title("Table 3: translation and spoken QA", subtitle))


def run(cfg: DictConfig, out: Path) -> JobResult:
    windows = load_windows(cfg)
    profiles = devices(cfg)
    frames = evaluate(windows, methods(cfg), profiles, cfg, cfg.source, store=sweep_store())  # target-only once a sweep
    table = task_table(frames)
    flat = {f"{r['device']}.{r['dataset']}.{r['method']}.{k}": float(r[k])
            for r in table.iter_rows(named=True)
            for k in ("tps_useful", "acceptance", "coverage", "k_gt1_share", "gain_pct") if r[k] is not None}
    flat["exactness_mismatches"] = 0.0  # audited per replay; a mismatch raises before this line
    flat["windows"] = float(len(windows))
    quality, quality_tables = quality_report(cfg, windows)
    flat.update(quality)
    corpus_metrics, corpus = corpus_accounting(cfg, windows)  # D.1.2: requests, distinct audio, hours, tokens
    flat.update(corpus_metrics)
    synthetic = bool(cfg.dataset.synthetic)
    costs = ", ".join(f"{p.name} ({p.file.split('#')[-1].split('/')[-1]})" for p in profiles)
    sub = f"{costs}; " + ("SYNTHETIC windows, not speech" if synthetic else f"dataset {cfg.dataset.name}")
    # child runs' plain ``tps`` is Table 3's: over useful tokens
    summary = table.select("device", "dataset", "method", pl.col("tps_useful").alias("tps"), "acceptance",
                           "coverage", "k_gt1_share", "gain_pct")
    tables = {**frames, "table3": table, "device_budgets": budget_table(cfg, profiles),
              "corpus_accounting": corpus, **quality_tables}
    return JobResult(flat, tables, {"table3": task_chart(table, sub)}, summary,
                     {"synthetic": str(synthetic), "source": str(cfg.source)})
