"""Fig. 7 / Table 15 (native on-demand requests), Fig. 9 / Table 16 (sustained streaming) and
Table 14 (the native drafter x budget grid).

Each builder takes a notebook's selector (``selection``): by default the newest runs of the job's own
experiment (``as2d-ondemand``, ``as2d-streaming``, ``as2d-native_grid``; the demo logs none of them),
or a run, a sweep or an experiment by parameter. The table is read from the newest selected run that
logged it, and every chart's subtitle names the selection. Without such a run the builder raises one
line naming the command that makes it (``report.guarded`` prints it).
"""

from __future__ import annotations

import altair as alt
import polars as pl

from .paper import _title, method_color
from .paper_values import PAPER, THIS_RUN, table14
from .report import Result
from .selection import Pick, job_table

ONDEMAND, STREAMING, GRID = "as2d-ondemand", "as2d-streaming", "as2d-native_grid"


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


def _gain_panel(frame: pl.DataFrame, title: str, subtitle: str) -> alt.Chart:
    return alt.Chart(frame.select("drafter", "max_k", "gain_pct").to_pandas()).mark_line(point=True).encode(
        x=alt.X("max_k:O", title="Maximum K per chain (root included)"),
        y=alt.Y("gain_pct:Q", title="TPS gain over target-only (%)"),
        color=alt.Color("drafter:N", title="Drafter")).properties(width=260, height=200,
                                                                   title=_title(title, subtitle))


def table14_native_grid(sel: Pick = None) -> Result:
    """Table 14 (B.4 / D.4.5): this run's native drafter x budget grid beside the paper's, each on its own
    axis (the paper's is one AMI window on Redmi K70 Pro; this run's is this host on its own window)."""
    grid, run, selection = job_table(sel, GRID, "grid")
    paper = table14().rename({"max_K": "max_k"})
    chart = alt.hconcat(
        _gain_panel(paper.filter(pl.col("drafter") != "target_only"), f"{PAPER}: Table 14",
                    "one 60 s AMI dev window, Redmi K70 Pro, 5 runs per configuration"),
        _gain_panel(grid.filter(pl.col("arm") != "target_only"), f"{THIS_RUN}: native grid", selection.title()))
    return Result("table14", {"grid": chart},
                  {f"{PAPER}: Table 14 (D.4.5)": paper.drop("provenance", "source"),
                   f"{THIS_RUN}: native drafter x budget grid": grid}, [run], selection=selection)


__all__ = ["energy_per_method", "fig7_ondemand", "fig9_streaming", "table14_native_grid", "table15_energy",
           "table16_streaming"]
