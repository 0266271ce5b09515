"""Entry point: ``python -m workbench.run [overrides]`` (console script ``as2d``).

Composes the Hydra config, validates it before any work starts, runs the selected job inside
one MLflow run (a child of the sweep's parent run under ``-m``), logs params, metrics and
artifacts, and prints a compact results table.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
import traceback
from pathlib import Path
from types import ModuleType

import hydra
import mlflow
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from .errors import MismatchError, WorkbenchError
from .jobs.base import ConfigError, JobResult, save_result
from .jobs.checks import check_common
from .jobs.config import CONF
from .tracking import DESCRIPTION_TAG, clean_metrics, experiment_name, log_dir_artifacts, parent_run_id, tracked_run
from .tracking import flatten as flatten_cfg

log = logging.getLogger("workbench")

# job name -> module under workbench.jobs exposing ``run(cfg, out_dir) -> JobResult`` and
# ``validate(cfg)``. Configs name a job; they never hold code.
JOBS = {
    "replay": "replay",
    "oracle": "oracle",
    "budget_select": "oracle",
    "ablation": "replay",
    "tasks": "tasks",  # Table 3: translation / spoken QA under the pair's own phone costs
    "native_host": "native",
    "native_grid": "native_grid",  # the native drafter x budget grid, Table 14
    "calibrate_host": "calibrate",
    "demo": "demo",
    "context_probe": "context_probe",  # Fig. 3(b), B.3.2
    "ctc_probe": "ctc_probe",  # B.1 with chunk (CTC) proposers
    "sensitivity": "sensitivity",  # D.4.3 / D.5 cost scenarios
    "phone_info": "phone",  # phone_runner over adb
    "calibrate_phone": "phone",
    "native_phone": "phone",
    "ondemand": "ondemand",  # native on-demand requests, Fig. 7
    "streaming": "streaming",  # sustained native streaming, Fig. 9 / Table 16
    "adaptive": "adaptive",  # adaptive As²d vs fixed As²d and the oracle (beyond the paper)
}


def job_module(cfg: DictConfig):
    name = cfg.get("job")
    if name not in JOBS:
        raise ConfigError("job", f"unknown job {name!r}; choose one of {', '.join(JOBS)}")
    return importlib.import_module(f"workbench.jobs.{JOBS[name]}")


# an override's first key -> the config group it sets (``methods``/``devices`` list the groups' files)
GROUP_KEYS = {"method": "method", "methods": "method", "model": "model", "device": "device", "devices": "device",
              "dataset": "dataset", "phone": "phone"}


def check_groups(cfg: DictConfig, module) -> None:
    """No override is silently ignored: a job that declares the config groups it reads (``READS``)
    refuses an override of any other group, with one line naming it."""
    reads = getattr(module, "READS", None)
    if reads is None:
        return
    for o in overrides():
        key = o.lstrip("+~").split("=", 1)[0]
        head = key.split(".", 1)[0].split("@", 1)[0]
        group = GROUP_KEYS.get(head)
        if group is not None and group not in reads:
            raise ConfigError(head, f"job {cfg.job} does not read the {group} config group, so `{o}` would be "
                              f"ignored", fix=f"drop it (this job reads {', '.join(reads)})")


def read_params(params: dict[str, str], module) -> dict[str, str]:
    """Only what the job read: a job that declares its groups (``READS``) logs no other group's values."""
    reads = getattr(module, "READS", None)
    if reads is None:
        return params
    unread = {g for g in GROUP_KEYS.values() if g not in reads}
    return {k: v for k, v in params.items() if k.split(".", 1)[0] not in unread}


def out_dir(cfg: DictConfig) -> Path:
    if cfg.get("out_dir"):
        return Path(cfg.out_dir)
    try:
        return Path(HydraConfig.get().runtime.output_dir)
    except ValueError:
        return Path("outputs")


def _to_log_file(text: str) -> None:
    """Write ``text`` into the job's log file (Hydra's ``run.log``) without echoing it on the console."""
    record = logging.LogRecord("workbench", logging.INFO, __file__, 0, text, None, None)
    for h in logging.getLogger().handlers:
        if isinstance(h, logging.FileHandler):
            h.handle(record)


def say(text: str) -> None:
    """Print a line for the user and keep it in ``run.log``."""
    print(text)
    _to_log_file(text)


