"""What native episodes report: per-window, per-round and per-stage frames, a summary row per method.

The frames have the columns of the replay frames (plus ``repeat``, ``matched``), so the same
metrics, figures and notebooks read either clock. A mismatch against the window's target-only
output is counted and reported, never hidden.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from workbench import metrics as M

from .episodes import Episodes

STAGE_COLS = ["resource", "stage", "start", "end", "round"]


@dataclass
class NativeRuns:
    tables: dict[str, pl.DataFrame]
    metrics: dict[str, float]
    summary: pl.DataFrame
    timeline: tuple[pl.DataFrame, pl.DataFrame] | None


def episode_report(ep: Episodes) -> NativeRuns:
    """Per-window, per-round and per-stage frames of native episodes, one summary row per method, the
    metrics to log, and one As²d timeline; every output audited against its window's target-only run, and
    against the unplanned target's output where the target runs by a kernel plan (``Episodes.references``)."""
    results = [(rep, r) for _, _, rep, r in ep.results]
    placement = ep.placement
    ref = {(rep, r.window_id): ep.references.get(r.window_id, r.output) for rep, r in results
           if r.scheme == "target_only"}
    win_rows, rounds, stages = [], [], []
    for rep, r in results:
        matched = r.output == ref[(rep, r.window_id)]
        keys = {"device": "host", "method": r.scheme, "config": r.scheme, "window_id": r.window_id, "repeat": rep}
        win_rows.append({**keys, "tokens": len(r.output), "time": r.time, "matched": matched,
                         "cleanup": r.cleanup, "capped": r.capped})
        rounds.append(pl.DataFrame([x.as_row() for x in r.records]).with_columns(
            *(pl.lit(v).alias(k) for k, v in keys.items())))
        stages.append(pl.DataFrame(list(r.stages), schema=STAGE_COLS, orient="row").with_columns(
            pl.lit(r.time).alias("T"), *(pl.lit(v).alias(k) for k, v in keys.items())))
    wf = M.tps_per_window(pl.DataFrame(win_rows))
    rf = pl.concat(rounds, how="diagonal_relaxed")
    sf = pl.concat(stages, how="diagonal_relaxed")
    rows, metrics = [], {}
    base = M.tps_pooled(wf.filter(pl.col("method") == "target_only"))
    for (method,), g in wf.group_by(["method"], maintain_order=True):
        r = rf.filter(pl.col("method") == method)
        ov = M.overlap_table(sf.filter(pl.col("method") == method), keys=("window_id", "repeat"))
        tps = M.tps_pooled(g)
        per = g.join(wf.filter(pl.col("method") == "target_only").select("window_id", "repeat",
                                                                           pl.col("tps").alias("tps_t")),
                     on=["window_id", "repeat"])
        row = {"device": "host", "method": method, "clock": "native", "tps": tps, "speedup": tps / base,
               "acceptance": M.acceptance(r), "coverage": M.coverage(r, int(g["tokens"].sum())),
               "readiness": M.readiness(r), "k_gt1_share": M.multi_token_share(r),
               "slowdown_share": float((per["tps"] < per["tps_t"]).mean()) if method != "target_only" else None,
               "matched": float(g["matched"].mean()),
               **{t: float(ov[t].sum()) for t in ("D", "V", "O", "H", "T")}}
        row["bound"] = float((ov.select(pl.max_horizontal("D", "V") + pl.col("H"))).sum().item())
        rows.append(row)
        for k, v in row.items():
            if isinstance(v, float | int) and not isinstance(v, bool):
                metrics[f"native.{method}.{k}"] = float(v)
    metrics["native.mismatches"] = float((~wf["matched"]).sum())
    as2d = [r for _, r in results if r.scheme == "as2d"]
    tl = None
    if as2d:
        r = as2d[0]
        tl = (pl.DataFrame(list(r.stages), schema=STAGE_COLS, orient="row"),
              pl.DataFrame([x.as_row() for x in r.records]))
    tables = {"native_windows": wf, "native_rounds": rf, "native_stages": sf,
              "native_placement": pl.DataFrame([{"role": k, **{kk: str(vv) for kk, vv in v.items()}}
                                                for k, v in placement.items()])}
    return NativeRuns(tables, metrics, pl.DataFrame(rows), tl)
