"""A combined dataset's parts (``loader: combined``): each ``conf/dataset/<part>.yaml`` with its overrides."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["COMBINED", "CONF_DATASETS", "part_configs"]

CONF_DATASETS = Path(__file__).resolve().parents[3] / "conf" / "dataset"
COMBINED = "combined"


def part_configs(ds: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A combined dataset's parts: each ``conf/dataset/<part>.yaml`` with the part's overrides merged."""
    from omegaconf import OmegaConf

    out = []
    # settings of the whole run that every part follows unless the part sets its own
    shared = {k: ds[k] for k in ("on_bad_audio",) if ds.get(k) is not None}
    for name, overrides in (ds.get("parts") or {}).items():
        path = CONF_DATASETS / f"{name}.yaml"
        if not path.is_file():
            raise ValueError(f"dataset.parts.{name}: no conf/dataset/{name}.yaml")
        merged = OmegaConf.merge(OmegaConf.load(path), OmegaConf.create(shared),
                                 OmegaConf.create(dict(overrides or {})))
        out.append(OmegaConf.to_container(merged, resolve=True))
    if not out:
        raise ValueError("dataset.parts: a combined dataset lists at least one part")
    return out
