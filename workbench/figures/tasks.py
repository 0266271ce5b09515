"""Table 3 (translation and spoken QA beside task quality) and B.1 (per-corpus acceptance).

* **Table 3** -- pooled TPS per method on each task cohort (CoVoST 2 en->zh, zh->en, Spoken SQuAD
  QA>=16), the gain over the fastest baseline, and the target's task quality (BLEU/chrF, token F1;
  WER/CER on ASR datasets). Quality describes the target: every speculative method reproduces its
  output token for token (the replay audit), so one quality row per dataset.
* **B.1** -- the distribution of strict prefix acceptance per corpus: the producer's context-free
  proposal (as the target-decoupled producer runs, no transcript) against the target's greedy
  continuation, 32-token cap, from ``experiment=context_probe`` runs (one per dataset).

Paper numbers are copied here with their table or section; they are shown beside this run's,
never mixed into them (``paper_values.PAPER`` / ``THIS_RUN`` labels).
"""

from __future__ import annotations

from collections.abc import Iterable

import altair as alt
import polars as pl
from mlflow.entities import Run

from workbench import metrics as M

from .paper import method_color
from .paper_values import PAPER, THIS_RUN
from .report import Result
from .runs import MissingTable, load_table, store_uri, table_names
from .selection import Pick, resolve

# Table 3 (Section 5.2, "Impact across source-conditioned tasks"): Redmi K70 Pro phone-cost replay TPS,
# 80 samples per task, Qwen2.5-Omni-7B target and Omni-3B drafter for every speculative method; the
# gain is over the fastest baseline. Printed in the paper as Target-only / SD / SpecASR / As2d / Gain (%).
TASK_LABEL = {"covost2_en_zh": "EN→ZH", "covost2_zh_en": "ZH→EN", "spoken_squad": "QA≥16"}
_T3 = {"target_only": [8.11, 8.37, 7.77], "sd": [5.21, 6.54, 8.90], "asp": [5.99, 7.15, 8.57],
       "as2d": [9.52, 10.98, 9.62]}
_T3_GAIN = [17.4, 31.2, 8.0]
# Section 5.2 text beside Table 3: As²d's conditional acceptance and accepted-token coverage (%).
_T3_ACCEPTANCE = [54.6, 63.8, 84.7]
_T3_COVERAGE = [26.6, 36.7, 28.3]
T3_SOURCE = "Table 3 (Sec. 5.2), K70 Pro replay, 80 samples/task"
# B.1 (Appendix B.1, "Acceptance is content dependent"): median strict prefix acceptance of a Parakeet
# 110M CTC proposer against a Qwen3-ASR 1.7B target at K=32 over 28,595 audio blocks.
PAPER_B1_MEDIANS = {"ami": 0.55, "spgispeech": 0.52, "gigaspeech": 0.31, "earnings22": 0.0}
B1_SOURCE = "Appendix B.1 text (Parakeet 110M CTC vs Qwen3-ASR 1.7B, K=32, 28,595 blocks)"
BASELINES = ("target_only", "sd", "asp")


def paper_table3() -> pl.DataFrame:
    """Table 3 as printed: one row per method, one column per task, plus the gain/acceptance rows."""
    cols = list(TASK_LABEL.values())
    rows = [{"method": m, **dict(zip(cols, v, strict=True))} for m, v in _T3.items()]
    rows.append({"method": "gain over fastest baseline (%)", **dict(zip(cols, _T3_GAIN, strict=True))})
    rows.append({"method": "as2d conditional acceptance (%)", **dict(zip(cols, _T3_ACCEPTANCE, strict=True))})
    rows.append({"method": "as2d accepted-token coverage (%)", **dict(zip(cols, _T3_COVERAGE, strict=True))})
    return pl.DataFrame(rows).with_columns(pl.lit(PAPER).alias("provenance"), pl.lit(T3_SOURCE).alias("source"))


def paper_b1() -> pl.DataFrame:
    return pl.DataFrame({"dataset": list(PAPER_B1_MEDIANS), "median_acceptance": list(PAPER_B1_MEDIANS.values())}
                        ).with_columns(pl.lit(PAPER).alias("provenance"), pl.lit(B1_SOURCE).alias("source"))