def print_summary(result: JobResult, names: list[str] | None = None, sources: dict[str, str] | None = None) -> None:
    """The job's summary on the console: speedup and oracle gap first; sources named by their producers."""
    if result.summary is None:
        return
    import polars as pl

    from .tracking.run_records import honest_frame

    compact = ["run", "device", "method", "clock", "speedup", "oracle_gap", "selected", "dev_tps", "tps", "tps_oracle",
               "acceptance", "coverage", "readiness", "k_gt1_share", "slowdown_share", "matched"]
    summary = honest_frame(result.summary, sources or {})
    if names and len(names) == summary.height:  # the configuration in every row: as2d-b3-k70_pro-replay
        summary = summary.with_columns(pl.Series("run", names))
    table = summary.select([c for c in compact if c in summary.columns] or summary.columns)
    with pl.Config(tbl_rows=60, tbl_cols=20, tbl_width_chars=180, float_precision=3, tbl_hide_dataframe_shape=True,
                   tbl_hide_column_data_types=True):
        say(str(table))


def print_checks(metrics: dict[str, float]) -> None:
    """Oracle gap per device, and replay-vs-native agreement (D.3) against each of its goals, when measured."""
    from .native.agreement_report import GOAL_MAE_PCT, GOAL_POOLED_PCT, GOAL_TARGET_ONLY_MAE_PCT

    gaps = {k[: -len(".oracle_gap")]: v for k, v in metrics.items() if k.endswith(".oracle_gap")}
    for device, gap in gaps.items():
        sel, orc = metrics.get(f"{device}.tps_selected"), metrics.get(f"{device}.tps_oracle")
        extra = f" (selected {sel:.2f} vs oracle {orc:.2f} tokens/s)" if sel is not None and orc is not None else ""
        say(f"oracle gap {device}: {gap:.3g}{extra}")
    goals = {"mae_pct": ("As²d per-window MAE", GOAL_MAE_PCT, ".2f", f"<= {GOAL_MAE_PCT:g}%"),
             "pooled_error_pct": ("signed pooled error", GOAL_POOLED_PCT, "+.2f", f"within +-{GOAL_POOLED_PCT:g}%"),
             "target_only_mae_pct": ("target-only per-window MAE", GOAL_TARGET_ONLY_MAE_PCT, ".2f",
                                     f"<= {GOAL_TARGET_ONLY_MAE_PCT:g}%")}
    for key, (what, goal, fmt, goal_text) in goals.items():
        if f"agreement.{key}" in metrics:
            value = metrics[f"agreement.{key}"]
            verdict = "PASS" if abs(value) <= goal else "FAIL"
            say(f"replay vs native agreement, {what}: {value:{fmt}}% -> {verdict} (goal {goal_text})")


def overrides() -> list[str]:
    try:
        return [str(o) for o in HydraConfig.get().overrides.task]
    except ValueError:
        return []


def ui_command(uri: str, run_id: str, experiment_id: str) -> str:
    """The command that opens the MLflow UI on this run."""
    from .tracking.store import ui_command as command

    return command(uri, experiment_id, run_id)


def _log_summary_files(result: JobResult, cfg: DictConfig, out: Path, files: list[Path], module) -> None:
    """Log exactly the files this job wrote (never older files in a reused out dir) and its summary."""
    from .jobs.base import write_atomic
    from .tracking.run_records import (
        honest_frame,
        lead_columns,
        profile_files,
        source_names,
        summary_html,
        summary_markdown,
    )
    from .tracking.store import flatten

    for f in files:
        rel = f.relative_to(out)
        mlflow.log_artifact(str(f), str(rel.parent) if str(rel.parent) != "." else None)
    if result.summary is not None:
        from .figures.paper_values import summary_columns

        title = f"{cfg.job}: summary ({' '.join(overrides()) or 'defaults'}); paper_* columns: the paper's phones"
        names = source_names(flatten(cfg))  # sources named by what produced the trace, never the pricing model
        shown = lead_columns(honest_frame(result.summary, names), summary_columns())  # speedup, oracle gap first
        for name, text in (("summary.md", summary_markdown(shown, title)),
                           ("summary.html", summary_html(shown, title))):
            write_atomic(out / name, text.encode())
            mlflow.log_artifact(str(out / name))
    host = sys.modules.get("workbench.native.fingerprint")  # not imported: no host profile priced anything
    reads = getattr(module, "READS", None)
    # the profiles that priced the run: a file, not 150 params. The host is this machine's profile
    # (cached or calibrated here), never conf/device/host.yaml's reference from another machine.
    files = [p for p in profile_files(cfg) if p.stem != "host"] if reads is None or "device" in reads else []
    for p in files + (host.priced_profiles() if host is not None else []):
        mlflow.log_artifact(str(p), "profiles")
    log_dir_artifacts(out / ".hydra", "hydra")


