"""Which machine a host profile prices: its fingerprint, and the profile that belongs to this machine.

A host profile measured on one CPU must not price another: on a different machine host replay
disagrees with native timing by tens of percent (D.3). The profile records a fingerprint (CPU model,
core count, usable threads, torch version, engine and the target's kernels, calibration version):
a profile from an older calibration, or measured with other kernels, prices wrongly too.
``host_profile`` returns the committed ``conf/device/host.yaml`` only when its fingerprint is this
machine's; otherwise a profile cached for this fingerprint under ``$AS2D_CACHE/host_profiles/``
(``$AS2D_PROFILE_DIR`` instead when set: a run whose calibration must not become this machine's, such
as the test suite's reduced demo, measured while other tests load the cores); otherwise it calibrates
quickly (and caches) or refuses with one line, as ``on_mismatch`` says. It never prices with another
machine's costs.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

from workbench.errors import ProfileError
from workbench.replay.profile import DEVICE_DIR, DeviceProfile, load_profile

from .calibrate import CLIP_WINDOWS, calibrate_host
from .machine import CALIBRATION_VERSION, FIELDS, cpu_model, engine_label, machine_fingerprint
from .steadiness import CALIBRATION_ATTEMPTS
from .windows import demo_clip_windows, demo_windows

log = logging.getLogger(__name__)
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


PROFILE_DIR_ENV = "AS2D_PROFILE_DIR"


def profile_cache_dir() -> Path:
    """Where this machine's host calibrations are cached: ``$AS2D_PROFILE_DIR``, else
    ``$AS2D_CACHE/host_profiles``."""
    from workbench.models.cache import cache_root

    own = os.environ.get(PROFILE_DIR_ENV)
    return Path(own) if own else cache_root() / "host_profiles"


PAIR_FIELDS = ("dtype", "quantize", "kernels", "device", "vocabulary")  # per role: each changes a cost
ROLES = ("target", "drafter", "serial_drafter")


def pair_identity(model_cfg: Mapping[str, Any]) -> dict[str, Any]:
    """What of the model pair changes a host profile's numbers: the engine and kernels, each role's
    dtype, quantization and device, the weights' identity (content hashes of the weight files,
    memoized by path, size, mtime and inode: ``traces.cache_key``) and the calibration version."""
    from workbench.traces.cache_key import weights_identity

    roles = {r: {**{f: model_cfg[r].get(f) for f in PAIR_FIELDS}, "weights": weights_identity(model_cfg[r])}
             for r in ROLES if isinstance(model_cfg.get(r), Mapping)}
    return {"engine": engine_label(model_cfg), "mnn": model_cfg.get("mnn"), "roles": roles,
            "calibration": CALIBRATION_VERSION}


def cached_profile_path(fp: Mapping[str, Any], model_cfg: Mapping[str, Any]) -> Path:
    """Cached profile of this machine for this model pair (a profile prices one pair): the name
    carries the machine's fingerprint and the pair's identity, so another quantization, dtype,
    kernel or set of weights is another file, never a reuse."""
    pair = hashlib.sha256(json.dumps(pair_identity(model_cfg), sort_keys=True, default=str).encode()).hexdigest()
    return profile_cache_dir() / f"host-{_model_name(model_cfg)}-{fingerprint_id(fp)}-{pair[:12]}.yaml"


_PRICED: dict[str, Path] = {}  # the host profiles this process priced with (attached to the run)


def priced_profiles() -> list[Path]:
    """The host profile files that priced this process's runs (``workbench.run`` attaches them)."""
    return list(_PRICED.values())


def _priced(prof: DeviceProfile) -> DeviceProfile:
    if prof.file and Path(prof.file).is_file():
        _PRICED[str(prof.file)] = Path(prof.file)
    return prof


