# %% [markdown]
# # D.3 — replay vs native agreement
#
# Signed TPS error 100 (TPS_replay / TPS_native − 1) per window on the host, with mean absolute and pooled
# error, beside the paper's Table 7 (Redmi K70 Pro). Needs the `agreement` table the `demo` job logs from
# its native host runs.
#
# Numbers labelled **paper (phones)** are copied from the paper (`workbench/figures/paper_values.py`,
# each with its table or section); **this run** comes from your MLflow runs. They are shown side by
# side and never mixed. Runs come from `$MLFLOW_TRACKING_URI` (default `sqlite:///mlruns/mlflow.db`).
#
# Produce the runs first:
#
# ```
# python -m workbench.run job=demo
# ```
#
# The decomposition (which term carries each window's error: publication curve, readiness, verify cost
# concurrent / idle, loop work, drain; `workbench.native.decomposition`) is drawn from the same table, or,
# with `AGREEMENT_DIR` set, from the folder `python -m workbench.native.agreement --reps 5` writes.

# %%
import os

from workbench.figures import d3_terms, families, report, selection

# %% tags=["parameters"]
# Which runs to draw; the selection is printed below and named in every chart's subtitle. All None:
# the newest `make demo` run (it logs the host agreement).
# $AS2D_NOTEBOOK_EXPERIMENT sets EXPERIMENT for every notebook.
RUN = None         # a job run id (8 characters are enough), or a sweep parent's id: that sweep's job runs
EXPERIMENT = None  # an experiment name: its newest job runs
SWEEP = None       # a sweep parent's run id: that sweep's job runs
DATA = None        # "speech" or "synthetic": never pooled; None draws the newest selected run's kind
# None: $AS2D_AGREEMENT_DIR if set; a folder written by `python -m workbench.native.agreement` (its
# agreement.parquet and agreement_summary.json) for the decomposition chart, else the run's table only.
AGREEMENT_DIR = None

# %%
SELECT = selection.Selector(run=RUN, experiment=EXPERIMENT, sweep=SWEEP, data=DATA)
result = report.guarded(families.d3_agreement, SELECT)

# %% [markdown]
# Tables (paper and this run under separate labels), then the charts.

# %%
report.show(result)

# %% [markdown]
# PNG + SVG into `notebooks/figures/` (or `$AS2D_FIGURES_DIR`) and into the source runs' artifacts
# under `figures/notebooks/`.

# %%
files = report.export(result)

# %% [markdown]
# The decomposition of a `python -m workbench.native.agreement` run, when its folder is given.

# %%
folder = AGREEMENT_DIR or os.environ.get("AS2D_AGREEMENT_DIR")
if folder:
    terms = d3_terms.from_agreement_files(folder)
    report.show(terms)
    report.export(terms, log=False)
