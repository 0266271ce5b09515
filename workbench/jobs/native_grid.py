"""Job ``native_grid``: the native drafter x budget grid of B.4 / D.4.5 (Table 14) on this host.

Sources (``grid.sources``; ``producer`` is the pair's autoregressive producer) x maximum widths
(``grid.widths``) plus the target-only control, ``grid.repeats`` shuffled repetitions on the run's
development windows (``native.grid``). Logs the per-run frame (``grid_runs``) and Table 14's shape
(``grid``: pooled TPS, gain, paired gain range, extra tokens, target calls, exactness)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
from omegaconf import DictConfig

from .base import ConfigError, JobResult
from .config import budget, check_models
from .windows import check_real_audio

# the config groups this job reads; an override of any other group is refused (workbench.run)
READS = ("model", "dataset")
PRODUCER = "producer"  # grid.sources' name for the pair's autoregressive producer


def _positive_int(cfg: DictConfig, key: str, least: int) -> int:
    v = cfg.grid.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or v < least:
        raise ConfigError(f"grid.{key}", f"need an integer >= {least}, got {v!r}")
    return v


def validate(cfg: DictConfig) -> None:
    from workbench.native.chunks import CHUNK_SOURCES

    budget(cfg)
    check_real_audio(cfg)
    check_models(cfg)
    for key, least in (("repeats", 1), ("warmup", 0), ("max_windows", 1)):
        _positive_int(cfg, key, least)
    widths = list(cfg.grid.widths or [])
    if not widths or any(isinstance(k, bool) or not isinstance(k, int) or k < 2 for k in widths):
        raise ConfigError("grid.widths", f"need maximum chain widths K >= 2 (K = 1 is the target-only control), "
                          f"got {widths!r}")
    bad = [s for s in cfg.grid.sources or [] if s != PRODUCER and s not in CHUNK_SOURCES]
    if bad:
        raise ConfigError("grid.sources", f"unknown {bad}; choose from {[PRODUCER, *CHUNK_SOURCES]}")
    if "parakeet_ctc" in sources(cfg, PRODUCER) and not cfg.model.get("parakeet_ctc"):
        raise ConfigError("model.parakeet_ctc", "the parakeet_ctc grid source needs its block: "
                          "+model.parakeet_ctc={name: ..., family: parakeet_ctc, local_path: ...}")


def sources(cfg: DictConfig, producer: str) -> list[str]:
    """The grid's sources by their names in the runs: the producer's own name for ``producer``."""
    from workbench.native.chunks import CHUNK_SOURCES

    names = cfg.grid.sources
    if names is None:
        names = [PRODUCER, *(s for s in cfg.model.get("external_sources") or [] if s in CHUNK_SOURCES)]
    return [producer if s == PRODUCER else str(s) for s in names]


def grid_windows(cfg: DictConfig) -> list:
    """Development windows: the demo corpus's dev split (a paper dataset's chosen cohort split as it
    is), packed up to ``grid.max_seconds`` under the target's audio limit, the first ``grid.max_windows``."""
    from .native import split_windows

    return split_windows(cfg, float(cfg.grid.max_seconds), "dev")[: int(cfg.grid.max_windows)]


def grid_metrics(grid: pl.DataFrame, runs: pl.DataFrame) -> dict[str, float]:
    out: dict[str, float] = {}
    for row in grid.iter_rows(named=True):
        for k in ("tps", "tps_useful", "gain_pct", "extra_tokens", "target_calls"):
            if row[k] is not None:
                out[f"grid.{row['arm']}.{k}"] = float(row[k])
    out["exactness_mismatches"] = float((~runs["matched"]).sum())
    return out


def run(cfg: DictConfig, out: Path) -> JobResult:
    from workbench.figures.paper_values import table14
    from workbench.native.episodes import host_setup
    from workbench.native.grid import grid_arms, run_grid
    from workbench.native.ondemand import cpu_note

    from .config import kernel_plan_profile
    from .demo_traces import load_model_pair

    g = cfg.grid
    windows = grid_windows(cfg)
    setup = host_setup(load_model_pair(cfg))
    setup.use_profile(kernel_plan_profile(cfg))  # the fastest kernel per width this machine measured
    arms = grid_arms(setup, sources(cfg, setup.source), [int(k) for k in g.widths])
    frames = run_grid(windows, arms, int(g.repeats), warmup=int(g.warmup), seed=int(g.seed))
    metrics = grid_metrics(frames["grid"], frames["runs"])
    # a mismatch fails the run after everything is logged (workbench.run, MismatchError)
    paper = table14().drop("provenance")
    tags: dict[str, Any] = {"windows": ",".join(w.window_id for w in windows), "load": cpu_note(),
                            "dataset": str(cfg.dataset.name)}
    return JobResult(metrics, {"grid_runs": frames["runs"], "grid": frames["grid"], "paper_table14": paper},
                     {}, frames["grid"].rename({"arm": "method"}), {k: str(v) for k, v in tags.items()})
