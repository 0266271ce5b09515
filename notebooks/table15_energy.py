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
import os

import mlflow
import polars as pl

import workbench.figures  # noqa: F401 - notebook defaults: no MLflow artifact progress bars on stderr

# %% tags=["parameters"]
# None: $AS2D_NOTEBOOK_EXPERIMENT if set, else the job's default experiment.
EXPERIMENT = None
TABLE = "requests"

# %%
mlflow.set_tracking_uri(os.environ.get("MLFLOW_TRACKING_URI", "sqlite:///mlruns/mlflow.db"))
name = EXPERIMENT or os.environ.get("AS2D_NOTEBOOK_EXPERIMENT") or "as2d-ondemand"
exp = mlflow.get_experiment_by_name(name)
runs = [] if exp is None else mlflow.search_runs([exp.experiment_id], "tags.`as2d.role` = 'job'",
                                                 order_by=["start_time DESC"], output_format="list")
frame, run = None, None
for r in runs:
    try:
        path = mlflow.artifacts.download_artifacts(run_id=r.info.run_id, artifact_path=f"tables/{TABLE}.parquet")
    except Exception:  # noqa: BLE001 - a run without this table (another job's)
        continue
    frame, run = pl.read_parquet(path), r
    break
if frame is None:
    print(f"no ondemand run with tables/{TABLE}.parquet in experiment {name!r}"
          f": run `python -m workbench.run experiment=ondemand`")

# %%
if frame is not None:
    if "energy_j" not in frame.columns:
        print("no energy columns in this run: energy unavailable on the machine that ran it")
    else:
        t = frame.group_by("method", maintain_order=True).agg(
            pl.col("energy_j").sum(), pl.col("latency_s").sum().alias("response_s"), pl.col("tokens").sum())
        print(t.with_columns((pl.col("energy_j") / pl.col("response_s")).alias("mean_w"),
                             (pl.col("energy_j") / pl.col("tokens")).alias("j_per_token")))
