"""Fig. 7 / Table 15 (native on-demand requests) and Fig. 9 / Table 16 (sustained streaming).

Each builder takes a notebook's selector (``selection``): by default the newest runs of the job's own
experiment (``as2d-ondemand``, ``as2d-streaming``; the demo logs neither table), or a run, a sweep or
an experiment by parameter. The table is read from the newest selected run that logged it, and every
chart's subtitle names the selection. Without such a run the builder raises one line naming the
command that makes it (``report.guarded`` prints it).
"""

from __future__ import annotations

import altair as alt
import polars as pl

from .paper import _title, method_color
from .paper_values import THIS_RUN
from .report import Result
from .selection import Pick, job_table

ONDEMAND, STREAMING = "as2d-ondemand", "as2d-streaming"


def fig7_ondemand(sel: Pick = None) -> Result:
    """Fig. 7 (Section 5.4 / D.6.1): request-to-EOS TPS per checkpoint and method, with p50/p95 latency."""
    from workbench.native.ondemand import tail_latency

    frame, run, selection = job_table(sel, ONDEMAND, "requests")
    chart = alt.Chart(frame.select("checkpoint_s", "method", "request_tps").to_pandas()).mark_line(point=True).encode(
        x=alt.X("checkpoint_s:Q", title="request position (s)"), y=alt.Y("request_tps:Q", title="request-to-EOS TPS"),
        color=method_color(frame["method"], field="method")).properties(
        width=420, height=220, title=_title("Native on-demand requests (Fig. 7)", selection.title()))
    return Result("fig7", {"ondemand": chart}, {f"{THIS_RUN}: request latency percentiles": tail_latency(frame)},
                  [run], selection=selection)


def energy_per_method(frame: pl.DataFrame) -> pl.DataFrame:
    """Table 15: energy, response time and tokens summed per method; mean power and joules per token."""
    t = frame.group_by("method", maintain_order=True).agg(
        pl.col("energy_j").sum(), pl.col("latency_s").sum().alias("response_s"), pl.col("tokens").sum())
    return t.with_columns((pl.col("energy_j") / pl.col("response_s")).alias("mean_w"),
                          (pl.col("energy_j") / pl.col("tokens")).alias("j_per_token"))


def table15_energy(sel: Pick = None) -> Result:
    """Table 15: per-method request energy from the on-demand run (RAPL on the host, when it was readable)."""
    frame, run, selection = job_table(sel, ONDEMAND, "requests")
    if "energy_j" not in frame.columns:
        return Result("table15", runs=[run], selection=selection,
                      notes=[f"no energy columns in run {run.info.run_id[:8]}: energy was unavailable on the "
                             "machine that ran it"])
    return Result("table15", tables={f"{THIS_RUN}: request energy per method": energy_per_method(frame)},
                  runs=[run], selection=selection)


def fig9_streaming(sel: Pick = None) -> Result:
    """Fig. 9 (D.6.2): lag, queue wait and the trailing decode rate per input block over the stream."""
    frame, run, selection = job_table(sel, STREAMING, "blocks")
    cols = ["lag_s", "queue_wait_s", "trailing_decode_tps", "trailing_prefill_s", "trailing_rtf"]
    data = frame.select("arrival", *cols).unpivot(index="arrival", variable_name="metric").to_pandas()
    chart = alt.Chart(data).mark_line(point=True).encode(
        x=alt.X("arrival:Q", title="input arrival (s)"), y=alt.Y("value:Q", title=None), row="metric:N",
    ).resolve_scale(y="independent").properties(
        height=90, title=_title("Sustained streaming (Fig. 9)", selection.title()))
    return Result("fig9", {"streaming": chart}, {}, [run], selection=selection)


def table16_streaming(sel: Pick = None) -> Result:
    """Table 16: the streaming run's summary (lag, queue wait, real-time factor) in one column."""
    from workbench.native.streaming import summarize

    frame, run, selection = job_table(sel, STREAMING, "blocks")
    summary = pl.DataFrame([summarize(frame)]).transpose(include_header=True, column_names=["value"])
    return Result("table16", tables={f"{THIS_RUN}: streaming summary": summary}, runs=[run], selection=selection)


__all__ = ["energy_per_method", "fig7_ondemand", "fig9_streaming", "table15_energy", "table16_streaming"]
