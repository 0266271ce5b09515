"""Adaptive As²d against the fixed dev-selected budget and the hindsight oracle, per device profile.

For each profile: select one (source, budget) on a development split (D.2.6), then on the test
split replay target-only, fixed As²d, each issue-19 variant on the same source -- online budget
(``as2d_online``), substitution guess (``as2d_subst``), hybrid candidates (``as2d_hybrid``) --
online source choice over every resident source (``as2d_sources``), and their combination
(``as2d_adaptive``, every source), plus the per-window hindsight oracle over the fixed
catalog (D.4.3). Reports pooled TPS, the share of windows slower than target-only, and TPS as a
share of the oracle's (an adaptive method may exceed 100%: the oracle is the best *fixed*
configuration per window). Every replay is audited for exactness. Nothing here is asserted.

Budgets: fixed-budget variants use the dev-selected b; online ones are bounded by ``--bound``
(the selected b, or the widest width the profile prices).

    python benchmarks/adaptive_bench.py [--windows 240] [--dataset synthetic|demo] [--out bench.parquet]

``--dataset demo`` reads only cached demo traces (``experiment=demo`` collects them); it never
starts a collection, and says so when the cache lacks a clip.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import polars as pl

from workbench.io import atomic_write_parquet
from workbench.replay.catalog import as2d_catalog, run_catalog
from workbench.replay.engine import replay_many, results_frame
from workbench.replay.multi_source import SEPARATOR
from workbench.replay.profile import load_profile
from workbench.replay.result import ReplayConfig
from workbench.replay.selection import hindsight_oracle, select_budget, split_windows
from workbench.replay.synthetic import SyntheticSpec, paper_like_sources, synthetic_windows
from workbench.replay.trajectory import Window

PROFILES = ("k70_pro", "xiaomi_11_pro", "xiaomi_14", "redmi_note_9_pro")
VARIANTS = {  # method -> (scheme, bounded online, every resident source)
    "as2d_online": ("as2d_online", True, False),
    "as2d_subst": ("as2d_subst", False, False),
    "as2d_hybrid": ("as2d_hybrid", False, False),
    "as2d_sources": ("as2d_sources", True, True),
    "as2d_adaptive": ("as2d_adaptive", True, True),
    "as2d_adaptive_1src": ("as2d_adaptive", True, False),  # the combination on the selected source only
}


def per_window(windows, cfg: ReplayConfig, profile, workers: int) -> pl.DataFrame:
    if cfg.source and SEPARATOR in cfg.source:  # several resident sources: the catalog runner takes one
        return results_frame(replay_many(list(windows), cfg, profile)).select("window_id", "tokens", "time")
    return run_catalog(windows, [cfg], profile, workers=workers).select("window_id", "tokens", "time")


def tps(base: pl.DataFrame, frame: pl.DataFrame) -> float:
    return float(base["tokens"].sum() / frame["time"].sum())


def slower(base: pl.DataFrame, frame: pl.DataFrame) -> float:
    j = frame.join(base, on="window_id", suffix="_base")
    return float((j["time"] > j["time_base"] * (1 + 1e-9)).mean())


def demo_cached_windows() -> list[Window]:
    """The demo's windows from the trace cache only; a missing clip is an error naming the fix."""
    from hydra import compose, initialize_config_dir

    from workbench.jobs import demo_traces as dt

    with initialize_config_dir(config_dir=str(__import__("pathlib").Path("conf").resolve()), version_base=None):
        cfg = compose("config", overrides=["experiment=demo"])
    corpus = dt.demo_corpus(cfg)
    limits = dt._CachedOnly(cfg.model)
    cache = dt.trace_cache(cfg, limits)
    from workbench.traces.cache_key import file_sha256

    missing = [c.window_id for c in corpus.clips
               if not cache.ready(c.window_id, file_sha256(c.path), limits.vocab_size)]
    if missing:
        raise SystemExit(f"--dataset demo: {len(missing)} clip(s) have no cached trace ({', '.join(missing[:3])}...); "
                         "run `python -m workbench.run experiment=demo` once to collect them")
    return dt.demo_windows(cfg)


