"""How well the native side of D.3 reproduces across independent runs of the same windows (paper D.3).

D.3 judges replay against each window's *median* native latency. The noise floor (``noise_floor.py``)
bounds that median's scatter inside one run, whose repetitions share one process, one calibration and
one stretch of the machine's time. A second run of the same windows -- another demo from a fresh
clone, another ``agreement`` run on the same split -- measures every median again, and the difference
between the two is what the native side itself reproduces to.

For each pair of stores and each window both measured with the same target output, the **native
difference** is ``100 (TPS_b / TPS_a - 1)`` of a method's median latency, in the signed-TPS-error points
D.3 uses; ``normalized`` divides each run's As²d median by its own target-only median first, which
takes out a speed shared by the whole run (what drift anchoring takes out), and ``window_scatter`` is
what is left once the pair's mean normalized difference (an As²d speed shared by the whole run) is
taken out too: the part no run-wide anchor can remove. If each run's median
scatters independently around the window's typical latency, a replay that predicted that typical
latency exactly would still show a per-window MAE of the pairs' mean absolute difference over
``sqrt(2)`` against any one run (for normal scatter ``E|X - mu| = E|X - Y| / sqrt(2)``): the
**cross-run floor**. A D.3 MAE near it says the runs cannot tell that replay from a perfect one; a
cross-run floor far above the within-run noise floor says the repetitions of one run move together.
Only a pair whose profiles planned the same kernels (``same_plan``: each width's kernel and padded rows,
``models/kernel_plan.py``) ran the same forwards: runs calibrated to different plans differ by design,
and their pair measures the plans as well as the noise.

``python -m workbench.native.reproducibility STORE STORE [STORE ...]`` reads ``native_runs.json`` files
(``workbench.native.agreement --out-dir``, or a demo run's output folder) and prints the pairs;
``--markdown docs/results.md`` files them as section ``d3-reproducibility`` (``--section``: another).
"""

from __future__ import annotations

import argparse
import itertools
import math
import shlex
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from workbench.errors import DataError, WorkbenchError

from .episodes import Episodes
from .noise_floor import median_noise_pct
from .run_store import RunStore, load_runs

SECTION = "d3-reproducibility"
PAIR_COLUMNS = ("a", "b", "same_plan", "windows", "as2d_mae_pct", "as2d_mean_pct", "target_only_mae_pct",
                "normalized_mae_pct", "normalized_mean_pct", "window_scatter_pct", "cross_run_floor_pct",
                "window_floor_pct", "within_run_floor_pct")


@dataclass(frozen=True, slots=True)
class WindowMedians:
    """One run's median latencies (s) on one window, and the target output every run there produced."""

    as2d: float
    target_only: float
    output: tuple[int, ...]
    as2d_noise_pct: float  # the within-run noise floor of the As²d median (``median_noise_pct``)


@dataclass(frozen=True, slots=True)
class RunMedians:
    """One store: its label, its windows' medians, and the kernel plan its profile ran the target by
    (``(width, kernel, rows)`` per width; empty: no plan, or no profile kept)."""

    label: str
    windows: dict[str, WindowMedians]
    plan: tuple[tuple[int, str, int], ...]


def plan_of(store: RunStore, path: str) -> tuple[tuple[int, str, int], ...]:
    """The kernel plan of the profile a store keeps (``()`` without one)."""
    from .reprice import stored_profile

    if store.profile_yaml is None:
        return ()
    plan = stored_profile(store, path).kernel_plan
    return () if plan is None else tuple((k, c.kernel, c.rows) for k, c in plan.choices.items())


def run_medians(ep: Episodes) -> dict[str, WindowMedians]:
    """Each window that ran both target-only and As²d: its medians and its target-only output."""
    out = {}
    for wid in dict.fromkeys(w for w, _, _, _ in ep.results):
        to, a2 = ep.runs(wid, "target_only"), ep.runs(wid, "as2d")
        if to and a2:
            times = [r.time for r in a2]
            out[wid] = WindowMedians(statistics.median(times), statistics.median(r.time for r in to),
                                     to[0].output, median_noise_pct(times, key=wid))
    return out


def window_differences(a: dict[str, WindowMedians], b: dict[str, WindowMedians]) -> pl.DataFrame:
    """Per window both runs measured with the same target output: run b against run a in signed TPS
    points, As²d raw, target-only raw and As²d over its own run's target-only (``normalized``). A window
    whose outputs differ is left out: the two runs did not decode the same thing."""
    rows = [{"window_id": w,
             "as2d_pct": 100 * (a[w].as2d / b[w].as2d - 1),
             "target_only_pct": 100 * (a[w].target_only / b[w].target_only - 1),
             "normalized_pct": 100 * ((a[w].as2d / a[w].target_only) / (b[w].as2d / b[w].target_only) - 1)}
            for w in a if w in b and a[w].output == b[w].output]
    return pl.DataFrame(rows, schema={"window_id": pl.String, "as2d_pct": pl.Float64,
                                      "target_only_pct": pl.Float64, "normalized_pct": pl.Float64})


def _mean(values: pl.Series) -> float:
    return float(values.mean()) if values.len() else math.nan


