# %% [markdown]
# # Fig. 7 — native on-demand requests (request-to-EOS TPS per checkpoint)
#
# Section 5.4 / D.6.1: 19 checkpoints of a 10-minute trace, latest window per request, audio state prepared
# before the request. Latency L_u includes residual and instruction prefill; p50/p95 per method below.
#
# Produce the run first (on the host; the machine's load is logged as the run's `load` tag):
#
# ```
# python -m workbench.run experiment=ondemand
# ```
#
# Runs come from `$MLFLOW_TRACKING_URI` (default `sqlite:///mlruns/mlflow.db`). Without a run this
# notebook says so in one line and writes no figure.

# %%
from workbench.figures import native_jobs, report, selection

# %% tags=["parameters"]
# Which runs to draw; the selection is printed below and named in every chart's subtitle. All None:
# the newest runs of `as2d-ondemand` (the demo does not log this table).
# $AS2D_NOTEBOOK_EXPERIMENT sets EXPERIMENT for every notebook.
RUN = None         # a job run id (8 characters are enough), or a sweep parent's id: that sweep's job runs
EXPERIMENT = None  # an experiment name: its newest job runs
SWEEP = None       # a sweep parent's run id: that sweep's job runs
DATA = None        # "speech" or "synthetic": never pooled; None draws the newest selected run's kind

# %%
SELECT = selection.Selector(run=RUN, experiment=EXPERIMENT, sweep=SWEEP, data=DATA)
result = report.guarded(native_jobs.fig7_ondemand, SELECT)

# %%
report.show(result)

# %% [markdown]
# PNG + SVG into `notebooks/figures/` (or `$AS2D_FIGURES_DIR`) and into the source run's artifacts
# under `figures/notebooks/`.

# %%
files = report.export(result)
