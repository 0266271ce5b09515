"""Job ``native_host``: the host benchmark -- As²d against target-only (1 and 2 threads),
HF assisted generation, serial SD and ASP, on the packed demo windows, interleaved, repeated."""

from __future__ import annotations

from pathlib import Path

import polars as pl
from omegaconf import DictConfig, OmegaConf

from workbench.figures.paper import decomposition

from .base import ConfigError, JobResult
from .config import budget, check_models, device_profile


def validate(cfg: DictConfig) -> None:
    from workbench.models.mnn.runtime import EngineConfigError, check_engine

    budget(cfg)
    try:  # before the weights check: an engine that cannot run the family is the first thing to fix
        check_engine(OmegaConf.to_container(cfg.model, resolve=True))
    except EngineConfigError as err:
        raise ConfigError("model.engine", str(err)) from None
    check_models(cfg)
    reps = cfg.native.repeats
    if not isinstance(reps, int) or reps < 1:
        raise ConfigError("native.repeats", f"need an integer >= 1, got {reps!r}")


def run(cfg: DictConfig, out: Path) -> JobResult:
    from workbench.models.registry import load_model_config
    from workbench.native.bench import default_methods, run_bench
    from workbench.native.windows import demo_windows

    n = cfg.native
    model = OmegaConf.to_container(cfg.model, resolve=True)
    alt = load_model_config(n.same_vocab_model) if n.same_vocab_model else None
    _, evals = demo_windows(float(n.max_seconds), model=model)  # under the target's own audio limit
    evals = evals[: n.max_windows or len(evals)]
    # this machine's profile (of the run's engine) prices as2d_online, calibrated once on first use
    if cfg.model.engine == "mnn":  # MNN engine: target-only/As²d/SD/ASP beside torch target-only
        from workbench.models.mnn.bench import mnn_methods

        methods = mnn_methods(model, device_profile("host", cfg))[0]
    else:
        methods = default_methods(model, alt, device_profile("host", cfg))
    frames = run_bench(evals, methods, int(n.repeats), out_dir=out / "bench")
    summary = frames["summary"]
    metrics: dict[str, float] = {}
    for row in summary.iter_rows(named=True):
        for k, v in row.items():
            if k != "method" and isinstance(v, int | float) and not isinstance(v, bool):
                metrics[f"native.{row['method']}.{k}"] = float(v)
    runs = frames["runs"]
    metrics["exactness_mismatches"] = float((~runs["matched"]).sum()) if "matched" in runs.columns else 0.0
    dec = summary.filter(pl.col("D").is_not_null()).unpivot(index="method", on=["D", "V", "O", "H"],
                                                           variable_name="term", value_name="seconds")
    return JobResult(metrics, frames, {"decomposition": decomposition(dec)}, summary,
                     {"windows": str(len(evals))})
