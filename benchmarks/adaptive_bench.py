"""Adaptive As²d against the fixed dev-selected budget and the hindsight oracle, per device profile.

A command-line front for the ``adaptive`` job (``workbench/jobs/adaptive.py``, where the method is
described): the same table without MLflow. For the tracked run use
``python -m workbench.run experiment=adaptive dataset.n_windows=240``.

    python benchmarks/adaptive_bench.py [--windows 240] [--dataset synthetic|demo] [--bound selected|max]
                                        [--profiles k70_pro ...] [--out bench.parquet]

``--dataset demo`` reads only cached demo traces (``experiment=demo`` collects them); it never
starts a collection, and says so when the cache lacks a clip. Nothing here is asserted.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import polars as pl
from hydra import compose, initialize_config_dir

from workbench.io import atomic_write_parquet
from workbench.jobs import adaptive
from workbench.jobs.config import device_profile

CONF = Path(__file__).resolve().parents[1] / "conf"
PROFILES = ("k70_pro", "xiaomi_11_pro", "xiaomi_14", "redmi_note_9_pro")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--windows", type=int, default=240, help="synthetic windows (dev share selects)")
    ap.add_argument("--dataset", choices=("synthetic", "demo"), default="synthetic")
    ap.add_argument("--bound", choices=("selected", "max"), default="max",
                    help="online methods' upper bound: the dev-selected budget, or the widest priced width")
    ap.add_argument("--profiles", nargs="*", default=list(PROFILES))
    ap.add_argument("--out", help="write every row to this parquet file")
    args = ap.parse_args()

    overrides = ["experiment=adaptive", f"adaptive.bound={args.bound}"]
    overrides += ["dataset=demo"] if args.dataset == "demo" else [f"dataset.n_windows={args.windows}"]
    with initialize_config_dir(config_dir=str(CONF), version_base=None):
        cfg = compose("config", overrides=overrides)
    adaptive.validate(cfg)
    windows = adaptive.cached_windows(cfg)
    rows = []
    for name in args.profiles:
        table, chosen = adaptive.device_table(windows, device_profile(name, cfg), cfg)
        rows.append(table)
        print(f"\n{name}: selected {chosen['source']}/b{chosen['budget']}, online bound {chosen['bound']}, "
              f"resident {chosen['resident']['as2d_adaptive']}; oracle {table['tps_oracle'][0]:.2f} TPS")
        print(f"  {'method':<15}{'TPS':>8}{'% oracle':>10}{'vs fixed':>10}{'slower than TO':>16}")
        for r in table.iter_rows(named=True):
            print(f"  {r['method']:<15}{r['tps']:>8.2f}{100 * r['of_oracle']:>9.1f}%{100 * r['vs_fixed']:>+9.1f}%"
                  f"{100 * r['slower_than_target']:>15.0f}%")
    if args.out:
        frame = pl.concat(rows).with_columns(pl.lit(args.dataset).alias("dataset"), pl.lit(args.bound).alias("bound"))
        atomic_write_parquet(args.out, frame)
        print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
