"""Adaptive As²d against the fixed dev-selected budget and the hindsight oracle, per phone profile.

For each profile: select one (source, budget) on a development split (D.2.6), then on the test
split replay target-only, fixed As²d, and As²d with an online budget (``as2d_online``, bounded by
``--max-budget``, same source), and the per-window hindsight oracle over the fixed catalog
(D.4.3). Prints pooled TPS, the share of windows slower than target-only, and each method's TPS
as a share of the oracle's (an adaptive method may exceed 100%: the oracle is the best *fixed*
configuration per window). Every replay is audited for exactness. Nothing here is asserted.

    python benchmarks/adaptive_bench.py [--windows 240] [--dataset synthetic|demo] [--workers 2]
"""

from __future__ import annotations

import argparse

import polars as pl

from workbench.replay.catalog import as2d_catalog, run_catalog
from workbench.replay.profile import load_profile
from workbench.replay.result import ReplayConfig
from workbench.replay.selection import hindsight_oracle, select_budget, split_windows
from workbench.replay.synthetic import SyntheticSpec, paper_like_sources, synthetic_windows

PROFILES = ("k70_pro", "xiaomi_11_pro", "xiaomi_14", "redmi_note_9_pro")


def per_window(windows, cfg: ReplayConfig, profile, workers: int) -> pl.DataFrame:
    return run_catalog(windows, [cfg], profile, workers=workers).select("window_id", "tokens", "time")


def tps(base: pl.DataFrame, frame: pl.DataFrame) -> float:
    return float(base["tokens"].sum() / frame["time"].sum())


def slower(base: pl.DataFrame, frame: pl.DataFrame) -> float:
    j = frame.join(base, on="window_id", suffix="_base")
    return float((j["time"] > j["time_base"] * (1 + 1e-9)).mean())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--windows", type=int, default=240)
    ap.add_argument("--dev", type=float, default=0.3, help="development share of the windows")
    ap.add_argument("--max-budget", type=int, default=24)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--bound", choices=("selected", "max"), default="selected",
                    help="online budget's upper bound: the dev-selected budget, or the widest priced width")
    ap.add_argument("--profiles", nargs="*", default=list(PROFILES))
    args = ap.parse_args()

    windows = synthetic_windows(SyntheticSpec(n_windows=args.windows, sources=paper_like_sources()))
    sources = ("qwen", "parakeet", "sensevoice")
    dev, test = split_windows(windows, int(len(windows) * args.dev), seed=0)
    print(f"SYNTHETIC windows: {len(dev.windows)} dev, {len(test.windows)} test; sources {', '.join(sources)}")
    head = f"{'profile':<18}{'target-only':>12}{'fixed':>16}{'online':>16}{'oracle':>9}" \
           f"{'fixed/or':>10}{'online/or':>10}{'slower fx/on':>14}"
    print(head)
    for name in args.profiles:
        profile = load_profile(name)
        top = min(args.max_budget, max(profile.verifier.widths()) - 1)  # never beyond a priced width (D.2.1)
        budgets = range(1, top + 1)
        sel = select_budget(dev, profile, sources, budgets, workers=args.workers)
        catalog = run_catalog(test.windows, as2d_catalog(sources, budgets), profile, workers=args.workers)
        oracle = hindsight_oracle(catalog, (sel.source, sel.budget))
        base = per_window(test.windows, ReplayConfig("target_only"), profile, args.workers)
        bound = sel.budget if args.bound == "selected" else top
        online = per_window(test.windows, ReplayConfig("as2d_online", source=sel.source, budget=bound),
                            profile, args.workers)
        fixed = oracle.per_window.select("window_id", pl.col("selected_time").alias("time"))

        t_base, t_fixed, t_online, t_oracle = tps(base, base), tps(base, fixed), tps(base, online), oracle.tps_oracle
        print(f"{name:<18}{t_base:>12.2f}{t_fixed:>10.2f} ({sel.source[:4]}/b{sel.budget:<2}){t_online:>10.2f}"
              f"{'':>6}{t_oracle:>9.2f}{100 * t_fixed / t_oracle:>9.1f}%{100 * t_online / t_oracle:>9.1f}%"
              f"{100 * slower(base, fixed):>7.0f}%/{100 * slower(base, online):.0f}%")


if __name__ == "__main__":
    main()
