"""Config errors that used to surface as tracebacks mid-run are one line, before any run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from workbench.jobs.base import ConfigError
from workbench.jobs.checks import check_common

ROOT = Path(__file__).resolve().parents[1]
BAD = [("dataset.seed=abc", "dataset.seed"), ("source=nope", "source"),
       ("model.target.device=nope", "model.target.device"), ("model.drafter.dtype=float8", "model.drafter.dtype"),
       ("seed=true", "seed")]


def _cfg(*overrides: str):
    with initialize_config_dir(str(ROOT / "conf"), version_base="1.3"):
        return compose("config", overrides=list(overrides))


@pytest.mark.parametrize("override, key", BAD)
def test_bad_value_is_one_config_error_naming_the_key(override, key):
    with pytest.raises(ConfigError) as err:
        check_common(_cfg(override))
    assert err.value.key == key


def test_good_values_pass():
    check_common(_cfg())
    check_common(_cfg("source=qwen", "dataset.seed=3", "model.target.device=cpu"))


def test_front_door_prints_one_line_and_creates_no_run(tmp_path):
    procs = {}
    for i, (override, key) in enumerate(BAD[:1]):  # the others reach the same check_common (above)
        db = tmp_path / f"m{i}.db"
        procs[key] = (db, subprocess.Popen([sys.executable, "-m", "workbench.run", override, f"tracking.uri=sqlite:///{db}",
                                            f"hydra.run.dir={tmp_path}/out{i}"], cwd=ROOT,
                                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for key, (db, proc) in procs.items():
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 2, err[-2000:]
        lines = [ln for ln in err.splitlines() if ln.startswith("config error")]
        assert len(lines) == 1 and lines[0].startswith(f"config error: {key}:"), err[-2000:]
        assert "Traceback" not in err
        assert not db.exists() or "runs" not in _tables(db) or _count(db) == 0


def _tables(db: Path) -> set[str]:
    import sqlite3

    with sqlite3.connect(db) as con:
        return {r[0] for r in con.execute("select name from sqlite_master where type='table'")}


def _count(db: Path) -> int:
    import sqlite3

    with sqlite3.connect(db) as con:
        return con.execute("select count(*) from runs").fetchone()[0]


COMPOSE = """
from hydra import compose, initialize_config_dir
with initialize_config_dir(%r, version_base="1.3"):
    print(compose("config", return_hydra_config=True).hydra.run.dir)
"""


def test_jobs_started_in_the_same_second_get_their_own_run_dirs():
    code = COMPOSE % str(ROOT / "conf")
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True) for _ in range(2)]
    dirs = [p.communicate(timeout=300)[0].strip() for p in procs]
    assert all(dirs) and dirs[0] != dirs[1], dirs  # a shared dir would mix their .hydra/ and files


@pytest.mark.parametrize("value", ["0", "-3", "abc"])
def test_max_windows_must_be_positive_before_any_run(value):
    with pytest.raises(ConfigError) as err:
        check_common(_cfg("dataset=demo", f"dataset.max_windows={value}"))
    assert err.value.key == "dataset.max_windows"
