"""A sweep's answer at sweep level: one row per child configuration, on the sweep's parent run.

At the end of a multirun, ``SweepCallback`` calls :func:`log_sweep_summary`: every configuration run
of the sweep's jobs becomes one row; target-only is kept once per device, data kind and clock (each
job may replay it, its result does not depend on the swept budget); each row's ``speedup`` is its TPS
over *the sweep's own* target-only on the same device and data; the selection runs (dev-split
choice, hindsight oracle) add their rows with the ``oracle_gap``. The parent logs ``summary.md``,
``summary.html``, ``summary.parquet``, sortable metrics (``best_speedup``, ``best_tps``,
``configurations``, ``oracle_gap`` when one selection ran), the ``best_config`` tag and a
description, and the console gets the table and the parent's URL.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import polars as pl
from mlflow.entities import Metric

from workbench.tracking.run_records import ROLE_TAG, summary_html, summary_markdown
from workbench.tracking.store import DESCRIPTION_TAG

KEYS = ("device", "method", "config", "source", "priced_as", "budget", "clock", "synthetic", "target_only_key",
        "reused_from")
# the target-only a row's speedup divides by: same device, data kind and clock, and (in a sweep that kept its
# target-only rows, ``jobs.sweep_baseline``) the same key: profile, windows, target and replay code
BASE = ("device", "synthetic", "clock", "target_only_key")
SHOWN = ("run", "device", "method", "config", "synthetic", "speedup", "oracle_gap", "tps", "tps_target", "tps_selected",
         "tps_oracle", "source", "priced_as", "budget", "clock")


def sweep_rows(children: list) -> pl.DataFrame:
    """The sweep's configuration and selection runs as rows (newest first), target-only once per device x data."""
    rows, seen = [], set()
    # newest first; of a target-only replayed once and reused, the run that replayed it
    order = sorted(children, key=lambda r: (r.data.params.get("reused_from") is not None, -(r.info.start_time or 0)))
    for c in order:
        role = c.data.tags.get(ROLE_TAG)
        if role not in ("config", "selection"):
            continue
        row = {**{k: c.data.params.get(k) for k in KEYS}, "run": c.info.run_name, "role": role, **c.data.metrics}
        if role == "selection":
            # its TPS is on the test split only: beside the oracle's, never over the whole-set target-only
            row.update(method="selection", config=c.data.params.get("selected"), tps=None)
        if row["method"] == "target_only":
            key = tuple(row[k] for k in BASE)
            if key in seen:
                continue
            seen.add(key)
        rows.append(row)
    if not rows:
        return pl.DataFrame()
    frame = pl.DataFrame(rows, infer_schema_length=None)
    if "tps" not in frame.columns:
        return frame
    base = frame.filter(pl.col("method") == "target_only").select(*BASE, pl.col("tps").alias("tps_target"))
    frame = frame.drop("speedup", strict=False).join(base, on=list(BASE), how="left", nulls_equal=True)
    frame = frame.with_columns((pl.col("tps") / pl.col("tps_target")).alias("speedup"))
    last = [c for c in ("target_only_key", "reused_from") if c in frame.columns]  # provenance, after the numbers
    rest = [c for c in frame.columns if c not in SHOWN and c not in last]
    return frame.select([c for c in SHOWN if c in frame.columns] + rest + last)


def sweep_metrics(frame: pl.DataFrame) -> tuple[dict[str, float], str | None]:
    """Metrics a runs list sorts sweeps by, and the run name of the fastest configuration against target-only."""
    out: dict[str, float] = {"configurations": float(frame.filter(pl.col("role") == "config").height)}
    ranked = frame.filter((pl.col("role") == "config") & (pl.col("method") != "target_only")
                          & pl.col("speedup").is_not_null()) if "speedup" in frame.columns else frame.clear()
    best = None
    if ranked.height:
        top = ranked.sort("speedup", descending=True).row(0, named=True)
        out.update(best_speedup=float(top["speedup"]), best_tps=float(top["tps"]))
        best = str(top["run"])
    gaps = frame.filter(pl.col("role") == "selection")["oracle_gap"].drop_nulls() if "oracle_gap" in frame.columns \
        else pl.Series([], dtype=pl.Float64)
    if gaps.len():
        out["oracle_gap"] = float(gaps.min())  # the closest any of the sweep's selections came to its oracle
    return out, best


def log_sweep_summary(client: Any, parent: str, children: list, say: Any = print) -> pl.DataFrame | None:
    """Log the parent's summary files, metrics, ``best_config`` tag and description; print the table."""
    frame = sweep_rows(children)
    if not frame.height:
        return None
    metrics, best = sweep_metrics(frame)
    title = "sweep summary: one row per child configuration; speedup over the sweep's own target-only"
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in (("summary.md", summary_markdown(frame.drop("role"), title)),
                           ("summary.html", summary_html(frame.drop("role"), title))):
            (Path(tmp) / name).write_text(text)
            client.log_artifact(parent, str(Path(tmp) / name))
        frame.write_parquet(Path(tmp) / "summary.parquet")
        client.log_artifact(parent, str(Path(tmp) / "summary.parquet"))
    client.log_batch(parent, metrics=[Metric(k, v, 0, 0) for k, v in metrics.items()])
    line = f"sweep of {int(metrics['configurations'])} configurations"
    if best is not None:
        client.set_tag(parent, "best_config", best)
        line += f": best speedup {metrics['best_speedup']:.3g}x over target-only ({best})"
    if "oracle_gap" in metrics:
        line += f"; oracle gap {metrics['oracle_gap']:.3g}%"
    client.set_tag(parent, DESCRIPTION_TAG, line)
    with pl.Config(tbl_rows=100, tbl_cols=12, tbl_width_chars=200, float_precision=3, tbl_hide_dataframe_shape=True,
                   tbl_hide_column_data_types=True):
        say(str(frame.select([c for c in SHOWN if c in frame.columns][:10])))
    say(line)
    return frame
