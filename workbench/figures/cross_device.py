"""The same input on several devices (D.4.5): one representative window per dataset, every phone.

D.4.5 picks each dataset's Table 1 case on Xiaomi 14 (the completed window nearest the median gain
of As²d over the faster of SD and SpecASR, >= 64 target tokens, ties by id) and shows the K70
read-speech case on *the same audio* "rather than selecting a second favorable input": a
different device on one shared input. This module applies that rule on a reference device of a
multi-device replay run and reports the very same windows on every other device of the run --
never a second selection. The paper prints the Xiaomi 14 side only (Table 1); the other devices'
values are this run's.
"""

from __future__ import annotations

import altair as alt
import polars as pl

from . import analysis as A
from . import paper_values as PV
from .paper import METHOD_LABEL, _title, method_color
from .report import Result
from .runs import MissingTable, tables_by_device
from .selection import Pick, resolve

METHODS = ("target_only", "sd", "asp", "as2d")


def same_input(per_window: pl.DataFrame, reference: str, min_tokens: int = 64) -> pl.DataFrame:
    """Per dataset: the reference device's representative window, with every device's TPS on it.

    Raises ``MissingTable`` when no window of the reference device qualifies (Table 1's rule wants
    ``min_tokens`` target tokens): an empty chart would look like a result."""
    cases = A.representative_windows(per_window, min_tokens).filter(pl.col("device") == reference)
    if not cases.height:
        longest = per_window.filter(pl.col("method") == "target_only")["tokens"].max()
        raise MissingTable(f"no window on {reference} has the >= {min_tokens} target tokens D.4.5 / Table 1 need "
                           f"(the longest has {longest}); replay a corpus with longer windows, e.g. "
                           "python -m workbench.run experiment=replay dataset=librispeech dataset.root=DIR")
    picked = cases.select("dataset", "window_id")
    wide = per_window.pivot(on="method", index=["device", "window_id", "dataset"], values="tps")
    out = picked.join(wide, on=["dataset", "window_id"], how="left").with_columns(
        (100 * (pl.col("as2d") / pl.max_horizontal("sd", "asp") - 1)).alias("gain_pct"),
        (pl.col("as2d") / pl.col("target_only")).alias("speedup"),
        (pl.col("device") == reference).alias("reference"))
    return out.select("dataset", "window_id", "device", "reference", *METHODS, "gain_pct", "speedup").sort(
        "dataset", pl.col("reference").not_(), "device")


def same_input_chart(cases: pl.DataFrame, subtitle: str) -> alt.TopLevelMixin:
    long = cases.unpivot(index=["dataset", "window_id", "device"], on=list(METHODS), variable_name="method",
                         value_name="tps").with_columns(pl.col("method").replace(METHOD_LABEL).alias("Method"))
    bars = alt.Chart(long).mark_bar().encode(
        x=alt.X("device:N", title=None),
        xOffset=alt.XOffset("Method:N", sort=[METHOD_LABEL.get(m, m) for m in METHODS]),
        y=alt.Y("tps:Q", title="Window throughput (tokens/s)"),
        color=method_color(long["Method"]),
        tooltip=["window_id", "device", "Method", "tps"]).properties(width=220, height=200)
    title = _title("The same input on every device (D.4.5): each dataset's representative window", subtitle)
    return bars.facet(facet=alt.Facet("dataset:N", title=None), columns=3).properties(title=title)


def cross_device(sel: Pick = None, prefer: str = "xiaomi_14") -> Result:
    """D.4.5's same-input comparison from the newest replay runs covering two or more devices."""
    selection = resolve(sel, "as2d-replay", prefer_demo=False)  # the demo's clips are shorter than D.4.5's rule
    per, runs = tables_by_device(selection, "per_window")
    windows, _ = tables_by_device(selection, "windows")
    per = A.with_dataset(per, windows)
    devices = sorted(per["device"].unique().to_list())
    if len(devices) < 2:
        raise MissingTable(f"{selection.what!r} covers one device ({devices}); run a replay over two or more: "
                           "python -m workbench.run experiment=replay +devices=[xiaomi_14,k70_pro]")
    reference = prefer if prefer in devices else devices[0]
    cases = same_input(per, reference)
    notes = [] if reference == prefer else [f"{prefer} is not in these runs: the cases are picked on {reference}"]
    return Result("d45", {"same_input": same_input_chart(cases, f"{selection.title()}\ncases picked on {reference}")},
                  {f"{PV.PAPER}: Table 1 (Xiaomi 14; the paper prints no other device's TPS on these inputs)":
                   PV.table1().drop("provenance", "source"),
                   f"{PV.THIS_RUN}: the {reference} cases on every device": cases}, runs, notes, selection)


__all__ = ["cross_device", "same_input", "same_input_chart"]
