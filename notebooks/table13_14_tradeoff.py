# %% [markdown]
# # Tables 13 / 14 — source and budget trade-off
#
# This run: pooled dev-split TPS per candidate source and proposal budget (the budget-selection sweep of
# D.2.6). Paper: native drafter/width cases on one AMI window (Table 14) and native source cases (Table 13).
# The two are different experiments and are never drawn on one axis.
#
# Numbers labelled **paper (phones)** are copied from the paper (`workbench/figures/paper_values.py`,
# each with its table or section); **this run** comes from your MLflow runs. They are shown side by
# side and never mixed. Runs come from `$MLFLOW_TRACKING_URI` (default `sqlite:///mlruns/mlflow.db`).
#
# Produce the runs first:
#
# ```
# python -m workbench.run experiment=oracle   # or experiment=budget_select
# ```

# %%
from workbench.figures import families, report, selection

# %% tags=["parameters"]
# Which runs to draw; the selection is printed below and named in every chart's subtitle. All None: the
# newest `make demo` run (in a store without one, this job's newest runs). $AS2D_NOTEBOOK_EXPERIMENT
# sets EXPERIMENT for every notebook.
RUN = None         # a job run id (8 characters are enough), or a sweep parent's id: that sweep's job runs
EXPERIMENT = None  # an experiment name: its newest job runs, each device x method drawn once
BUDGET = None      # only runs whose As²d replays used this proposal budget (e.g. one job of a budget sweep)
DATA = None        # "speech" or "synthetic": never pooled; None draws the newest selected run's kind

# %%
SELECT = selection.Selector(run=RUN, experiment=EXPERIMENT, budget=BUDGET, data=DATA)
result = report.guarded(families.table13_14_tradeoff, SELECT)

# %% [markdown]
# Tables (paper and this run under separate labels), then the charts.

# %%
report.show(result)

# %% [markdown]
# PNG + SVG into `notebooks/figures/` (or `$AS2D_FIGURES_DIR`) and into the source runs' artifacts
# under `figures/notebooks/`.

# %%
files = report.export(result)
