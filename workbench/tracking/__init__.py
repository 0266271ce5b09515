"""MLflow tracking: one run per Hydra job, a parent run per multirun sweep, runs that always end.

Modules, lowest first; each imports only the ones above it in this list:

* ``store`` -- the store (``sqlite:///mlruns/mlflow.db`` unless ``MLFLOW_TRACKING_URI`` or
  ``tracking.uri`` says otherwise), experiments, what a run logs (params, metrics, child runs);
* ``runs`` -- owner tags and the reaper (``python -m workbench.tracking reap``, ``tracking.cli``);
* ``run_records`` -- what one job writes so runs compare: the summary and one child run per configuration;
* ``sweep_summary`` -- the sweep parent's answer: one row per child configuration, speedup, oracle gap;
* ``lifecycle`` -- ``tracked_run``: FINISHED or FAILED whatever the job raises, Ctrl-C and SIGTERM included;
* ``sweep`` -- ``SweepCallback`` (named by ``conf/config.yaml``'s ``hydra.callbacks``): the sweep's parent run;
* ``partial`` -- the rows a job measured so far, kept on its FAILED run when it raises part way.

This package's namespace re-exports the public names, so ``workbench.tracking.tracked_run`` and
``workbench.tracking.SweepCallback`` (saved in every earlier run's ``.hydra/hydra.yaml``) keep working.
"""

from workbench.tracking.lifecycle import Terminated, reap_on_start, tracked_run
from workbench.tracking.store import (
    DEFAULT_STORE,
    DESCRIPTION_TAG,
    EXPERIMENT_TAGS,
    artifact_location,
    artifact_root,
    clean_metrics,
    ensure_experiment,
    experiment_name,
    flatten,
    log_children,
    log_dir_artifacts,
    log_param_if_tracking,
    prepare_store,
    relocate_store,
    store_lock,
    tracking_uri,
)
from workbench.tracking.sweep import SWEEP_FILE, SweepCallback, end_sweep, parent_run_id

__all__ = [
    "DEFAULT_STORE", "DESCRIPTION_TAG", "EXPERIMENT_TAGS", "SWEEP_FILE", "SweepCallback", "Terminated",
    "artifact_location", "artifact_root", "clean_metrics", "end_sweep", "ensure_experiment", "experiment_name",
    "flatten",
    "log_children", "log_dir_artifacts", "log_param_if_tracking", "parent_run_id", "prepare_store",
    "reap_on_start", "relocate_store", "store_lock", "tracked_run", "tracking_uri",
]
