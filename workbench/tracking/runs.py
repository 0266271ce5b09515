"""Runs whose process is gone: find them and mark them FAILED (``python -m workbench.tracking reap``).

A SIGKILL, the OOM killer or a power cut gives a job no chance to end its MLflow run, so the run
would stay RUNNING forever. Every run the workbench starts therefore carries its owner's identity
as tags -- ``as2d.pid``, ``as2d.host`` and ``as2d.pid_started`` (the process start time, so a
reused PID is not mistaken for the owner). ``reap`` marks a RUNNING run FAILED, with the tag
``as2d.reaped`` saying why, when its owner on this host no longer exists. Runs owned by another
host, or without owner tags (started by other tools), are left alone and reported.

The workbench reaps on every job start (``tracking.lifecycle.tracked_run``) and on every sweep start.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass

PID_TAG, HOST_TAG, STARTED_TAG, REAPED_TAG = "as2d.pid", "as2d.host", "as2d.pid_started", "as2d.reaped"
_START_SLACK_S = 1.0  # create_time is rounded differently by platforms; a reused PID starts much later


def host() -> str:
    return socket.gethostname()


def process_started(pid: int) -> float | None:
    """Start time of process ``pid`` (seconds since the epoch), or ``None`` if it does not exist."""
    import psutil

    try:
        p = psutil.Process(pid)
        if p.status() == psutil.STATUS_ZOMBIE:  # exited, not yet waited for: its run will never end
            return None
        return p.create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied, ProcessLookupError):
        return None


def owner_tags(pid: int | None = None) -> dict[str, str]:
    """The tags that name this process as a run's owner."""
    pid = os.getpid() if pid is None else pid
    started = process_started(pid)
    return {PID_TAG: str(pid), HOST_TAG: host(), STARTED_TAG: f"{started:.3f}" if started else ""}


def owner_alive(tags: dict[str, str]) -> bool | None:
    """True/False if the owner can be checked from here; ``None`` for unknown or remote owners."""
    if PID_TAG not in tags or tags.get(HOST_TAG) != host():
        return None
    try:
        pid = int(tags[PID_TAG])
    except ValueError:
        return None
    started = process_started(pid)
    if started is None:
        return False
    recorded = tags.get(STARTED_TAG)
    if recorded:
        return abs(started - float(recorded)) < _START_SLACK_S
    return True


@dataclass(frozen=True)
class RunState:
    run_id: str
    name: str
    experiment_id: str
    owner: str
    verdict: str  # reaped | alive | remote | unowned


def _running(client) -> list:
    exps = [e.experiment_id for e in client.search_experiments()]
    out, token = [], None
    while exps:
        page = client.search_runs(exps, "attributes.status = 'RUNNING'", max_results=1000, page_token=token)
        out.extend(page)
        token = page.token
        if not token:
            break
    return out


def _fail(client, run_id: str, reason: str) -> None:
    """End a RUNNING run FAILED, the reason first (``as2d.reaped``) so the UI says why."""
    client.set_tag(run_id, REAPED_TAG, reason)
    client.set_terminated(run_id, "FAILED")


def reap(uri: str | None = None, dry_run: bool = False) -> list[RunState]:
    """Mark RUNNING runs whose owning process is gone FAILED; return what was seen."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri) if uri else MlflowClient()
    states = []
    for run in _running(client):
        tags = run.data.tags
        alive = owner_alive(tags)
        owner = f"pid {tags.get(PID_TAG, '?')} on {tags.get(HOST_TAG, '?')}"
        verdict = {True: "alive", False: "reaped", None: "remote" if PID_TAG in tags else "unowned"}[alive]
        if verdict == "reaped" and not dry_run:
            _fail(client, run.info.run_id, f"owning process {owner} is gone (SIGKILL, out of memory or a crash); "
                  "marked FAILED by the reaper")
        states.append(RunState(run.info.run_id, run.info.run_name or "", run.info.experiment_id, owner, verdict))
    return states


def fail_own_runs(reason: str, uri: str | None = None) -> list[str]:
    """Mark this process's RUNNING runs FAILED, tagged ``as2d.reaped`` with ``reason``; return their ids.

    The last word of a process that is about to exit without unwinding (a sweep worker whose parent
    died, after its grace period): whatever its main thread is stuck in, its runs do not stay RUNNING.
    """
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri) if uri else MlflowClient()
    this_process = owner_tags()
    failed = []
    for run in _running(client):
        tags = run.data.tags
        if tags.get(PID_TAG) == this_process[PID_TAG] and tags.get(HOST_TAG) == this_process[HOST_TAG]:
            _fail(client, run.info.run_id, reason)
            failed.append(run.info.run_id)
    return failed
