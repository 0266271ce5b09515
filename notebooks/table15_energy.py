# %% [markdown]
# # Table 15 — request energy
#
# D.6.1: E = integral of I*V dt (trapezoid rule) over the request, mean W and J/token. On the host: RAPL
# counters where readable (the ondemand job prints 'energy unavailable on this machine' otherwise and logs no
# energy columns). Phones: battery samples from the phone_runner monitor (workbench.energy.request_energy).
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
result = report.guarded(native_jobs.table15_energy, SELECT)

# %%
report.show(result)