def task_tps(windows: pl.DataFrame) -> pl.DataFrame:
    """Task TPS per (device, dataset, method) as the paper counts it (D.1.2): useful tokens (the
    windows frame's ``useful_tokens``, ``workbench.metrics.useful_tokens``) over time per configuration,
    then the mean over a method's configurations (SD's fixed widths, D.1.3), and As²d's gain over the
    fastest baseline. A run logged before its windows counted useful tokens raises ``MissingTable``."""
    if "useful_tokens" not in windows.columns:
        raise MissingTable("its windows table has no useful_tokens column (logged before task TPS counted "
                           "useful tokens, D.1.2); rerun the replay")
    keys = ["device", "dataset", "method", "config"]
    by_cfg = M.task_tps(windows, by=keys)
    assert isinstance(by_cfg, pl.DataFrame)
    n = windows.group_by(keys).agg(pl.col("window_id").n_unique().alias("n"))
    by_cfg = by_cfg.join(n, on=keys).rename({"tps_useful": "tps"})
    tps = by_cfg.group_by("device", "dataset", "method").agg(pl.col("tps").mean(), pl.col("n").max())
    best = tps.filter(pl.col("method").is_in(BASELINES)).group_by("device", "dataset").agg(
        pl.col("tps").max().alias("fastest_baseline"))
    return (tps.join(best, on=["device", "dataset"], how="left")
            .with_columns(pl.when(pl.col("method") == "as2d")
                          .then(100 * (pl.col("tps") / pl.col("fastest_baseline") - 1)).alias("gain_pct"))
            .drop("fastest_baseline").sort("device", "dataset", "method"))


def quality_summary(quality: pl.DataFrame, metrics: dict[str, float]) -> pl.DataFrame:
    """One row per dataset: task, windows, mean per-window score, and the run's pooled ``quality.*``."""
    per = quality.group_by("dataset", "task").agg(pl.len().alias("windows"), pl.col("score").mean().alias("mean_score"))
    pooled = {k.removeprefix("quality."): v for k, v in metrics.items() if k.startswith("quality.")}
    return per.with_columns(*(pl.lit(float(v)).alias(k) for k, v in sorted(pooled.items()))).sort("dataset")


def _newest_per_dataset(runs: Iterable[Run], table: str, uri: str | None) -> dict[str, tuple[Run, pl.DataFrame]]:
    """Per dataset, the newest run (runs come newest first) that logged ``table`` covering it."""
    out: dict[str, tuple[Run, pl.DataFrame]] = {}
    for run in runs:
        if table not in table_names(run, uri):
            continue
        frame = load_table(run, table, uri)
        for ds in frame["dataset"].unique().to_list():
            out.setdefault(ds, (run, frame.filter(pl.col("dataset") == ds)))
    return out


