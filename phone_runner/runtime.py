"""Shared by the Python runner's engines (kept apart from ``device.py``, which also runs as
``__main__``: a class defined there would exist twice and escape its own ``except``)."""

from __future__ import annotations

from pathlib import Path

from .errors import RunnerError


class RunnerFailure(RunnerError):
    """A failure the runner reports as one protocol ``error`` line, then exits with ``status``."""

    def __init__(self, code: str, message: str, window_id: str | None = None, status: int = 1) -> None:
        super().__init__(message)
        self.code, self.window_id, self.status = code, window_id, status

    def __reduce__(self):
        return (type(self), (self.code, self.what, self.window_id, self.status))


def resolve(base: Path, path: str | None) -> Path | None:
    """Request paths are absolute device paths or relative to the request's folder."""
    if path is None:
        return None
    p = Path(path)
    return p if p.is_absolute() else base / p
