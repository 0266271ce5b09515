# %% [markdown]
# # Table 2 — shortfall from the per-window oracle
#
# Gap = 100 (1 − TPS_selected / TPS_oracle) (D.4.3): the (source, budget) selected on the dev split against
# the hindsight oracle on the test split, pooled per device (and per dataset when the oracle tables carry
# one).
#
# Numbers labelled **paper (phones)** are copied from the paper (`workbench/figures/paper_values.py`,
# each with its table or section); **this run** comes from your MLflow runs. They are shown side by
# side and never mixed. Runs come from `$MLFLOW_TRACKING_URI` (default `sqlite:///mlruns/mlflow.db`).
#
# Produce the runs first:
#
# ```
# python -m workbench.run experiment=oracle
# ```

# %%
from workbench.figures import families, report

# %% tags=["parameters"]
# None: $AS2D_NOTEBOOK_EXPERIMENT if set, else the job's default experiment (as2d-<job>).
EXPERIMENT = None

# %%
result = report.guarded(families.table2_oracle, EXPERIMENT)

# %% [markdown]
# Tables (paper and this run under separate labels), then the charts.

# %%
report.show(result)

# %% [markdown]
# PNG + SVG into `notebooks/figures/` (or `$AS2D_FIGURES_DIR`) and into the source runs' artifacts
# under `figures/notebooks/`.

# %%
files = report.export(result)
