# %% [markdown]
# # Table 1 — representative windows
#
# Per dataset, the window nearest the median per-window gain of As²d over max(SD, SpecASR) (D.4.5 selection
# rule; displayed windows need ≥ 64 target tokens). The paper uses Xiaomi 14; this run uses xiaomi_14 when
# present, else the first device with all four methods.
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
result = report.guarded(families.table1_cases, EXPERIMENT)

# %% [markdown]
# Tables (paper and this run under separate labels), then the charts.

# %%
report.show(result)

# %% [markdown]
# PNG + SVG into `notebooks/figures/` (or `$AS2D_FIGURES_DIR`) and into the source runs' artifacts
# under `figures/notebooks/`.

# %%
files = report.export(result)
