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

import polars as pl

from workbench.figures.runs import MissingTable, NoRuns, experiment, latest_table

# %% tags=["parameters"]
# None: $AS2D_NOTEBOOK_EXPERIMENT if set, else the job's default experiment.
EXPERIMENT = None
TABLE = "blocks"

# %%
name = EXPERIMENT or experiment("as2d-streaming")
try:
    frame, run = latest_table(name, TABLE)
except (NoRuns, MissingTable) as why:  # says what is missing and the command that makes it
    frame, run = None, None
    print(f"{why}; this figure needs `python -m workbench.run experiment=streaming duration_s=600`")

# %%
if frame is not None:
    from workbench.native.streaming import summarize

    print(pl.DataFrame([summarize(frame)]).transpose(include_header=True, column_names=["value"]))
