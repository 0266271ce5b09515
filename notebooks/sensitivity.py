# %% [markdown]
# # Cost sensitivity — oracle gap and ablations under low and high concurrent ratios
#
# D.4.3 repeats the oracle search "under nominal, low-ratio, and high-ratio scenarios"; D.5.1–D.5.3
# replace the extrapolated concurrent/idle ratio by the profile's stated extremes. Only that ratio moves:
# idle costs, direct concurrent figures, source and publication costs stay as calibrated. The deployed
# (source, budget) is selected on the dev split under nominal costs and frozen (D.2.6).
#
# Numbers labelled **paper (phones)** are copied from D.4.3 / D.5; **this run** comes from your MLflow
# runs. They are shown side by side and never mixed. These are cost-model sensitivity ranges, not
# confidence intervals. Produce the run first:
#
# ```
# python -m workbench.run experiment=sensitivity '+devices=[k70_pro,xiaomi_14]'
# ```

# %%
import altair as alt
import polars as pl

from workbench.figures import report
from workbench.figures.runs import experiment, tables_by_device

# %% tags=["parameters"]
# None: $AS2D_NOTEBOOK_EXPERIMENT if set, else the job's default experiment (as2d-sensitivity).
EXPERIMENT = None

# %% [markdown]
# The paper's sensitivity figures (pooled TPS of the w/o-BC arm, D.5.1–D.5.3; oracle gap ranges, D.4.3).

# %%
PAPER = "paper (phones)"
paper_ablation = pl.DataFrame([
    # device, scenario, w/o-BC pooled TPS; source
    ("k70_pro", "nominal", 25.60, "D.5.1"), ("k70_pro", "high", 25.42, "D.5.1"),
    ("xiaomi_11_pro", "nominal", 13.79, "D.5.2"), ("xiaomi_11_pro", "low", 13.86, "D.5.2"),
    ("xiaomi_11_pro", "high", 13.16, "D.5.2"),
    ("xiaomi_14", "nominal", 27.84, "D.5.3"), ("xiaomi_14", "low", 27.81, "D.5.3 (range 27.81-27.98)"),
    ("xiaomi_14", "high", 27.98, "D.5.3 (range 27.81-27.98)"),
    ("redmi_note_9_pro", "nominal", 5.07, "D.5.3"), ("redmi_note_9_pro", "low", 5.06, "D.5.3 (range 5.06-5.07)"),
    ("redmi_note_9_pro", "high", 5.07, "D.5.3 (range 5.06-5.07)"),
], schema=["device", "scenario", "tps", "source"], orient="row")
paper_gap = pl.DataFrame([
    ("k70_pro", 1.94, 2.19), ("xiaomi_11_pro", 2.00, 2.88), ("xiaomi_14", 2.17, 2.24), ("redmi_note_9_pro", 1.78, 1.81),
], schema=["device", "gap_min_pct", "gap_max_pct"], orient="row")  # D.4.3, pooled gap over the three scenarios


# %%
def build(exp: str | None) -> report.Result:
    exp = exp or experiment("as2d-sensitivity")
    oracle, runs = tables_by_device(exp, "sensitivity_oracle")
    ablation, more = tables_by_device(exp, "sensitivity_ablation")
    runs += [r for r in more if r.info.run_id not in {x.info.run_id for x in runs}]
    order = ["nominal", "low", "high"]
    subtitle = report.run_subtitle(runs)
    gap = alt.Chart(oracle.to_pandas()).mark_bar().encode(
        x=alt.X("scenario:N", sort=order, title=None), y=alt.Y("oracle_gap:Q", title="Shortfall vs oracle (%)"),
        color=alt.Color("scenario:N", sort=order, title="Scenario"), column=alt.Column("device:N", title=None),
        tooltip=["device", "scenario", "ratio", "selected", "tps_selected", "tps_oracle", "oracle_gap"],
    ).properties(width=110, height=200, title=alt.TitleParams("Oracle shortfall per cost scenario (D.4.3)",
                                                              subtitle=subtitle))
    arms = alt.Chart(ablation.to_pandas()).mark_bar().encode(
        x=alt.X("scenario:N", sort=order, title=None), y=alt.Y("tps:Q", title="Pooled TPS"),
        color=alt.Color("scenario:N", sort=order, title="Scenario"),
        column=alt.Column("method:N", title=None), row=alt.Row("device:N", title=None),
        tooltip=["device", "scenario", "ratio", "method", "tps", "change_pct"],
    ).properties(width=90, height=150, title=alt.TitleParams("Ablation arms per cost scenario (D.5)",
                                                             subtitle=subtitle))
    mine_gap = oracle.group_by("device", maintain_order=True).agg(
        pl.col("oracle_gap").min().alias("gap_min_pct"), pl.col("oracle_gap").max().alias("gap_max_pct"))
    wo_bc = ablation.filter(pl.col("method") == "as2d_wo_bc").select("device", "scenario", "ratio", "tps")
    return report.Result("sensitivity", {"oracle_gap": gap, "ablation_tps": arms}, {
        f"{PAPER}: oracle gap range over the scenarios (D.4.3)": paper_gap,
        "this run: oracle gap range over the scenarios": mine_gap,
        f"{PAPER}: w/o-BC pooled TPS per scenario (D.5)": paper_ablation,
        "this run: w/o-BC pooled TPS per scenario": wo_bc,
        "this run: oracle per scenario": oracle.drop("run_id"),
        "this run: every arm, change from nominal (%)": ablation.drop("run_id"),
    }, runs)


result = report.guarded(build, EXPERIMENT)

# %%
report.show(result)

# %% [markdown]
# PNG + SVG into `notebooks/figures/` (or `$AS2D_FIGURES_DIR`) and into the source runs' artifacts
# under `figures/notebooks/`.

# %%
files = report.export(result)
