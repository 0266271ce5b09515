"""Job ``native_host``: the host benchmark -- As²d against target-only (1 and 2 threads),
HF assisted generation, serial SD and ASP, on the run's ``dataset=`` (the demo corpus's test split
by default, a paper dataset's cohort split under ``dataset=<name> dataset.root=...``), packed
into windows up to ``native.max_seconds``, interleaved, repeated."""

from __future__ import annotations

import logging
from pathlib import Path

import polars as pl
from omegaconf import DictConfig, OmegaConf

from workbench.figures.paper import decomposition

from .base import ConfigError, JobResult
from .config import budget, check_models, device_profile, kernel_plan_profile
from .windows import check_real_audio

log = logging.getLogger(__name__)
# the config groups this job reads; an override of any other group is refused (workbench.run)
READS = ("model", "dataset")


def validate(cfg: DictConfig) -> None:
    from workbench.models.mnn.runtime import EngineConfigError, check_engine

    budget(cfg)
    check_real_audio(cfg)
    try:  # before the weights check: an engine that cannot run the family is the first thing to fix
        check_engine(OmegaConf.to_container(cfg.model, resolve=True))
    except EngineConfigError as err:
        raise ConfigError("model.engine", str(err)) from None
    check_models(cfg)
    reps = cfg.native.repeats
    if not isinstance(reps, int) or reps < 1:
        raise ConfigError("native.repeats", f"need an integer >= 1, got {reps!r}")
    warm = cfg.native.warmup
    if not isinstance(warm, int) or isinstance(warm, bool) or warm < 0:
        raise ConfigError("native.warmup", f"need an integer >= 0, got {warm!r}")
    chosen_methods(cfg)


def chosen_methods(cfg: DictConfig) -> list[str]:
    """The method families ``native.methods`` chooses (``native.methods.FAMILIES``), target-only
    always among them: it is each window's exactness reference."""
    from omegaconf import ListConfig

    from workbench.native.methods import FAMILIES

    names = cfg.native.get("methods")
    if not isinstance(names, ListConfig | list) or not names:
        raise ConfigError("native.methods", f"need a non-empty list of method families, got {names!r}",
                          fix=f"e.g. native.methods=[target_only,as2d]; choose from {', '.join(FAMILIES)}")
    unknown = [str(n) for n in names if n not in FAMILIES]
    if unknown:
        raise ConfigError("native.methods", f"unknown method famil{'y' if len(unknown) == 1 else 'ies'} "
                          f"{', '.join(unknown)}", fix=f"choose from {', '.join(FAMILIES)}")
    return list(dict.fromkeys(["target_only", *map(str, names)]))


def host_windows(cfg: DictConfig) -> list:
    """The evaluation windows of the run's dataset, packed up to ``native.max_seconds`` under the
    target's own audio limit: a paper dataset's chosen cohort split (``dataset.split``) as it is,
    the demo corpus's stratified test split (its dev split calibrates, never evaluates)."""
    evals = split_windows(cfg, float(cfg.native.max_seconds), "test")
    return evals[: cfg.native.max_windows or len(evals)]


def split_windows(cfg: DictConfig, seconds: float, split: str) -> list:
    """The run's dataset packed into windows of up to ``seconds`` under the target's audio limit: a
    paper dataset's chosen cohort split as it is (ids ``eval``/``dev`` by ``split``), else the demo
    corpus's stratified ``split`` (``dev`` or ``test``)."""
    from workbench.data.datasets.windows import model_max_seconds
    from workbench.native.windows import demo_windows, pack_windows

    from .demo_traces import demo_corpus

    model = OmegaConf.to_container(cfg.model, resolve=True)
    corpus = demo_corpus(cfg)
    if cfg.dataset.get("loader"):
        return pack_windows(corpus, corpus.clips, seconds, prefix="eval" if split == "test" else "dev",
                            audio_limit=model_max_seconds(model))
    dev, test = demo_windows(seconds, float(cfg.dataset.dev_fraction), int(cfg.dataset.seed), corpus=corpus,
                             model=model)
    return test if split == "test" else dev


def mismatches(runs: pl.DataFrame) -> dict[str, float]:
    """Runs whose output differs from target-only's: ours (``exactness_mismatches``: the job fails)
    and HF assisted generation's (``baseline_mismatches.hf_assisted``: transformers' assisted
    generate is a baseline, not exact by design, and is reported as its own)."""
    if "matched" not in runs.columns:
        return {"exactness_mismatches": 0.0}
    wrong = runs.filter(~pl.col("matched"))
    hf = wrong.filter(pl.col("method").str.starts_with("hf_assisted"))
    if hf.height:
        log.warning("HF assisted generation (a baseline, not exact by design) differed from the greedy target "
                    "output in %d run(s) (%s); our schemes are audited on their own", hf.height,
                    ", ".join(sorted(set(hf["method"]))))
    return {"exactness_mismatches": float(wrong.height - hf.height),
            "baseline_mismatches.hf_assisted": float(hf.height)}


def run(cfg: DictConfig, out: Path) -> JobResult:
    from workbench.models.registry import load_model_config
    from workbench.native.bench import default_methods, run_bench

    n = cfg.native
    chosen = chosen_methods(cfg)
    model = OmegaConf.to_container(cfg.model, resolve=True)
    alt = load_model_config(n.same_vocab_model) if n.same_vocab_model and "as2d" in chosen else None
    evals = host_windows(cfg)
    # This machine's profile (of the run's engine) prices as2d_online, calibrated once on first use.
    # Without as2d_online nothing is priced: the profile only gives the torch target its kernel plan
    # (kernels: auto), taken from a calibration the machine already has, never a new one.
    online = "as2d_online" in chosen
    if cfg.model.engine == "mnn":  # MNN engine: target-only/As²d/SD/ASP beside torch target-only
        from workbench.native.bench import profile_costs
        from workbench.native.mnn_bench import mnn_methods

        methods = mnn_methods(model, profile_costs(device_profile("host", cfg)) if online else None,
                              torch_profile=kernel_plan_profile(cfg))[0]
    else:  # HF assisted loads its assistants (and tokenizers) in this process: only when chosen
        profile = device_profile("host", cfg) if online else kernel_plan_profile(cfg)
        methods = default_methods(model, alt, profile, hf="hf_assisted" in chosen)
    methods = [m for m in methods if m.family in chosen]
    frames = run_bench(evals, methods, int(n.repeats), warmup=int(n.warmup), out_dir=out / "bench")
    summary = frames["summary"]
    metrics: dict[str, float] = {}
    for row in summary.iter_rows(named=True):
        for k, v in row.items():
            if k != "method" and isinstance(v, int | float) and not isinstance(v, bool):
                metrics[f"native.{row['method']}.{k}"] = float(v)
    metrics.update(mismatches(frames["runs"]))
    dec = summary.filter(pl.col("D").is_not_null()).unpivot(index="method", on=["D", "V", "O", "H"],
                                                           variable_name="term", value_name="seconds")
    return JobResult(metrics, frames, {"decomposition": decomposition(dec)}, summary,
                     {"windows": str(len(evals)), "dataset": str(cfg.dataset.name)})
