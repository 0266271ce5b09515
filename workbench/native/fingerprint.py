"""Which machine a host profile prices: its fingerprint, and the profile that belongs to this machine.

A host profile measured on one CPU must not price another: on a different machine host replay
disagrees with native timing by tens of percent (D.3). The profile records a fingerprint (CPU model,
core count, usable threads, torch version, engine and the target's kernels, calibration version):
a profile from an older calibration, or measured with other kernels, prices wrongly too.
``host_profile`` returns the committed ``conf/device/host.yaml`` only when its fingerprint is this
machine's; otherwise a profile cached for this fingerprint under ``$AS2D_CACHE/host_profiles/``;
otherwise it calibrates quickly (and caches) or refuses with one line, as ``on_mismatch`` says.
It never prices with another machine's costs.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

from workbench.errors import ProfileError
from workbench.replay.profile import DEVICE_DIR, DeviceProfile, load_profile

from .calibrate import calibrate_host
from .machine import CALIBRATION_VERSION, FIELDS, cpu_model, engine_label, machine_fingerprint
from .windows import demo_windows

OnMismatch = Literal["calibrate", "refuse"]
ON_MISMATCH: tuple[str, ...] = ("calibrate", "refuse")
QUICK_REPS = 3  # quick calibration: fewer repetitions than the D.2 protocol's 5, same fields


class HostProfileMismatch(ProfileError):
    """The host profile was measured on another machine and this run may not calibrate."""


def fingerprint_id(fp: Mapping[str, Any]) -> str:
    """A short stable name for a fingerprint (the cache file's name)."""
    text = json.dumps({k: fp.get(k) for k in FIELDS}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def differences(recorded: Mapping[str, Any] | None, fp: Mapping[str, Any]) -> list[str]:
    """Fields in which ``recorded`` (a profile's ``machine:``) differs from ``fp``; all of them if none is recorded."""
    if recorded is None:
        return ["no machine recorded"]
    return [f"{k}: {recorded.get(k)!r} != {fp.get(k)!r}" for k in FIELDS if recorded.get(k) != fp.get(k)]


def profile_cache_dir() -> Path:
    from workbench.models.cache import cache_root

    return cache_root() / "host_profiles"


def cached_profile_path(fp: Mapping[str, Any], model_name: str) -> Path:
    """Cached profile of this machine for this model pair (a profile prices one pair)."""
    return profile_cache_dir() / f"host-{model_name}-{fingerprint_id(fp)}.yaml"


def _model_name(model_cfg: Mapping[str, Any]) -> str:
    return str(model_cfg.get("name") or model_cfg.get("target", {}).get("name") or "model")


def host_profile(
    model_cfg: Mapping[str, Any],
    on_mismatch: OnMismatch = "calibrate",
    *,
    reference: str | Path = DEVICE_DIR / "host.yaml",
    engine: str | None = None,
    calibrate: Callable[[Path], DeviceProfile] | None = None,
    progress: bool = True,
) -> DeviceProfile:
    """The host profile of *this* machine (see the module docstring).

    ``calibrate(path)`` measures and writes the profile at ``path`` (default: a quick
    ``calibrate_host`` on the dev windows); tests pass their own to keep it fast."""
    if on_mismatch not in ON_MISMATCH:
        raise ValueError(f"calibration.on_mismatch: expected one of {ON_MISMATCH}, got {on_mismatch!r}")
    fp = machine_fingerprint(engine or engine_label(model_cfg))
    ref = Path(reference)
    if ref.exists():
        prof = load_profile(ref)
        if not differences(prof.machine, fp):
            return prof
    cached = cached_profile_path(fp, _model_name(model_cfg))
    stale = False
    if cached.exists():
        prof = load_profile(cached)
        # A cache written by a calibration older than the drift anchor (and its R_LIVE producer fit)
        # prices this machine's producer wrongly (D.3): measure again, never reuse it.
        stale = prof.anchor_ms is None
        if not differences(prof.machine, fp) and not stale:
            return prof
    if on_mismatch == "refuse":
        why = "; ".join(differences(load_profile(ref).machine, fp)) if ref.exists() else "no host profile"
        if stale:
            raise HostProfileMismatch(
                f"cached host profile {cached} was measured by an older calibration (no drift anchor); "
                f"recalibrate with `python -m workbench.native.calibrate --profile {cached}` or set "
                "calibration.on_mismatch=calibrate")
        raise HostProfileMismatch(
            f"host profile {ref} was measured on another machine ({why}); calibrate this one with "
            f"`python -m workbench.native.calibrate --profile {cached}` or set calibration.on_mismatch=calibrate")
    if calibrate is None:
        def calibrate(path: Path) -> DeviceProfile:
            return quick_calibration(model_cfg, path, progress=progress)
    prof = calibrate(cached)
    if differences(prof.machine, fp):  # a calibration records this machine; anything else is a bug
        raise RuntimeError(f"calibration wrote a profile for another machine: {differences(prof.machine, fp)}")
    return prof


def quick_calibration(model_cfg: Mapping[str, Any], path: str | Path, *, reps: int = QUICK_REPS,
                      progress: bool = True) -> DeviceProfile:
    """First-use calibration of this machine (dev windows, ``reps`` repetitions), written to ``path``."""
    calib, _ = demo_windows()
    profile, _ = calibrate_host(calib[:1], dict(model_cfg), reps, range(1, 17), None, profile_path=path,
                                progress=progress)
    return profile


__all__ = ["CALIBRATION_VERSION", "FIELDS", "ON_MISMATCH", "HostProfileMismatch", "cached_profile_path", "cpu_model",
           "differences", "engine_label", "fingerprint_id", "host_profile", "machine_fingerprint",
           "quick_calibration"]
