"""Where converted weights live: a per-user cache directory, overridable with ``AS2D_CACHE``."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import platformdirs

CACHE_ENV = "AS2D_CACHE"


def cache_root() -> Path:
    """``$AS2D_CACHE`` if set, else the platform's user cache dir for ``as2d``."""
    env = os.environ.get(CACHE_ENV)
    return Path(env) if env else Path(platformdirs.user_cache_dir("as2d"))


def model_cache_dir(name: str) -> Path:
    return cache_root() / "models" / name


@contextmanager
def atomic_dir(final: Path) -> Iterator[Path]:
    """Yield a temp dir beside ``final``; it replaces ``final`` only if the block succeeds.

    A crash mid-conversion must never leave a half-written model that later loads as valid.
    """
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
    try:
        yield tmp
        tmp.chmod(0o755)  # mkdtemp makes it private; a model cache should be readable like any other
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
