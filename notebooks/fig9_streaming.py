# %% [markdown]
# # Fig. 9 — sustained native streaming
#
# D.6.2: paced 4 s blocks, 12 s context resets; per-block completion lag and queue wait, trailing (<= 15 blocks)
# decode TPS, prefill time and RTF, by input-arrival time.
#
# Produce the run first (on the host; the machine's load is logged as the run's `load` tag):
#
# ```
# python -m workbench.run experiment=streaming duration_s=600
# ```
#
# Runs come from `$MLFLOW_TRACKING_URI` (default `sqlite:///mlruns/mlflow.db`). Without a run this
# notebook says so in one line and writes no figure.

# %%
from workbench.figures import native_jobs, report, selection

# %% tags=["parameters"]
# Which runs to draw; the selection is printed below and named in every chart's subtitle. All None:
# the newest runs of `as2d-streaming` (the demo does not log this table).
# $AS2D_NOTEBOOK_EXPERIMENT sets EXPERIMENT for every notebook.
RUN = None         # a job run id (8 characters are enough), or a sweep parent's id: that sweep's job runs
EXPERIMENT = None  # an experiment name: its newest job runs
SWEEP = None       # a sweep parent's run id: that sweep's job runs
DATA = None        # "speech" or "synthetic": never pooled; None draws the newest selected run's kind

# %%
SELECT = selection.Selector(run=RUN, experiment=EXPERIMENT, sweep=SWEEP, data=DATA)
result = report.guarded(native_jobs.fig9_streaming, SELECT)

# %%
report.show(result)

# %% [markdown]
# PNG + SVG into `notebooks/figures/` (or `$AS2D_FIGURES_DIR`) and into the source run's artifacts
# under `figures/notebooks/`.

# %%
files = report.export(result)
