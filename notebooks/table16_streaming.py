# %% [markdown]
# # Table 16 — sustained streaming summary
#
# D.6.2: mean encoder / prefill / decode, mean block processing, active and resource RTF, decode TPS, p95 and
# final completion lag, maximum and final queue wait, first / maximum temperature (host sensors where readable),
# capped outputs.
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
result = report.guarded(native_jobs.table16_streaming, SELECT)

# %%
report.show(result)
