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
import os
from pathlib import Path

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
    import altair as alt

    from workbench.native.ondemand import tail_latency

    print(tail_latency(frame))
    chart = alt.Chart(frame.select("checkpoint_s", "method", "request_tps").to_pandas()).mark_line(point=True).encode(
        x=alt.X("checkpoint_s:Q", title="request position (s)"), y=alt.Y("request_tps:Q", title="request-to-EOS TPS"),
        color="method:N")
    out = Path(os.environ.get("AS2D_FIGURES_DIR", "figures"))
    out.mkdir(parents=True, exist_ok=True)
    chart.save(str(out / "fig7_ondemand.png"))
