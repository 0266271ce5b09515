"""Where a job's windows come from: SYNTHETIC trajectories or traces collected from real models."""

from __future__ import annotations

from omegaconf import DictConfig

from workbench.replay.synthetic import SourceSpec, SyntheticSpec, paper_like_sources, synthetic_windows
from workbench.replay.trajectory import Window

from .base import ConfigError


def synthetic_from_cfg(ds: DictConfig) -> list[Window]:
    n = ds.n_windows
    if not isinstance(n, int) or n < 2:
        raise ConfigError("dataset.n_windows", f"need an integer >= 2 (a dev and a test window), got {n!r}")
    sources = paper_like_sources() if ds.sources == "paper" else (SourceSpec("qwen"),)
    spec = SyntheticSpec(n_windows=n, mean_tokens=float(ds.mean_tokens), seed=int(ds.seed),
                         sources=sources)
    return synthetic_windows(spec)


def load_windows(cfg: DictConfig) -> list[Window]:
    ds = cfg.dataset
    if ds.synthetic:
        return synthetic_from_cfg(ds)
    from .demo_traces import demo_windows

    return demo_windows(cfg)
