"""Re-price stored native D.3 runs under replay's cost model as it is now (paper D.3).

``python -m workbench.native.reprice outputs/.../native_runs.json`` reads a run store (``run_store.py``,
written by ``workbench.native.agreement`` and by the demo) and applies the D.3 rule again: the same
median-latency native runs, the same drift probes, the frozen profile stored with them (or
``--profile``). No model runs and no clock is read, so it takes seconds: a change to how replay prices
the producer, the verifier or the loop is judged on the runs it must predict before any new
measurement. The native side is the stored measurement; only the replay side changes.

``--sensitivity`` re-prices the runs again with the target's drift ratio moved by a few percent each way
(``SENSITIVITY``; the producer keeps its own ratio). A window whose error jumps between neighbouring
factors sits on a readiness threshold: a round that waits for a ready candidate at one speed takes a
plain step at the next, and the rounds after it change. Such a window's error says how far one
deterministic replay stands from a median over runs that fell on both sides, more than how wrong a price is.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

import polars as pl
import yaml

from workbench.errors import WorkbenchError
from workbench.replay.profile import DeviceProfile, load_profile, parse_profile

from .agreement import agreement_frame
from .agreement_report import decomposition_lines, provenance, summarize, verdict
from .run_store import RunStore, load_runs

SHOWN = ("window_id", "tokens", "signed_error_pct", "target_only_error_pct", "one_ratio_signed_error_pct",
         "drift_ratio", "drift_ratio_producer", "noise_floor_pct", "matched")


def stored_profile(store: RunStore, path: str | Path) -> DeviceProfile:
    """The frozen profile the store was priced with (its YAML text, kept in the store)."""
    if store.profile_yaml is None:
        raise WorkbenchError("the run store keeps no profile", str(path),
                             "pass --profile with the host profile the runs were measured under")
    return parse_profile(yaml.safe_load(store.profile_yaml), file=f"{path}#profile")


def reprice(path: str | Path, profile: DeviceProfile | None = None) -> tuple[pl.DataFrame, dict]:
    """The D.3 agreement frame and summary of the stored runs at ``path``, priced by ``profile`` (default:
    the stored one)."""
    store = load_runs(path)
    profile = profile or stored_profile(store, path)
    frame = agreement_frame(store.episodes, store.inputs, profile)
    return frame, summarize(frame, profile)


SENSITIVITY = (0.97, 0.985, 1.0, 1.015, 1.03)  # the target's drift ratio times these


def sensitivity(path: str | Path, profile: DeviceProfile | None = None,
                factors: Sequence[float] = SENSITIVITY) -> pl.DataFrame:
    """Each window's signed error (%) with the target's drift ratio times each factor (one column per
    factor, ``x<factor>``), and ``max_step_pts``: the largest change between neighbouring factors."""
    store = load_runs(path)
    profile = profile or stored_profile(store, path)
    if profile.anchor_ms is None or not store.episodes.probes:
        raise WorkbenchError("no drift anchor to move", str(path),
                             "re-price a store whose runs were probed under an anchored profile")
    cols: dict[str, list[float]] = {}
    ids: list[str] = []
    for f in sorted(factors):
        frame = agreement_frame(store.episodes, store.inputs, profile, target_scale=f)
        ids = frame["window_id"].to_list()
        cols[f"x{f:g}"] = frame["signed_error_pct"].to_list()
    errs = list(cols.values())
    steps = [max((abs(b[i] - a[i]) for a, b in zip(errs, errs[1:], strict=False)), default=0.0)
             for i in range(len(ids))]
    return pl.DataFrame({"window_id": ids, **cols, "max_step_pts": steps})


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Re-price stored native D.3 runs under replay's current model.")
    ap.add_argument("store", help="a native_runs.json (workbench.native.agreement --out-dir, or a demo run's output)")
    ap.add_argument("--profile", default=None, help="price with this profile instead of the stored one")
    ap.add_argument("--json", action="store_true", help="also print the summary as JSON")
    ap.add_argument("--sensitivity", action="store_true",
                    help="also print each window's error with the target's drift ratio moved by "
                         + ", ".join(f"x{f:g}" for f in SENSITIVITY))
    args = ap.parse_args(argv)
    try:
        profile = load_profile(args.profile) if args.profile else None
        frame, summary = reprice(args.store, profile)
        moved = sensitivity(args.store, profile) if args.sensitivity else None
    except WorkbenchError as err:
        sys.exit(err.headline())
    except ValueError as err:  # a profile that cannot price these runs (e.g. probes but no anchor)
        sys.exit(f"{args.store}: {err}")
    summary.update(provenance("python -m workbench.native.reprice " + shlex.join(argv or sys.argv[1:])))
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=200, float_precision=2):
        print(frame.select(SHOWN))
        if moved is not None:
            print("signed error (%) with the target's drift ratio moved:")
            print(moved)
    if args.json:
        print(json.dumps(summary, indent=1, default=str))
    print("\n".join(decomposition_lines(frame)))
    print(verdict(summary))


if __name__ == "__main__":
    main()
