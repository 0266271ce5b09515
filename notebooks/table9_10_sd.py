# %% [markdown]
# # Tables 9 / 10 — fixed-width SD
#
# Pooled SD TPS for each fixed physical width K, per dataset, with the K=5..8 mean and range (Table 9) and
# any wider K the run priced (Table 10 compares K8 with K12).
#
# Numbers labelled **paper (phones)** are copied from the paper (`workbench/figures/paper_values.py`,
# each with its table or section); **this run** comes from your MLflow runs. They are shown side by
# side and never mixed. Runs come from `$MLFLOW_TRACKING_URI` (default `sqlite:///mlruns/mlflow.db`).
#
# Produce the runs first:
#
# ```
# python -m workbench.run experiment=replay   # method=sd method.widths=[5,6,7,8,12] adds K12
# ```

# %%
from workbench.figures import families, report

# %% tags=["parameters"]
# None: $AS2D_NOTEBOOK_EXPERIMENT if set, else the job's default experiment (as2d-<job>).
EXPERIMENT = None

# %%
result = report.guarded(families.table9_10_sd, EXPERIMENT)

# %% [markdown]
# Tables (paper and this run under separate labels), then the charts.

# %%
report.show(result)

# %% [markdown]
# PNG + SVG into `notebooks/figures/` (or `$AS2D_FIGURES_DIR`) and into the source runs' artifacts
# under `figures/notebooks/`.

# %%
files = report.export(result)
