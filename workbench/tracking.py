"""MLflow tracking: one run per Hydra job, a parent run per multirun sweep.

* Store: ``sqlite:///mlruns/mlflow.db`` with artifacts under ``mlruns/``, unless
  ``MLFLOW_TRACKING_URI`` (or ``tracking.uri`` in the config) says otherwise.
* A run logs the flattened composed config as params, the job's metrics, the job's
  ``.hydra/*.yaml`` and any files it writes (parquet records, PNG/SVG figures).
* Failure -- an exception, Ctrl-C or SIGTERM -- ends the run FAILED with the error attached.
  Nothing is left RUNNING.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import traceback
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import mlflow
from hydra.experimental.callback import Callback
from mlflow.tracking import MlflowClient
from omegaconf import DictConfig, OmegaConf

DEFAULT_STORE = "mlruns"
SWEEP_FILE = "mlflow_parent_run.txt"


def tracking_uri(root: str | Path = ".", override: str | None = None) -> str:
    """The tracking store: explicit override > ``MLFLOW_TRACKING_URI`` > local sqlite."""
    if override:
        return override
    if os.environ.get("MLFLOW_TRACKING_URI"):
        return os.environ["MLFLOW_TRACKING_URI"]
    store = (Path(root) / DEFAULT_STORE).resolve()
    store.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{store / 'mlflow.db'}"


def artifact_root(uri: str, root: str | Path = ".") -> Path:
    """Artifacts live next to a sqlite store (``mlruns/mlflow.db`` -> ``mlruns/artifacts``)."""
    if uri.startswith("sqlite:///"):
        return Path(uri[len("sqlite:///"):]).resolve().parent / "artifacts"
    return (Path(root) / DEFAULT_STORE / "artifacts").resolve()


def ensure_experiment(name: str, root: str | Path = ".") -> str:
    """Experiment id for ``name``, creating it with artifacts beside the store."""
    exp = mlflow.get_experiment_by_name(name)
    if exp is not None:
        return exp.experiment_id
    artifacts = artifact_root(mlflow.get_tracking_uri(), root)
    artifacts.mkdir(parents=True, exist_ok=True)
    return mlflow.create_experiment(name, artifact_location=artifacts.as_uri())


def flatten(cfg: Mapping[str, Any] | DictConfig, prefix: str = "") -> dict[str, str]:
    """Flatten a nested config into ``a.b.c`` keys with string values (MLflow params)."""
    if isinstance(cfg, DictConfig):
        cfg = OmegaConf.to_container(cfg, resolve=True)
    out: dict[str, str] = {}
    for key, value in cfg.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, f"{name}."))
        else:
            out[name] = str(value)[:6000]
    return out


def clean_metrics(metrics: Mapping[str, Any]) -> dict[str, float]:
    """Finite numeric metrics only; MLflow rejects NaN in some stores and None everywhere."""
    out = {}
    for k, v in metrics.items():
        if isinstance(v, bool) or v is None:
            continue
        try:
            f = float(v)
        except (TypeError, ValueError):
            continue
        if math.isfinite(f):
            out[k] = f
    return out


class _Terminated(BaseException):
    """SIGTERM turned into an exception so the run can still be marked FAILED."""


@contextlib.contextmanager
def _sigterm_as_exception() -> Iterator[None]:
    def handler(signum: int, frame: Any) -> None:
        raise _Terminated(f"terminated by signal {signum}")

    try:
        old = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread (e.g. a launcher worker thread): nothing to install
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


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
    """A run that always ends FINISHED or FAILED, never RUNNING."""
    mlflow.set_tracking_uri(tracking_uri(root, uri))
    exp_id = ensure_experiment(experiment, root)
    all_tags = dict(tags or {})
    if parent_run_id:
        all_tags["mlflow.parentRunId"] = parent_run_id
        all_tags["sweep_parent"] = parent_run_id
    run = mlflow.start_run(experiment_id=exp_id, run_name=run_name, tags=all_tags)
    try:
        if cfg is not None:
            params = flatten(cfg)
            items = list(params.items())
            for i in range(0, len(items), 100):
                mlflow.log_params(dict(items[i : i + 100]))
        with _sigterm_as_exception():
            yield run
    except BaseException as err:  # KeyboardInterrupt and SIGTERM too: the run must not stay RUNNING
        with contextlib.suppress(Exception):
            mlflow.set_tag("error", f"{type(err).__name__}: {err}"[:5000])
            mlflow.log_text("".join(traceback.format_exception(err)), "error.txt")
        mlflow.end_run("FAILED")
        if parent_run_id:  # a sweep that lost a job has failed; Hydra may not reach on_multirun_end
            with contextlib.suppress(Exception):
                MlflowClient().set_terminated(parent_run_id, "FAILED")
        raise
    else:
        mlflow.end_run("FINISHED")


def log_param_if_tracking(name: str, value: str) -> bool:
    """Log a param on the active run, if any (library code that runs with or without tracking)."""
    if mlflow.active_run() is None:
        return False
    try:
        mlflow.log_param(name, value)
    except mlflow.exceptions.MlflowException:  # same name logged with another value: keep the first
        return False
    return True


def log_dir_artifacts(path: str | Path, artifact_path: str | None = None) -> None:
    path = Path(path)
    if path.is_dir() and any(path.iterdir()):
        mlflow.log_artifacts(str(path), artifact_path)


class SweepCallback(Callback):
    """Hydra callback: a parent MLflow run around each multirun sweep.

    The parent run id is written into the sweep directory so every job -- in this process or a
    joblib/Ray/SLURM worker -- can attach its run as a child.
    """

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        sweep_dir.mkdir(parents=True, exist_ok=True)
        mlflow.set_tracking_uri(tracking_uri(".", config.get("tracking", {}).get("uri")))
        exp_id = ensure_experiment(experiment_name(config))
        client = MlflowClient()
        run = client.create_run(exp_id, run_name=f"sweep:{sweep_dir.name}", tags={"sweep_dir": str(sweep_dir)})
        (sweep_dir / SWEEP_FILE).write_text(run.info.run_id)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        marker = Path(config.hydra.sweep.dir) / SWEEP_FILE
        if not marker.exists():
            return
        client = MlflowClient()
        parent = marker.read_text().strip()
        exp_id = client.get_run(parent).info.experiment_id
        children = client.search_runs([exp_id], f"tags.sweep_parent = '{parent}'")
        failed = any(c.info.status != "FINISHED" for c in children)
        client.set_terminated(parent, "FAILED" if failed or not children else "FINISHED")


def parent_run_id(cfg: DictConfig) -> str | None:
    """The sweep's parent run id when this job is part of a multirun."""
    try:
        from hydra.core.hydra_config import HydraConfig

        hc = HydraConfig.get()
    except (ValueError, ImportError):
        return None
    if str(hc.mode) != "RunMode.MULTIRUN":
        return None
    marker = Path(hc.sweep.dir) / SWEEP_FILE
    return marker.read_text().strip() if marker.exists() else None


def experiment_name(cfg: DictConfig) -> str:
    name = cfg.get("tracking", {}).get("experiment")
    return str(name) if name else f"as2d-{cfg.get('job', 'run')}"
