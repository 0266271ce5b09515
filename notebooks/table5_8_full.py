# %% [markdown]
# # Tables 5 / 8 — full results with ablations
#
# Pooled TPS per device, method and dataset (SD: pool per K, then average K=5..8; D.1.3), the As²d gain over
# the best baseline, and the ablations As²d w/o TD and w/o BC from the `ablation` experiment (Table 5 is the
# 'All' column).
#
# Numbers labelled **paper (phones)** are copied from the paper (`workbench/figures/paper_values.py`,
# each with its table or section); **this run** comes from your MLflow runs. They are shown side by
# side and never mixed. Runs come from `$MLFLOW_TRACKING_URI` (default `sqlite:///mlruns/mlflow.db`).
#
# Produce the runs first:
#
# ```
# python -m workbench.run experiment=replay && python -m workbench.run experiment=ablation
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
result = report.guarded(families.table5_8_full, SELECT)

# %% [markdown]
# Tables (paper and this run under separate labels), then the charts.

# %%
report.show(result)

# %% [markdown]
# PNG + SVG into `notebooks/figures/` (or `$AS2D_FIGURES_DIR`) and into the source runs' artifacts
# under `figures/notebooks/`.

# %%
files = report.export(result)
