"""MNN next to torch: per-width forward costs, and greedy agreement per window (F.6).

Both work on any ``DecoderSession`` (``forward`` / ``crop``), so the two engines are timed through
the same calls the schemes make. Timings are medians over repetitions after a warm-up per width
(MNN re-plans on each new input shape). Exactness is never judged here: a speculative run is
checked against its own engine's target-only output; F.6 only reports where the engines part.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import polars as pl

COST_SCHEMA = {"engine": pl.Utf8, "model": pl.Utf8, "width": pl.Int64, "ms": pl.Float64, "reps": pl.Int64}
AGREEMENT_SCHEMA = {"window_id": pl.Utf8, "equal": pl.Boolean, "first_difference": pl.Int64,
                    "torch_tokens": pl.Int64, "mnn_tokens": pl.Int64, "torch_token": pl.Int64,
                    "mnn_token": pl.Int64}


def forward_costs(session_factory: Callable[[], Any], prefix: Sequence[int], widths: Sequence[int] = (1, 4, 8),
                  reps: int = 10, warmup: int = 2) -> dict[int, float]:
    """Median ms of ONE decoder forward of each width on top of ``prefix`` (prompt included).

    Each timed forward is rolled back (``crop``), so every sample sees the same KV length."""
    session = session_factory()
    session.forward(list(prefix))
    filler = list(prefix[-1:]) * max(widths)
    out = {}
    for k in widths:
        samples = []
        for i in range(warmup + reps):
            t0 = time.perf_counter()
            session.forward(filler[:k])
            dt = time.perf_counter() - t0
            session.crop(k)
            if i >= warmup:
                samples.append(1000 * dt)
        out[k] = statistics.median(samples)
    return out


def cost_table(sessions: Mapping[tuple[str, str], Callable[[], Any]], prefix_for: Mapping[str, Sequence[int]],
               widths: Sequence[int] = (1, 4, 8), reps: int = 10) -> pl.DataFrame:
    """One row per (engine, model, width); ``sessions`` maps (engine, model) to a session factory,
    ``prefix_for`` maps model to the token prefix (its prompt plus a few committed tokens)."""
    rows = []
    for (engine, model), factory in sessions.items():
        for k, ms in forward_costs(factory, prefix_for[model], widths, reps).items():
            rows.append({"engine": engine, "model": model, "width": k, "ms": ms, "reps": reps})
    return pl.DataFrame(rows, schema=COST_SCHEMA)


def side_by_side(costs: pl.DataFrame) -> pl.DataFrame:
    """Columns ``model, width, torch_ms, mnn_ms, mnn_over_torch`` from a ``cost_table``."""
    wide = costs.pivot(on="engine", index=["model", "width"], values="ms")
    for eng in ("torch", "mnn"):
        if eng not in wide.columns:
            wide = wide.with_columns(pl.lit(None, dtype=pl.Float64).alias(eng))
    return (wide.rename({"torch": "torch_ms", "mnn": "mnn_ms"})
            .with_columns((pl.col("mnn_ms") / pl.col("torch_ms")).alias("mnn_over_torch"))
            .select("model", "width", "torch_ms", "mnn_ms", "mnn_over_torch").sort("model", "width"))


def first_difference(a: Sequence[int], b: Sequence[int]) -> int | None:
    """Index of the first position where two token sequences differ (a length difference counts)."""
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def greedy_agreement(outputs: Mapping[str, tuple[Sequence[int], Sequence[int]]]) -> pl.DataFrame:
    """F.6: per window, whether MNN greedy equals torch greedy and where they first differ.

    ``outputs`` maps window id to (torch target-only output, MNN target-only output)."""
    rows = []
    for wid, (t, m) in outputs.items():
        i = first_difference(t, m)
        rows.append({"window_id": wid, "equal": i is None, "first_difference": i, "torch_tokens": len(t),
                     "mnn_tokens": len(m), "torch_token": None if i is None or i >= len(t) else int(t[i]),
                     "mnn_token": None if i is None or i >= len(m) else int(m[i])})
    return pl.DataFrame(rows, schema=AGREEMENT_SCHEMA)
