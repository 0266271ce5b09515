"""Config checks every job shares, run before any MLflow run exists (one ``ConfigError`` line each).

Values that used to surface only as tracebacks mid-run: a seed that is not an integer,
a candidate ``source`` no window or profile has, a model ``device``/``dtype`` torch cannot use.
"""

from __future__ import annotations

import re
from typing import Any

from omegaconf import DictConfig

from .base import ConfigError

DEVICE = re.compile(r"^(cpu|cuda(:\d+)?|mps)$")
DTYPES = ("float32", "float16", "bfloat16", "float64")
TRACE_ROLES = ("producer", "chunk")  # sources of collected traces (traces.collect)
ROLES = ("target", "drafter", "serial_drafter")


def _int(value: Any, key: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(key, f"must be an integer, got {value!r}")


def check_seeds(cfg: DictConfig) -> None:
    if cfg.get("seed") is not None:
        _int(cfg.seed, "seed")
    ds = cfg.get("dataset") or {}
    if ds.get("seed") is not None:
        _int(ds.seed, "dataset.seed")


def check_model_devices(cfg: DictConfig) -> None:
    """Every model role's ``device`` and ``dtype``; a CUDA device must exist on this machine."""
    model = cfg.get("model") or {}
    for role in ROLES:
        block = model.get(role)
        if not block:
            continue
        device, dtype = str(block.get("device", "cpu")), block.get("dtype", "float32")
        if not DEVICE.match(device):
            raise ConfigError(f"model.{role}.device", f"unknown device {device!r}; use cpu, cuda, cuda:N or mps")
        if dtype not in DTYPES:
            raise ConfigError(f"model.{role}.dtype", f"unknown dtype {dtype!r}; choose one of {list(DTYPES)}")
        if device.startswith("cuda"):
            import torch

            n = torch.cuda.device_count()
            index = int(device.split(":")[1]) if ":" in device else 0
            if index >= n:
                raise ConfigError(f"model.{role}.device", f"{device!r} but this machine has {n} CUDA device(s); "
                                  "use model.<role>.device=cpu")


def known_sources(cfg: DictConfig) -> set[str]:
    """Names a ``source`` may take: trace roles, ``source_roles`` names, profile and synthetic sources."""
    from workbench.replay.synthetic import paper_like_sources

    from .config import devices

    names = set(TRACE_ROLES) | {s.name for s in paper_like_sources()}
    for role, name in (cfg.get("source_roles") or {}).items():
        names |= {str(role), str(name)}
    drafter = (cfg.get("model") or {}).get("drafter") or {}
    if drafter.get("name"):
        names.add(str(drafter.name))
    try:
        for profile in devices(cfg):
            names |= set(profile.sources)
    except ConfigError:
        pass  # the job's own validation names a bad device
    return names


def check_source(cfg: DictConfig) -> None:
    source = cfg.get("source")
    if source is None:
        return
    known = known_sources(cfg)
    # several resident sources (as2d_sources/as2d_adaptive): "producer+chunk", each one known
    if any(part not in known for part in str(source).split("+")):
        raise ConfigError("source", f"unknown candidate source {source!r}; choose one of {sorted(known)} "
                          "(or several joined by '+')")


def check_max_windows(cfg: DictConfig) -> None:
    value = (cfg.get("dataset") or {}).get("max_windows")
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ConfigError("dataset.max_windows", f"must be an integer >= 1 or null (every window), got {value!r}")


def check_common(cfg: DictConfig) -> None:
    """The checks every job runs first (``workbench.run.execute``)."""
    check_seeds(cfg)
    check_max_windows(cfg)
    check_model_devices(cfg)
    check_source(cfg)
