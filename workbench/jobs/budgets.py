"""Per-device proposal budgets (A.2, D.2.6): each phone replays at its own deployed budget.

The paper deploys one fixed (source, budget) per phone within one multi-device comparison:
b = 7 on K70 Pro, Xiaomi 11 Pro and Xiaomi 14, b = 3 on Redmi Note 9 Pro. The profile records it
(``metadata.deployment.budget``). The rule, for one device of a run:

1. ``device_budgets.<device>`` when the run names that device there (a per-device Hydra override);
2. else, with ``budget_from: profile``, the profile's deployed budget when it records one;
3. else ``model.budget`` (the host and any profile without a deployment block).

``budget_from: model`` skips step 2: every device not named in ``device_budgets`` runs at
``model.budget``, as a sweep over ``model.budget`` wants. Under ``budget_from: profile`` a
command-line ``model.budget`` that reaches no device would be silently ignored, so it is refused.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl
from omegaconf import DictConfig, OmegaConf

from workbench.decoding.schemes import MAX_BUDGET
from workbench.replay.profile import DeviceProfile

from .base import ConfigError

MODES = ("profile", "model")


def _mode(cfg: DictConfig) -> str:
    mode = str(cfg.get("budget_from", "model"))
    if mode not in MODES:
        raise ConfigError("budget_from", f"must be one of {list(MODES)}, got {mode!r}")
    return mode


def _overrides(cfg: DictConfig) -> dict[str, int]:
    raw = cfg.get("device_budgets") or {}
    if not isinstance(raw, DictConfig):
        raise ConfigError("device_budgets", f"must be a mapping device -> budget, e.g. device_budgets.<device>=3, "
                                            f"got {raw!r}")
    out = {}
    for name, b in OmegaConf.to_container(raw, resolve=True).items():
        if b is None:  # conf/config.yaml lists the shipped devices unset
            continue
        if isinstance(b, bool) or not isinstance(b, int) or not 1 <= b <= MAX_BUDGET:
            raise ConfigError(f"device_budgets.{name}", f"must be an integer proposal budget in [1, {MAX_BUDGET}], "
                                                       f"got {b!r}")
        out[str(name)] = b
    return out


def device_budget(cfg: DictConfig, profile: DeviceProfile) -> int:
    """The proposal budget ``profile`` replays at in this run (the rule in the module docstring)."""
    named = _overrides(cfg)
    if profile.name in named:
        return named[profile.name]
    if _mode(cfg) == "profile" and profile.metadata is not None:
        return profile.metadata.budget
    return int(cfg.model.budget)


def budget_origin(cfg: DictConfig, profile: DeviceProfile) -> str:
    """Where ``device_budget`` took the budget from: ``device_budgets``, ``profile`` or ``model.budget``."""
    if profile.name in _overrides(cfg):
        return "device_budgets"
    if _mode(cfg) == "profile" and profile.metadata is not None:
        return "profile"
    return "model.budget"


def budget_table(cfg: DictConfig, profiles: Sequence[DeviceProfile]) -> pl.DataFrame:
    """One row per device: the budget it replayed at and where that came from."""
    return pl.DataFrame({"device": [p.name for p in profiles],
                         "budget": [device_budget(cfg, p) for p in profiles],
                         "origin": [budget_origin(cfg, p) for p in profiles]},
                        schema={"device": pl.Utf8, "budget": pl.Int64, "origin": pl.Utf8})


def _task_overrides() -> list[str]:
    from hydra.core.hydra_config import HydraConfig

    try:
        return [str(o) for o in HydraConfig.get().overrides.task]
    except ValueError:  # composed outside a Hydra run (tests, notebooks): no command line
        return []


def check_device_budgets(cfg: DictConfig, profiles: Sequence[DeviceProfile],
                         overrides: Sequence[str] | None = None) -> None:
    """One ``ConfigError`` before any work for a per-device budget that would be ignored or is malformed.

    ``overrides``: the run's command-line overrides (default: Hydra's task overrides), to catch a
    ``model.budget=`` that a phone of a ``budget_from: profile`` run would not use.
    """
    _mode(cfg)
    overrides = _task_overrides() if overrides is None else overrides
    names = {p.name for p in profiles}
    stray = sorted(set(_overrides(cfg)) - names)
    if stray:
        raise ConfigError(f"device_budgets.{stray[0]}", f"{stray[0]!r} is not a device of this run "
                                                        f"(devices: {sorted(names)}); name one of them or drop it")
    given = [o for o in overrides if o.lstrip("+").startswith("model.budget=")]
    if not given:
        return
    deaf = [p.name for p in profiles if budget_origin(cfg, p) == "profile"]
    if deaf:
        raise ConfigError("model.budget", f"{given[0].lstrip('+')} does not reach {deaf} (budget_from=profile: each "
                                          f"phone replays at its deployed budget, A.2/D.2.6); add budget_from=model "
                                          f"to run every device at it, or set device_budgets.{deaf[0]}=B")


__all__ = ["MODES", "budget_origin", "budget_table", "check_device_budgets", "device_budget"]
