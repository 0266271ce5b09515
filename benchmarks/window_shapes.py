"""The verifier's calls beside the producer on a packed window and on single clips (D.3).

Host calibration prices a width beside the producer by the As²d calls of its episodes (R_LIVE). A
packed calibration window's calls sit late in a long stream, a single clip's early in a short one.
This script runs native As²d on the demo's packed calibration window and on ``--clips`` single dev
clips, one run per window per pass, windows interleaved within each pass, and prints per width the
median call beside the producer (and alone, after it stopped) on each shape, and their ratio.

Read it this way: a ratio near 1 beside the producer means one price serves both shapes; a ratio
well above 1 there while the idle ratio stays near 1 means a short window's calls contend more with
the producer, which a calibration on the packed window alone would price too low. Dev clips only;
never asserted in a test.

    python benchmarks/window_shapes.py [--clips 8] [--passes 3] [--profile <host profile yaml>]
"""

from __future__ import annotations

import argparse
from typing import Any

import polars as pl

from workbench.models.registry import load_model_config
from workbench.native.driver import NativeHost, NativeResult
from workbench.native.episodes import host_setup, native_episodes
from workbench.native.windows import demo_clip_windows, demo_windows
from workbench.replay.profile import load_profile


def calls(window_id: str, shape: str, run: NativeResult) -> list[dict[str, Any]]:
    """One row per target call after the window's first (its cold call): width, ms, and whether it started
    while the producer ran (replay's rule: a call starting after the producer's end is idle)."""
    end = run.producer_end
    return [{"window_id": window_id, "shape": shape, "width": r.width, "beside": r.t_start < end,
             "ms": 1000 * (r.t_end - r.t_start)} for r in run.records[1:]]


def shape_table(df: pl.DataFrame) -> pl.DataFrame:
    """Per width and placement (beside the producer or alone): median ms and count on each shape, and
    the clip median over the packed one."""
    g = df.group_by("width", "beside", "shape").agg(pl.col("ms").median().alias("median_ms"), pl.len().alias("n"))
    wide = g.pivot(on="shape", index=["width", "beside"], values=["median_ms", "n"])
    return wide.with_columns((pl.col("median_ms_clip") / pl.col("median_ms_packed")).alias("clip_over_packed")) \
        .sort("beside", "width", descending=[True, False])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="whisper_base")
    ap.add_argument("--clips", type=int, default=8)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--profile", default=None, help="a host profile: the target runs by its kernel plan")
    args = ap.parse_args()
    cfg = load_model_config(args.model)
    calib, _ = demo_windows(model=cfg)
    windows = [(calib[0], "packed"), *((w, "clip") for w in demo_clip_windows(args.clips, model=cfg))]
    setup = host_setup(cfg)
    if args.profile:
        setup.use_profile(load_profile(args.profile))
    rows: list[dict[str, Any]] = []
    with NativeHost(setup.producer, setup.verifier) as host:
        for p in range(args.passes):
            for w, shape in windows:
                ep = native_episodes(setup, [w], ["as2d"], 1, 1 if p == 0 else 0, host)
                rows += [r for run in ep.runs(w.window_id, "as2d") for r in calls(w.window_id, shape, run)]
                print(f"pass {p + 1}/{args.passes}: {w.window_id} ({shape})", flush=True)
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=200, float_precision=3):
        print(f"packed window {calib[0].window_id} and {args.clips} dev clips; {args.passes} passes")
        print(shape_table(pl.DataFrame(rows)))


if __name__ == "__main__":
    main()
