"""A calibration's samples brought to one machine speed: its drift anchor's (paper D.2, D.3).

A host calibration measures in stages (the kernel sweep, each calibration window's sweeps, its native
episodes, the clips' episodes) and times the drift probe's idle calls between them (checkpoints,
``steadiness.py``). Replay later scales the whole profile by one drift ratio, the probe's time over the
profile's anchor (``replay/drift.py``). That is right only if every field was measured at the anchor's
speed; on a VM whose speed moves within minutes, the sweeps of a slow minute and the episodes of a fast
one give a profile of the wrong shape, which no single ratio repairs.

Rule (R_STAGE): a stage's speed is the geometric mean of the checkpoint levels on either side of it (the
one checkpoint beside it at either end); every sample timed in it, and every round record of the windows
whose episodes ran in it, is multiplied by the anchor's stage speed over its own, where the anchor's stage
is the one that ran the anchor window's target-only episodes (``fit.anchor_part``). A calibration without
checkpoints (or without the anchor's episodes) is left as measured, factor 1: so are phone calibrations,
which take no checkpoints. The checkpoints' own calls stay as measured; no profile field reads them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import polars as pl

from .steadiness import checkpoint

RULE = ("Every sample of a calibration stage, and the round records of the windows whose episodes ran in it, is "
        "brought to the drift anchor's speed: times the anchor stage's speed over its own, a stage's speed being "
        "the geometric mean of the checkpoint levels on either side of it (workbench.native.stage_speed).")
TIME_COLUMNS = ("t_decide", "t_start", "t_end", "T")  # a round record's clock readings (s from the clock's zero)


@dataclass(frozen=True, slots=True)
class StageFactor:
    """One stage between checkpoints: the checkpoint after it (``"end"`` after the last), its speed (the
    geometric mean level of its checkpoints, ms) and the factor its samples were multiplied by."""

    stage: str
    level: float
    factor: float


def stage_factors(raw: pl.DataFrame) -> tuple[pl.Series, tuple[StageFactor, ...]]:
    """Each row's stage index (``-1`` for checkpoint rows) and every stage's factor (module rule); no
    factors without checkpoints or the anchor's target-only episodes."""
    stages: list[int] = []  # per row: the checkpoint blocks begun before it; -1 on a checkpoint's own rows
    blocks: list[tuple[str, list[dict]]] = []  # each checkpoint block: its stage name and its calls
    prev = None
    for row in raw.iter_rows(named=True):
        if row["kind"] != "checkpoint":
            stages.append(len(blocks))
        else:
            if prev is None or prev["kind"] != "checkpoint" or prev["scheme"] != row["scheme"]:
                blocks.append((str(row["scheme"]), []))
            blocks[-1][1].append(row)
            stages.append(-1)
        prev = row
    stage = pl.Series("stage", stages, dtype=pl.Int64)
    n = len(blocks)
    if n == 0:
        return stage, ()
    names = [name for name, _ in blocks]
    levels = [checkpoint(name, rows).level for name, rows in blocks]

    def speed(s: int) -> float:  # stage s lies between checkpoint blocks s and s + 1 (1-based)
        side = [levels[b - 1] for b in (s, s + 1) if 1 <= b <= n]
        return math.sqrt(side[0] * side[1]) if len(side) == 2 else side[0]

    anchor = raw.with_columns(stage).filter(
        (pl.col("kind") == "episode") & (pl.col("scheme") == "target_only"))
    if not anchor.height:
        return stage, ()
    ref = speed(int(anchor["stage"][0]))
    return stage, tuple(StageFactor(names[s] if s < n else "end", round(speed(s), 4), round(ref / speed(s), 4))
                        for s in range(n + 1))


def at_anchor_speed(raw: pl.DataFrame, rounds: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame,
                                                                        tuple[StageFactor, ...]]:
    """``raw`` (samples in the order they were timed, checkpoints among them) and ``rounds`` with every
    time brought to the anchor stage's speed (module rule), and the factors applied."""
    stage, factors = stage_factors(raw)
    if not factors:
        return raw, rounds, ()
    by_stage = pl.Series([1.0] + [f.factor for f in factors], dtype=pl.Float64)  # index 0: checkpoint rows
    f = by_stage.gather(stage + 1)
    out = raw.with_columns((pl.col("ms") * f).alias("ms"))
    eps = raw.with_columns(stage, f.alias("f")).filter(pl.col("kind") == "episode")
    per_window = dict(eps.group_by("window_id", maintain_order=True).agg(pl.col("f").first()).iter_rows())
    if rounds.height and "window_id" in rounds.columns:
        w = pl.col("window_id").replace_strict(per_window, default=1.0, return_dtype=pl.Float64)
        rounds = rounds.with_columns([(pl.col(c) * w).alias(c) for c in TIME_COLUMNS if c in rounds.columns])
    return out, rounds, factors


def to_profile(factors: tuple[StageFactor, ...], date: str) -> dict[str, dict]:
    """The profile's ``calibration.stage_factors`` block: each stage's factor, with provenance."""
    return {f.stage: {"v": f.factor, "source": f"derived on host {date}: anchor stage's checkpoint speed over this "
                                                f"stage's ({f.level:.2f} ms), R_STAGE"} for f in factors}


__all__ = ["RULE", "StageFactor", "at_anchor_speed", "stage_factors", "to_profile"]
