"""One process's speed against the next: does a drift probe in another process carry? (D.3 on phones)

A phone runner serves each request in a fresh process. This script starts ``--processes`` fresh
processes one after the other; each loads the model pair's target and runs native target-only (the
workbench's host driver, as the Python runner does) on the anchor window and on ``--windows`` demo
evaluation windows, interleaved, ``--reps`` times after one warm-up. It prints each process's median
time per token on every window and each window's ratio to the anchor window in the same process, then
the spread across processes of both.

Read it this way: a level spread well above the ratio spread means the speed is the process's (or the
minute's), and an anchor timed inside the configuration's own process (``workbench.jobs.phone_probe``)
carries where a probe in another process does not. Never asserted in a test.

    python benchmarks/process_speed.py [--model whisper_base] [--processes 8] [--windows 3] [--reps 5]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = """
import json, statistics, sys
from workbench.models.registry import load_model_config
from workbench.native.driver import NativeHost
from workbench.native.episodes import host_setup, run_scheme
from workbench.native.windows import demo_windows
model, n, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
cfg = load_model_config(model)
calib, evals = demo_windows(6.0, model=cfg)
windows = [calib[0], *evals[:n]]
setup = host_setup(cfg)
per = {w.window_id: [] for w in windows}
with NativeHost(None, setup.verifier) as host:
    for rep in range(-1, reps):
        for w in windows:
            r = run_scheme(host, setup, w, "target_only")
            if rep >= 0:
                per[w.window_id].append(1000 * r.time / max(1, len(r.output)))
print(json.dumps({k: statistics.median(v) for k, v in per.items()}))
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="whisper_base", help="conf/model name")
    ap.add_argument("--processes", type=int, default=8)
    ap.add_argument("--windows", type=int, default=3, help="demo evaluation windows beside the anchor window")
    ap.add_argument("--reps", type=int, default=5, help="timed runs per window and process (after one warm-up)")
    args = ap.parse_args(argv)
    if min(args.processes, args.windows, args.reps) < 1:
        ap.error("--processes, --windows and --reps must each be at least 1")
    rows: list[dict[str, float]] = []
    for k in range(args.processes):
        done = subprocess.run([sys.executable, "-c", CHILD, args.model, str(args.windows), str(args.reps)],
                              capture_output=True, text=True)
        if done.returncode:
            print(f"process {k} failed (exit {done.returncode}): {done.stderr.strip().splitlines()[-1:]}")
            return 1
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        anchor, *others = rows[-1]
        cells = " ".join(f"{w} {rows[-1][w]:.2f} ms (x{rows[-1][w] / rows[-1][anchor]:.3f})" for w in others)
        print(f"process {k}: anchor {anchor} {rows[-1][anchor]:.2f} ms/token; {cells}", flush=True)
    anchor, *others = rows[0]
    for w in others:
        level = [r[w] for r in rows]
        ratio = [r[w] / r[anchor] for r in rows]
        print(f"{w}: spread across processes of its time per token {100 * (max(level) / min(level) - 1):.1f}%, "
              f"of its ratio to the anchor window in the same process {100 * (max(ratio) / min(ratio) - 1):.1f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
