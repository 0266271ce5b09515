"""Raw calibration samples (paper D.2): one row per measured operation, the columns every fit reads.

Written as ``host_samples.parquet`` beside the profile; ``kind`` says what was timed (``verify``,
``kernel``, ``producer_pass``, ``episode``, ``publication``, ``producer_first``, ``producer_token``,
``producer_startup``), the other columns how (width, concurrent, decoder offset, kernel, ...).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

import polars as pl

SAMPLE_SCHEMA = {"window_id": pl.Utf8, "kind": pl.Utf8, "scheme": pl.Utf8, "width": pl.Int64,
                 "concurrent": pl.Boolean, "offset": pl.Int64, "rep": pl.Int64, "ms": pl.Float64,
                 "tokens": pl.Int64, "rounds": pl.Int64, "kernel": pl.Utf8}
# A per-token time (``producer_token``, ``producer_pass``) is read only from a sample over at least this
# many tokens: fewer are dominated by one interval's noise. Calibration's fits and the drift probe share it.
MIN_PER_TOKEN = 4


def sample(kind: str, window_id: str | None, **values: Any) -> dict[str, Any]:
    """One raw calibration sample row (columns: ``SAMPLE_SCHEMA``; absent fields are null)."""
    row = dict.fromkeys(SAMPLE_SCHEMA)
    row.update(kind=kind, window_id=window_id, **values)
    return row


def med(xs: Sequence[float]) -> float:
    """The median of a profile field's samples; none is a calibration fault, never a default."""
    if not xs:
        raise ValueError("calibration produced no samples for a profile field")
    return float(statistics.median(xs))


__all__ = ["MIN_PER_TOKEN", "SAMPLE_SCHEMA", "med", "sample"]
