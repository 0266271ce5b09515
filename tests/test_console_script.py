"""The README's `as2d` console script composes the project's config from any working directory."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_the_as2d_console_script_finds_conf_from_another_directory(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "as2d"
    assert script.is_file(), f"{script} missing: install the project with `pip install -e .` (make setup)"
    done = subprocess.run([str(script), "experiment=demo", "--cfg", "job", "--package", "job"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Primary config module" not in done.stderr
    assert done.stdout.strip(), "the composed config was not printed"
