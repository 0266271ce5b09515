"""One MLflow run per Hydra job that always ends: FINISHED, or FAILED with the error attached.

* An exception, Ctrl-C or SIGTERM inside ``tracked_run`` ends the run FAILED with the error
  attached; a second signal during that cleanup is deferred until the run is marked.
* Each run is tagged with its owner (``as2d.pid``, ``as2d.host``, ``as2d.pid_started``).
* What no handler can catch -- SIGKILL, the OOM killer -- leaves a run RUNNING until the next
  job (or sweep) starts, or ``python -m workbench.tracking reap`` runs: both mark runs whose
  owning process on this host is gone FAILED, tagged ``as2d.reaped`` (``tracking.runs``).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import traceback
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import mlflow
from mlflow.tracking import MlflowClient
from omegaconf import DictConfig

from workbench.tracking.runs import owner_tags, reap
from workbench.tracking.store import ensure_experiment, flatten, prepare_store, tracking_uri

log = logging.getLogger(__name__)


class Terminated(BaseException):
    """SIGTERM turned into an exception so the run can still be marked FAILED."""


class _Signals:
    """SIGTERM -> ``Terminated``, SIGINT -> ``KeyboardInterrupt`` until cleanup starts; then deferred.

    Once ``ending`` is set (the run is being marked), a further signal is recorded, not raised:
    a second Ctrl-C or SIGTERM during cleanup must not leave the run RUNNING.
    """

    def __init__(self) -> None:
        self.ending = False
        self.deferred: list[int] = []
        self._old: dict[int, Any] = {}

    def _handler(self, signum: int, frame: Any) -> None:
        if self.ending:
            self.deferred.append(signum)
            return
        self.ending = True  # the exception below starts cleanup; a second signal must not interrupt it
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise Terminated(f"terminated by signal {signum}")

    def __enter__(self) -> _Signals:
        try:
            for sig in (signal.SIGTERM, signal.SIGINT):
                self._old[sig] = signal.signal(sig, self._handler)
        except ValueError:  # not the main thread (e.g. a launcher worker thread): nothing to install
            self._old.clear()
        return self

    def __exit__(self, *exc: Any) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)


def reap_on_start(uri: str) -> None:
    """Mark runs whose process is gone FAILED (``tracking.runs``); never blocks a job from starting."""
    try:
        reaped = [s for s in reap(uri) if s.verdict == "reaped"]
    except Exception as err:  # a reaper problem must not stop real work
        log.warning("reaper skipped: %s: %s", type(err).__name__, err)
        return
    for s in reaped:
        log.warning("run %s (%s, %s) was left RUNNING by a process that is gone; marked it FAILED",
                    s.run_id, s.name, s.owner)


def _end_run(run_id: str, status: str, err: BaseException | None, parent_run_id: str | None) -> None:
    """Mark the run (and on failure the sweep parent) -- the status first, details after."""
    client = MlflowClient()
    if err is not None:
        with contextlib.suppress(Exception):
            client.set_tag(run_id, "error", f"{type(err).__name__}: {err}"[:5000])
    try:
        mlflow.end_run(status)
    except Exception:  # the fluent run's state was broken mid-call (a signal inside MLflow): mark it directly
        client.set_terminated(run_id, status)
        with contextlib.suppress(Exception):
            mlflow.end_run(status)
    if err is not None:
        with contextlib.suppress(Exception):
            client.log_text(run_id, "".join(traceback.format_exception(err)), "error.txt")
        if parent_run_id:  # a sweep that lost a job has failed; Hydra may not reach on_multirun_end
            with contextlib.suppress(Exception):
                client.set_terminated(parent_run_id, "FAILED")


@contextlib.contextmanager
def tracked_run(
    experiment: str,
    run_name: str,
    cfg: DictConfig | Mapping[str, Any] | None = None,
    tags: Mapping[str, str] | None = None,
    parent_run_id: str | None = None,
    root: str | Path = ".",
    uri: str | None = None,
) -> Iterator[mlflow.ActiveRun]:
    """A run that ends FINISHED or FAILED, whatever the job raises (Ctrl-C and SIGTERM included)."""
    store = tracking_uri(root, uri)
    prepare_store(store)
    reap_on_start(store)
    exp_id = ensure_experiment(experiment, root)
    all_tags = {**dict(tags or {}), **owner_tags()}
    if parent_run_id:
        all_tags["mlflow.parentRunId"] = parent_run_id
        all_tags["sweep_parent"] = parent_run_id
    with _Signals() as signals:
        run = mlflow.start_run(experiment_id=exp_id, run_name=run_name, tags=all_tags)
        failure: BaseException | None = None
        try:
            try:
                if cfg is not None:
                    items = list(flatten(cfg).items())
                    for i in range(0, len(items), 100):
                        mlflow.log_params(dict(items[i : i + 100]))
                yield run
            finally:
                signals.ending = True  # from here on a signal is deferred, never raised
        except BaseException as err:  # KeyboardInterrupt and SIGTERM too: the run must not stay RUNNING
            failure = err
        _end_run(run.info.run_id, "FAILED" if failure else "FINISHED", failure, parent_run_id)
    if failure is not None:
        raise failure
    if signals.deferred:  # a signal arrived while the run was being marked: honour it now
        if signals.deferred[0] == signal.SIGINT:
            raise KeyboardInterrupt
        raise Terminated(f"terminated by signal {signals.deferred[0]}")
