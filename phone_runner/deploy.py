"""Push the runner, models and inputs under ``/data/local/tmp/as2d/`` with sha256 checks.

A file whose device copy already has the same sha256 is skipped. Every device path is built
from a relative name and checked to stay under the root; free space is checked before pushing,
so a full phone is one clear line, not a half-written model.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections.abc import Mapping
from pathlib import Path

import adbutils

from .adb import PhoneError
from .protocol import DEVICE_ROOT


def device_path(rel: str) -> str:
    """``DEVICE_ROOT/rel``; refuses absolute names and anything that climbs out of the root."""
    if not rel or rel.startswith("/") or "\x00" in rel:
        raise ValueError(f"device path {rel!r}: give a relative name under {DEVICE_ROOT}")
    full = posixpath.normpath(posixpath.join(DEVICE_ROOT, rel))
    if not full.startswith(DEVICE_ROOT + "/"):
        raise ValueError(f"device path {rel!r} leaves {DEVICE_ROOT}")
    return full


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def remote_sha256(dev: adbutils.AdbDevice, dpath: str) -> str | None:
    r = dev.shell2(["sha256sum", dpath], timeout=600)
    m = re.match(r"([0-9a-f]{64})\s", r.output)
    return m.group(1) if r.returncode == 0 and m else None


def free_kb(dev: adbutils.AdbDevice) -> int | None:
    """Available kB on the filesystem holding the device root (``df``), or None if unreadable."""
    r = dev.shell2(["df", "/data/local/tmp"], timeout=30)
    for row in r.output.splitlines()[1:]:
        parts = row.split()
        if len(parts) >= 4 and parts[3].isdigit():
            return int(parts[3])
    return None


def expand(files: Mapping[str, Path]) -> dict[str, Path]:
    """Folders become their files (relative names kept)."""
    out: dict[str, Path] = {}
    for rel, local in files.items():
        local = Path(local)
        if local.is_dir():
            for f in sorted(p for p in local.rglob("*") if p.is_file()):
                out[posixpath.join(rel, f.relative_to(local).as_posix())] = f
        elif local.is_file():
            out[rel] = local
        else:
            raise FileNotFoundError(f"deploy: {local} does not exist (for {rel!r})")
    return out


def deploy(dev: adbutils.AdbDevice, files: Mapping[str, Path], *, progress: bool = True) -> dict[str, str]:
    """Push ``{relative device name: local path}``; returns ``{name: 'pushed' | 'present'}``."""
    from tqdm.auto import tqdm

    plan = expand(files)
    todo: dict[str, tuple[Path, str, str]] = {}
    status: dict[str, str] = {}
    for rel, local in plan.items():
        dpath = device_path(rel)
        digest = sha256_file(local)
        if remote_sha256(dev, dpath) == digest:
            status[rel] = "present"
        else:
            todo[rel] = (local, dpath, digest)
    need_kb = sum(local.stat().st_size for local, _, _ in todo.values()) // 1024 + 1
    have = free_kb(dev)
    if todo and have is not None and have < need_kb:
        raise PhoneError(f"device {dev.serial}: not enough free space under {DEVICE_ROOT} ({have} kB free, "
                         f"{need_kb} kB to push); free space on the phone, then rerun")
    with tqdm(total=sum(p.stat().st_size for p, _, _ in todo.values()), unit="B", unit_scale=True,
              desc=f"deploy to {dev.serial}", disable=not progress or not todo) as bar:
        for rel, (local, dpath, digest) in todo.items():
            try:
                dev.sync.push(local, dpath, mode=0o755 if rel.startswith("bin/") else 0o644)
            except adbutils.AdbError as err:
                raise _push_failed(dev, rel, dpath, local, err, done=sum(v == "pushed" for v in status.values()),
                                   total=len(todo)) from None
            got = remote_sha256(dev, dpath)
            if got != digest:
                raise PhoneError(f"device {dev.serial}: {rel} arrived with sha256 {got}, expected {digest}")
            status[rel] = "pushed"
            bar.update(local.stat().st_size)
    return status


def _push_failed(dev: adbutils.AdbDevice, rel: str, dpath: str, local: Path, err: Exception, *, done: int,
                 total: int) -> PhoneError:
    """Why a push failed, from what the phone says and its free space: full, or not writable."""
    have, need = free_kb(dev), local.stat().st_size // 1024 + 1
    folder = posixpath.dirname(dpath)
    probe = dev.shell2(["touch", f"{folder}/.as2d_write_probe"], timeout=30)  # adb's FAIL carries no reason
    dev.shell2(["rm", "-f", f"{folder}/.as2d_write_probe"], timeout=30)
    if "No space" in str(err) or (have is not None and have < need):
        what = f"the phone is full ({have} kB free under {DEVICE_ROOT}, {need} kB needed) ({err})"
        fix = "free space on the phone (`adb shell df /data/local/tmp`), then rerun"
    elif probe.returncode != 0:
        what = f"{folder} is not writable ({probe.output.strip() or err})"
        fix = f"check `adb shell ls -ld {folder}`: the shell user must be able to write there, then rerun"
    else:
        what = f"adb refused it ({err})"
        fix = "check the cable and `adb devices`, then rerun"
    return PhoneError(f"device {dev.serial}: push of {rel} to {dpath} failed: {what}", fix=fix,
                      kept=f"{done} of {total} file(s) pushed and sha256-checked; the rest are pushed on the rerun")