def _log_skipped_files(cfg: DictConfig, out: Path, result: JobResult) -> None:
    """``dataset.on_bad_audio=skip``: the files the run went on without, as an artifact and a count."""
    from .data.screen import skipped
    from .jobs.base import write_json

    ds = OmegaConf.to_container(cfg.dataset, resolve=True) if cfg.get("dataset") is not None else {}
    if not ds.get("loader"):
        return
    files = skipped(ds)
    result.metrics["dataset.skipped_files"] = float(len(files))
    if files:
        mlflow.log_artifact(str(write_json(files, out / "bad_audio.json")))


def _run_job(module, cfg: DictConfig, out: Path) -> JobResult:
    """The job itself; if it raises part way, the windows it measured so far are kept on the run
    (``tables/partial``, ``tracking.partial``) and the error says so on its ``kept:`` line."""
    from .tracking import partial

    partial.clear()
    try:
        result = module.run(cfg, out)
    except BaseException as err:  # Ctrl-C and bugs too: what was measured is kept, the error propagates
        try:
            kept = partial.keep(out)
        except Exception as keeping:  # never hide the job's own error behind a failure to keep
            log.warning("partial results not kept: %s: %s", type(keeping).__name__, keeping)
            raise err from None
        if kept is not None:
            if isinstance(err, WorkbenchError):
                err.kept = f"{err.kept}; {kept.line()}" if err.kept else kept.line()
            else:  # a bug keeps its traceback; the kept line comes first
                print(f"kept: {kept.line()}", file=sys.stderr)
        raise
    partial.clear()  # the job's full tables are logged instead
    return result


def _job_tags(cfg: DictConfig, module: ModuleType) -> tuple[bool, dict[str, str]]:
    """Whether the job replays synthetic trajectories, and the job run's tags."""
    # A job that does not replay the dataset (adaptive's native comparison runs real audio) says so.
    uses = getattr(module, "replays_dataset", None)
    synthetic = bool(cfg.get("dataset", {}).get("synthetic", False)) and (uses is None or uses(cfg))
    tags = {"job": str(cfg.job), "as2d.role": "job", "synthetic": str(synthetic)}
    if not cfg.get("methods"):
        tags["method"] = str(cfg.get("method", {}).get("name", ""))
    return synthetic, tags


def execute(cfg: DictConfig) -> JobResult:
    """Validate, run and track one job. Bad configs fail before an MLflow run exists."""
    from .tracking import log_children
    from .tracking.run_records import (
        BUDGETS_TAG,
        child_records,
        describe_job,
        job_metrics,
        job_run_name,
        source_names,
        used_params,
    )

    module = job_module(cfg)
    check_groups(cfg, module)
    check_common(cfg)  # seeds, source, model devices: one line each, before any run exists
    module.validate(cfg)
    out = out_dir(cfg)
    out.mkdir(parents=True, exist_ok=True)
    synthetic, tags = _job_tags(cfg, module)
    say(f"job: {cfg.job}   overrides: {' '.join(overrides()) or '(none)'}")
    if synthetic:
        say("SYNTHETIC: this run replays synthetic trajectories, not traces of real models")
    sweep = parent_run_id(cfg)
    names: list[str] = []
    sources = source_names(flatten_cfg(cfg))  # the console names each source by what produced its trace
    with tracked_run(experiment_name(cfg), run_name=job_run_name(cfg), cfg=read_params(used_params(cfg), module),
                     tags=tags, parent_run_id=sweep, uri=cfg.tracking.uri) as run:
        _CURRENT_RUN[:] = [run.info.run_id]
        result = _run_job(module, cfg, out)
        _log_skipped_files(cfg, out, result)
        mlflow.set_tags(result.tags)
        budgets = result.tables.get("device_budgets")
        if budgets is not None and budgets.height:  # each device's own budget (budget_from=profile: phones at 7)
            used = sorted(set(budgets["budget"].to_list()))
            mlflow.set_tags({BUDGETS_TAG: ",".join(map(str, used)), "mlflow.runName": job_run_name(cfg, used)})
        if synthetic:
            mlflow.set_tag("SYNTHETIC", "true")
        mlflow.log_metrics(clean_metrics(job_metrics(result.metrics, result.summary)))  # per-config: children
        mlflow.set_tag(DESCRIPTION_TAG, describe_job(cfg, result.summary, synthetic))
        files = save_result(result, out)
        _log_summary_files(result, cfg, out, files, module)
        if result.summary is not None and {"device", "method"} <= set(result.summary.columns):
            records = child_records(result.summary, result.metrics, result.tables, cfg)
            names = [r["name"] for r in records if r.get("role", "config") == "config"]
            log_children(run.info.run_id, records, sweep_parent=sweep)
        bad = int(result.metrics.get("exactness_mismatches", 0))
        if bad > 0:  # one of our schemes broke exactness: the run fails, everything it measured is logged
            print_summary(result, names, sources)
            raise MismatchError(f"{bad} run(s) of our schemes did NOT match the greedy target output",
                                where=f"job {cfg.job}", kept=f"every table of this run is logged with it and in {out}")
    print_summary(result, names, sources)
    print_checks(result.metrics)
    uri = mlflow.get_tracking_uri()
    say(f"MLflow run {run.info.run_id} ({len(names)} configuration child runs) in experiment "
        f"{experiment_name(cfg)!r}")
    say(f"open it: {ui_command(uri, run.info.run_id, run.info.experiment_id)}")
    return result


