"""The README's recipes as data: each ``<!-- recipe: NAME -->`` block's commands, one per line.

The tests run these very lines, with the README's placeholder paths (``/data/LibriSpeech``,
``/models/whisper-base``, ...) replaced by fixtures and test-only overrides appended (a private
MLflow store, one window), so a recipe that drifts from the code fails a test.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
BLOCK = re.compile(r"<!-- recipe: (\w+) -->\n```bash\n(.*?)```", re.S)


def recipes(text: str | None = None) -> dict[str, list[str]]:
    """Recipe name -> its command lines (continuations joined, comments dropped)."""
    text = README.read_text() if text is None else text
    out: dict[str, list[str]] = {}
    for name, body in BLOCK.findall(text):
        lines = body.replace("\\\n", " ").splitlines()
        out[name] = [" ".join(ln.split()) for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
    return out


def argv(line: str, subs: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """``(env, argv)`` of one command line: leading ``NAME=value`` words are its environment."""
    for old, new in subs.items():
        line = line.replace(old, new)
    words = shlex.split(line)
    env: dict[str, str] = {}
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", words[0]):
        k, v = words.pop(0).split("=", 1)
        env[k] = v
    return env, words


def overrides(words: list[str], entry: str = "workbench.run") -> list[str]:
    """The Hydra overrides of a ``python -m workbench.run ...`` or ``as2d ...`` command."""
    if words[:1] == ["as2d"]:
        return words[1:]
    assert words[:3] == ["python", "-m", entry], words
    return words[3:]
