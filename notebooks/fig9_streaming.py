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
import os
from pathlib import Path

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
    import altair as alt

    cols = ["lag_s", "queue_wait_s", "trailing_decode_tps", "trailing_prefill_s", "trailing_rtf"]
    data = frame.select("arrival", *cols).unpivot(index="arrival", variable_name="metric").to_pandas()
    chart = alt.Chart(data).mark_line(point=True).encode(x=alt.X("arrival:Q", title="input arrival (s)"),
                                                         y=alt.Y("value:Q", title=None), row="metric:N"
                                                         ).resolve_scale(y="independent").properties(height=90)
    out = Path(os.environ.get("AS2D_FIGURES_DIR", "figures"))
    out.mkdir(parents=True, exist_ok=True)
    chart.save(str(out / "fig9_streaming.png"))
