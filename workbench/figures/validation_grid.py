"""D.2.6's Note 9 reanalysis: every source x budget setting ranked by pooled validation throughput.

The paper ranks all 42 source/budget settings of Redmi Note 9 Pro on its 100 validation windows,
using Qwen at the same budget where a source is language-ineligible; validation selects fixed
Qwen/budget 3 (5.6233 TPS) over Qwen/budget 7 (5.3898), and that setting reaches 5.8512 TPS on the
688 test windows. This run's grid comes from an ``oracle`` (or ``budget_select``) job run with a
validation share and ``validation_shortlist=null`` (``validation_<device>`` tables, best first).
"""

from __future__ import annotations

import altair as alt
import polars as pl

from . import paper_values as PV
from .paper import _title
from .report import Result
from .runs import MissingTable, tables_by_device
from .selection import Pick, resolve

SECTION = "D.2.6 (Note 9 reanalysis, 100 validation / 688 test windows)"


def paper_note9() -> pl.DataFrame:
    """The paper's Note 9 reanalysis numbers (D.2.6): the two settings it names, and the test TPS."""
    rows = [{"device": "redmi_note_9_pro", "source": "qwen", "budget": 3, "validation_tps": 5.6233,
             "validation_rank": 1, "test_tps": 5.8512},
            {"device": "redmi_note_9_pro", "source": "qwen", "budget": 7, "validation_tps": 5.3898,
             "validation_rank": None, "test_tps": None}]
    return pl.DataFrame(rows, schema_overrides={"validation_rank": pl.Int64, "test_tps": pl.Float64}).with_columns(
        pl.lit(PV.PAPER).alias("provenance"), pl.lit(SECTION).alias("section"))


def grid_summary(grid: pl.DataFrame, summary: pl.DataFrame | None) -> pl.DataFrame:
    """Per device: settings ranked, the frozen pick, where the dev pick and the deployed pair rank, test TPS."""
    rows = []
    for (device,), g in grid.sort("validation_rank").group_by("device", maintain_order=True):
        best = g.row(0, named=True)
        dev_pick = g.sort("dev_rank").row(0, named=True)
        row = {"device": device, "settings": g.height, "frozen": f"{best['source']}/b{best['budget']}",
               "validation_tps": best["validation_tps"], "dev_pick": f"{dev_pick['source']}/b{dev_pick['budget']}",
               "dev_pick_validation_rank": dev_pick["validation_rank"]}
        s = summary.filter(pl.col("device") == device) if summary is not None else None
        if s is not None and s.height:
            srow = s.row(0, named=True)
            row["test_tps"] = srow.get("tps")
            dep = str(srow.get("deployed") or "")
            src, _, b = dep.partition("/b")
            hit = g.filter((pl.col("source") == src) & (pl.col("budget") == int(b))) if b.isdigit() else g.clear()
            row["deployed"] = dep or None
            row["deployed_validation_rank"] = hit["validation_rank"][0] if hit.height else None
            row["deployed_validation_tps"] = hit["validation_tps"][0] if hit.height else None
        rows.append(row)
    return pl.DataFrame(rows)


def grid_chart(grid: pl.DataFrame, subtitle: str) -> alt.TopLevelMixin:
    """Validation TPS per budget, one line per source, the frozen (rank 1) setting ringed; one panel per device."""
    base = alt.Chart(grid).encode(
        x=alt.X("budget:O", title="Proposal budget b (tokens after the root)"),
        y=alt.Y("validation_tps:Q", title="Pooled validation throughput (tokens/s)", scale=alt.Scale(zero=False)),
        color=alt.Color("source:N", title="Candidate source"))
    lines = base.mark_line(point=True).encode(tooltip=["source", "budget", "validation_tps", "validation_rank",
                                                       "dev_rank"])
    frozen = base.transform_filter(alt.datum.validation_rank == 1).mark_point(size=220, shape="circle", filled=False,
                                                                                 strokeWidth=2.5, color="black")
    layered = alt.layer(lines, frozen).properties(width=320, height=220)
    title = _title("Every source x budget ranked on validation (D.2.6); ring = frozen for test", subtitle)
    return layered.facet(facet=alt.Facet("device:N", title="Device profile"), columns=2).resolve_scale(
        y="independent").properties(title=title)


def d26_validation_grid(sel: Pick = None) -> Result:
    """The full-grid validation ranking per device, beside the paper's Note 9 reanalysis.

    Default selection: the newest ``as2d-oracle`` runs (the demo ranks no full validation grid)."""
    selection = resolve(sel, "as2d-oracle", prefer_demo=False)
    grid, runs = tables_by_device(selection, "validation", prefix=True)
    need = {"source", "budget", "validation_tps", "validation_rank", "dev_rank"}
    if not need <= set(grid.columns):
        raise MissingTable(f"no full validation grid in {selection.what!r}: its validation tables lack "
                           f"{sorted(need - set(grid.columns))}; "
                           "rerun: python -m workbench.run experiment=oracle validation_fraction=0.2 "
                           "validation_shortlist=null")
    try:
        summary, _ = tables_by_device(selection, "summary")
    except MissingTable:
        summary = None
    this_run = grid_summary(grid, summary)
    top = grid.sort(["device", "validation_rank"]).group_by("device", maintain_order=True).head(10)
    return Result("d26", {"validation_grid": grid_chart(grid, selection.title())},
                  {f"{PV.PAPER}: {SECTION}": paper_note9(),
                   f"{PV.THIS_RUN}: frozen setting, dev pick and deployed pair per device": this_run,
                   f"{PV.THIS_RUN}: top 10 settings per device on validation": top.drop("run_id", strict=False)},
                  runs, selection=selection)


__all__ = ["d26_validation_grid", "grid_chart", "grid_summary", "paper_note9"]
