"""Replay throughput on the full oracle catalog: SYNTHETIC windows x sources x budgets 1-24.

The full-catalog case: 688 synthetic windows (~137 tokens each) x 3 sources x 24 budgets on the
K70 profile, audited, with process parallelism. Prints windows*configs per second and the
oracle summary. Wall time is measured here, never asserted in a test.

    python benchmarks/replay_bench.py [--windows 688] [--workers 2] [--profile k70_pro]
"""

from __future__ import annotations

import argparse
import os
import time

from workbench.replay.catalog import as2d_catalog, run_catalog
from workbench.replay.profile import load_profile
from workbench.replay.selection import hindsight_oracle
from workbench.replay.synthetic import SyntheticSpec, paper_like_sources, synthetic_windows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--windows", type=int, default=688)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--profile", default="k70_pro")
    ap.add_argument("--max-budget", type=int, default=24)
    ap.add_argument("--no-audit", action="store_true")
    args = ap.parse_args()

    t0 = time.perf_counter()
    windows = synthetic_windows(SyntheticSpec(n_windows=args.windows, sources=paper_like_sources()))
    t1 = time.perf_counter()
    profile = load_profile(args.profile)
    sources = ("qwen", "parakeet", "sensevoice")
    configs = as2d_catalog(sources, range(1, args.max_budget + 1))
    catalog = run_catalog(windows, configs, profile, workers=args.workers, audit=not args.no_audit)
    t2 = time.perf_counter()
    report = hindsight_oracle(catalog, ("qwen", 7))

    tokens = sum(w.n_tokens for w in windows)
    grid = len(windows) * len(configs)
    print(f"SYNTHETIC catalog on {profile.name}: {len(windows)} windows ({tokens / len(windows):.1f} tokens/window)"
          f" x {len(sources)} sources x {args.max_budget} budgets = {grid} window*configs "
          f"({catalog.height} eligible, {int(catalog['rounds'].sum())} rounds)")
    print(f"generation {t1 - t0:.2f} s; replay {t2 - t1:.2f} s with {args.workers} workers "
          f"-> {catalog.height / (t2 - t1):.0f} window*configs/s")
    print(f"oracle: selected qwen/b7 {report.tps_selected:.2f} TPS, oracle {report.tps_oracle:.2f} TPS, "
          f"gap {report.gap:.2f}%")


if __name__ == "__main__":
    main()
