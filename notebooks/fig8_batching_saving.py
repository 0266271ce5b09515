# %% [markdown]
# # Fig. 8 — per-position batching saving R(K)
#
# R(K) = 100 (1 − V(K) / (K·V(1))) (eq. 2) from each device profile's verifier widths (conf/device/*.yaml)
# and, once `experiment=calibrate_host` wrote conf/device/host.yaml, from the host's measured profile. The
# paper's text states only the K4→K5 values (B.2); they are shown in their own panel.
#
# Numbers labelled **paper (phones)** are copied from the paper (`workbench/figures/paper_values.py`,
# each with its table or section); **this run** comes from your MLflow runs. They are shown side by
# side and never mixed. Runs come from `$MLFLOW_TRACKING_URI` (default `sqlite:///mlruns/mlflow.db`).
#
# Produce the runs first:
#
# ```
# python -m workbench.run experiment=calibrate_host   # optional: adds the host panel
# ```

# %%
from workbench.figures import families, report

# %%
result = report.guarded(families.fig8_batching_saving)

# %% [markdown]
# Tables (paper and this run under separate labels), then the charts.

# %%
report.show(result)

# %% [markdown]
# PNG + SVG into `notebooks/figures/` (or `$AS2D_FIGURES_DIR`) and into the source runs' artifacts
# under `figures/notebooks/`.

# %%
files = report.export(result)
