"""D.3 decomposition chart: each window's signed replay-vs-native TPS error, stacked by term.

The terms (``workbench.native.decomposition.TERMS``: publication curve, readiness, verify cost
concurrent / idle, loop work, drain) are in signed-TPS-error points and sum to the median run's error,
drawn as a black tick; the window's judged error (each repetition against its own probes, the median of
those) is a red point beside it where the table has both. Reads the ``agreement`` table (columns
``d_<term>``) of a demo run, or the
``agreement.parquet`` + ``agreement_summary.json`` that ``python -m workbench.native.agreement`` writes.
"""

from __future__ import annotations

import json
from pathlib import Path

import altair as alt
import polars as pl

from .report import Result

TERMS = ("publication", "readiness", "verify_concurrent", "verify_idle", "loop", "drain")
LABELS = {"publication": "publication curve", "readiness": "readiness / stalls", "verify_concurrent":
          "verify cost, concurrent", "verify_idle": "verify cost, idle", "loop": "loop work", "drain": "drain"}


def has_terms(err: pl.DataFrame) -> bool:
    return all(f"d_{t}" in err.columns for t in TERMS)


def terms_long(err: pl.DataFrame) -> pl.DataFrame:
    """(window_id, term, pct): one row per window and term."""
    return err.select("window_id", *(pl.col(f"d_{t}").alias(LABELS[t]) for t in TERMS)).unpivot(
        index="window_id", variable_name="term", value_name="pct")


def decomposed(err: pl.DataFrame) -> str:
    """The error column the terms add up to: the median run's, or the judged one in an older table."""
    col = "median_run_signed_error_pct"
    return col if col in err.columns and err[col].null_count() < err.height else "signed_error_pct"


def terms_chart(err: pl.DataFrame, subtitle: str | None = None) -> alt.LayerChart:
    """Stacked signed bars per window (one colour per term), the median run's error (their sum) as a tick,
    and the judged error as a point when it is another column."""
    order = [LABELS[t] for t in TERMS]
    bars = alt.Chart(terms_long(err)).mark_bar().encode(
        x=alt.X("window_id:N", title="Held-out window", sort=None, axis=alt.Axis(labelAngle=-30)),
        y=alt.Y("sum(pct):Q", title="Signed TPS error, replay vs native (points)", stack="zero"),
        color=alt.Color("term:N", title="Term", sort=order, scale=alt.Scale(domain=order)),
        order=alt.Order("term_order:Q"),
        tooltip=["window_id", "term", alt.Tooltip("pct:Q", format="+.2f")],
    ).transform_calculate(term_order=" + ".join(f"(datum.term == '{t}') * {i}" for i, t in enumerate(order)))
    col = decomposed(err)
    total = alt.Chart(err.select("window_id", pl.col(col).alias("error"))).mark_tick(
        color="black", thickness=2, size=28).encode(
        x=alt.X("window_id:N", sort=None), y="error:Q",
        tooltip=["window_id", alt.Tooltip("error:Q", format="+.2f", title="median run's error (the terms' sum)")])
    zero = alt.Chart(pl.DataFrame({"y": [0.0]})).mark_rule(color="gray").encode(y="y:Q")
    layers = [bars, zero, total]
    if col != "signed_error_pct":
        layers.append(alt.Chart(err.select("window_id", "signed_error_pct")).mark_point(
            color="red", filled=True, size=50).encode(
            x=alt.X("window_id:N", sort=None), y="signed_error_pct:Q",
            tooltip=["window_id", alt.Tooltip("signed_error_pct:Q", format="+.2f",
                                              title="judged error (each repetition at its own probes)")]))
    title = alt.TitleParams("D.3 decomposition: signed error per window, stacked by term",
                            subtitle=[*([subtitle] if subtitle else []),
                                      *(["tick: the median run's error (the terms' sum); red: the judged error"]
                                        if len(layers) > 3 else [])])
    return alt.LayerChart(layer=layers).properties(width=460, height=280, title=title)


def from_agreement_files(out_dir: str | Path) -> Result:
    """The decomposition chart and tables from ``python -m workbench.native.agreement``'s output folder."""
    out = Path(out_dir)
    err = pl.read_parquet(out / "agreement.parquet")
    summary = json.loads((out / "agreement_summary.json").read_text())
    subtitle = (f"{summary.get('machine', 'machine not recorded')}; {summary.get('command', '')}; "
                f"{summary.get('date', '')}; load {summary.get('load', '?')}")
    if not has_terms(err):
        raise ValueError(f"{out / 'agreement.parquet'} has no decomposition columns (d_<term>): rerun "
                         "python -m workbench.native.agreement")
    cols = ["window_id", "signed_error_pct", *([decomposed(err)] if decomposed(err) != "signed_error_pct" else []),
            *(f"d_{t}" for t in TERMS), "d_publication_lag_ms"]
    return Result("d3", {"terms": terms_chart(err, subtitle)}, {"this run: decomposition": err.select(cols)},
                  [], [f"MAE {summary['mae_pct']:.2f}%, pooled {summary['pooled_error_pct']:+.2f}% over "
                       f"{summary['windows']} windows"])


__all__ = ["LABELS", "TERMS", "decomposed", "from_agreement_files", "has_terms", "terms_chart", "terms_long"]
