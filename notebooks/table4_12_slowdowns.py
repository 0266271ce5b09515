# %% [markdown]
# # Tables 4 / 12 — slowdowns against target-only
#
# Per device and method: windows faster / slower than target-only on the same window (ties within 1e-9), the
# slower share (Table 4), and the median and maximum TPS loss among slower windows (Table 12). SD uses the
# per-window mean of K=5..8.
#
# Numbers labelled **paper (phones)** are copied from the paper (`workbench/figures/paper_values.py`,
# each with its table or section); **this run** comes from your MLflow runs. They are shown side by
# side and never mixed. Runs come from `$MLFLOW_TRACKING_URI` (default `sqlite:///mlruns/mlflow.db`).
#
# Produce the runs first:
#
# ```
# python -m workbench.run experiment=replay
# ```

# %%
from workbench.figures import families, report

# %% tags=["parameters"]
# None: $AS2D_NOTEBOOK_EXPERIMENT if set, else the job's default experiment (as2d-<job>).
EXPERIMENT = None

# %%
result = report.guarded(families.table4_12_slowdowns, EXPERIMENT)

# %% [markdown]
# Tables (paper and this run under separate labels), then the charts.

# %%
report.show(result)

# %% [markdown]
# PNG + SVG into `notebooks/figures/` (or `$AS2D_FIGURES_DIR`) and into the source runs' artifacts
# under `figures/notebooks/`.

# %%
files = report.export(result)
