"""Where converted weights live: a per-user cache directory, overridable with ``AS2D_CACHE``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from workbench.io import CACHE_ENV, cache_root

__all__ = ["CACHE_ENV", "atomic_dir", "cache_root", "model_cache_dir"]


def model_cache_dir(name: str) -> Path:
    return cache_root() / "models" / name


@contextmanager
def atomic_dir(final: Path) -> Iterator[Path]:
    """Yield a temp dir; if the block succeeds, ``final`` points at it as a new versioned dir.

    A crash mid-build never leaves a half-written model that later loads as valid, and the previous
    version is never deleted under a process still loading it (``workbench.io.versioned_dir``).
    """
    from workbench.io import dir_lock, versioned_dir

    with dir_lock(final), versioned_dir(final) as tmp:
        yield tmp
