"""Multirun sweeps in MLflow: a parent run around each Hydra sweep, its jobs' runs as children.

* ``SweepCallback`` (``hydra.callbacks`` in ``conf/config.yaml``) opens the parent run when the sweep
  starts, logs the sweep's overrides as its params, and writes the parent's id into the sweep
  directory (``mlflow_parent_run.txt``) so every job -- in this process or a joblib/Ray/SLURM worker
  -- attaches its run as a child (``parent_run_id``). At the end it logs the sweep summary and marks
  the parent FINISHED, or FAILED when a child did not finish.
* In the sweep's parent process, SIGINT/SIGTERM stop the launcher's local worker processes, then mark
  every still-RUNNING child run and the parent run FAILED (``end_sweep``).

The single-run side (``tracked_run``, signals inside a job) is ``tracking.lifecycle``; the store, ``tracking.store``.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import logging
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mlflow
from hydra.experimental.callback import Callback
from mlflow.entities import Param
from mlflow.tracking import MlflowClient
from omegaconf import DictConfig

from workbench.errors import WorkbenchError
from workbench.io import atomic_write_text
from workbench.tracking.lifecycle import Terminated, reap_on_start
from workbench.tracking.runs import owner_tags
from workbench.tracking.store import ensure_experiment, experiment_name, prepare_store, tracking_uri, ui_command
from workbench.tracking.sweep_summary import log_sweep_summary

log = logging.getLogger(__name__)
SWEEP_FILE = "mlflow_parent_run.txt"


CHILD_GRACE_S = 20.0  # how long sweep workers get to mark their own runs after SIGTERM
_TRACKERS = ("resource_tracker", "semaphore_tracker")  # they unlink /dev/shm objects once we exit


def _stop_children(grace_s: float = CHILD_GRACE_S) -> list[int]:
    """SIGTERM this process's descendants (the launcher's workers), SIGKILL any that outlive ``grace_s``.

    The multiprocessing/loky resource trackers are left to exit on their own when this process
    ends: they are the ones that remove the workers' semaphores from ``/dev/shm``.
    """
    import psutil

    procs = []
    for p in psutil.Process().children(recursive=True):
        try:
            if not any(t in " ".join(p.cmdline()) for t in _TRACKERS):
                procs.append(p)
        except psutil.Error:
            pass
    for p in procs:
        with contextlib.suppress(psutil.Error):
            p.terminate()
    _, alive = psutil.wait_procs(procs, timeout=grace_s)
    for p in alive:
        with contextlib.suppress(psutil.Error):
            p.kill()
    psutil.wait_procs(alive, timeout=5)
    return [p.pid for p in procs]


def end_sweep(parent: str, status: str, reason: str) -> None:
    """Mark every still-RUNNING child of sweep ``parent`` and the parent itself ``status``."""
    client = MlflowClient()
    exp_id = client.get_run(parent).info.experiment_id
    for child in client.search_runs([exp_id], f"tags.sweep_parent = '{parent}' and attributes.status = 'RUNNING'"):
        with contextlib.suppress(Exception):
            client.set_tag(child.info.run_id, "error", reason)
        client.set_terminated(child.info.run_id, status)
    if client.get_run(parent).info.status == "RUNNING":
        with contextlib.suppress(Exception):
            client.set_tag(parent, "error", reason)
        client.set_terminated(parent, status)


def _end_unended(parent: str) -> None:
    """At exit of a sweep whose end never came (a job raised): its open runs and the parent FAILED."""
    with contextlib.suppress(Exception):  # at exit: the store may be gone; nothing else can be done
        end_sweep(parent, "FAILED", "the sweep stopped at a job's error before its end (see the job's run or log)")


class _SweepSignals:
    """SIGINT/SIGTERM in the sweep's parent process: stop the workers, then end every open run."""

    def __init__(self, parent: str) -> None:
        self.parent = parent
        self.ending = False
        self._old: dict[int, Any] = {}

    def install(self) -> None:
        try:
            for sig in (signal.SIGTERM, signal.SIGINT):
                self._old[sig] = signal.signal(sig, self._handler)
        except ValueError:  # not the main thread: the launcher owns signals
            self._old.clear()

    def uninstall(self) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)
        self._old.clear()

    def _handler(self, signum: int, frame: Any) -> None:
        if self.ending:  # a second signal during cleanup: cleanup goes on, the runs still get marked
            return
        self.ending = True
        name = signal.Signals(signum).name
        stopped = _stop_children()
        log.warning("sweep interrupted by %s: stopped %d worker process(es)", name, len(stopped))
        end_sweep(self.parent, "FAILED", f"sweep interrupted by {name} in its parent process (pid {os.getpid()})")
        self.uninstall()
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise Terminated(f"sweep terminated by {name}")