def bench_profile(name: str, dev, test, sources: Sequence[str], args: argparse.Namespace) -> list[dict]:
    profile = load_profile(name)
    top = min(args.max_budget, max(profile.verifier.widths()) - 1)  # never beyond a priced width (D.2.1)
    budgets = range(1, top + 1)
    sel = select_budget(dev, profile, sources, budgets, workers=args.workers)
    catalog = run_catalog(test.windows, as2d_catalog(sources, budgets), profile, workers=args.workers)
    oracle = hindsight_oracle(catalog, (sel.source, sel.budget))
    base = per_window(test.windows, ReplayConfig("target_only"), profile, args.workers)
    frames = {"target_only": base,
              "as2d_fixed": oracle.per_window.select("window_id", pl.col("selected_time").alias("time"))}
    bound = sel.budget if args.bound == "selected" else top
    # Every resident source, the dev-selected one first (the primary breaks ties).
    every = SEPARATOR.join([sel.source, *(s for s in sources if s != sel.source)])
    for method, (scheme, online, several) in VARIANTS.items():
        cfg = ReplayConfig(scheme, source=every if several else sel.source, budget=bound if online else sel.budget)
        frames[method] = per_window(test.windows, cfg, profile, args.workers)
    t_fixed = tps(base, frames["as2d_fixed"])
    return [{"profile": name, "method": m, "source": sel.source, "budget": sel.budget, "tps": tps(base, f),
             "slower_than_target": slower(base, f), "of_oracle": tps(base, f) / oracle.tps_oracle,
             "vs_fixed": tps(base, f) / t_fixed - 1.0, "tps_oracle": oracle.tps_oracle, "windows": len(test.windows)}
            for m, f in frames.items()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--windows", type=int, default=240)
    ap.add_argument("--dataset", choices=("synthetic", "demo"), default="synthetic")
    ap.add_argument("--dev", type=float, default=0.3, help="development share of the windows")
    ap.add_argument("--max-budget", type=int, default=24)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--bound", choices=("selected", "max"), default="selected",
                    help="online budget's upper bound: the dev-selected budget, or the widest priced width")
    ap.add_argument("--profiles", nargs="*", default=list(PROFILES))
    ap.add_argument("--out", help="write every row to this parquet file (the ablation notebook reads it)")
    args = ap.parse_args()

    if args.dataset == "demo":
        windows = demo_cached_windows()
        sources = tuple(sorted(set.intersection(*(set(w.sources) for w in windows))))
    else:
        windows = synthetic_windows(SyntheticSpec(n_windows=args.windows, sources=paper_like_sources()))
        sources = ("qwen", "parakeet", "sensevoice")
    dev, test = split_windows(windows, max(1, int(len(windows) * args.dev)), seed=0)
    print(f"{args.dataset.upper()} windows: {len(dev.windows)} dev, {len(test.windows)} test; "
          f"sources {', '.join(sources)}; online bound: {args.bound}")
    rows: list[dict] = []
    for name in args.profiles:
        got = bench_profile(name, dev, test, sources, args)
        rows += got
        r0 = got[0]
        print(f"\n{name}: selected {r0['source']}/b{r0['budget']}, oracle {r0['tps_oracle']:.2f} TPS")
        print(f"  {'method':<15}{'TPS':>8}{'% oracle':>10}{'vs fixed':>10}{'slower than TO':>16}")
        for r in got:
            print(f"  {r['method']:<15}{r['tps']:>8.2f}{100 * r['of_oracle']:>9.1f}%{100 * r['vs_fixed']:>+9.1f}%"
                  f"{100 * r['slower_than_target']:>15.0f}%")
    if args.out:
        frame = pl.DataFrame(rows).with_columns(pl.lit(args.dataset).alias("dataset"),
                                                pl.lit(args.bound).alias("bound"))
        atomic_write_parquet(args.out, frame)
        print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
