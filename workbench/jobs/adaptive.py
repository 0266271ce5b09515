"""Job ``adaptive`` (beyond the paper, F.1/F.3): adaptive As²d against fixed As²d and the hindsight oracle, per device.

Glue: it reads the config and calls ``workbench.replay.adaptive`` (the dev choices, the test rows, the
goals) per device profile. Per method: pooled TPS, the share of windows slower than target-only, and the
oracle gap (negative when an adaptive method beats the best fixed choice per window); beside it, the share
of a stronger fixed catalog's oracle. Every replay is audited. The goals live in
``conf/experiment/adaptive.yaml`` (``adaptive.goals``), never in code.

Windows: the synthetic catalog, or the demo's cached traces (``dataset=demo``): this job never
loads a model; clips without a cached trace are left out, and said so (``experiment=demo`` collects).
Settings of each method come from ``conf/method``; budgets: fixed-budget variants use the selected
b, online ones are bounded by ``adaptive.bound`` (``selected`` b, or ``max``: the widest priced width).
With ``adaptive.fit_prior`` the online ones' acceptance estimates start, on every test window, from the
pooled slot acceptance fixed As²d saw on dev (the drafter's: serial SD's on dev), weighted as the
``adaptive.prior_rounds`` entry that does best on dev: a window of a few rounds is decided largely by
where its estimates start.

``adaptive.native=true``: instead, the native host comparison -- ``adaptive.native_methods`` (target-only,
fixed As²d, the combination) on the packed demo windows, interleaved and repeated (``native.*``), with the
native bench's exactness audit (``workbench/native/bench.py``). The combination weighs widths with this
machine's host profile (never another machine's) and drafts with the pair's serial drafter; the host runs
one producer, so its source choice has one source.
"""

from __future__ import annotations

import logging
from pathlib import Path

import polars as pl
from omegaconf import DictConfig, OmegaConf
from tqdm import tqdm

from workbench.decoding import scheme_spec
from workbench.decoding.costs import RoundCosts
from workbench.decoding.schemes import MAX_BUDGET
from workbench.replay import adaptive as A
from workbench.replay.profile import DeviceProfile
from workbench.replay.trajectory import Window

from .base import ConfigError, JobResult
from .config import devices, method_settings, source_roles
from .windows import synthetic_from_cfg

log = logging.getLogger("workbench")


def validate(cfg: DictConfig) -> None:
    frac = cfg.dataset.dev_fraction
    if not 0 < frac < 1:
        raise ConfigError("dataset.dev_fraction", f"must be in (0, 1), got {frac}")
    if cfg.adaptive.bound not in ("selected", "max"):
        raise ConfigError("adaptive.bound", f"choose selected or max, got {cfg.adaptive.bound!r}")
    weights = list(cfg.adaptive.prior_rounds or [])
    if cfg.adaptive.fit_prior and (not weights or any(not float(k) > 0 for k in weights)):
        raise ConfigError("adaptive.prior_rounds", f"list positive weights in rounds (e.g. [3, 10, 30]), got {weights}")
    goals_of(cfg)
    for name in A.VARIANTS:
        method_settings(cfg, name)
    if cfg.adaptive.native:
        names = list(cfg.adaptive.native_methods)
        if not names or names[0] != "target_only":
            raise ConfigError("adaptive.native_methods",
                              f"start with target_only (the exactness reference), got {names}")
        for name in names:
            method_settings(cfg, name)
        return
    devices(cfg)


def setup_of(cfg: DictConfig) -> A.AdaptiveSetup:
    """What ``replay.adaptive`` reads, from the config (settings from ``conf/method``, choices from ``adaptive.*``)."""
    return A.AdaptiveSetup(
        methods={name: method_settings(cfg, name) for name in A.VARIANTS},
        budgets=tuple(int(b) for b in cfg.budgets), roles=source_roles(cfg),
        dev_fraction=float(cfg.dataset.dev_fraction), seed=int(cfg.seed), workers=int(cfg.workers),
        bound=cfg.adaptive.bound, fit_prior=bool(cfg.adaptive.fit_prior),
        prior_rounds=tuple(float(k) for k in cfg.adaptive.prior_rounds or ()),
        fallback_source=str(cfg.adaptive.fallback_source))


