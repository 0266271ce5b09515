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
import os

import mlflow
import polars as pl

import workbench.figures  # noqa: F401 - notebook defaults: no MLflow artifact progress bars on stderr

# %% tags=["parameters"]
# None: $AS2D_NOTEBOOK_EXPERIMENT if set, else the job's default experiment.
EXPERIMENT = None
TABLE = "blocks"

# %%
mlflow.set_tracking_uri(os.environ.get("MLFLOW_TRACKING_URI", "sqlite:///mlruns/mlflow.db"))
name = EXPERIMENT or os.environ.get("AS2D_NOTEBOOK_EXPERIMENT") or "as2d-streaming"
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
    print(f"no streaming run with tables/{TABLE}.parquet in experiment {name!r}"
          f": run `python -m workbench.run experiment=streaming duration_s=600`")

# %%
if frame is not None:
    from workbench.native.streaming import summarize

    print(pl.DataFrame([summarize(frame)]).transpose(include_header=True, column_names=["value"]))
