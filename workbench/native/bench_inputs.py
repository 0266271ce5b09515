"""What the native bench times: the bench corpus's windows of a split (or the demo's smoke windows),
the dataset configs they are built from, and each window's facts (speaker, perturbation, content)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from .windows import AudioWindow


def bench_eval_windows(split: str, dataset: str = "bench", n_windows: int | None = None,
                       max_seconds: float = 25.0) -> list[AudioWindow]:
    """The windows a bench run times: the bench corpus's ``split`` (``conf/dataset/<dataset>.yaml``),
    or with ``split="demo"`` the demo's evaluation windows (a smoke test, not a benchmark)."""
    from .windows import bench_windows, demo_windows

    if split == "demo":
        return demo_windows(max_seconds)[1][:n_windows]
    return bench_windows(split, dataset_config(dataset), n_windows)


def with_window_facts(report: pl.DataFrame, dataset: str = "bench") -> pl.DataFrame:
    """The per-window report with each bench window's speaker, perturbation and content (manifest)."""
    from workbench.data.bench_corpus import bench_from_config

    facts = bench_from_config(dataset_config(dataset)).manifest_frame().select(
        "window_id", "speaker", "perturbation", "content")
    return report.join(facts, on="window_id", how="left")


def dataset_config(name: str) -> dict[str, Any]:
    """``conf/dataset/<name>.yaml`` as a plain mapping (the bench corpus's build settings)."""
    from omegaconf import OmegaConf

    from workbench.errors import ConfigError

    path = Path(__file__).resolve().parents[2] / "conf" / "dataset" / f"{name}.yaml"
    if not path.is_file():
        raise ConfigError("--dataset", f"no dataset config {path}", fix="bench or bench_ci (conf/dataset/bench*.yaml)")
    doc = OmegaConf.load(path)
    for base in doc.pop("defaults", []) or []:  # a variant names its base config (Hydra's defaults list)
        if base != "_self_":
            doc = OmegaConf.merge(dataset_config(str(base)), doc)
    return OmegaConf.to_container(doc, resolve=True)


__all__ = ["bench_eval_windows", "dataset_config", "with_window_facts"]
