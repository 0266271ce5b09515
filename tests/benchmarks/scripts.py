"""Import a script of ``benchmarks/`` (not a package) as a module for the tests of its pure parts."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def script_module(name: str) -> Iterator[ModuleType]:
    """``benchmarks/<name>.py`` as a module, registered under ``name`` while in use (dataclasses resolve
    their annotations through ``sys.modules``); a generator for a pytest fixture."""
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    yield mod
    sys.modules.pop(name, None)
