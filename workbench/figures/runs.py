"""Read MLflow runs back for analysis: find runs by experiment and tags, load their parquet tables.

Notebooks go through this module only, so they never hard-code artifact paths or store layouts.
Missing data raises :class:`NoRuns` or :class:`MissingTable`, whose messages are one line that
says what to run; :func:`workbench.figures.report.guarded` turns them into a printed line.
"""

from __future__ import annotations

import os
import tempfile
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

# Inside Jupyter without ipywidgets, tqdm.auto (imported by dependencies) warns on every kernel; the
# warning says nothing about the analysis.
warnings.filterwarnings("ignore", message="IProgress not found")

import mlflow  # noqa: E402
import polars as pl  # noqa: E402
from mlflow.entities import Run  # noqa: E402
from mlflow.tracking import MlflowClient  # noqa: E402

# Progress bars per downloaded parquet would bury a notebook's output.
os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")

# Env var that points every notebook at one experiment (tests use it for an empty store).
EXPERIMENT_ENV = "AS2D_NOTEBOOK_EXPERIMENT"

# What to run when an experiment is empty; keyed by experiment name.
HINTS = {
    "as2d-replay": "python -m workbench.run experiment=replay",
    "as2d-ablation": "python -m workbench.run experiment=ablation",
    "as2d-oracle": "python -m workbench.run experiment=oracle",
    "as2d-budget_select": "python -m workbench.run experiment=budget_select",
    "as2d-demo": "python -m workbench.run job=demo",
}
# Jobs whose tables the demo does not log: their hint names the job's command only.
OWN_HINTS = {
    "as2d-ondemand": "python -m workbench.run experiment=ondemand",
    "as2d-native_grid": "python -m workbench.run experiment=native_grid",
    "as2d-streaming": "python -m workbench.run experiment=streaming duration_s=600",
    "as2d-context_probe": "python -m workbench.run experiment=context_probe dataset=ami dataset.root=/data/ami",
    "as2d-ctc_probe": "python -m workbench.run experiment=ctc_probe",
    "as2d-sensitivity": "python -m workbench.run experiment=sensitivity",
    "as2d-adaptive": "python -m workbench.run experiment=adaptive",
}


class NoRuns(LookupError):
    """No finished run matches; the message is one line naming the store and the command to run."""


class MissingTable(LookupError):
    """The runs exist but none logged the requested table."""


def store_uri(uri: str | None = None) -> str:
    """Explicit > ``MLFLOW_TRACKING_URI`` > ``sqlite:///mlruns/mlflow.db`` under the repo root."""
    if uri:
        return uri
    if os.environ.get("MLFLOW_TRACKING_URI"):
        return os.environ["MLFLOW_TRACKING_URI"]
    root = Path(__file__).resolve().parents[2]
    return f"sqlite:///{root / 'mlruns' / 'mlflow.db'}"


# Where every notebook looks when its own job's experiment has no runs: `make demo` feeds them all.
DEMO_EXPERIMENT = "as2d-demo"


def _has_runs(name: str, uri: str | None = None) -> bool:
    client, _ = _client(uri)
    exp = client.get_experiment_by_name(name) if client is not None else None
    if exp is None:
        return False
    return bool(client.search_runs([exp.experiment_id], "attributes.status = 'FINISHED'", max_results=1))


def experiment(default: str, uri: str | None = None) -> str:
    """The experiment a notebook reads.

    ``$AS2D_NOTEBOOK_EXPERIMENT`` if set; else ``default`` (the job's own, e.g. ``as2d-replay``) when it
    has finished runs; else the demo's experiment when it has, so after ``make demo`` every notebook
    shows the demo's data with no setup; else ``default`` (whose "no runs" line names both commands).
    """
    if os.environ.get(EXPERIMENT_ENV):
        return os.environ[EXPERIMENT_ENV]
    if not _has_runs(default, uri) and _has_runs(DEMO_EXPERIMENT, uri):
        return DEMO_EXPERIMENT
    return default


def _client(uri: str | None) -> tuple[MlflowClient, str]:
    u = store_uri(uri)
    if u.startswith("sqlite:///") and not Path(u[len("sqlite:///"):]).exists():
        # Opening a missing sqlite file would create an empty store; say "no runs" instead.
        return None, u  # type: ignore[return-value]
    from workbench.tracking import relocate_store

    relocate_store(u)  # a copied mlruns/ still finds its artifacts
    return MlflowClient(tracking_uri=u), u


def _hint(name: str) -> str:
    if name in OWN_HINTS:
        return f"run `{OWN_HINTS[name]}` first (the demo does not log this job's tables)"
    cmd = HINTS.get(name) or HINTS.get(name.split(":")[0]) or "python -m workbench.run experiment=<name>"
    if name == DEMO_EXPERIMENT:
        return f"run `make demo` (or `{cmd}`) first"
    return f"run `make demo` (feeds every notebook) or `{cmd}` first"


