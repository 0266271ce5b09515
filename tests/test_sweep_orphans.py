"""``kill -9`` of a sweep's parent leaves nothing behind: within 30 s no launcher worker, resource
tracker or other descendant is alive, none of their semaphores is left in /dev/shm, and no job
run stays RUNNING."""

from __future__ import annotations

import contextlib
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parents[1]
QUERY = ("select r.status, count(distinct p.key) from runs r join tags t on t.run_uuid = r.run_uuid "
         "and t.key = 'as2d.role' and t.value = 'job' left join params p on p.run_uuid = r.run_uuid "
         "group by r.run_uuid")


def _job_runs(db: Path) -> list[tuple[str, int]]:
    if not db.exists():
        return []
    try:
        with sqlite3.connect(db) as con:
            return con.execute(QUERY).fetchall()
    except sqlite3.OperationalError:  # tables not created yet
        return []


def _cmd(k: psutil.Process) -> str:
    """A child's command line; empty once it has exited (a short-lived child can end, or be a zombie,
    between listing the children and reading its command line)."""
    with contextlib.suppress(psutil.Error):
        return " ".join(k.cmdline())
    return ""


def _alive(k: psutil.Process) -> bool:
    """Running and not a zombie (an exited child its parent has not reaped yet runs nothing)."""
    with contextlib.suppress(psutil.Error):
        return k.is_running() and k.status() != psutil.STATUS_ZOMBIE
    return False


def _sems(pids: list[int]) -> set[str]:
    names = set()
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
                if "/dev/shm/sem." in line:
                    names.add(line.split("/dev/shm/")[1].split()[0])
        except OSError:
            pass
    return names


def test_kill_9_of_a_sweeps_parent_leaves_no_worker_tracker_or_semaphore(tmp_path):
    db = tmp_path / "m.db"
    parent = subprocess.Popen([sys.executable, "-m", "workbench.run", "-m", "experiment=oracle",
                               "dataset.n_windows=600", "seed=0,1", f"tracking.uri=sqlite:///{db}",
                               f"hydra.sweep.dir={tmp_path}/sweep"], cwd=ROOT, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 600
    while time.time() < deadline:  # both jobs under way: RUNNING with their params logged
        rows = _job_runs(db)
        if len(rows) == 2 and all(s == "RUNNING" and n > 0 for s, n in rows):
            break
        if parent.poll() is not None:
            pytest.fail(f"the sweep ended before it could be killed: {parent.stderr.read()[-2000:]}")
        time.sleep(0.2)
    else:
        parent.kill()
        pytest.fail("the sweep never started both jobs")
    kids = psutil.Process(parent.pid).children(recursive=True)
    assert any("loky" in _cmd(k).lower() or "spawn_main" in _cmd(k) for k in kids)
    held = _sems([k.pid for k in kids])
    parent.kill()  # SIGKILL: Hydra's parent runs no cleanup
    parent.wait()
    deadline = time.time() + 30
    while time.time() < deadline and any(_alive(k) for k in kids):
        time.sleep(0.2)
    left = [k for k in kids if _alive(k)]
    assert not left, [_cmd(k)[:120] for k in left]
    present = {n for n in Path("/dev/shm").iterdir()} if Path("/dev/shm").is_dir() else set()
    assert not held & {p.name for p in present}, sorted(held & {p.name for p in present})
    assert [s for s, _ in _job_runs(db)] == ["FAILED", "FAILED"]  # ended by the sweep's death, not RUNNING
