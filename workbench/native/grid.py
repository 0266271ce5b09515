"""The native drafter x budget grid (B.4, D.4.5, Table 14) on this host.

Each candidate source runs As²d at each maximum chain width K (real token nodes of an admitted
chain, its root included: budget b = K - 1), beside a target-only control. Sources: the pair's
autoregressive producer and its native chunk sources (``native.chunks``: PocketSphinx, Parakeet
CTC), each in its own producer process, all resident for the whole grid; only the arm being timed
has a request in flight. Every repetition runs every arm once on every window, in an order shuffled
per repetition (seeded), after ``warmup`` untimed repetitions; each arm is compared with the
target-only control of the same repetition (paired gains). Timing is the native driver's clock:
from target-prefill completion through committed EOS plus charged producer drain (A.3); model
loading, audio loading and prefill are outside it. Every run is audited against target-only's
output on the same window.

Frames:

* ``runs``: one row per measured run, columns ``RUN_COLUMNS``
* ``grid``: Table 14's shape, one row per arm, columns ``GRID_COLUMNS`` (``grid_table``)
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from contextlib import ExitStack
from typing import Any

import polars as pl

from workbench.metrics import task_tps, useful_tokens

from .chunks import CHUNK_SOURCES, chunk_setup
from .driver import NativeHost
from .episodes import HostSetup, run_scheme, scheme_settings
from .windows import AudioWindow

TARGET_ONLY = "target_only"
RUN_COLUMNS = ("window_id", "rep", "position", "arm", "drafter", "max_k", "tokens", "useful_tokens", "time",
               "tps", "target_calls", "extra_tokens", "widest", "capped", "fault", "matched")
GRID_COLUMNS = ("arm", "drafter", "max_k", "budget", "runs", "tokens", "tps", "tps_useful", "gain_pct",
                "paired_gain_min_pct", "paired_gain_max_pct", "extra_tokens", "target_calls", "widest", "matched")


@dataclasses.dataclass(frozen=True)
class GridArm:
    """One configuration of the grid: a drafter at a maximum width, or the target-only control."""

    name: str  # "target_only" or "as2d/<source>/K<k>"
    drafter: str  # the candidate source, or "target_only"
    max_k: int  # the widest chain (root included); 1 for the scalar target-only control
    setup: HostSetup
    scheme: str


def grid_arms(main: HostSetup, sources: Sequence[str], widths: Sequence[int]) -> list[GridArm]:
    """Target-only, then As²d for every source x width. ``sources`` name the pair's producer
    (``main.source``) or a native chunk source (``native.chunks.CHUNK_SOURCES``)."""
    arms = [GridArm(TARGET_ONLY, TARGET_ONLY, 1, main, TARGET_ONLY)]  # its host's producer has no request
    for source in dict.fromkeys(sources):
        if source != main.source and source not in CHUNK_SOURCES:
            raise ValueError(f"grid source {source!r}: neither the pair's producer ({main.source}) nor a native "
                             f"chunk source ({', '.join(CHUNK_SOURCES)})")
        base = main if source == main.source else chunk_setup(main, source)
        for k in dict.fromkeys(widths):
            if k < 2:
                raise ValueError(f"grid width {k}: a chain needs K >= 2 (K = 1 is the target-only control)")
            settings = {**base.settings, "as2d": scheme_settings("as2d", k - 1)}
            arms.append(GridArm(f"as2d/{source}/K{k}", source, k, dataclasses.replace(base, settings=settings),
                                "as2d"))
    return arms


def _row(arm: GridArm, window: AudioWindow, rep: int, position: int, result: Any, eos_id: int) -> dict[str, Any]:
    out = list(result.output)
    useful = useful_tokens(len(out), bool(out) and out[-1] == eos_id)
    return {"window_id": window.window_id, "rep": rep, "position": position, "arm": arm.name,
            "drafter": arm.drafter, "max_k": arm.max_k, "tokens": len(out), "useful_tokens": useful,
            "time": result.time, "tps": len(out) / result.time, "target_calls": len(result.records),
            "extra_tokens": sum(r.accepted for r in result.records),
            "widest": max((r.width for r in result.records), default=0), "capped": bool(result.capped),
            "fault": result.fault, "output": out}


def run_grid(windows: Sequence[AudioWindow], arms: Sequence[GridArm], repeats: int = 5, *, warmup: int = 1,
             seed: int = 0, progress: bool = True) -> dict[str, pl.DataFrame]:
    """Every arm on every window, ``repeats`` measured repetitions in seeded shuffled order after
    ``warmup`` untimed ones; returns the ``runs`` and ``grid`` frames."""
    from tqdm.auto import tqdm

    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    refs: dict[str, tuple[int, ...]] = {}
    with ExitStack() as stack:
        hosts: dict[int, NativeHost] = {}
        for a in arms:  # one producer process per source, resident for the whole grid
            if id(a.setup.producer) not in hosts:
                hosts[id(a.setup.producer)] = stack.enter_context(NativeHost(a.setup.producer, a.setup.verifier))
        bar = tqdm(total=(repeats + warmup) * len(windows) * len(arms), desc="grid", disable=not progress)
        for rep in range(-warmup, repeats):
            order = list(arms)
            rng.shuffle(order)  # configuration order shuffled within each repetition (D.4.5)
            for w in windows:
                for pos, a in enumerate(order):
                    a.setup.verifier.apply()
                    r = run_scheme(hosts[id(a.setup.producer)], a.setup, w, a.scheme)
                    bar.update(1)
                    if a.scheme == TARGET_ONLY:
                        refs.setdefault(w.window_id, tuple(r.output))
                    if rep >= 0:
                        rows.append(_row(a, w, rep, pos, r, arms[0].setup.pair.eos_id))
        bar.close()
    runs = pl.DataFrame(rows, schema_overrides={"fault": pl.Utf8}, infer_schema_length=None)
    matched = [tuple(o) == refs.get(w) for w, o in zip(runs["window_id"], runs["output"].to_list(), strict=True)]
    runs = runs.with_columns(pl.Series("matched", matched, dtype=pl.Boolean)).drop("output")
    return {"runs": runs.select(RUN_COLUMNS), "grid": grid_table(runs)}


def grid_table(runs: pl.DataFrame) -> pl.DataFrame:
    """Table 14's rows: TPS pooled over every measured run of an arm (tokens / decode time; ``tps_useful``
    over useful tokens, D.1.2), its gain over the pooled target-only control, the range of its paired
    gains (each repetition against that repetition's control), and per-run medians of extra tokens
    (accepted candidates beyond each chain's root) and target calls (verification rounds)."""
    per_rep = runs.group_by("arm", "rep").agg(
        (pl.col("tokens").sum() / pl.col("time").sum()).alias("rep_tps"), pl.col("extra_tokens").sum(),
        pl.col("target_calls").sum())
    control = per_rep.filter(pl.col("arm") == TARGET_ONLY).select("rep", pl.col("rep_tps").alias("control_tps"))
    paired = per_rep.join(control, on="rep", how="left").with_columns(
        (100 * (pl.col("rep_tps") / pl.col("control_tps") - 1)).alias("paired_gain"))
    pooled = runs.group_by("arm", "drafter", "max_k", maintain_order=True).agg(
        pl.col("rep").n_unique().alias("runs"), pl.col("tokens").sum().alias("all_tokens"),
        pl.col("time").sum().alias("all_time"),
        pl.col("widest").max(), pl.col("matched").all())
    paired_agg = paired.group_by("arm").agg(
        pl.col("paired_gain").min().alias("paired_gain_min_pct"),
        pl.col("paired_gain").max().alias("paired_gain_max_pct"),
        pl.col("extra_tokens").median(), pl.col("target_calls").median())
    useful = task_tps(runs, by=["arm"])
    assert isinstance(useful, pl.DataFrame)
    table = pooled.join(paired_agg, on="arm", how="left").join(useful, on="arm", how="left").with_columns(
        (pl.col("all_tokens") / pl.col("all_time")).alias("tps"),
        (pl.col("all_tokens") / pl.col("runs")).alias("tokens"),
        pl.when(pl.col("arm") == TARGET_ONLY).then(0).otherwise(pl.col("max_k") - 1).alias("budget"))
    base = table.filter(pl.col("arm") == TARGET_ONLY)["tps"]
    control_tps = float(base[0]) if base.len() else float("nan")
    table = table.with_columns((100 * (pl.col("tps") / control_tps - 1)).alias("gain_pct"))
    return table.sort(pl.col("arm") != TARGET_ONLY, "drafter", "max_k").select(GRID_COLUMNS)


__all__ = ["GRID_COLUMNS", "RUN_COLUMNS", "TARGET_ONLY", "GridArm", "grid_arms", "grid_table", "run_grid"]
