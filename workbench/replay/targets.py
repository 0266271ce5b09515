"""A second target on the same phone: a profile's per-model cost block (``targets:``, D.1.2).

A device profile prices one target/drafter pair (K70 Pro: Qwen3-ASR-1.7B + 0.6B). The paper's
translation and spoken-QA comparison runs another pair on the same phone -- Qwen2.5-Omni-7B with
the Omni-3B drafter "under K70 phone costs" (D.1.2, D.4.4) -- so a profile may carry, under
``targets.<conf/model name>``, that pair's own costs: ``target_step_ms``, ``loop_residual_ms``,
``queue_ms``, ``alignment_ms``, ``verifier``, ``sources``, ``serial_drafter``, ``asp``, its own
``rules`` (added to the file's) and ``deployment`` (merged into ``metadata.deployment``: the pair's
own deployed budget). Every number keeps its provenance, exactly as the file's top level does.

:func:`for_model` returns the profile a run of ``conf/model/<name>`` replays under: the block's
variant when the file has one, else the profile itself. A model that some shipped profile prices
with a block of its own but this one does not is refused (:class:`MissingTargetCosts`): it would
otherwise be priced at the other target's costs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .profile import DEVICE_DIR, DeviceProfile, ProfileError, parse_profile

BLOCK_KEYS = {"description", "rules", "target_step_ms", "loop_residual_ms", "queue_ms", "alignment_ms", "verifier",
              "sources", "serial_drafter", "asp", "deployment"}
REQUIRED = {"rules", "target_step_ms", "loop_residual_ms", "queue_ms", "alignment_ms", "verifier", "sources",
            "serial_drafter"}


class MissingTargetCosts(ValueError):
    """A model with its own cost blocks elsewhere has none in this profile."""


def _raw(profile: DeviceProfile) -> dict[str, Any] | None:
    path = Path(profile.file)
    if not path.is_file():
        return None  # an in-memory or calibrated profile: no targets block to read
    with open(path, encoding="utf-8") as fh:
        raw = yaml.safe_load(fh)
    return raw if isinstance(raw, dict) else None


def target_blocks(profile: DeviceProfile) -> list[str]:
    """The ``conf/model`` names this profile carries a cost block for."""
    raw = _raw(profile) or {}
    return sorted((raw.get("targets") or {}).keys())


def _merge(raw: dict[str, Any], model: str, file: str) -> dict[str, Any]:
    block = raw["targets"][model]
    where = f"targets.{model}"
    if not isinstance(block, dict):
        raise ProfileError(file, where, "expected a mapping of the pair's costs")
    extra, missing = set(block) - BLOCK_KEYS, REQUIRED - set(block)
    if extra or missing:
        raise ProfileError(file, where, f"unknown keys {sorted(extra)}" if extra else f"missing {sorted(missing)}")
    out = {k: v for k, v in raw.items() if k not in ("targets", "asp")}
    out.update({k: v for k, v in block.items() if k not in ("rules", "deployment")})
    out["rules"] = {**raw["rules"], **block["rules"]}
    if "deployment" in block and isinstance(raw.get("metadata"), dict):
        meta = dict(raw["metadata"])
        meta["deployment"] = {**meta.get("deployment", {}), **block["deployment"]}
        out["metadata"] = meta
    out["description"] = block.get("description", f"{raw.get('description', '')} ({model} costs)")
    return out


def for_model(profile: DeviceProfile, model: str) -> DeviceProfile:
    """The profile a replay of ``conf/model/<model>`` runs under on this device (module docstring)."""
    raw = _raw(profile)
    if raw and model in (raw.get("targets") or {}):
        file = f"{profile.file}#targets.{model}"
        return parse_profile(_merge(raw, model, profile.file), file=file)
    elsewhere = sorted(p.stem for p in DEVICE_DIR.glob("*.yaml") if p.stem != Path(profile.file).stem
                       and model in ((yaml.safe_load(p.read_text(encoding="utf-8")) or {}).get("targets") or {}))
    if elsewhere and profile.machine is None:  # a host profile was calibrated with the run's own pair
        raise MissingTargetCosts(f"device {profile.name!r} has no cost block for model {model!r} "
                                 f"(targets.{model}; {elsewhere} have one): it would be priced at its own target's "
                                 f"costs. Add targets.{model} to {profile.file}, or replay on {elsewhere[0]}")
    return profile


__all__ = ["MissingTargetCosts", "for_model", "target_blocks"]
