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
    import altair as alt

    from workbench.native.ondemand import tail_latency

    print(tail_latency(frame))
    chart = alt.Chart(frame.select("checkpoint_s", "method", "request_tps").to_pandas()).mark_line(point=True).encode(
        x=alt.X("checkpoint_s:Q", title="request position (s)"), y=alt.Y("request_tps:Q", title="request-to-EOS TPS"),
        color="method:N")
    out = Path(os.environ.get("AS2D_FIGURES_DIR", "figures"))
    out.mkdir(parents=True, exist_ok=True)
    chart.save(str(out / "fig7_ondemand.png"))
