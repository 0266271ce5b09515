# %% [markdown]
# # D.2.6 — the full validation grid (the Note 9 reanalysis)
#
# Budget selection screens every (source, budget) on the dev split, then ranks settings by pooled
# throughput on a separate validation split and freezes the best before any test window is replayed.
# With `validation_shortlist=null` validation ranks the **full grid** (every source × budget), as the
# paper's Note 9 reanalysis does: all 42 settings on 100 validation windows, Qwen at the same budget
# where a source is language-ineligible. Per device this notebook shows the ranking, the frozen setting,
# where the dev pick and the deployed pair (the profile's budget, A.2) rank, and the frozen setting's
# test TPS.
#
# **paper (phones)** values are copied from D.2.6 (validation Qwen/b3 5.6233 TPS vs Qwen/b7 5.3898;
# test 5.8512). **this run** comes from your MLflow runs; the two are shown side by side, never mixed.
# Runs come from `$MLFLOW_TRACKING_URI` (default `sqlite:///mlruns/mlflow.db`).
#
# Produce the runs first, on synthetic trajectories and on the demo's real speech:
#
# ```
# python -m workbench.run experiment=oracle validation_fraction=0.25 validation_shortlist=null \
#     budgets=[1,2,3,4,5,6,7,8,9,10,11,12,13,14] +devices=[redmi_note_9_pro,k70_pro]
# python -m workbench.run experiment=oracle dataset=demo validation_fraction=0.25 validation_shortlist=null \
#     budgets=[1,2,3,4,5,6,7,8,10,12] +devices=[redmi_note_9_pro,k70_pro]
# ```

# %%
from workbench.figures import report, selection
from workbench.figures.validation_grid import d26_validation_grid, paper_note9

# %% tags=["parameters"]
# Which runs to draw; the selection is printed below and named in every chart's subtitle. All None:
# the newest runs of `as2d-oracle` (the demo ranks no full validation grid).
# $AS2D_NOTEBOOK_EXPERIMENT sets EXPERIMENT for every notebook.
RUN = None         # a job run id (8 characters are enough), or a sweep parent's id: that sweep's job runs
EXPERIMENT = None  # an experiment name: its newest job runs
SWEEP = None       # a sweep parent's run id: that sweep's job runs
DATA = None        # "speech" or "synthetic": never pooled; None draws the newest selected run's kind

# %% [markdown]
# The paper's Note 9 reanalysis (always shown; it needs no run).

# %%
paper_note9()

# %%
SELECT = selection.Selector(run=RUN, experiment=EXPERIMENT, sweep=SWEEP, data=DATA)
result = report.guarded(d26_validation_grid, SELECT)

# %%
report.show(result)

# %% [markdown]
# PNG + SVG into `notebooks/figures/` (or `$AS2D_FIGURES_DIR`) and into the source runs' artifacts.

# %%
files = report.export(result)
