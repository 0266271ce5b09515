"""Entry point: ``python -m workbench.run [overrides]`` (console script ``as2d``).

Composes the Hydra config, validates it before any work starts, runs the selected job inside
one MLflow run (a child of the sweep's parent run under ``-m``), logs params, metrics and
artifacts, and prints a compact results table.
"""

from __future__ import annotations

import importlib
import logging
import sys
from pathlib import Path

import hydra
import mlflow
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from .jobs.base import ConfigError, JobResult, save_result
from .tracking import clean_metrics, experiment_name, log_dir_artifacts, parent_run_id, tracked_run

log = logging.getLogger("workbench")

# job name -> module under workbench.jobs exposing ``run(cfg, out_dir) -> JobResult`` and
# ``validate(cfg)``. Configs name a job; they never hold code.
JOBS = {
    "replay": "replay",
    "oracle": "oracle",
    "budget_select": "oracle",
    "ablation": "replay",
    "native_host": "native",
    "calibrate_host": "calibrate",
    "demo": "demo",
    "context_probe": "context_probe",  # Fig. 3(b), B.3.2 (issue 17)
    "phone_info": "phone",  # phone_runner over adb (issue 15)
    "calibrate_phone": "phone",
    "native_phone": "phone",
}


def job_module(cfg: DictConfig):
    name = cfg.get("job")
    if name not in JOBS:
        raise ConfigError("job", f"unknown job {name!r}; choose one of {', '.join(JOBS)}")
    return importlib.import_module(f"workbench.jobs.{JOBS[name]}")


def out_dir(cfg: DictConfig) -> Path:
    if cfg.get("out_dir"):
        return Path(cfg.out_dir)
    try:
        return Path(HydraConfig.get().runtime.output_dir)
    except ValueError:
        return Path("outputs")


def print_summary(result: JobResult) -> None:
    if result.summary is None:
        return
    import polars as pl

    compact = ["device", "method", "clock", "selected", "dev_tps", "tps", "tps_oracle", "speedup", "acceptance",
               "coverage", "readiness", "k_gt1_share", "slowdown_share", "oracle_gap", "matched"]
    table = result.summary.select([c for c in compact if c in result.summary.columns] or result.summary.columns)
    with pl.Config(tbl_rows=60, tbl_cols=20, tbl_width_chars=160, float_precision=3, tbl_hide_dataframe_shape=True,
                   tbl_hide_column_data_types=True):
        print(table)


def execute(cfg: DictConfig) -> JobResult:
    """Validate, run and track one job. Bad configs fail before an MLflow run exists."""
    module = job_module(cfg)
    module.validate(cfg)
    out = out_dir(cfg)
    out.mkdir(parents=True, exist_ok=True)
    tags = {"job": str(cfg.job), "method": str(cfg.get("method", {}).get("name", ""))}
    with tracked_run(experiment_name(cfg), run_name=str(cfg.job), cfg=cfg, tags=tags,
                     parent_run_id=parent_run_id(cfg), uri=cfg.tracking.uri):
        result = module.run(cfg, out)
        mlflow.set_tags(result.tags)
        mlflow.log_metrics(clean_metrics(result.metrics))
        save_result(result, out)
        for sub in ("tables", "figures"):
            log_dir_artifacts(out / sub, sub)
        for extra in ("summary.parquet", "metrics.json"):
            if (out / extra).exists():
                mlflow.log_artifact(str(out / extra))
        log_dir_artifacts(out / ".hydra", "hydra")
        if result.metrics.get("exactness_mismatches", 0) > 0:
            log.error("%d window(s) did NOT match the greedy target output", result.metrics["exactness_mismatches"])
    print_summary(result)
    return result


@hydra.main(config_path="../conf", config_name="config", version_base="1.3")
def _hydra_main(cfg: DictConfig) -> None:
    try:
        execute(cfg)
    except ConfigError as err:
        # One readable line, no traceback: the fix is in the config, not the code.
        print(f"config error: {err}", file=sys.stderr)
        sys.exit(2)


def main() -> None:
    _hydra_main()


if __name__ == "__main__":
    main()


__all__ = ["execute", "main", "JOBS", "OmegaConf"]