def goals_of(cfg: DictConfig) -> A.Goals:
    """``adaptive.goals``: the combination's share of the oracle (``of_oracle``, per device where
    ``of_oracle_by_device`` names one) and its floor against fixed As²d (``vs_fixed``)."""
    g = cfg.adaptive.get("goals")
    try:
        by_device = dict(OmegaConf.to_container(g.get("of_oracle_by_device") or {}, resolve=True))
        return A.Goals(float(g.of_oracle), {str(k): float(v) for k, v in by_device.items()}, float(g.vs_fixed))
    except (AttributeError, TypeError, ValueError) as err:
        raise ConfigError("adaptive.goals", "give of_oracle, vs_fixed (numbers) and of_oracle_by_device "
                          f"(device: share), as conf/experiment/adaptive.yaml does ({err})") from None


def device_table(windows: list[Window], profile: DeviceProfile, cfg: DictConfig) -> tuple[pl.DataFrame, dict]:
    """Rows (one per method) and the dev choices for one device profile (``replay.adaptive.device_table``)."""
    return A.device_table(windows, profile, setup_of(cfg))


def goals(table: pl.DataFrame, cfg: DictConfig) -> pl.DataFrame:
    return A.goals(table, goals_of(cfg))


def replays_dataset(cfg: DictConfig) -> bool:
    """False for the native comparison: it runs the demo audio, whatever ``dataset`` says."""
    return not cfg.adaptive.native


def cached_windows(cfg: DictConfig) -> list[Window]:
    """Synthetic windows, or the demo's windows whose traces are in the cache (never a collection).

    A clip without a valid cached trace for this model pair is left out and counted (``log``); fewer
    than two cached clips is one config error naming the command that collects them."""
    if cfg.dataset.synthetic:
        return synthetic_from_cfg(cfg.dataset)
    from workbench.traces.cache_key import file_sha256
    from workbench.traces.windows import trace_to_window

    from . import demo_traces as dt

    corpus = dt.demo_corpus(cfg)
    limits = dt._CachedOnly(cfg.model)  # ids and limits without loading any model
    cache = dt.trace_cache(cfg, limits)
    ready = [c for c in corpus.clips if cache.ready(c.window_id, file_sha256(c.path), limits.vocab_size)]
    if len(ready) < 2:
        raise ConfigError("dataset", f"{len(ready)} of {len(corpus.clips)} clips have a cached trace for this model "
                          "pair (need 2: a dev and a test window); collect them once with "
                          "`python -m workbench.run experiment=demo`")
    if len(ready) < len(corpus.clips):
        log.warning("adaptive: %d of %d demo clips have a cached trace; the rest are left out "
                    "(`python -m workbench.run experiment=demo` collects them)", len(ready), len(corpus.clips))
    return [trace_to_window(cache.frame(c.window_id), c.window_id, dataset=c.origin, eos_id=limits.eos_id,
                            vocab_size=limits.vocab_size, max_output=limits.max_output) for c in ready]


def native_costs(cfg: DictConfig) -> tuple[RoundCosts, int, DeviceProfile]:
    """This machine's round cost per width (ms) with one serial drafter forward (hybrid candidates);
    the widest chain it prices (the online bound under ``adaptive.bound=max``); and the profile itself
    (its kernel plan is what those costs were measured under)."""
    from workbench.native.bench import profile_costs

    from .config import device_profile

    profile = device_profile("host", cfg)  # this machine's profile: calibrate first or refuse (calibration.*)
    costs = profile_costs(profile, drafter_forward=profile.source(profile.serial_drafter).op_ms)
    return costs, min(MAX_BUDGET, max(profile.verifier.widths()) - 1), profile


