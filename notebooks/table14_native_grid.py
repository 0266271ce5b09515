# %% [markdown]
# # Table 14 — the native drafter x budget grid (B.4 / D.4.5)
#
# Each candidate source (the pair's autoregressive producer, PocketSphinx, Parakeet CTC) runs As²d natively at
# each maximum chain width K (root included), beside a target-only control, five shuffled repetitions on one
# development window; gain is relative to the interleaved target-only control, every run exact.
#
# Numbers labelled **paper (phones)** are copied from the paper (`workbench/figures/paper_values.py`, Table 14:
# one 60 s AMI window on Redmi K70 Pro); **this run** comes from your MLflow runs (this host, its own window).
# They are shown side by side, each on its own axis, and never mixed.
#
# Produce the run first (on the host; the machine's load is logged as the run's `load` tag):
#
# ```
# python -m workbench.run experiment=native_grid
# ```
#
# Runs come from `$MLFLOW_TRACKING_URI` (default `sqlite:///mlruns/mlflow.db`). Without a run this
# notebook says so in one line and writes no figure.

# %%
from workbench.figures import native_jobs, report, selection

# %% tags=["parameters"]
# Which runs to draw; the selection is printed below and named in every chart's subtitle. All None:
# the newest runs of `as2d-native_grid` (the demo does not log this table).
# $AS2D_NOTEBOOK_EXPERIMENT sets EXPERIMENT for every notebook.
RUN = None         # a job run id (8 characters are enough), or a sweep parent's id: that sweep's job runs
EXPERIMENT = None  # an experiment name: its newest job runs
SWEEP = None       # a sweep parent's run id: that sweep's job runs
DATA = None        # "speech" or "synthetic": never pooled; None draws the newest selected run's kind

# %%
SELECT = selection.Selector(run=RUN, experiment=EXPERIMENT, sweep=SWEEP, data=DATA)
result = report.guarded(native_jobs.table14_native_grid, SELECT)

# %%
report.show(result)

# %% [markdown]
# PNG + SVG into `notebooks/figures/` (or `$AS2D_FIGURES_DIR`) and into the source run's artifacts
# under `figures/notebooks/`.

# %%
files = report.export(result)
