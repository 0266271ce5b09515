"""Offline budget selection on a development split (D.2.6) and the hindsight oracle (D.4.3).

Selection only ever sees a ``DevSplit``; ``DevSplit`` objects come only from
:func:`split_windows`, which also returns the disjoint ``TestSplit``. Passing test windows,
a ``TestSplit``, or a hand-made list to :func:`select_budget` is a ``TypeError``.

D.2.6's full protocol has three stages: screen every setting on dev windows, confirm the dev
shortlist -- or the full source x budget grid -- on a separate ``ValidationSplit``
(:func:`confirm_budget`), and freeze the confirmed pair before any test window is replayed.
:func:`split_three` (a seeded split, dev identical to ``split_windows``') and :func:`splits_from_labels`
(a cohort manifest's own split column) issue the three splits; :func:`dev_test_from_labels` the
manifest's dev and test when it draws no validation split; ``confirm_budget`` accepts nothing
but a ``ValidationSplit``.

The oracle is evaluated on test windows: for each window it takes the minimum-time eligible
(source, budget) at zero selection cost. A fixed configuration whose source is ineligible on a
window falls back to Qwen at the same budget, as the paper's fixed-source controls do.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Self

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
    def _issue(cls, windows: Sequence[Window], seed: int) -> Self:
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


class ValidationSplit(_Split):
    """Validation windows: confirm the dev screen's shortlist (D.2.6); never screening, never test."""


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
    order = _balanced_order(windows, seed)
    dev, test = order[:n_dev], order[n_dev:]
    return DevSplit._issue(dev, seed), TestSplit._issue(test, seed)


def split_three(windows: Sequence[Window], n_dev: int, n_validation: int, seed: int = 0,
                ) -> tuple[DevSplit, ValidationSplit, TestSplit]:
    """Dev, validation and test windows. Dev equals ``split_windows(windows, n_dev, seed)``'s dev;
    validation is taken from what would otherwise be test, in the same balanced order."""
    _check_ids(windows)
    if n_dev < 1 or n_validation < 1 or n_dev + n_validation >= len(windows):
        raise ValueError(f"n_dev={n_dev} and n_validation={n_validation} must be >= 1 and leave test windows "
                         f"(have {len(windows)})")
    order = _balanced_order(windows, seed)
    return (DevSplit._issue(order[:n_dev], seed), ValidationSplit._issue(order[n_dev:n_dev + n_validation], seed),
            TestSplit._issue(order[n_dev + n_validation:], seed))


def splits_from_labels(windows: Sequence[Window], labels: Mapping[str, str], seed: int = 0,
                       ) -> tuple[DevSplit, ValidationSplit, TestSplit]:
    """The splits a dataset's cohort drew (manifest column ``split``: dev / validation / test).

    Windows of other splits (calibration) stay out; a window the manifest does not name is an error.
    """
    _check_ids(windows)
    missing = [w.window_id for w in windows if w.window_id not in labels]
    if missing:
        raise ValueError(f"window {missing[0]!r} (and {len(missing) - 1} more) is not in the cohort manifest; "
                         "the splits must come from the same cohort as the windows")
    parts: dict[str, list[Window]] = {"dev": [], "validation": [], "test": []}
    for w in windows:
        parts.get(labels[w.window_id], []).append(w)
    empty = [k for k, v in parts.items() if not v]
    if empty:
        raise ValueError(f"the cohort has no {'/'.join(empty)} windows among these {len(windows)}; "
                         "use dataset.split=all with a cohort that draws dev, validation and test")
    return (DevSplit._issue(parts["dev"], seed), ValidationSplit._issue(parts["validation"], seed),
            TestSplit._issue(parts["test"], seed))


def dev_test_from_labels(windows: Sequence[Window], labels: Mapping[str, str], seed: int = 0,
                         ) -> tuple[DevSplit, TestSplit]:
    """Dev and test windows as a cohort manifest labels them (a cohort that draws no validation split):
    never split again. Windows of other splits stay out; a window the manifest does not name is an error."""
    _check_ids(windows)
    missing = [w.window_id for w in windows if w.window_id not in labels]
    if missing:
        raise ValueError(f"window {missing[0]!r} (and {len(missing) - 1} more) is not in the cohort manifest; "
                         "the splits must come from the same cohort as the windows")
    dev = [w for w in windows if labels[w.window_id] == "dev"]
    test = [w for w in windows if labels[w.window_id] == "test"]
    if not dev or not test:
        raise ValueError(f"the cohort has no {'dev' if not dev else 'test'} windows among these {len(windows)}")
    return DevSplit._issue(dev, seed), TestSplit._issue(test, seed)