def run_native(cfg: DictConfig, out: Path) -> JobResult:
    from workbench.native.bench import Method, run_bench
    from workbench.native.episodes import host_overrides, host_setup
    from workbench.native.windows import demo_windows

    from .config import check_models

    check_models(cfg)
    n, model = cfg.native, OmegaConf.to_container(cfg.model, resolve=True)
    costs, widest, profile = native_costs(cfg)
    names = list(cfg.adaptive.native_methods)
    over = {**host_overrides(int(cfg.model.budget)),
            **{m: {k: v for k, v in method_settings(cfg, m).items() if k != "budget"} for m in names}}
    setup = host_setup(model, overrides=over)
    setup.costs = costs
    setup.use_profile(profile)  # every method, target-only too, by the kernel plan the costs were measured under
    for m in names:  # online methods: bounded like replay's (adaptive.bound); fixed ones keep the pair's b
        if scheme_spec(m).needs_costs and cfg.adaptive.bound == "max":
            setup.settings[m]["budget"] = widest
    _, evals = demo_windows(float(n.max_seconds), model=model)
    evals = evals[: n.max_windows or len(evals)]
    methods = [Method("target_only@1t" if m == "target_only" else f"{m}/{setup.source}", "native", setup, 1, m)
               for m in names]  # target_only@1t: the bench's per-window exactness reference
    frames = run_bench(evals, methods, int(n.repeats), out_dir=out / "native")
    summary = frames["summary"]
    # MLflow metric names allow no '@' (the bench's "target_only@1t")
    metrics = {f"native.{r['method'].replace('@', '_')}.{k}": float(r[k]) for r in summary.iter_rows(named=True)
               for k in ("tps", "ratio_target_only", "slower_share", "matched_share") if r[k] is not None}
    metrics["exactness_mismatches"] = float((~frames["runs"]["matched"]).sum())
    settings = pl.DataFrame([{"method": m, "settings": str(setup.settings[m])} for m in names])
    return JobResult(metrics, {**frames, "native_settings": settings}, {}, summary,
                     {"windows": str(len(evals)), "native": "true"})


def run(cfg: DictConfig, out: Path) -> JobResult:
    if cfg.adaptive.native:
        return run_native(cfg, out)
    windows = cached_windows(cfg)
    setup = setup_of(cfg)
    tables, metrics, choices = [], {}, []
    for profile in tqdm(devices(cfg), desc="adaptive", unit="device"):
        t, chosen = A.device_table(windows, profile, setup)
        tables.append(t)
        choices.append({"device": profile.name, "selected": f"{chosen['source']}/b{chosen['budget']}",
                        "online_bound": chosen["bound"], "prior": chosen["prior"], "draft_prior": chosen["draft_prior"],
                        **{f"{key}_{k}": v for k, g in chosen["dev_choice"].items() for key, v in g.items()},
                        **{f"resident_{k}": v for k, v in chosen["resident"].items()
                           if scheme_spec(k).multi_source}})
        for r in t.iter_rows(named=True):
            for k in ("tps", "slower_than_target", "oracle_gap", "of_strong_oracle", "vs_fixed"):
                metrics[f"{r['device']}.{r['method']}.{k}"] = r[k]
    table = pl.concat(tables).with_columns(pl.lit(str(cfg.dataset.name)).alias("dataset"),
                                           pl.lit(str(cfg.adaptive.bound)).alias("bound"))
    summary = table.select("device", "method", pl.col("tps").round(2),
                           (100 * pl.col("slower_than_target")).round(1).alias("% slower than TO"),
                           (100 * pl.col("oracle_gap")).round(2).alias("oracle gap %"),
                           (100 * pl.col("of_strong_oracle")).round(2).alias("% of strong oracle"),
                           (100 * pl.col("vs_fixed")).round(2).alias("vs fixed %"))
    return JobResult(metrics, {"adaptive": table, "choices": pl.DataFrame(choices), "goals": goals(table, cfg)}, {},
                     summary, {"synthetic": str(bool(cfg.dataset.synthetic))})
