"""The loopback device's file system: device paths mapped under one host folder, nothing outside it."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Sandbox:
    """Device paths map to ``root / path``; nothing outside the root is reachable."""

    root: Path
    props: dict[str, str] = field(default_factory=dict)
    free_kb: Callable[[], int] = lambda: 1 << 30
    python: str = sys.executable
    extra_env: dict[str, str] = field(default_factory=dict)
    read_only: set[str] = field(default_factory=set)  # device folders mounted read-only (sync push refuses)

    def is_read_only(self, device_path: str) -> bool:
        return any(device_path == d or device_path.startswith(d.rstrip("/") + "/") for d in self.read_only)

    def host(self, device_path: str, cwd: str = "/data/local/tmp") -> Path:
        """The host path of ``device_path`` (relative to ``cwd``); ``..`` stops at the root, and a
        path whose real location (symlinks followed) leaves the root is a ``PermissionError``."""
        p = device_path if device_path.startswith("/") else f"{cwd}/{device_path}"
        parts: list[str] = []
        for part in p.split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                if parts:
                    parts.pop()
                continue
            parts.append(part)
        target = self.root.joinpath(*parts) if parts else self.root
        real = Path(os.path.realpath(target))
        if real != self.root and self.root not in real.parents:
            raise PermissionError(f"{device_path}: outside the device sandbox")
        return target
