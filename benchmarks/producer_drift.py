"""The producer's publication interval beside the target, window by window and pass by pass (D.3).

Replay prices the producer by one line calibrated on the anchor window (``op_ms x concurrent_factor``
at ``ref_tokens``). This script says whether that line still holds: it runs native As²d on the
calibration window and on ``--windows`` windows of ``--split``, one run per window per pass, windows
interleaved within each pass, and prints the median interval between the producer's publications
(before target EOS) per window, per pass, and per verify width the target was running meanwhile.

Read it this way: per-window medians that agree with each other but not with the profile's line mean the
producer's CPU has drifted since calibration (on a VM the producer's vCPU drifts apart from the
target's, which the target-only drift probe does not see); medians that differ between windows
when interleaved mean the producer's cost depends on the window. Never asserted in a test.

    python benchmarks/producer_drift.py [--engine mnn] [--split dev] [--windows 8] [--passes 4]
        [--profile <host profile yaml>]
"""

from __future__ import annotations

import argparse
from typing import Any

import polars as pl

from workbench.models.pair import load_pair
from workbench.models.registry import load_model_config
from workbench.native.bench_inputs import dataset_config
from workbench.native.driver import NativeHost, NativeResult
from workbench.native.episodes import host_setup, native_episodes
from workbench.native.windows import bench_windows
from workbench.replay.profile import load_profile


def intervals(window_id: str, run_pass: int, run: NativeResult) -> list[dict[str, Any]]:
    """One row per publication before target EOS: the interval since the previous one (ms) and the
    width of the target call running at its midpoint (0: between calls)."""
    t = [max(0.0, x) for x in run.producer_times]
    calls = [(r.t_start, r.t_end, r.width) for r in run.records]
    rows = []
    for i in range(1, len(t)):
        if t[i] >= run.t_eos:
            break
        mid = 0.5 * (t[i - 1] + t[i])
        width = next((k for s, e, k in calls if s <= mid < e), 0)
        rows.append({"window_id": window_id, "pass": run_pass, "position": i, "width": width,
                     "interval_ms": 1000 * (t[i] - t[i - 1])})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="whisper_base")
    ap.add_argument("--engine", choices=("torch", "mnn"), default=None, help="default: the model's engine")
    ap.add_argument("--split", choices=("dev", "test"), default="dev")
    ap.add_argument("--dataset", default="bench")
    ap.add_argument("--windows", type=int, default=8)
    ap.add_argument("--passes", type=int, default=4)
    ap.add_argument("--profile", default=None, help="a host profile: print its producer line beside the medians")
    args = ap.parse_args()
    cfg = load_model_config(args.model)
    if args.engine:
        cfg = {**cfg, "engine": args.engine}
    data = dataset_config(args.dataset)
    windows = [*bench_windows("dev", data, 1), *bench_windows(args.split, data, args.windows)]
    windows = list({w.window_id: w for w in windows}.values())
    setup = host_setup(load_pair(cfg, engine=cfg.get("engine") or "torch"))
    rows: list[dict[str, Any]] = []
    with NativeHost(setup.producer, setup.verifier) as host:
        for p in range(args.passes):
            for w in windows:
                ep = native_episodes(setup, [w], ["as2d"], 1, 1 if p == 0 else 0, host)
                rows += [r for run in ep.runs(w.window_id, "as2d") for r in intervals(w.window_id, p, run)]
                print(f"pass {p + 1}/{args.passes}: {w.window_id}", flush=True)
    df = pl.DataFrame(rows)
    med = pl.col("interval_ms").median()
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=200, float_precision=2, fmt_str_lengths=40):
        print(f"calibration window: {windows[0].window_id}; split {args.split}; {args.passes} passes")
        print(df.group_by("window_id", maintain_order=True).agg(med.alias("median_ms"), pl.len().alias("n")))
        print(df.group_by("window_id", "pass", maintain_order=True).agg(med)
              .pivot(on="pass", index="window_id", values="interval_ms"))
        print(df.group_by("width").agg(med.alias("median_ms"), pl.len().alias("n")).sort("width"))
    if args.profile:
        src = load_profile(args.profile).source(setup.source)
        print(f"profile line at ref_tokens: {src.op_ms:.2f} ms x {src.concurrent_factor:.3f} = "
              f"{src.op_ms * src.concurrent_factor:.2f} ms per publication beside the target")


if __name__ == "__main__":
    main()
