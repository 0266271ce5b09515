"""Offline budget selection on a development split (D.2.6) and the hindsight oracle (D.4.3).

Selection only ever sees a ``DevSplit``; ``DevSplit`` objects come only from
:func:`split_windows`, which also returns the disjoint ``TestSplit``. Passing test windows,
a ``TestSplit``, or a hand-made list to :func:`select_budget` is a ``TypeError``.

The oracle is evaluated on test windows: for each window it takes the minimum-time eligible
(source, budget) at zero selection cost. A fixed configuration whose source is ineligible on a
window falls back to Qwen at the same budget, as the paper's fixed-source controls do.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from workbench.metrics import oracle_gap

from .catalog import as2d_catalog, run_catalog
from .profile import DeviceProfile
from .trajectory import Window

_ISSUER = object()  # only split_windows holds it


@dataclass(frozen=True, slots=True)
class _Split:
    windows: tuple[Window, ...]
    seed: int

    def __post_init__(self) -> None:
        raise TypeError("splits are made by split_windows(), never by hand")

    @classmethod
    def _issue(cls, windows: Sequence[Window], seed: int) -> _Split:
        obj = object.__new__(cls)
        object.__setattr__(obj, "windows", tuple(windows))
        object.__setattr__(obj, "seed", seed)
        return obj

    @property
    def ids(self) -> frozenset[str]:
        return frozenset(w.window_id for w in self.windows)

    def __len__(self) -> int:
        return len(self.windows)


class DevSplit(_Split):
    """Development windows: the only input budget selection accepts."""


class TestSplit(_Split):
    """Held-out windows: for evaluation and the oracle, never for selection."""

    __test__ = False  # not a pytest class


def split_windows(windows: Sequence[Window], n_dev: int, seed: int = 0) -> tuple[DevSplit, TestSplit]:
    """Seeded, dataset-balanced split into ``n_dev`` development and the rest test windows."""
    ids = [w.window_id for w in windows]
    if len(set(ids)) != len(ids):
        raise ValueError("windows: duplicate window ids; splits must be disjoint")
    if not 0 < n_dev < len(windows):
        raise ValueError(f"n_dev must be in (0, {len(windows)}), got {n_dev}")
    rng = random.Random(seed)
    by_dataset: dict[str, list[Window]] = {}
    for w in windows:
        by_dataset.setdefault(w.dataset, []).append(w)
    for group in by_dataset.values():
        rng.shuffle(group)
    # Round-robin over datasets so the development split is balanced (D.2.6: balanced windows).
    order: list[Window] = []
    groups = [list(g) for _, g in sorted(by_dataset.items())]
    while any(groups):
        for g in groups:
            if g:
                order.append(g.pop())
    dev, test = order[:n_dev], order[n_dev:]
    return DevSplit._issue(dev, seed), TestSplit._issue(test, seed)


@dataclass(frozen=True, slots=True)
class Selection:
    source: str
    budget: int
    dev_tps: float
    table: pl.DataFrame  # pooled development TPS of every (source, budget)


def fixed_config_times(catalog: pl.DataFrame, source: str, budget: int, fallback: str = "qwen") -> pl.DataFrame:
    """Per-window tokens/time of one fixed (source, budget); ineligible windows use ``fallback``."""
    mine = catalog.filter((pl.col("source") == source) & (pl.col("budget") == budget))
    spare = catalog.filter((pl.col("source") == fallback) & (pl.col("budget") == budget))
    missing = spare.join(mine.select("window_id"), on="window_id", how="anti")
    out = pl.concat([mine, missing])
    n_windows = catalog["window_id"].n_unique()
    if out.height != n_windows:
        raise ValueError(f"fixed {source}/b{budget}: {n_windows - out.height} windows have neither "
                         f"{source!r} nor the {fallback!r} fallback")
    return out


def select_budget(dev: DevSplit, profile: DeviceProfile, sources: Sequence[str],
                  budgets: Sequence[int] = range(1, 25), workers: int | None = 1) -> Selection:
    """Fix one (source, budget) by pooled development TPS (D.2.6)."""
    if type(dev) is not DevSplit:
        raise TypeError(f"select_budget takes a DevSplit from split_windows(), got {type(dev).__name__}; "
                        "test windows never enter configuration selection")
    catalog = run_catalog(dev.windows, as2d_catalog(sources, budgets), profile, workers=workers)
    rows = []
    for s in sources:
        for b in budgets:
            t = fixed_config_times(catalog, s, b)
            rows.append({"source": s, "budget": b, "tps": t["tokens"].sum() / t["time"].sum()})
    table = pl.DataFrame(rows).sort(["tps", "budget"], descending=[True, False])
    best = table.row(0, named=True)
    return Selection(best["source"], best["budget"], best["tps"], table)


@dataclass(frozen=True, slots=True)
class OracleReport:
    tps_selected: float
    tps_oracle: float
    gap: float  # percent, D.4.3
    per_window: pl.DataFrame  # window_id, oracle source/budget/time, selected time


def hindsight_oracle(catalog: pl.DataFrame, selected: tuple[str, int]) -> OracleReport:
    """Per-window minimum-time eligible (source, budget) vs the fixed selected pair (D.4.3)."""
    best = (catalog.sort(["time", "source", "budget"])
            .group_by("window_id", maintain_order=True).first()
            .select("window_id", "tokens", pl.col("source").alias("oracle_source"),
                    pl.col("budget").alias("oracle_budget"), pl.col("time").alias("oracle_time")))
    sel = fixed_config_times(catalog, *selected).select("window_id", pl.col("time").alias("selected_time"))
    per = best.join(sel, on="window_id", how="inner")
    tokens = per["tokens"].sum()
    tps_sel = tokens / per["selected_time"].sum()
    tps_or = tokens / per["oracle_time"].sum()
    return OracleReport(tps_sel, tps_or, oracle_gap(tps_sel, tps_or), per)
