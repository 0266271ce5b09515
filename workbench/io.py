"""Atomic writes for every result file: a unique temp file beside the target, then ``os.replace``.

A reader (or a second job) sees either the old file or the new one, never half of one. Temp names
come from ``tempfile.mkstemp`` (unique per call, not per PID: two threads of one job, or a PID
reused after a crash, never share one) and start with ``.`` so globbing ``*.parquet`` skips them.
A killed writer can leave a temp behind; ``clean_temps`` removes old ones.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

TEMP_MARK = ".as2d-tmp"


def _temp_beside(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TEMP_MARK, dir=path.parent)
    os.close(fd)
    return Path(tmp)


def atomic_write_with(path: str | Path, write: Callable[[Path], Any]) -> Path:
    """Call ``write(temp_path)`` and move the result onto ``path``; the temp never survives a failure."""
    path = Path(path)
    tmp = _temp_beside(path)
    try:
        write(tmp)
        os.chmod(tmp, 0o644)  # mkstemp makes it private; results are read by notebooks and other users
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    def write(tmp: Path) -> None:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())

    return atomic_write_with(path, write)


def atomic_write_text(path: str | Path, text: str) -> Path:
    return atomic_write_bytes(path, text.encode())


def atomic_write_json(path: str | Path, obj: Any, **kw: Any) -> Path:
    kw.setdefault("indent", 1)
    return atomic_write_text(path, json.dumps(obj, **kw))


def atomic_write_parquet(path: str | Path, frame: Any) -> Path:
    """``frame.write_parquet`` (polars) via a temp file."""
    return atomic_write_with(path, lambda tmp: frame.write_parquet(tmp))


def clean_temps(directory: str | Path, older_than_s: float = 3600.0) -> list[Path]:
    """Remove temps left by killed writers (older than ``older_than_s``, so live writers keep theirs)."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    removed, now = [], time.time()
    for p in directory.glob(f".*{TEMP_MARK}"):
        try:
            if now - p.stat().st_mtime > older_than_s:
                p.unlink()
                removed.append(p)
        except FileNotFoundError:
            pass
    return removed
