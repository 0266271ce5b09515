"""Bounded waits for child processes: every wait has a timeout and checks that the parent lives.

A producer that said "ready" and then lost its parent used to wait forever in ``start.wait()``,
holding its shared-memory semaphores. Waits here poll in short slices, so a set
event or an arrived message is seen at once, and between slices they check the parent: when it
is gone (the child was re-parented), ``ParentGone`` is raised and the child exits cleanly.
"""

from __future__ import annotations

import os
import time
from typing import Any

SLICE_S = 0.25  # how often a waiting child looks at its parent; an event set in between is seen at once


class ParentGone(Exception):
    """The process that started this one no longer exists: stop, nobody will read the answer."""


class WaitTimeout(TimeoutError):
    """A bounded wait ran out (the message names what was awaited)."""


class Liveness:
    """Remembers the parent at start-up; ``check`` raises ``ParentGone`` once it is gone."""

    def __init__(self, parent_pid: int | None = None) -> None:
        self.parent_pid = os.getppid() if parent_pid is None else parent_pid

    def alive(self) -> bool:
        if os.getppid() != self.parent_pid:  # re-parented to init or a subreaper: the parent died
            return False
        try:
            os.kill(self.parent_pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        return True

    def watch(self, period: float = SLICE_S) -> None:
        """Exit this process at once when the parent is gone, whatever it is doing (loading a model,
        producing a window): a daemon thread looks every ``period`` seconds. ``os._exit`` runs no
        cleanup, and needs none: the parent's resource tracker unlinks the shared semaphores."""
        import threading

        def loop() -> None:
            while self.alive():
                time.sleep(period)
            os._exit(0)

        threading.Thread(target=loop, name="as2d-parent-watch", daemon=True).start()

    def check(self, doing: str) -> None:
        if not self.alive():
            raise ParentGone(f"parent process {self.parent_pid} is gone while {doing}")

    def wait_event(self, event: Any, timeout: float, doing: str) -> None:
        """``event.wait()`` bounded by ``timeout`` and by the parent's life."""
        deadline = time.monotonic() + timeout
        while not event.wait(SLICE_S):
            self.check(doing)
            if time.monotonic() > deadline:
                raise WaitTimeout(f"no signal within {timeout:.0f} s while {doing}")

    def recv(self, conn: Any, timeout: float, doing: str) -> Any:
        """``conn.recv()`` bounded by ``timeout`` and by the parent's life."""
        deadline = time.monotonic() + timeout
        while not conn.poll(SLICE_S):
            self.check(doing)
            if time.monotonic() > deadline:
                raise WaitTimeout(f"no message within {timeout:.0f} s while {doing}")
        return conn.recv()
