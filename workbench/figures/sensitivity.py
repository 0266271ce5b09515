"""Cost sensitivity (D.4.3 / D.5): oracle gap and ablation arms under nominal, low and high concurrent ratios.

**paper (phones)**: the pooled w/o-BC TPS per scenario (D.5.1--D.5.3) and the oracle gap range over the
three scenarios (D.4.3). **this run**: the ``sensitivity`` job's tables, from the notebook's selection
(default: the newest runs of ``as2d-sensitivity``; the demo does not run the cost scenarios).
"""

from __future__ import annotations

import altair as alt
import polars as pl

from .paper_values import PAPER, THIS_RUN
from .report import Result
from .runs import MissingTable, tables_by_device
from .selection import Pick, resolve

EXPERIMENT = "as2d-sensitivity"
COMMAND = "python -m workbench.run experiment=sensitivity '+devices=[k70_pro,xiaomi_14]'"
ORDER = ["nominal", "low", "high"]

PAPER_ABLATION = pl.DataFrame([
    # device, scenario, w/o-BC pooled TPS; source
    ("k70_pro", "nominal", 25.60, "D.5.1"), ("k70_pro", "high", 25.42, "D.5.1"),
    ("xiaomi_11_pro", "nominal", 13.79, "D.5.2"), ("xiaomi_11_pro", "low", 13.86, "D.5.2"),
    ("xiaomi_11_pro", "high", 13.16, "D.5.2"),
    ("xiaomi_14", "nominal", 27.84, "D.5.3"), ("xiaomi_14", "low", 27.81, "D.5.3 (range 27.81-27.98)"),
    ("xiaomi_14", "high", 27.98, "D.5.3 (range 27.81-27.98)"),
    ("redmi_note_9_pro", "nominal", 5.07, "D.5.3"), ("redmi_note_9_pro", "low", 5.06, "D.5.3 (range 5.06-5.07)"),
    ("redmi_note_9_pro", "high", 5.07, "D.5.3 (range 5.06-5.07)"),
], schema=["device", "scenario", "tps", "source"], orient="row")
PAPER_GAP = pl.DataFrame([
    ("k70_pro", 1.94, 2.19), ("xiaomi_11_pro", 2.00, 2.88), ("xiaomi_14", 2.17, 2.24), ("redmi_note_9_pro", 1.78, 1.81),
], schema=["device", "gap_min_pct", "gap_max_pct"], orient="row")  # D.4.3, pooled gap over the three scenarios


def _charts(oracle: pl.DataFrame, ablation: pl.DataFrame, subtitle: str) -> dict[str, alt.TopLevelMixin]:
    gap = alt.Chart(oracle.to_pandas()).mark_bar().encode(
        x=alt.X("scenario:N", sort=ORDER, title=None), y=alt.Y("oracle_gap:Q", title="Shortfall vs oracle (%)"),
        color=alt.Color("scenario:N", sort=ORDER, title="Scenario"), column=alt.Column("device:N", title=None),
        tooltip=["device", "scenario", "ratio", "selected", "tps_selected", "tps_oracle", "oracle_gap"],
    ).properties(width=110, height=200, title=alt.TitleParams("Oracle shortfall per cost scenario (D.4.3)",
                                                              subtitle=subtitle))
    arms = alt.Chart(ablation.to_pandas()).mark_bar().encode(
        x=alt.X("scenario:N", sort=ORDER, title=None), y=alt.Y("tps:Q", title="Pooled TPS"),
        color=alt.Color("scenario:N", sort=ORDER, title="Scenario"),
        column=alt.Column("method:N", title=None), row=alt.Row("device:N", title=None),
        tooltip=["device", "scenario", "ratio", "method", "tps", "change_pct"],
    ).properties(width=90, height=150, title=alt.TitleParams("Ablation arms per cost scenario (D.5)",
                                                             subtitle=subtitle))
    return {"oracle_gap": gap, "ablation_tps": arms}


def sensitivity(sel: Pick = None) -> Result:
    """Oracle gap and ablation arms per cost scenario, beside the paper's D.4.3 / D.5 figures."""
    selection = resolve(sel, EXPERIMENT, prefer_demo=False)
    try:
        oracle, runs = tables_by_device(selection, "sensitivity_oracle")
        ablation, more = tables_by_device(selection, "sensitivity_ablation")
    except MissingTable as err:
        raise MissingTable(f"{err}; this figure needs `{COMMAND}`") from err
    runs += [r for r in more if r.info.run_id not in {x.info.run_id for x in runs}]
    mine_gap = oracle.group_by("device", maintain_order=True).agg(
        pl.col("oracle_gap").min().alias("gap_min_pct"), pl.col("oracle_gap").max().alias("gap_max_pct"))
    wo_bc = ablation.filter(pl.col("method") == "as2d_wo_bc").select("device", "scenario", "ratio", "tps")
    return Result("sensitivity", _charts(oracle, ablation, selection.title()), {
        f"{PAPER}: oracle gap range over the scenarios (D.4.3)": PAPER_GAP,
        f"{THIS_RUN}: oracle gap range over the scenarios": mine_gap,
        f"{PAPER}: w/o-BC pooled TPS per scenario (D.5)": PAPER_ABLATION,
        f"{THIS_RUN}: w/o-BC pooled TPS per scenario": wo_bc,
        f"{THIS_RUN}: oracle per scenario": oracle.drop("run_id"),
        f"{THIS_RUN}: every arm, change from nominal (%)": ablation.drop("run_id"),
    }, runs, selection=selection)


__all__ = ["PAPER_ABLATION", "PAPER_GAP", "sensitivity"]