def table3_tasks(sel: Pick = None, uri: str | None = None) -> Result:
    """Table 3 from the newest selected replay run of each task dataset, with the target's task quality.

    Default selection: the newest ``as2d-replay`` runs (the demo logs no task quality)."""
    selection = resolve(sel, "as2d-replay", prefer_demo=False, uri=uri)
    runs = selection.runs
    found = _newest_per_dataset(runs, "quality", uri)
    if not found:
        raise MissingTable(f"no replay run of {selection.what!r} logged task quality ({len(runs)} run(s) "
                           f"checked at {store_uri(uri)}); run `python -m workbench.run experiment=replay "
                           "model=qwen2_5_omni dataset=covost2_en_zh dataset.root=/data/cv` (or spoken_squad, any "
                           "paper dataset)")
    tps, quality, used = [], [], []
    for ds, (run, q) in sorted(found.items()):
        windows = load_table(run, "windows", uri).filter(pl.col("window_id").is_in(q["window_id"].to_list()))
        tps.append(task_tps(windows.with_columns(pl.lit(ds).alias("dataset"))))
        # the run's pooled quality.* metrics belong to this dataset only when the run was on it alone
        pooled = dict(run.data.metrics) if run.data.params.get("dataset.name") == ds else {}
        quality.append(quality_summary(q, pooled).with_columns(pl.lit(run.info.run_id[:8]).alias("run")))
        used.append(run)
    tps_frame = pl.concat(tps, how="diagonal_relaxed").with_columns(
        pl.col("dataset").replace(TASK_LABEL).alias("task_label"))
    wide = tps_frame.pivot(on="method", index=["device", "dataset"], values="tps")
    gain = tps_frame.filter(pl.col("method") == "as2d").select("device", "dataset", "gain_pct")
    result = Result("table3_tasks", runs=used, selection=selection)
    result.tables[f"{PAPER}: {T3_SOURCE}"] = paper_table3()
    result.tables[f"{THIS_RUN}: pooled TPS per task dataset and method"] = wide.join(
        gain, on=["device", "dataset"], how="left")
    result.tables[f"{THIS_RUN}: task quality of the target output (every method reproduces it)"] = pl.concat(
        quality, how="diagonal_relaxed")
    result.charts["tps"] = alt.Chart(tps_frame.to_pandas()).mark_bar().encode(
        x=alt.X("method:N", title=None), y=alt.Y("tps:Q", title="pooled TPS"),
        color=method_color(tps_frame["method"], field="method"),
        column=alt.Column("task_label:N", title=None), row=alt.Row("device:N", title=None),
    ).properties(width=140, height=160, title={"text": "Table 3: TPS per task", "subtitle": selection.title()})
    return result


def acceptance_distribution(probe: pl.DataFrame, column: str = "stale_acceptance") -> pl.DataFrame:
    """Per dataset: blocks with a nonempty proposal, median and quartiles of acceptance, share at zero."""
    p = probe.filter(pl.col(column).is_not_null())
    return p.group_by("dataset").agg(
        pl.len().alias("blocks"), pl.col(column).median().alias("median_acceptance"),
        pl.col(column).quantile(0.25, "linear").alias("q25"), pl.col(column).quantile(0.75, "linear").alias("q75"),
        (pl.col(column) == 0).mean().alias("zero_share")).sort("dataset")


def b1_acceptance(sel: Pick = None, uri: str | None = None) -> Result:
    """B.1 from the newest selected context-probe run of each dataset (the producer's context-free proposals).

    Default selection: the newest ``as2d-context_probe`` runs (the demo runs no context probe)."""
    selection = resolve(sel, "as2d-context_probe", prefer_demo=False, uri=uri)
    runs = selection.runs
    found = _newest_per_dataset(runs, "context_probe", uri)
    if not found:
        raise MissingTable(f"no run of {selection.what!r} logged a context_probe table ({len(runs)} "
                           f"run(s) checked at {store_uri(uri)}); run `python -m workbench.run "
                           "experiment=context_probe dataset=ami dataset.root=/data/ami` once per corpus")
    probe = pl.concat([f for _, f in found.values()], how="diagonal_relaxed")
    used = list({r.info.run_id: r for r, _ in found.values()}.values())
    dist = acceptance_distribution(probe)
    paper = paper_b1().select("dataset", pl.col("median_acceptance").alias("paper_median"))
    result = Result("b1_acceptance", runs=used, selection=selection)
    result.tables[f"{PAPER}: {B1_SOURCE}"] = paper_b1()
    result.tables[f"{THIS_RUN}: strict prefix acceptance per corpus (context-free producer proposals)"] = dist.join(
        paper, on="dataset", how="left")
    data = probe.filter(pl.col("stale_acceptance").is_not_null()).select("dataset", "stale_acceptance").to_pandas()
    result.charts["acceptance"] = alt.Chart(data).mark_boxplot(extent="min-max").encode(
        x=alt.X("dataset:N", title=None), y=alt.Y("stale_acceptance:Q", title="accepted / proposed (cap 32)",
                                                  scale=alt.Scale(domain=[0, 1])),
    ).properties(width=360, height=220, title={"text": "B.1: acceptance per corpus", "subtitle": selection.title()})
    return result


__all__ = ["PAPER_B1_MEDIANS", "TASK_LABEL", "acceptance_distribution", "b1_acceptance", "paper_b1", "paper_table3",
           "quality_summary", "table3_tasks", "task_tps"]
