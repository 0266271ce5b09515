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

import polars as pl

from workbench.figures.runs import MissingTable, NoRuns, experiment, latest_table

# %% tags=["parameters"]
# None: $AS2D_NOTEBOOK_EXPERIMENT if set, else the job's default experiment.
EXPERIMENT = None
TABLE = "requests"

# %%
name = EXPERIMENT or experiment("as2d-ondemand")
try:
    frame, run = latest_table(name, TABLE)
except (NoRuns, MissingTable) as why:  # says what is missing and the command that makes it
    frame, run = None, None
    print(f"{why}; this figure needs `python -m workbench.run experiment=ondemand`")

# %%
if frame is not None:
    if "energy_j" not in frame.columns:
        print("no energy columns in this run: energy unavailable on the machine that ran it")
    else:
        t = frame.group_by("method", maintain_order=True).agg(
            pl.col("energy_j").sum(), pl.col("latency_s").sum().alias("response_s"), pl.col("tokens").sum())
        print(t.with_columns((pl.col("energy_j") / pl.col("response_s")).alias("mean_w"),
                             (pl.col("energy_j") / pl.col("tokens")).alias("j_per_token")))