def find_runs(experiment_name: str, tags: Mapping[str, str] | None = None, uri: str | None = None,
              status: str = "FINISHED") -> list[Run]:
    """Finished runs of ``experiment_name`` (newest first) whose tags match ``tags``; never empty.

    Only job runs (``as2d.role`` = ``job``, or no role: runs logged before roles) carry tables: sweep
    parents, configuration runs and selection runs are skipped.
    """
    client, u = _client(uri)
    exp = None
    if client is not None:
        import logging

        logging.getLogger("alembic").setLevel(logging.WARNING)  # store migrations log noise on open
        exp = client.get_experiment_by_name(experiment_name)
    where = f" with tags {dict(tags)}" if tags else ""
    if exp is None:
        raise NoRuns(f"no runs in experiment '{experiment_name}' at {u}: {_hint(experiment_name)}")
    filters = [f"attributes.status = '{status}'"] if status else []
    for k, v in (tags or {}).items():
        filters.append(f"tags.`{k}` = '{v}'")
    runs = client.search_runs([exp.experiment_id], " and ".join(filters), order_by=["attributes.start_time DESC"],
                              max_results=500)
    # Sweep parents, per-configuration and selection child runs carry no tables; the job runs do.
    runs = [r for r in runs if "sweep_dir" not in r.data.tags and r.data.tags.get("as2d.role", "job") == "job"]
    if not runs:
        raise NoRuns(f"no {status.lower() if status else ''} runs in experiment '{experiment_name}'{where} at {u}: "
                     f"{_hint(experiment_name)}")
    return runs


def table_names(run: Run, uri: str | None = None) -> list[str]:
    """Names of the parquet tables a run logged under ``tables/``."""
    client = MlflowClient(tracking_uri=store_uri(uri))
    return sorted(Path(f.path).stem for f in client.list_artifacts(run.info.run_id, "tables")
                  if f.path.endswith(".parquet"))


def load_table(run: Run, name: str, uri: str | None = None) -> pl.DataFrame:
    """Download ``tables/<name>.parquet`` of ``run`` into a temp dir and read it."""
    client = MlflowClient(tracking_uri=store_uri(uri))
    if name not in table_names(run, uri):
        raise MissingTable(f"run {run.info.run_id[:8]} ({run.data.tags.get('job', '?')}) has no table '{name}'")
    with tempfile.TemporaryDirectory() as tmp:
        path = client.download_artifacts(run.info.run_id, f"tables/{name}.parquet", tmp)
        return pl.read_parquet(path)


def _runs_of(source: Any, tags: Mapping[str, str] | None, uri: str | None) -> tuple[list[Run], str]:
    """The runs to draw from: a :class:`~workbench.figures.selection.Selection`'s, or an experiment's newest."""
    if isinstance(source, str):
        return find_runs(source, tags, uri), source
    return list(source.runs), source.what


def latest_table(source: Any, name: str, tags: Mapping[str, str] | None = None,
                 uri: str | None = None) -> tuple[pl.DataFrame, Run]:
    """The table ``name`` from the newest run (of a selection, or an experiment) that has it, and that run."""
    runs, what = _runs_of(source, tags, uri)
    for run in runs:
        if name in table_names(run, uri):
            return load_table(run, name, uri), run
    raise MissingTable(f"no run of {what!r} logged table '{name}' ({len(runs)} run(s) checked at {store_uri(uri)})")


def tables_by_device(source: Any, name: str, tags: Mapping[str, str] | None = None,
                     uri: str | None = None, prefix: bool = False) -> tuple[pl.DataFrame, list[Run]]:
    """One table per device x method, each from the newest run that covers it, stacked.

    ``source`` is a selection (``workbench.figures.selection``) or an experiment name. Separate runs
    often cover different devices or methods (a sweep over ``device=``, a job of one method); a pair
    seen in several runs is taken from the newest only, so old and new numbers are never mixed and
    no pair is drawn twice. Tables without a ``method`` column are drawn once per device.
    With ``prefix``, tables named ``<name>_<device>`` (the oracle job's layout) are collected.
    """
    runs, what = _runs_of(source, tags, uri)
    frames, used, seen = [], [], set()
    for run in runs:
        names = [n for n in table_names(run, uri) if (n.startswith(f"{name}_") if prefix else n == name)]
        took = False
        for n in names:
            df = load_table(run, n, uri)
            if "device" not in df.columns:
                df = df.with_columns(pl.lit(n.removeprefix(f"{name}_") if prefix else "?").alias("device"))
            keys = ["device", "method"] if "method" in df.columns else ["device"]
            pairs = df.select(keys).unique().rows()
            new = [p for p in pairs if p not in seen]
            if new:
                fresh = pl.DataFrame(new, schema=df.select(keys).schema, orient="row")
                frames.append(df.join(fresh, on=keys, how="semi").with_columns(pl.lit(run.info.run_id).alias("run_id")))
                seen.update(new)
                took = True
        if took:
            used.append(run)
    if not frames:
        raise MissingTable(f"no run of {what!r} logged table '{name}"
                           f"{'_<device>' if prefix else ''}' ({len(runs)} run(s) checked at {store_uri(uri)})")
    return pl.concat(frames, how="diagonal_relaxed"), used


def log_files(run_id: str | None, files: Sequence[Path], artifact_path: str = "figures/notebooks",
              uri: str | None = None) -> bool:
    """Attach exported figure files to an existing run; False (no error) when that is impossible."""
    if not run_id or not files:
        return False
    try:
        client = MlflowClient(tracking_uri=store_uri(uri))
        for f in files:
            client.log_artifact(run_id, str(f), artifact_path)
    except (mlflow.exceptions.MlflowException, OSError) as err:
        print(f"could not attach figures to run {run_id[:8]}: {err}")
        return False
    return True