@contextlib.contextmanager
def calibration_lock(path: Path, say: Callable[[str], None] = log.warning) -> Iterator[None]:
    """One first-use calibration per cached profile at a time: a second job sharing ``AS2D_CACHE``
    waits for the first (and says so once) instead of measuring on a machine the first one loads."""
    import fcntl

    lock = path.with_name(path.name + ".lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"waiting for another job's calibration of this machine (lock {lock})")
            fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _load_cached(path: Path) -> DeviceProfile | None:
    """The cached profile, or ``None`` when there is none; one that does not parse or validate is
    moved aside (kept for a look) and rebuilt, with one line."""
    if not path.exists():
        return None
    try:
        return load_profile(path)
    except Exception as err:  # YAML syntax, a missing key, a wrong type: all mean "not a usable profile"
        aside = path.with_name(f"{path.name}.bad-{time.strftime('%Y%m%dT%H%M%S')}")
        os.replace(path, aside)
        log.warning("cached host profile %s is unusable (%s: %s); moved aside to %s and measured again",
                    path, type(err).__name__, str(err).splitlines()[0][:200] if str(err) else "", aside)
        return None


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
    attempts: int = CALIBRATION_ATTEMPTS,
) -> DeviceProfile:
    """The host profile of *this* machine (see the module docstring).

    ``calibrate(path)`` measures and writes the profile at ``path`` (default: a quick
    ``calibrate_host`` on the dev windows); tests pass their own to keep it fast."""
    if on_mismatch not in ON_MISMATCH:
        raise ValueError(f"calibration.on_mismatch: expected one of {ON_MISMATCH}, got {on_mismatch!r}")
    fp = machine_fingerprint(engine or engine_label(model_cfg))
    ref = Path(reference)
    if ref.exists():
        prof: DeviceProfile | None = load_profile(ref)
        if prof is not None and not differences(prof.machine, fp):
            return _priced(prof)
    cached = cached_profile_path(fp, model_cfg)
    prof, stale = _usable(cached, fp)
    if prof is not None:
        return _priced(prof)
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
            return quick_calibration(model_cfg, path, progress=progress, attempts=attempts)
    with calibration_lock(cached):
        prof, _ = _usable(cached, fp)  # the job that held the lock may have measured it meanwhile
        if prof is None:
            prof = calibrate(cached)
    if differences(prof.machine, fp):  # a calibration records this machine; anything else is a bug
        raise RuntimeError(f"calibration wrote a profile for another machine: {differences(prof.machine, fp)}")
    return _priced(prof)


def _usable(cached: Path, fp: Mapping[str, Any]) -> tuple[DeviceProfile | None, bool]:
    """(the cached profile if it prices this machine, whether the cache is from an older calibration)."""
    prof = _load_cached(cached)
    if prof is None:
        return None, False
    # A cache written by a calibration older than the drift anchor (and its R_LIVE producer fit)
    # prices this machine's producer wrongly (D.3): measure again, never reuse it.
    stale = prof.anchor_ms is None
    return (prof if not differences(prof.machine, fp) and not stale else None), stale


def samples_dir(profile_path: str | Path) -> Path:
    """Where a first-use calibration keeps its raw samples: ``<profile>.samples/`` beside the profile."""
    p = Path(profile_path)
    return p.with_name(p.name + ".samples")


def quick_calibration(model_cfg: Mapping[str, Any], path: str | Path, *, reps: int = QUICK_REPS,
                      progress: bool = True, attempts: int = CALIBRATION_ATTEMPTS) -> DeviceProfile:
    """First-use calibration of this machine (dev windows, ``reps`` repetitions), written to ``path``; its
    raw samples and round records go beside it (``samples_dir``), so a fit can be revisited offline."""
    calib, _ = demo_windows()
    profile, _ = calibrate_host(calib[:1], dict(model_cfg), reps, range(1, 17), samples_dir(path), profile_path=path,
                                progress=progress, clips=demo_clip_windows(CLIP_WINDOWS, model=model_cfg),
                                attempts=attempts)
    return profile


__all__ = ["CALIBRATION_VERSION", "FIELDS", "ON_MISMATCH", "HostProfileMismatch", "cached_profile_path",
           "calibration_lock", "pair_identity", "priced_profiles", "cpu_model",
           "differences", "engine_label", "fingerprint_id", "host_profile", "machine_fingerprint",
           "quick_calibration", "samples_dir"]