_CURRENT_RUN: list[str] = []  # the MLflow run of this process's job, once it exists


def _log_file() -> Path | None:
    for h in logging.getLogger().handlers:
        if isinstance(h, logging.FileHandler):
            return Path(h.baseFilename)
    return None


def report_error(err: WorkbenchError) -> None:
    """One line (two with a ``kept:`` line) on stderr; the traceback goes to ``run.log``, which is
    attached to the run, and to stderr as well under ``HYDRA_FULL_ERROR=1``."""
    trace = "".join(traceback.format_exception(err))
    if os.environ.get("HYDRA_FULL_ERROR") == "1":
        print(trace, file=sys.stderr, end="")
    print(err.headline(), file=sys.stderr)
    _to_log_file(f"{err.headline()}\n{trace}")
    log_file = _log_file()
    if _CURRENT_RUN and log_file is not None and log_file.is_file():
        try:
            mlflow.MlflowClient().log_artifact(_CURRENT_RUN[0], str(log_file))
        except Exception as attach:  # the run is already FAILED with the message tag; the log stays on disk
            print(f"(run.log stays in {log_file}: {type(attach).__name__})", file=sys.stderr)


_WATCHING: list[bool] = []
ORPHAN_GRACE_S = 10.0  # after the sweep's parent died: time to mark the run FAILED before the worker exits


def _end_with_the_sweep() -> None:
    """A sweep job in a launcher's worker process ends when the sweep's parent dies (``kill -9``):
    SIGTERM marks its run FAILED and closes the producer, then the worker exits. Launcher workers
    were left running, with their resource trackers and semaphores, for as long as the job took."""
    import contextlib
    import multiprocessing as mp
    import signal
    import threading
    import time

    import psutil

    if mp.current_process().name == "MainProcess" or _WATCHING:
        return
    _WATCHING.append(True)  # one watch per worker, however many jobs it runs
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(ORPHAN_GRACE_S)
        # The main thread may be stuck where no signal handler runs (a long native call); the job's
        # run must not stay RUNNING, so the watch marks it before the worker exits.
        from .tracking.runs import fail_own_runs

        with contextlib.suppress(Exception):
            fail_own_runs("the sweep's parent died and the job did not end within its grace period")
        # The job's own children (a replay pool, a producer) hold the resource trackers' pipes;
        # left behind, they would keep the trackers, and their semaphores, alive.
        for child in psutil.Process().children(recursive=True):
            with contextlib.suppress(psutil.Error):
                child.kill()
        os._exit(1)

    threading.Thread(target=watch, name="as2d-sweep-watch", daemon=True).start()


# An absolute path: the `as2d` console script imports this module as `workbench.run`, and Hydra would
# then look for a `conf` Python package, which a strict editable install does not put on sys.path.
@hydra.main(config_path=str(CONF), config_name="config", version_base="1.3")
def _hydra_main(cfg: DictConfig) -> None:
    _CURRENT_RUN.clear()
    _end_with_the_sweep()
    try:
        execute(cfg)
    except WorkbenchError as err:
        # One readable line, no traceback: the fix is in the input (config, corpus, weights, phone),
        # not the code. Anything else is a bug and keeps its traceback.
        report_error(err)
        sys.exit(2)


def main() -> None:
    _hydra_main()


if __name__ == "__main__":
    main()


__all__ = ["execute", "main", "JOBS", "OmegaConf"]
