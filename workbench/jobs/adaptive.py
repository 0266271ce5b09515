"""Job ``adaptive`` (beyond the paper, F.1/F.3): adaptive As²d against fixed As²d and the hindsight oracle, per device.

For each device profile, on the development split (D.2.6): fix one (source, budget) as the paper
does, and the resident source set of the multi-source methods (the fixed source alone, with each
other source, or with all; pooled development TPS decides -- sources share the drafting workers,
so more is not always better). Then on the test split: target-only, fixed As²d, each adaptive
variant (online budget, guarded anchor, substitution guess, hybrid candidates, online source choice) and their
combination (``as2d_adaptive``), plus the per-window hindsight oracle over the fixed catalog
(D.4.3). Per method: pooled TPS, the share of windows slower than target-only, and the oracle gap
(negative when an adaptive method beats the best fixed choice per window); beside it, the share of
the same oracle over a stronger fixed catalog (``as2d_guarded`` with ``leave_eos``: the guarded anchor
and the EOS left to the bonus), so a gain those rules alone would give a fixed configuration is not
read as adaptation. Every replay is audited.

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
from collections.abc import Sequence
from pathlib import Path

import polars as pl
from omegaconf import DictConfig, OmegaConf
from tqdm import tqdm

from workbench.decoding.schemes import MAX_BUDGET
from workbench.decoding.width import PRIOR, tried_slots
from workbench.replay.catalog import as2d_catalog, run_catalog
from workbench.replay.engine import replay, results_frame
from workbench.replay.multi_source import SEPARATOR
from workbench.replay.profile import DeviceProfile
from workbench.replay.result import ReplayConfig, ReplayResult
from workbench.replay.selection import hindsight_oracle, select_budget, split_windows
from workbench.replay.sources import priced_as, profile_source
from workbench.replay.trajectory import Window

from .base import ConfigError, JobResult
from .config import devices, method_settings, source_roles
from .windows import synthetic_from_cfg

log = logging.getLogger("workbench")

# method -> (online: bounded by adaptive.bound, several resident sources)
VARIANTS = {
    "as2d_online": (True, False),
    "as2d_guarded": (False, False),
    "as2d_subst": (False, False),
    "as2d_hybrid": (False, False),
    "as2d_sources": (True, True),
    "as2d_adaptive": (True, True),
}
# Not a method: per window, the faster of the online budget on each source alone, chosen in hindsight. It
# bounds what any online source choice over those readers can reach (it pays no learning and shares no
# workers), so a gap it also shows is not the choice rule's.
SOURCE_HINDSIGHT = "online_source_hindsight"
# Not a method either: per window, the faster of the online budget reading each source of the combination's
# resident set while every resident producer runs (and shares the drafting workers). It bounds any choice rule
# over that set; where it sits far below SOURCE_HINDSIGHT, the shared workers, not the choice, cost the gap.
RESIDENT_HINDSIGHT = "resident_choice_hindsight"
ORDER = ("target_only", "as2d_fixed", *VARIANTS, SOURCE_HINDSIGHT, RESIDENT_HINDSIGHT)


def validate(cfg: DictConfig) -> None:
    frac = cfg.dataset.dev_fraction
    if not 0 < frac < 1:
        raise ConfigError("dataset.dev_fraction", f"must be in (0, 1), got {frac}")
    if cfg.adaptive.bound not in ("selected", "max"):
        raise ConfigError("adaptive.bound", f"choose selected or max, got {cfg.adaptive.bound!r}")
    weights = list(cfg.adaptive.prior_rounds or [])
    if cfg.adaptive.fit_prior and (not weights or any(not float(k) > 0 for k in weights)):
        raise ConfigError("adaptive.prior_rounds", f"list positive weights in rounds (e.g. [3, 10, 30]), got {weights}")
    for name in VARIANTS:
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


def _results(windows: Sequence[Window], rc: ReplayConfig, profile: DeviceProfile, fallback: str = "qwen"
             ) -> list[ReplayResult]:
    """One replay per window. A window whose first source is ineligible (D.4.3) runs on ``fallback``,
    as the fixed configuration does (``selection.fixed_config_times``)."""
    out = []
    for w in windows:
        cfg = rc
        if rc.source:
            first, *rest = rc.source.split(SEPARATOR)
            if not w.sources[first].eligible:
                cfg = ReplayConfig(rc.scheme, SEPARATOR.join([fallback, *(s for s in rest if s != fallback)]),
                                   **rc.settings)
        out.append(replay(w, cfg, profile))
    return out


def _frame(windows: Sequence[Window], rc: ReplayConfig, profile: DeviceProfile) -> pl.DataFrame:
    """Per-window tokens and time (``_results``)."""
    return results_frame(_results(windows, rc, profile)).select("window_id", "tokens", "time")


def slot_acceptance(results: Sequence[ReplayResult]) -> float:
    """Pooled conditional acceptance of a chain slot over every verified round: accepted slots over
    tried ones, counted as ``width.AcceptanceEstimate`` counts them (``tried_slots``)."""
    tried = accepted = 0
    for r in results:
        for rec in r.records:
            if rec.chain:
                tried += tried_slots(len(rec.chain), rec.accepted)
                accepted += rec.accepted
    return accepted / tried if tried else PRIOR


def _tps(frame: pl.DataFrame) -> float:
    return float(frame["tokens"].sum() / frame["time"].sum())


def resident_sets(selected: str, sources: Sequence[str]) -> list[str]:
    """Candidate resident sets, the selected source first: alone, with each other source, with all."""
    others = [s for s in sources if s != selected]
    sets = [selected, *(SEPARATOR.join((selected, s)) for s in others)]
    if len(others) > 1:
        sets.append(SEPARATOR.join((selected, *others)))
    return sets


def device_table(windows: list[Window], profile: DeviceProfile, cfg: DictConfig) -> tuple[pl.DataFrame, dict]:
    """Rows (one per method) and the dev choices for one device profile."""
    roles, workers = source_roles(cfg), int(cfg.workers)
    ws = priced_as(windows, profile, roles)
    names = sorted({s for w in windows for s in w.sources})
    sources = [s for s in (profile_source(profile, s, roles) for s in names) if s in profile.sources]
    dev, test = split_windows(ws, max(1, round(len(ws) * cfg.dataset.dev_fraction)), seed=int(cfg.seed))
    top = min(MAX_BUDGET, max(profile.verifier.widths()) - 1)  # never beyond a priced width (D.2.1)
    budgets = [b for b in cfg.budgets if b <= top]
    sel = select_budget(dev, profile, sources, budgets, workers=workers)
    bound = sel.budget if cfg.adaptive.bound == "selected" else top

    # Where the online estimates start is a deployment choice too: the acceptance the fixed configuration
    # saw on dev, weighted as the number of rounds that does best on dev (``adaptive.prior_rounds``).
    prior: dict[str, float] = {}
    if cfg.adaptive.fit_prior:
        prior["prior"] = slot_acceptance(_results(dev.windows, ReplayConfig("as2d", source=sel.source,
                                                                            budget=sel.budget), profile))
        if all(w.drafts is not None for w in dev.windows):  # the drafter's own: what serial SD saw on dev
            prior["draft_prior"] = slot_acceptance(_results(dev.windows, ReplayConfig("sd"), profile))

    def config(name: str, source: str, **extra: object) -> ReplayConfig:
        online = VARIANTS[name][0]
        settings = {**method_settings(cfg, name), "budget": bound if online else sel.budget}
        if online:
            settings.update({k: v for k, v in prior.items() if k in settings})
        return ReplayConfig(name, source=source, **{**settings, **extra})

    chosen, weights = {}, {}
    for name, (online, several) in VARIANTS.items():
        chosen[name] = sel.source
        if several:  # the resident set is a deployment choice: made on dev, like the source and budget
            dev_tps = {s: _tps(_frame(dev.windows, config(name, s), profile))
                       for s in resident_sets(sel.source, sources)}
            chosen[name] = max(dev_tps, key=lambda s: (dev_tps[s], -s.count(SEPARATOR)))
        # The prior's weight, and whether the combination drafts at all (hybrid candidates pay only where
        # the drafter is cheap next to the producer it slows): deployment choices, made on dev.
        grid = [{}]
        if online and prior:
            grid = [{"prior_rounds": float(k)} for k in cfg.adaptive.prior_rounds]
        if name == "as2d_adaptive":  # each part that can cost as well as pay is a dev choice
            own = method_settings(cfg, name)
            for key in ("hybrid", "guess"):
                if own.get(key):
                    grid = [{**g, key: v} for g in grid for v in (True, False)]
        if len(grid) > 1:
            dev_g = [_tps(_frame(dev.windows, config(name, chosen[name], **g), profile)) for g in grid]
            weights[name] = grid[max(range(len(grid)), key=lambda i: (dev_g[i], -i))]
    catalog = run_catalog(test.windows, as2d_catalog(sources, budgets), profile, workers=workers)
    oracle = hindsight_oracle(catalog, (sel.source, sel.budget))
    # The same oracle over a stronger fixed catalog -- the guarded anchor, and the EOS candidate left to the
    # bonus: the two rules of this work a fixed configuration can use too. A gain over it is adaptation.
    strong = as2d_catalog(sources, budgets, "as2d_guarded", leave_eos=True)
    strong_oracle = hindsight_oracle(run_catalog(test.windows, strong, profile, workers=workers),
                                     (sel.source, sel.budget))
    base = _frame(test.windows, ReplayConfig("target_only"), profile)
    frames = {"target_only": (base, "target_only"),
              "as2d_fixed": (oracle.per_window.select("window_id", "tokens", pl.col("selected_time").alias("time")),
                             f"as2d/{sel.source}/b{sel.budget}")}
    for name in VARIANTS:
        rc = config(name, chosen[name], **weights.get(name, {}))
        frames[name] = (_frame(test.windows, rc, profile), rc.label)
    def online(source: str) -> pl.DataFrame:
        if source == chosen["as2d_online"]:  # that run is in the table already
            return frames["as2d_online"][0]
        return _frame(test.windows, config("as2d_online", source, **weights.get("as2d_online", {})), profile)

    resident = chosen["as2d_adaptive"].split(SEPARATOR)
    for row, runs in ((SOURCE_HINDSIGHT, sources),  # the online budget reads the first-named source only
                      (RESIDENT_HINDSIGHT, [SEPARATOR.join([s, *(r for r in resident if r != s)]) for s in resident])):
        best = pl.concat([online(s) for s in runs]).group_by("window_id", maintain_order=True).agg(
            pl.col("tokens").first(), pl.col("time").min())
        frames[row] = (best, f"min({', '.join(f'as2d_online/{s}' for s in runs)})")
    t_fixed = _tps(frames["as2d_fixed"][0])
    rows = []
    for method, (f, label) in frames.items():
        j = f.join(base.select("window_id", pl.col("time").alias("t_base")), on="window_id")
        if j.height != len(test.windows) or f["tokens"].sum() != base["tokens"].sum():
            raise RuntimeError(f"{profile.name}/{method}: per-window results do not cover the test split")
        tps = _tps(f)
        rows.append({"device": profile.name, "method": method, "config": label, "tps": tps,
                     "slower_than_target": float((j["time"] > j["t_base"] * (1 + 1e-9)).mean()),
                     "of_oracle": tps / oracle.tps_oracle, "oracle_gap": 1.0 - tps / oracle.tps_oracle,
                     "of_strong_oracle": tps / strong_oracle.tps_oracle,
                     "vs_fixed": tps / t_fixed - 1.0, "tps_oracle": oracle.tps_oracle,
                     "test_windows": len(test.windows), "dev_windows": len(dev.windows)})
    return pl.DataFrame(rows), {"source": sel.source, "budget": sel.budget, "bound": bound, "resident": chosen,
                                "prior": prior.get("prior"), "draft_prior": prior.get("draft_prior"),
                                "dev_choice": weights}


def goals(table: pl.DataFrame) -> pl.DataFrame:
    """The goals per device (docs/adaptive.md) for the combination: >= 99% of the oracle (98% on Xiaomi 14), and
    never more than 1% below fixed As²d."""
    return table.filter(pl.col("method") == "as2d_adaptive").select(
        "device", (pl.col("of_oracle") >= pl.when(pl.col("device") == "xiaomi_14").then(0.98).otherwise(0.99))
        .alias("oracle_goal_met"), (pl.col("vs_fixed") >= -0.01).alias("fixed_goal_met"))


def native_costs(cfg: DictConfig) -> tuple[dict[int, float], int]:
    """This machine's round cost per width (ms), plus key 0: one serial drafter forward (hybrid
    candidates); and the widest chain it prices (the online bound under ``adaptive.bound=max``)."""
    from workbench.native.bench import profile_costs

    from .config import device_profile

    profile = device_profile("host", cfg)  # this machine's profile: calibrate first or refuse (calibration.*)
    costs = profile_costs(profile)
    costs[0] = profile.source(profile.serial_drafter).op_ms
    return costs, min(MAX_BUDGET, max(profile.verifier.widths()) - 1)


def run_native(cfg: DictConfig, out: Path) -> JobResult:
    from workbench.native.bench import Method, run_bench
    from workbench.native.episodes import host_overrides, host_setup
    from workbench.native.windows import demo_windows

    from .config import check_models

    check_models(cfg)
    n, model = cfg.native, OmegaConf.to_container(cfg.model, resolve=True)
    costs, widest = native_costs(cfg)
    names = list(cfg.adaptive.native_methods)
    over = {**host_overrides(int(cfg.model.budget)),
            **{m: {k: v for k, v in method_settings(cfg, m).items() if k != "budget"} for m in names}}
    setup = host_setup(model, overrides=over)
    setup.costs = costs
    for m in names:  # online methods: bounded like replay's (adaptive.bound); fixed ones keep the pair's b
        if m in VARIANTS and VARIANTS[m][0] and cfg.adaptive.bound == "max":
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
    tables, metrics, choices = [], {}, []
    for profile in tqdm(devices(cfg), desc="adaptive", unit="device"):
        t, chosen = device_table(windows, profile, cfg)
        tables.append(t)
        choices.append({"device": profile.name, "selected": f"{chosen['source']}/b{chosen['budget']}",
                        "online_bound": chosen["bound"], "prior": chosen["prior"], "draft_prior": chosen["draft_prior"],
                        **{f"{key}_{k}": v for k, g in chosen["dev_choice"].items() for key, v in g.items()},
                        **{f"resident_{k}": v for k, v in chosen["resident"].items() if VARIANTS[k][1]}})
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
    return JobResult(metrics, {"adaptive": table, "choices": pl.DataFrame(choices), "goals": goals(table)}, {},
                     summary, {"synthetic": str(bool(cfg.dataset.synthetic))})
