"""Interrupted sweeps: real signals to a real ``-m`` sweep, checked in the real store.

SIGTERM to the sweep's parent used to leave the parent run RUNNING and orphan the joblib/loky
workers; Ctrl-C (SIGINT to the terminal's process group) left the parent and a child RUNNING.
Both sweeps run at once so the test waits for the slow start-up only once.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _sweep(tmp: Path, name: str) -> tuple[subprocess.Popen, Path]:
    db = tmp / f"{name}.db"
    proc = subprocess.Popen([sys.executable, "-m", "workbench.run", "-m", "job=oracle", "dataset.n_windows=600",
                             "model.budget=1,3", f"tracking.uri=sqlite:///{db}", f"hydra.sweep.dir={tmp}/{name}",
                             # n_jobs=-1 (the default) follows the CPU quota, which can be one core on a CI
                             # runner: then the two jobs run one after the other and never both RUNNING.
                             "hydra.launcher.n_jobs=2"],
                            cwd=ROOT, stdout=(tmp / f"{name}.out").open("w"), stderr=subprocess.PIPE, text=True,
                            start_new_session=True)  # its own process group, like a job in a terminal
    return proc, db


def _running(db: Path) -> int:
    try:
        with sqlite3.connect(db) as con:
            return con.execute("select count(*) from runs where status = 'RUNNING'").fetchone()[0]
    except sqlite3.Error:
        return 0


def _statuses(db: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(db) as con:
        return con.execute("select name, status from runs").fetchall()


def _tree(pid: int) -> set[int]:
    try:
        return {pid} | {p.pid for p in psutil.Process(pid).children(recursive=True)}
    except psutil.NoSuchProcess:
        return set()


def _shm_of(pids: set[int]) -> list[str]:
    return [n for n in os.listdir("/dev/shm") if any(str(p) in n for p in pids)]


def test_interrupted_sweeps_end_every_run_and_leave_no_processes(tmp_path):
    sweeps = {"term": _sweep(tmp_path, "term"), "ctrl_c": _sweep(tmp_path, "ctrl_c")}
    trees: dict[str, set[int]] = {}
    deadline = time.time() + 400
    # Each sweep is interrupted as soon as its own parent and both children are RUNNING: waiting for
    # both sweeps at once let a quick sweep finish first on a quiet machine (CI, 2 cores).
    while len(trees) < len(sweeps) and time.time() < deadline:
        for name, (p, db) in sweeps.items():
            if name in trees:
                continue
            if p.poll() is not None:
                for q, _ in sweeps.values():
                    if q.poll() is None:
                        os.killpg(q.pid, signal.SIGKILL)
                pytest.fail(f"sweep {name} ended (rc {p.returncode}) before its runs were all RUNNING: "
                            + p.stderr.read()[-1500:] + (tmp_path / f"{name}.out").read_text()[-1500:])
            if _running(db) >= 3:
                trees[name] = _tree(p.pid)
                assert len(trees[name]) >= 3, (name, trees[name])  # the parent and its workers
                if name == "term":
                    p.send_signal(signal.SIGTERM)  # the parent only, as `kill PID` or a scheduler does
                else:
                    os.killpg(p.pid, signal.SIGINT)  # the whole foreground group, as Ctrl-C does
        time.sleep(0.2)
    if len(trees) < len(sweeps):
        for p, _ in sweeps.values():
            os.killpg(p.pid, signal.SIGKILL)
        pytest.fail("the sweeps never had their runs RUNNING")
    for p, _ in sweeps.values():
        try:
            p.wait(timeout=240)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            pytest.fail("an interrupted sweep did not exit")
    for name, (p, db) in sweeps.items():
        assert p.returncode != 0, name
        statuses = _statuses(db)
        assert len(statuses) == 3 and all(s == "FAILED" for _, s in statuses), (name, statuses)
        gone_by = time.time() + 30
        while any(psutil.pid_exists(pid) for pid in trees[name]) and time.time() < gone_by:
            time.sleep(0.2)
        alive = [pid for pid in trees[name] if psutil.pid_exists(pid)]
        assert not alive, (name, "orphaned worker processes", alive)
        assert not _shm_of(trees[name]), (name, _shm_of(trees[name]))
