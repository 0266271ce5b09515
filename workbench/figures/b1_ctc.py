"""B.1 with chunk (CTC) proposers: per-corpus strict prefix acceptance, one box per proposer.

**paper (phones)**: B.1's medians for a Parakeet 110M CTC proposer against Qwen3-ASR 1.7B (K = 32,
28,595 blocks): AMI 0.55, SPGISpeech 0.52, GigaSpeech 0.31, Earnings22 0. **this run**: the newest
``ctc_probe`` run per (corpus, proposer), with this run's target and proposers.
"""

from __future__ import annotations

import altair as alt
import polars as pl

from .paper import _title
from .paper_values import PAPER, THIS_RUN
from .report import Result
from .runs import MissingTable, load_table, store_uri, table_names
from .selection import Pick, resolve
from .tasks import paper_b1


def distribution(probe: pl.DataFrame) -> pl.DataFrame:
    """Per (proposer, dataset): blocks, nonempty proposals, median and quartiles of acceptance, share at zero."""
    p = probe.filter(pl.col("acceptance").is_not_null())
    return p.group_by("proposer", "dataset").agg(
        pl.len().alias("blocks"), pl.col("acceptance").median().alias("median_acceptance"),
        pl.col("acceptance").quantile(0.25, "linear").alias("q25"),
        pl.col("acceptance").quantile(0.75, "linear").alias("q75"),
        (pl.col("acceptance") == 0).mean().alias("zero_share")).sort("proposer", "dataset")


def b1_ctc(sel: Pick = None, uri: str | None = None) -> Result:
    """B.1 per (corpus, proposer) from the newest selected ``ctc_probe`` run covering it.

    Default selection: the newest ``as2d-ctc_probe`` runs (the demo runs no CTC probe)."""
    selection = resolve(sel, "as2d-ctc_probe", prefer_demo=False, uri=uri)
    runs = selection.runs
    frames, used, seen = [], [], set()
    for run in runs:  # newest first: one run per (dataset, proposer)
        if "ctc_probe" not in table_names(run, uri):
            continue
        f = load_table(run, "ctc_probe", uri)
        keys = {(d, p) for d, p in f.select("dataset", "proposer").unique().iter_rows()} - seen
        if keys:
            frames.append(f.filter(pl.struct("dataset", "proposer").is_in(
                [{"dataset": d, "proposer": p} for d, p in keys])))
            seen |= keys
            used.append(run)
    if not frames:
        raise MissingTable(f"no run of {selection.what!r} logged a ctc_probe table ({len(runs)} run(s) checked at "
                           f"{store_uri(uri)}); run `python -m workbench.run experiment=ctc_probe` (demo corpus) or "
                           "with dataset=ami dataset.root=/data/ami")
    probe = pl.concat(frames, how="diagonal_relaxed")
    dist = distribution(probe)
    paper = paper_b1().select("dataset", pl.col("median_acceptance").alias("paper_median (Parakeet 110M)"))
    data = probe.filter(pl.col("acceptance").is_not_null()).select("dataset", "proposer", "acceptance")
    chart = alt.Chart(data).mark_boxplot(extent="min-max").encode(
        x=alt.X("dataset:N", title=None), xOffset="proposer:N", color=alt.Color("proposer:N", title="Proposer"),
        y=alt.Y("acceptance:Q", title="accepted / proposed (cap 32)", scale=alt.Scale(domain=[0, 1])),
    ).properties(width=420, height=240, title=_title("B.1: acceptance per corpus, chunk (CTC) proposers",
                                                     selection.title()))
    return Result("b1_ctc", {"acceptance": chart},
                  {f"{PAPER}: B.1 medians (Parakeet 110M CTC vs Qwen3-ASR 1.7B, K=32)": paper_b1(),
                   f"{THIS_RUN}: strict prefix acceptance per corpus and proposer": dist.join(
                       paper, on="dataset", how="left")}, used, selection=selection)


__all__ = ["b1_ctc", "distribution"]