def pair_rows(stores: Sequence[RunMedians]) -> pl.DataFrame:
    """One row per pair of stores: the native differences' MAE and mean, the per-window scatter left after
    the run-wide shifts, the cross-run floors they imply (MAE over sqrt(2)), and beside them the mean
    within-run noise floor of the two runs' As²d medians."""
    rows = []
    for ra, rb in itertools.combinations(stores, 2):
        a, b = ra.windows, rb.windows
        d = window_differences(a, b)
        within = [m.as2d_noise_pct for m in (*a.values(), *b.values()) if math.isfinite(m.as2d_noise_pct)]
        mae, norm_mean = _mean(d["as2d_pct"].abs()), _mean(d["normalized_pct"])
        scatter = _mean((d["normalized_pct"] - norm_mean).abs())
        rows.append({"a": ra.label, "b": rb.label, "same_plan": ra.plan == rb.plan, "windows": d.height,
                     "as2d_mae_pct": mae,
                     "as2d_mean_pct": _mean(d["as2d_pct"]), "target_only_mae_pct": _mean(d["target_only_pct"].abs()),
                     "normalized_mae_pct": _mean(d["normalized_pct"].abs()), "normalized_mean_pct": norm_mean,
                     "window_scatter_pct": scatter, "cross_run_floor_pct": mae / math.sqrt(2),
                     "window_floor_pct": scatter / math.sqrt(2),
                     "within_run_floor_pct": statistics.fmean(within) if within else math.nan})
    return pl.DataFrame(rows, schema=dict.fromkeys(PAIR_COLUMNS, pl.Float64) | {
        "a": pl.String, "b": pl.String, "same_plan": pl.Boolean, "windows": pl.Int64}).select(PAIR_COLUMNS)


def load_medians(paths: Sequence[str]) -> list[RunMedians]:
    """Each store's medians and kernel plan, labelled ``run 1``, ``run 2``, ... in the order given; a
    store with no window both methods ran is refused with its name."""
    if len(paths) < 2:
        raise DataError("one run store compares with nothing", " ".join(paths) or "(none)",
                        "pass two or more native_runs.json files of the same windows")
    out = []
    for i, path in enumerate(paths, 1):
        store = load_runs(path)
        medians = run_medians(store.episodes)
        if not medians:
            raise DataError("no window ran both target-only and As²d", path, "pass a D.3 run store")
        out.append(RunMedians(f"run {i}", medians, plan_of(store, path)))
    return out


def _pct(x: float) -> str:
    return f"{x:.2f}"


def _signed(x: float) -> str:
    return f"{x:+.2f}"


# the markdown table: column, header, format
SHOWN: tuple[tuple[str, str, Callable[[Any], str]], ...] = (
    ("a", "a", str), ("b", "b", str), ("same_plan", "same kernel plan", lambda v: "yes" if v else "no"),
    ("windows", "windows", str), ("as2d_mae_pct", "As²d MAE %", _pct), ("as2d_mean_pct", "As²d mean %", _signed),
    ("target_only_mae_pct", "target-only MAE %", _pct), ("normalized_mae_pct", "As²d/target-only MAE %", _pct),
    ("normalized_mean_pct", "As²d/target-only mean %", _signed), ("window_scatter_pct", "per-window scatter %", _pct),
    ("cross_run_floor_pct", "cross-run floor %", _pct), ("window_floor_pct", "per-window floor %", _pct),
    ("within_run_floor_pct", "within-run floor %", _pct))


def markdown(pairs: pl.DataFrame, paths: Sequence[str], command: str, split: str | None = None) -> str:
    """The pairs as a docs/results.md section body: machine, command, the stores, split, date."""
    from .agreement_report import provenance
    from .bench_report import machine_facts

    m, p = machine_facts(), provenance(command)
    head = ["**Native D.3 medians across independent runs of the same windows**", "",
            f"- machine: this comparison ran on {m['cpu']}, {m['cores']} cores; each store was measured on "
            "the machine its own agreement line names",
            f"- command: `{p['command']}`",
            *(f"- run {i}: `{path}`" for i, path in enumerate(paths, 1)),
            f"- split: {split or 'as each store was measured'}; compared: the windows both stores of a pair "
            "measured with the same target output",
            f"- date of this comparison: {p['date'][:10]}", "",
            "| " + " | ".join(label for _, label, _ in SHOWN) + " |", "|---" * len(SHOWN) + "|"]
    rows = ["| " + " | ".join(fmt(r[col]) for col, _, fmt in SHOWN) + " |" for r in pairs.iter_rows(named=True)]
    return "\n".join(head + rows) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="How far native D.3 medians of the same windows move between runs.")
    ap.add_argument("stores", nargs="+", help="native_runs.json files of the same windows (two or more)")
    ap.add_argument("--markdown", default=None, help="also write the pairs as a section of this file")
    ap.add_argument("--section", default=SECTION, help="the section's name (one per set of windows compared)")
    ap.add_argument("--split", default=None, help="the stores' split, as the section names it (e.g. 'bench dev')")
    args = ap.parse_args(argv)
    command = "python -m workbench.native.reproducibility " + shlex.join(argv or sys.argv[1:])
    try:
        pairs = pair_rows(load_medians(args.stores))
    except WorkbenchError as err:
        sys.exit(err.headline())
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=200, float_precision=2):
        print(pairs)
    if args.markdown:
        from workbench.io import write_section

        body = markdown(pairs, args.stores, command, args.split)
        print(f"results table -> {write_section(args.markdown, args.section, body)}")


if __name__ == "__main__":
    main()
