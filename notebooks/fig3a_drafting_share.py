# %% [markdown]
# # Fig. 3(a) — drafting share of serial SD time
#
# Producer (drafting) time over decode time for serial SD at K=8, pooled over windows, per device profile
# and (when the `demo` job logged `native_stages`) on the native host. Paper: native serial SD on one 59.5 s
# window per phone (B.3.1).
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
result = report.guarded(families.fig3a_drafting_share, EXPERIMENT)

# %% [markdown]
# Tables (paper and this run under separate labels), then the charts.

# %%
report.show(result)

# %% [markdown]
# PNG + SVG into `notebooks/figures/` (or `$AS2D_FIGURES_DIR`) and into the source runs' artifacts
# under `figures/notebooks/`.

# %%
files = report.export(result)
