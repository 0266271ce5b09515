"""The MLflow store: where runs live, experiments, and what a run logs (params, metrics, child runs).

* Store: ``sqlite:///mlruns/mlflow.db`` with artifacts under ``mlruns/artifacts``, unless
  ``MLFLOW_TRACKING_URI`` (or ``tracking.uri`` in the config) says otherwise. A fresh sqlite
  store is created under a file lock (``<db>.lock``), so jobs started together do not race in
  MLflow's schema migration. A remote tracking server keeps its own artifact root.
* A run logs the flattened composed config as params, the job's metrics and the files the
  entry point hands it (``workbench.run``).

The lowest module of ``workbench.tracking``: it imports no other module of the package.
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import mlflow
from mlflow.entities import Metric, Param
from mlflow.tracking import MlflowClient
from omegaconf import DictConfig, OmegaConf

from workbench.errors import ConfigError

DEFAULT_STORE = "mlruns"
# MLflow 3 opens an experiment without a kind in GenAI mode (a traces dashboard saying "No data");
# this kind opens it on the runs list.
DESCRIPTION_TAG = "mlflow.note.content"  # what the MLflow UI shows as a run's description
EXPERIMENT_TAGS = {"mlflow.experimentKind": "custom_model_development"}


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


def artifact_location(uri: str, root: str | Path = ".") -> str | None:
    """Where a new experiment's artifacts go: beside a local store; a remote server's own root.

    ``None`` lets a tracking server (``http(s)://``, ``databricks``...) use the artifact root it
    serves to every client; a local ``file:`` path would be valid on this machine only.
    """
    local = uri.startswith(("sqlite:", "file:", "/", ".")) or "://" not in uri
    if not local:
        return None
    artifacts = artifact_root(uri, root)
    artifacts.mkdir(parents=True, exist_ok=True)
    return artifacts.as_uri()


def ensure_experiment(name: str, root: str | Path = ".") -> str:
    """Experiment id for ``name``, creating it under the store lock.

    A local store keeps artifacts beside it; a remote tracking server (``http(s)://``,
    ``databricks``...) chooses its own artifact root, which every client can reach.
    """
    uri = mlflow.get_tracking_uri()
    exp = mlflow.get_experiment_by_name(name)
    if exp is None:
        with store_lock(uri):
            exp = mlflow.get_experiment_by_name(name)  # another job may have created it while we waited
            if exp is None:
                return mlflow.create_experiment(name, artifact_location=artifact_location(uri, root),
                                                tags=EXPERIMENT_TAGS)
    if any(exp.tags.get(k) != v for k, v in EXPERIMENT_TAGS.items()):  # an experiment made before the tag
        for k, v in EXPERIMENT_TAGS.items():
            MlflowClient().set_experiment_tag(exp.experiment_id, k, v)
    return exp.experiment_id


def log_children(parent_run_id: str, records: list[dict[str, Any]], sweep_parent: str | None = None) -> list[str]:
    """One FINISHED child run of ``parent_run_id`` per record (``name``, ``params``, ``metrics``; optional
    ``role``, default ``config``, and ``description``, the run's one-line description in the UI).

    Params are also set as tags so the runs list can group and filter by device/method/source.
    """
    client = MlflowClient()
    exp_id = client.get_run(parent_run_id).info.experiment_id
    ids = []
    for rec in records:
        tags = {"mlflow.parentRunId": parent_run_id, "as2d.role": rec.get("role", "config"), **rec["params"]}
        if rec.get("description"):
            tags[DESCRIPTION_TAG] = rec["description"]
        if sweep_parent:
            tags["sweep_parent"] = sweep_parent
        run = client.create_run(exp_id, run_name=rec["name"], tags=tags)
        client.log_batch(run.info.run_id, params=[Param(k, str(v)) for k, v in rec["params"].items()],
                         metrics=[Metric(k, v, 0, 0) for k, v in clean_metrics(rec["metrics"]).items()])
        client.set_terminated(run.info.run_id, "FINISHED")
        ids.append(run.info.run_id)
    return ids


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


_METRIC_NAME_BAD = re.compile(r"[^\w./\- ]")  # MLflow's metric-name alphabet: word chars . / - and space


def clean_metrics(metrics: Mapping[str, Any]) -> dict[str, float]:
    """Finite numeric metrics only; MLflow rejects NaN in some stores and None everywhere, and a name
    outside its alphabet (``target_only@1t`` from a method label) fails the whole batch: ``@`` etc. -> ``_``."""
    out = {}
    for k, v in metrics.items():
        k = _METRIC_NAME_BAD.sub("_", str(k))
        if isinstance(v, bool) or v is None:
            continue
        try:
            f = float(v)
        except (TypeError, ValueError):
            continue
        if math.isfinite(f):
            out[k] = f
    return out


_prepared: set[str] = set()


@contextlib.contextmanager
def store_lock(uri: str) -> Iterator[None]:
    """An exclusive file lock beside a sqlite store (no-op for other stores).

    MLflow creates and migrates a fresh sqlite schema on first use; two jobs doing that at once
    crash one of them, so schema creation (and experiment creation) happens under this lock.
    """
    if not uri.startswith("sqlite:///"):
        yield
        return
    db = Path(uri[len("sqlite:///"):])
    db.parent.mkdir(parents=True, exist_ok=True)
    with open(db.with_name(db.name + ".lock"), "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def relocate_store(uri: str) -> int:
    """Point a copied local store's artifact locations at the ``artifacts/`` folder beside it.

    MLflow records absolute artifact URIs; a ``mlruns/`` copied or moved elsewhere would keep pointing
    at the old place. Rows under another local ``.../artifacts`` root are rewritten to this store's
    ``artifacts/`` when that folder holds their runs' files. Returns the rows changed (remote stores: 0).
    """
    if not uri.startswith("sqlite:///"):
        return 0
    import sqlite3

    db = Path(uri[len("sqlite:///"):])
    here = db.resolve().parent / "artifacts"
    if not db.exists() or not here.is_dir():
        return 0
    new = here.as_uri()
    changed = 0
    with contextlib.closing(sqlite3.connect(db)) as con:
        rows = con.execute("select artifact_location from experiments where artifact_location like 'file:///%'")
        for (loc,) in rows.fetchall():
            if loc == new or not loc.endswith("/artifacts"):
                continue
            run = con.execute("select run_uuid from runs where artifact_uri like ? || '/%' limit 1", (loc,)).fetchone()
            if run is None or not (here / run[0]).is_dir():  # the artifacts beside this store are not that root's
                continue
            with con:
                changed += con.execute("update experiments set artifact_location = ? where artifact_location = ?",
                                       (new, loc)).rowcount
                changed += con.execute("update runs set artifact_uri = ? || substr(artifact_uri, ?) "
                                       "where artifact_uri like ? || '/%'", (new, len(loc) + 1, loc)).rowcount
    return changed


PROBE_TIMEOUT_S = 5  # one request, no retries: a store that does not answer fails the job before any work
_QUICK = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0", "MLFLOW_HTTP_REQUEST_TIMEOUT": str(PROBE_TIMEOUT_S)}


@contextlib.contextmanager
def _one_quick_request() -> Iterator[None]:
    """MLflow's HTTP client without its retries (minutes against a dead server) for the probe only."""
    old = {k: os.environ.get(k) for k in _QUICK}
    os.environ.update(_QUICK)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _unusable(uri: str, err: BaseException) -> ConfigError:
    """One line naming where the store came from and the fix."""
    key = "MLFLOW_TRACKING_URI" if os.environ.get("MLFLOW_TRACKING_URI") == uri else "tracking.uri"
    text = str(err).strip()
    errno = re.search(r"\[Errno -?\d+\][^'\")]*", text)  # a refused/unresolved connection, under MLflow's wrapping
    reason = errno.group(0).strip() if errno else (text.splitlines() or [""])[0][:200]
    how = ("start the MLflow server there" if "://" in uri and not uri.startswith(("sqlite:", "file:"))
           else "use a writable path")
    return ConfigError(f"{key}={uri}", f"the MLflow tracking store cannot be used ({type(err).__name__}: {reason})",
                       fix=f"{how}, point MLFLOW_TRACKING_URI at a reachable server or a writable "
                       f"sqlite:///<dir>/mlflow.db, or unset it for the default sqlite:///mlruns/mlflow.db")


def prepare_store(uri: str) -> None:
    """Make ``uri`` the tracking store, creating its schema under the store lock (once per process).

    The store is probed first with one request and no retries: an unreachable server or an
    unwritable sqlite path is one ``ConfigError`` line within seconds, before any work starts.
    """
    mlflow.set_tracking_uri(uri)
    if uri in _prepared:
        return
    try:
        if uri.startswith("sqlite:///"):  # the folder and the file must be writable (the lock lives beside it)
            db = Path(uri[len("sqlite:///"):])
            db.parent.mkdir(parents=True, exist_ok=True)
            with open(db, "ab"):
                pass
        with store_lock(uri), _one_quick_request():
            MlflowClient(uri).search_experiments(max_results=1)  # instantiating the store creates/migrates it
    except Exception as err:  # whatever the store raises, the fix is the URI: one line, not MLflow's traceback
        raise _unusable(uri, err) from err
    with store_lock(uri):
        relocate_store(uri)  # a copied mlruns/ keeps working
    _prepared.add(uri)


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


def experiment_name(cfg: DictConfig) -> str:
    name = cfg.get("tracking", {}).get("experiment")
    return str(name) if name else f"as2d-{cfg.get('job', 'run')}"


def ui_command(uri: str, experiment_id: str, run_id: str, port: int = 5000) -> str:
    """The command that opens the MLflow UI on one run (``workbench.ui``: experiments open on their runs)."""
    # workflowType: MLflow 3.17's "Model training" view for this link in any MLflow server (GenAI by default)
    return (f"python -m workbench.ui --backend-store-uri {uri} --port {port}   "
            f"# then open http://127.0.0.1:{port}/#/experiments/{experiment_id}/runs/{run_id}"
            "?workflowType=machine_learning")
