"""The native producer outlives no parent: SIGKILL the parent after "ready"; the producer
exits on its own and its semaphores leave /dev/shm."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

PARENT = Path(__file__).with_name("producer_parent.py")


def _sems() -> set[str]:
    return {n for n in os.listdir("/dev/shm") if n.startswith("sem.mp-")}


def _mapped_sems(pid: int) -> set[str]:
    """The /dev/shm semaphores process ``pid`` has mapped (its events and locks), by name."""
    names = set()
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        if "/dev/shm/sem.mp-" in line:
            names.add(line.split("/dev/shm/")[1].split()[0])
    return names


@pytest.mark.parametrize("mode", ["ready", "run"])
def test_producer_exits_within_5_s_when_its_parent_dies(mode):
    """SIGKILL of the parent after "ready", and while the producer is generating a window."""
    parent = subprocess.Popen([sys.executable, str(PARENT), mode], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    if not select.select([parent.stdout], [], [], 600)[0]:
        parent.kill()
        raise AssertionError("the producer never became ready")
    line = parent.stdout.readline().strip()
    assert line.isdigit(), parent.stderr.read()[-3000:]
    producer = int(line)
    ours = _mapped_sems(producer)  # the producer's start/stop events and buffer locks
    assert ours and ours <= _sems()
    assert psutil.pid_exists(producer)
    parent.kill()  # SIGKILL: no cleanup code runs in the parent
    parent.wait()
    deadline = time.time() + 5
    while psutil.pid_exists(producer) and time.time() < deadline:
        try:
            if psutil.Process(producer).status() == psutil.STATUS_ZOMBIE:
                break
        except psutil.NoSuchProcess:
            break
        time.sleep(0.1)
    alive = psutil.pid_exists(producer) and psutil.Process(producer).status() != psutil.STATUS_ZOMBIE
    assert not alive, "the producer is still waiting for a parent that is gone"
    deadline = time.time() + 30  # the resource tracker unlinks the semaphores once the producer is gone
    while ours & _sems() and time.time() < deadline:
        time.sleep(0.1)
    assert not ours & _sems(), sorted(ours & _sems())
