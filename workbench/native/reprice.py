"""Re-price stored native D.3 runs under replay's cost model as it is now (paper D.3).

``python -m workbench.native.reprice outputs/.../native_runs.json [...]`` reads run stores (``run_store.py``,
written by ``workbench.native.agreement`` and by the demo) and applies the D.3 rule again: the same
native runs, the same drift probes, the frozen profile stored with them (or ``--profile``). No model
runs and no clock is read, so it takes seconds: a change to how replay prices the producer, the
verifier or the loop is judged on the runs it must predict before any new
measurement. The native side is the stored measurement; only the replay side changes.

``--markdown F`` (several stores) writes each store's judged errors beside the median run's
(``interleaved.py``) as a section of ``F``, naming the machine, command, split and date.

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
from .agreement_report import decomposition_lines, provenance, repricing_head, summarize, verdict
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


SECTION = "interleaved-dev"  # the results section ``--markdown`` writes by default


def markdown(rows: Sequence[tuple[str, dict]], command: str, split: str | None) -> str:
    """Each store's judged D.3 errors (each repetition at its own probes) beside the median run's, as a
    docs/results.md section body: machine, command, split, date."""
    head = [*repricing_head("D.3 of stored native runs: each repetition at its own probes (judged) and the median run",
                            command, split, "the stores were measured on the machines their agreement lines name"),
            "| store | As²d MAE % median run → judged | pooled % median run → judged | "
            "target-only MAE % median run → judged |", "|---|---|---|---|"]
    keys = (("median_run_mae_pct", "mae_pct"), ("median_run_pooled_pct", "pooled_error_pct"),
            ("median_run_target_only_mae_pct", "target_only_mae_pct"))
    body = [f"| `{store}` | " + " | ".join(f"{s[a]:+.2f} → {s[b]:+.2f}" if "pooled" in a else f"{s[a]:.2f} → {s[b]:.2f}"
                                          for a, b in keys) + " |" for store, s in rows]
    body.append("| mean (pooled: of its size) | " + " | ".join(
        f"{sum(abs(s[a]) for _, s in rows) / len(rows):.2f} → {sum(abs(s[b]) for _, s in rows) / len(rows):.2f}"
        for a, b in keys) + " |")
    return "\n".join(head + body) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Re-price stored native D.3 runs under replay's current model.")
    ap.add_argument("stores", nargs="+",
                    help="native_runs.json files (workbench.native.agreement --out-dir, or a demo run's output)")
    ap.add_argument("--profile", default=None, help="price with this profile instead of the stored one")
    ap.add_argument("--json", action="store_true", help="also print the summary as JSON")
    ap.add_argument("--sensitivity", action="store_true",
                    help="also print each window's error with the target's drift ratio moved by "
                         + ", ".join(f"x{f:g}" for f in SENSITIVITY))
    ap.add_argument("--markdown", default=None, help="also write every store's judged and median-run errors "
                                                     "as a section of this file")
    ap.add_argument("--section", default=SECTION, help="the section's name")
    ap.add_argument("--split", default=None, help="the stores' split, as the section names it (e.g. 'bench dev')")
    args = ap.parse_args(argv)
    command = "python -m workbench.native.reprice " + shlex.join(argv or sys.argv[1:])
    rows = [(store, _one(store, args, command)) for store in args.stores]
    if args.markdown:
        from workbench.io import write_section

        print(f"results table -> {write_section(args.markdown, args.section, markdown(rows, command, args.split))}")


def _one(store: str, args: argparse.Namespace, command: str) -> dict:
    """Re-price one store, print its table, decomposition and verdict; its summary."""
    try:
        profile = load_profile(args.profile) if args.profile else None
        frame, summary = reprice(store, profile)
        moved = sensitivity(store, profile) if args.sensitivity else None
    except WorkbenchError as err:
        sys.exit(err.headline())
    except ValueError as err:  # a profile that cannot price these runs (e.g. probes but no anchor)
        sys.exit(f"{store}: {err}")
    summary.update(provenance(command))
    print(f"== {store}")
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=200, float_precision=2):
        print(frame.select(SHOWN))
        if moved is not None:
            print("signed error (%) with the target's drift ratio moved:")
            print(moved)
    if args.json:
        print(json.dumps(summary, indent=1, default=str))
    print("\n".join(decomposition_lines(frame)))
    print(verdict(summary))
    return summary


if __name__ == "__main__":
    main()
