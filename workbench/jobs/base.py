"""What a job returns, and how it is written down (parquet, figures, summary).

A job is a function ``(cfg, out_dir) -> JobResult``. The entry point logs everything in the
result to MLflow, so jobs never touch tracking themselves and stay testable without a store.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
from omegaconf import DictConfig

from workbench.errors import ConfigError as ConfigError  # re-exported: jobs raise it from here
from workbench.io import atomic_write_bytes, atomic_write_parquet


@dataclass
class JobResult:
    metrics: dict[str, float] = field(default_factory=dict)
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)  # name -> frame, saved as parquet
    figures: dict[str, Any] = field(default_factory=dict)  # name -> altair chart, saved as PNG+SVG
    summary: pl.DataFrame | None = None  # the compact results table printed at the end
    tags: dict[str, str] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)  # other files the job wrote under out_dir (MLflow artifacts)


Job = Callable[[DictConfig, Path], JobResult]


def write_atomic(path: Path, data: bytes) -> None:
    """Write via a unique temp file and rename, so a crash never leaves a half-written file."""
    atomic_write_bytes(path, data)


def write_parquet(frame: pl.DataFrame, path: Path) -> Path:
    return atomic_write_parquet(path, frame)


def write_json(obj: Any, path: Path) -> Path:
    write_atomic(path, json.dumps(obj, indent=2, sort_keys=True, default=str).encode())
    return path


def save_result(result: JobResult, out_dir: Path) -> list[Path]:
    """Write tables as parquet and figures as PNG+SVG under ``out_dir``; return the files."""
    from ..figures.export import save_chart

    files = [write_parquet(df, out_dir / "tables" / f"{name}.parquet") for name, df in result.tables.items()]
    for name, chart in result.figures.items():
        files.extend(save_chart(chart, out_dir / "figures" / name))
    if result.summary is not None:
        files.append(write_parquet(result.summary, out_dir / "summary.parquet"))
    files.append(write_json(result.metrics, out_dir / "metrics.json"))
    files.extend(f for f in result.files if f.is_file())
    return files
