"""What a job measured before it failed: one row per measured window, kept on the FAILED run.

The shared measurement loops -- ``jobs.evaluate.evaluate`` (replay), ``native.bench.run_bench`` and
``native.episodes.native_episodes`` (the host clock) -- ``record`` a row as each window is measured.
``workbench.run`` clears the rows before a job starts; when the job raises part way, ``keep``
writes them as ``tables/partial/<table>.parquet`` under the job's out dir, logs them on the run
(which then ends FAILED) and returns what was kept, for the error's ``kept:`` line. A job that
finishes logs its full tables as usual and these rows are dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mlflow

from workbench.io import atomic_write_parquet

log = logging.getLogger(__name__)
PARTIAL_DIR = "tables/partial"
_ROWS: dict[str, list[dict[str, Any]]] = {}


def clear() -> None:
    """Forget the rows of an earlier job in this process (a sweep runs several)."""
    _ROWS.clear()


def record(table: str, row: Mapping[str, Any]) -> None:
    """One measured window's row of ``table`` (scalar fields only: token lists stay out)."""
    _ROWS.setdefault(table, []).append({k: v for k, v in row.items()
                                        if v is None or isinstance(v, str | int | float | bool)})


@dataclass(frozen=True)
class Kept:
    """The partial tables written for a failed job."""

    files: tuple[Path, ...]
    windows: int
    rows: int

    def line(self) -> str:
        """What survived and how to continue (the error's ``kept:`` line)."""
        names = ", ".join(f.name for f in self.files)
        where = self.files[0].parent
        return (f"{self.windows} window(s) measured before the failure ({self.rows} rows: {names}) under "
                f"{PARTIAL_DIR} on this FAILED run and in {where}; fix the error and rerun the same command to "
                "measure every window (collected traces are reused from the cache)")


def keep(out: str | Path) -> Kept | None:
    """Write the rows recorded so far under ``<out>/tables/partial`` and log them on the active run;
    ``None`` when nothing was measured. The rows are cleared either way."""
    import polars as pl

    tables = {name: rows for name, rows in _ROWS.items() if rows}
    clear()
    if not tables:
        return None
    files = tuple(atomic_write_parquet(Path(out) / PARTIAL_DIR / f"{name}.parquet",
                                       pl.DataFrame(rows, infer_schema_length=None))
                  for name, rows in tables.items())
    if mlflow.active_run() is not None:
        for f in files:
            mlflow.log_artifact(str(f), PARTIAL_DIR)
    windows = {str(r.get("window_id")) for rows in tables.values() for r in rows}
    return Kept(files, len(windows), sum(len(rows) for rows in tables.values()))
