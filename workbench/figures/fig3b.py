"""Fig. 3(b) (B.3.2): producer acceptance without minus with the preceding transcript, per block.

A ``context_probe`` run proposes up to 32 tokens per audio block twice -- with the preceding
transcript as context (fresh) and with none (stale) -- and the target checks both under the same
context. The paper plots all 480 paired differences (stale - fresh): median 0, 72.3% unchanged
(73 pairs where both accept nothing), 9.6% reduced and 15.6% increased by more than 0.05. This
module draws the same distribution from this run's blocks, per corpus, beside those numbers.
"""

from __future__ import annotations

import altair as alt
import polars as pl

from workbench.diagnostics.context_probe import summary as probe_summary

from .paper import _title
from .paper_values import PAPER, THIS_RUN
from .report import Result
from .runs import MissingTable, load_table, store_uri, table_names
from .selection import Pick, resolve

SOURCE = "B.3.2 text (Qwen3-ASR 0.6B proposals vs 1.7B target, 480 blocks, cap 32)"
PAPER_FIG3B = {"blocks": 480.0, "median_difference": 0.0, "unchanged_share": 0.723, "both_zero_share": 73 / 480,
               "reduced_share": 0.096, "increased_share": 0.156}
THRESHOLD = 0.05  # B.3.2: "by more than 0.05"


def paper_fig3b() -> pl.DataFrame:
    return pl.DataFrame([{"quantity": k, "value": v} for k, v in PAPER_FIG3B.items()]).with_columns(
        pl.lit(PAPER).alias("provenance"), pl.lit(SOURCE).alias("source"))


def difference_chart(probe: pl.DataFrame, subtitle: str) -> alt.TopLevelMixin:
    """Histogram of stale - fresh acceptance per block (bins of 0.05), one colour per corpus, with the
    +-0.05 band the paper counts as unchanged-ish marked."""
    d = probe.filter(pl.col("difference").is_not_null()).select("dataset", "difference")
    bars = alt.Chart(d).mark_bar(opacity=0.8).encode(
        x=alt.X("difference:Q", bin=alt.Bin(step=0.05, extent=[-1, 1]),
                title="Acceptance without context − with context (per block)"),
        y=alt.Y("count():Q", title="Blocks", stack=True),
        color=alt.Color("dataset:N", title="Corpus"))
    band = alt.Chart(pl.DataFrame({"lo": [-THRESHOLD], "hi": [THRESHOLD]})).mark_rect(opacity=0.12, color="gray") \
        .encode(x="lo:Q", x2="hi:Q")
    rule = alt.Chart(pl.DataFrame({"x": [0.0]})).mark_rule(strokeDash=[4, 3], color="black").encode(x="x:Q")
    title = _title("Fig. 3(b): acceptance need not wait for updated text (B.3.2)", subtitle)
    return alt.layer(band, bars, rule).properties(width=480, height=240, title=title)


def fig3b_context(sel: Pick = None, uri: str | None = None) -> Result:
    """Fig. 3(b) from the newest selected context-probe run of each corpus.

    Default selection: the newest ``as2d-context_probe`` runs (the demo runs no context probe)."""
    selection = resolve(sel, "as2d-context_probe", prefer_demo=False, uri=uri)
    runs = selection.runs
    frames, used, seen = [], [], set()
    for run in runs:  # newest first: one run per corpus, never two mixed
        if "context_probe" not in table_names(run, uri):
            continue
        f = load_table(run, "context_probe", uri)
        new = [d for d in f["dataset"].unique().to_list() if d not in seen]
        if new:
            frames.append(f.filter(pl.col("dataset").is_in(new)))
            seen.update(new)
            used.append(run)
    if not frames:
        raise MissingTable(f"no run of {selection.what!r} logged a context_probe table ({len(runs)} run(s) checked "
                           f"at {store_uri(uri)}); run `python -m workbench.run experiment=context_probe "
                           "dataset=ami dataset.root=/data/ami` once per corpus")
    probe = pl.concat(frames, how="diagonal_relaxed")
    rows = [{"dataset": "all", **probe_summary(probe, THRESHOLD)}]
    for (ds,), g in probe.group_by("dataset", maintain_order=True):
        if g["difference"].drop_nulls().len():
            rows.append({"dataset": ds, **probe_summary(g, THRESHOLD)})
    per_corpus = pl.DataFrame(rows)
    side = pl.DataFrame([{"quantity": k, PAPER: v, THIS_RUN: float(per_corpus.row(0, named=True)[k])}
                         for k, v in PAPER_FIG3B.items()])
    return Result("fig3b", {"context_difference": difference_chart(probe, selection.title())},
                  {f"{PAPER}: {SOURCE}": paper_fig3b(),
                   f"{PAPER} vs {THIS_RUN}: pooled over every block": side,
                   f"{THIS_RUN}: per corpus": per_corpus}, used, selection=selection)


__all__ = ["PAPER_FIG3B", "difference_chart", "fig3b_context", "paper_fig3b"]