def _check_ids(windows: Sequence[Window]) -> None:
    ids = [w.window_id for w in windows]
    if len(set(ids)) != len(ids):
        raise ValueError("windows: duplicate window ids; splits must be disjoint")


def _balanced_order(windows: Sequence[Window], seed: int) -> list[Window]:
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
    return order


@dataclass(frozen=True, slots=True)
class Selection:
    source: str
    budget: int
    dev_tps: float
    table: pl.DataFrame  # pooled development TPS of every (source, budget)


def fixed_config_times(catalog: pl.DataFrame, source: str, budget: int, fallback: str = "qwen") -> pl.DataFrame:
    """Per-window tokens/time of one fixed (source, budget); ineligible windows use ``fallback``."""
    subset = catalog.filter((pl.col("source") == source) & (pl.col("budget") == budget))
    spare = catalog.filter((pl.col("source") == fallback) & (pl.col("budget") == budget))
    missing = spare.join(subset.select("window_id"), on="window_id", how="anti")
    out = pl.concat([subset, missing])
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


SHORTLIST = 3  # dev-screened configurations carried to validation (D.2.6: screen, then confirm)
FULL_GRID = None  # ``shortlist=FULL_GRID``: rank every screened source x budget (D.2.6's Note 9 reanalysis: all 42)


@dataclass(frozen=True, slots=True)
class Confirmation:
    """The configuration frozen for test: the validation best among the dev shortlist (D.2.6)."""

    source: str
    budget: int
    dev_tps: float
    validation_tps: float
    screened: tuple[str, int]  # the dev screen's pick
    retained: bool  # validation kept the dev pick (the paper: "the setting is retained")
    table: pl.DataFrame  # best first: source, budget, dev_tps, validation_tps, dev_rank, validation_rank


def confirm_budget(screen: Selection, validation: ValidationSplit, profile: DeviceProfile,
                   shortlist: int | None = SHORTLIST, workers: int | None = 1) -> Confirmation:
    """Replay the dev screen's top ``shortlist`` (source, budget) on validation windows; freeze the best.

    ``shortlist=None`` ranks the full grid the screen covered, every source x budget (D.2.6: "We rank
    all 42 source/budget settings on the 100 validation windows by pooled throughput, using Qwen at the
    same budget when a source is language-ineligible"). Ties in validation TPS go to the smaller budget,
    as on dev.
    """
    if type(validation) is not ValidationSplit:
        raise TypeError(f"confirm_budget takes a ValidationSplit (split_three / splits_from_labels), got "
                        f"{type(validation).__name__}; dev windows screen, test windows never confirm")
    if shortlist is not None and (isinstance(shortlist, bool) or shortlist < 1):
        raise ValueError(f"shortlist must be >= 1 or None (the full grid), got {shortlist!r}")
    ranked = screen.table.with_row_index("dev_rank", offset=1).cast({"dev_rank": pl.Int64})
    top = ranked if shortlist is None else ranked.head(shortlist)
    sources = sorted(set(screen.table["source"]))  # every source: ineligible windows fall back to qwen
    catalog = run_catalog(validation.windows, as2d_catalog(sources, sorted(set(top["budget"]))), profile,
                          workers=workers)
    rows = []
    for s, b, dev_tps, dev_rank in top.select("source", "budget", "tps", "dev_rank").iter_rows():
        t = fixed_config_times(catalog, s, b)
        rows.append({"source": s, "budget": b, "dev_tps": dev_tps,
                     "validation_tps": t["tokens"].sum() / t["time"].sum(), "dev_rank": dev_rank})
    table = (pl.DataFrame(rows).sort(["validation_tps", "budget", "source"], descending=[True, False, False])
             .with_row_index("validation_rank", offset=1).cast({"validation_rank": pl.Int64})
             .select("source", "budget", "dev_tps", "validation_tps", "dev_rank", "validation_rank"))
    best = table.row(0, named=True)
    pick = (screen.source, screen.budget)
    return Confirmation(best["source"], best["budget"], best["dev_tps"], best["validation_tps"], pick,
                        (best["source"], best["budget"]) == pick, table)


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
