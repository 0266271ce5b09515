"""Adaptive As²d, variant by variant (beyond the paper, F.1 / F.3; goals in docs/adaptive.md).

**this run**: the ``adaptive`` job's table from the notebook's selection (default: the newest runs of
``as2d-adaptive``; the demo does not run it), or a parquet written by ``benchmarks/adaptive_bench.py
--out``. **paper (phones)**: the fixed dev-selected budget as a share of the oracle (D.4.3).
"""

from __future__ import annotations

from pathlib import Path

import altair as alt
import polars as pl

from .paper import _title, method_color
from .paper_values import PAPER, THIS_RUN, table2
from .report import Result, optional
from .runs import OWN_HINTS, latest_table
from .selection import Pick, job_table

EXPERIMENT = "as2d-adaptive"
COMMAND = OWN_HINTS[EXPERIMENT]
ORDER = ["target_only", "as2d_fixed", "as2d_online", "as2d_guarded", "as2d_subst", "as2d_hybrid", "as2d_sources",
         "as2d_adaptive", "online_source_hindsight", "resident_choice_hindsight"]


def variants(rows: pl.DataFrame) -> pl.DataFrame:
    """Per device and method: pooled TPS, % slower than target-only, oracle gap, strong-oracle share, vs fixed."""
    return rows.select(
        "device", "method", "config", pl.col("tps").round(2),
        (100 * pl.col("slower_than_target")).round(1).alias("% slower than TO"),
        (100 * (1 - pl.col("of_oracle"))).round(2).alias("oracle gap %"),
        *([(100 * pl.col("of_strong_oracle")).round(2).alias("% of strong oracle")]
          if "of_strong_oracle" in rows.columns else []),
        (100 * pl.col("vs_fixed")).round(2).alias("% vs fixed"))


def goals(rows: pl.DataFrame) -> pl.DataFrame:
    """The combination's goals: >= 99% of the oracle (98% on Xiaomi 14), never > 1% below fixed As²d."""
    return rows.filter(pl.col("method") == "as2d_adaptive").select(
        "device", (pl.col("of_oracle") >= pl.when(pl.col("device") == "xiaomi_14").then(0.98).otherwise(0.99))
        .alias("oracle goal met"), (pl.col("vs_fixed") >= -0.01).alias("fixed goal met"))


def _chart(rows: pl.DataFrame, subtitle: str) -> alt.TopLevelMixin:
    data = rows.with_columns((100 * pl.col("of_oracle")).alias("pct"),
                             pl.when(pl.col("device") == "xiaomi_14").then(98).otherwise(99).alias("goal"))
    base = alt.Chart(data.to_pandas())
    bars = base.mark_bar().encode(x=alt.X("method:N", sort=ORDER, title=None),
                                  y=alt.Y("pct:Q", title="% of hindsight oracle TPS"),
                                  color=method_color(data["method"], field="method", legend=False))
    goal = base.mark_rule(strokeDash=[4, 3], color="black").encode(y="mean(goal):Q")  # the goal line
    return alt.layer(bars, goal).properties(width=170, height=220).facet(
        column=alt.Column("device:N", title=None)).properties(
        title=_title("Adaptive As²d, variant by variant (dashed: the goal)", subtitle))


def adaptive(sel: Pick = None, bench: str | Path | None = None) -> Result:
    """The ablation from a benchmark parquet (``bench``) if given, else from the selected job runs."""
    notes: list[str] = []
    paper = table2().filter(pl.col("dataset") == "all").select(
        "device", (100 * pl.col("tps_selected") / pl.col("tps_oracle")).round(1).alias("paper fixed % oracle"))
    tables = {f"{PAPER}: fixed dev-selected budget as % of the oracle (D.4.3)": paper}
    if bench and not Path(bench).is_file():
        notes.append(f"no benchmark parquet at {bench} ($AS2D_ADAPTIVE_BENCH): drawing the selected runs instead")
        bench = None
    if bench:
        rows = pl.read_parquet(bench).rename({"profile": "device"}, strict=False)
        selection, runs, subtitle = None, [], f"benchmark parquet {Path(bench).name} (benchmarks/adaptive_bench.py)"
    else:
        rows, run, selection = job_table(sel, EXPERIMENT, "adaptive")
        runs, subtitle = [run], selection.title()
        choices = optional(lambda: latest_table(selection, "choices")[0], notes)
        if choices is None:
            notes.append(f"rerun `{COMMAND}` to log the dev choices")
        else:
            tables[f"{THIS_RUN}: what the deployment fixed on dev, per device"] = choices
    tables = {f"{THIS_RUN}: every variant per device": variants(rows),
              f"{THIS_RUN}: goals of the combination (docs/adaptive.md)": goals(rows), **tables}
    return Result("adaptive", {"ablation": _chart(rows, subtitle)}, tables, runs, notes, selection)


__all__ = ["ORDER", "adaptive", "goals", "variants"]
