"""The Python runner's output: every protocol line to stdout and to the output file.

PROTOCOL.md, Invocation: each line is written whole, then flushed, so a killed runner leaves a valid
prefix; a line that cannot be written whole ends the run, and its ``error`` line goes to whichever
stream still takes it. Kept apart from ``device.py`` (which also runs as ``__main__``) so that
``WriteFailed`` is one class for every engine that writes through ``Out``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, TextIO

from .protocol import line


class WriteFailed(Exception):
    """A line that could not be written whole: the run ends (PROTOCOL.md). ``to_stdout``: the host's
    stream is gone (broken pipe, host lost); otherwise the output file failed (full disk, read-only)."""

    def __init__(self, message: str, to_stdout: bool) -> None:
        super().__init__(message)
        self.to_stdout = to_stdout


class Out:
    """Every line to stdout and to the output file, whole and flushed; a failed write is fatal."""

    def __init__(self, path: Path | None, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stdout
        self.file: TextIO | None = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.file = open(path, "w", encoding="utf-8")  # noqa: SIM115
        self.count: dict[str, int] = {}

    def __call__(self, kind: str, **fields: Any) -> None:
        text = line(kind, **fields) + "\n"
        for stream, name in ((self.stream, "stdout"), (self.file, "output file")):
            if stream is None:
                continue
            try:
                stream.write(text)
                stream.flush()
            except OSError as err:
                raise WriteFailed(f"{name}: write failed ({err.strerror or err})", stream is self.stream) from None
        self.count[kind] = self.count.get(kind, 0) + 1

    def last(self, kind: str, to_stdout: bool, to_file: bool, **fields: Any) -> None:
        """The closing line of a failed run, to whichever stream still takes it."""
        text = line(kind, **fields) + "\n"
        for stream, ok in ((self.stream, to_stdout), (self.file, to_file)):
            if stream is not None and ok:
                try:
                    stream.write(text)
                    stream.flush()
                except OSError:
                    pass  # nothing left to report to; the exit status says it

    def close(self) -> None:
        if self.file is not None:
            try:
                self.file.close()
            except OSError:
                pass