class SweepCallback(Callback):
    """Hydra callback: a parent MLflow run around each multirun sweep.

    The parent run id is written into the sweep directory so every job -- in this process or a
    joblib/Ray/SLURM worker -- can attach its run as a child. While the sweep runs, SIGINT and
    SIGTERM in the parent stop the local worker processes and mark every open run FAILED.
    """

    def __init__(self) -> None:
        self._signals: _SweepSignals | None = None
        self._unended: Callable[[], None] | None = None

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        sweep_dir.mkdir(parents=True, exist_ok=True)
        uri = tracking_uri(".", config.get("tracking", {}).get("uri"))
        try:
            prepare_store(uri)
        except WorkbenchError as err:  # an unusable store stops the sweep before any job: one line, rc 2
            print(err.headline(), file=sys.stderr)
            sys.exit(2)
        reap_on_start(uri)
        exp_id = ensure_experiment(experiment_name(config))
        client = MlflowClient()
        run = client.create_run(exp_id, run_name=f"sweep:{sweep_dir.name}",
                                tags={"sweep_dir": str(sweep_dir), "as2d.role": "sweep", **owner_tags()})
        overrides = [str(o) for o in config.hydra.overrides.task]
        params = [Param(k.lstrip("+~"), v[:6000]) for k, _, v in (o.partition("=") for o in overrides)]
        if params:  # what this sweep varies and fixes, e.g. model.budget=1,3 device=k70_pro
            client.log_batch(run.info.run_id, params=params)
        atomic_write_text(sweep_dir / SWEEP_FILE, run.info.run_id)
        self._signals = _SweepSignals(run.info.run_id)
        self._signals.install()
        # A job that raises (a config refused by validation, say) ends Hydra's sweep without calling
        # on_multirun_end: the parent must still not be left RUNNING.
        self._unended = functools.partial(_end_unended, run.info.run_id)
        atexit.register(self._unended)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        if self._signals is not None:
            self._signals.uninstall()
        if self._unended is not None:
            atexit.unregister(self._unended)
            self._unended = None
        marker = Path(config.hydra.sweep.dir) / SWEEP_FILE
        if not marker.exists():
            return
        client = MlflowClient()
        parent = marker.read_text().strip()
        exp_id = client.get_run(parent).info.experiment_id
        children = client.search_runs([exp_id], f"tags.sweep_parent = '{parent}'")
        failed = any(c.info.status != "FINISHED" for c in children)
        try:  # the summary is a convenience; the statuses must be set
            log_sweep_summary(client, parent, children)
        except Exception as err:
            log.warning("sweep summary skipped: %s: %s", type(err).__name__, err)
        client.set_terminated(parent, "FAILED" if failed or not children else "FINISHED")
        print(f"sweep parent run {parent} ({'FAILED' if failed or not children else 'FINISHED'}); open it: "
              f"{ui_command(mlflow.get_tracking_uri(), exp_id, parent)}")


def sweep_dir() -> Path | None:
    """The directory of this job's sweep (``hydra.sweep.dir``) when it is part of a multirun, else ``None``."""
    try:
        from hydra.core.hydra_config import HydraConfig

        hc = HydraConfig.get()
    except (ValueError, ImportError):
        return None
    return Path(hc.sweep.dir) if str(hc.mode) == "RunMode.MULTIRUN" else None


def parent_run_id(cfg: DictConfig) -> str | None:
    """The sweep's parent run id when this job is part of a multirun."""
    root = sweep_dir()
    marker = None if root is None else root / SWEEP_FILE
    return marker.read_text().strip() if marker is not None and marker.exists() else None
