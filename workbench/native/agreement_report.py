"""The D.3 agreement's report: its summary, the one verdict line, the decomposition as text, the
noise floor beside the error, and the table for docs/results.md (machine, command, split, date).
The measurement itself is ``agreement.py``."""

from __future__ import annotations

import datetime as dt
import math
import os
import statistics
import sys
from collections.abc import Mapping
from typing import Any

import polars as pl

from workbench.replay.profile import DeviceProfile

from .decomposition import TERMS, dominant_term
from .machine import cpu_model
from .noise_floor import reps_for
from .steadiness import STEADY_SPREAD

GOAL_MAE_PCT = 5.0  # D.3 agreement: within 5% (paper: 5.81% on phones)
GOAL_POOLED_PCT = 2.0  # D.3: the signed pooled error (all windows' tokens over their time) within +-2%
GOAL_TARGET_ONLY_MAE_PCT = 3.0  # D.3: target-only's own replay, per-window MAE


def provenance(command: str | None = None) -> dict[str, Any]:
    """What the figure names: machine (CPU model, cores), command, date, machine load when it finished."""
    return {"machine": f"{cpu_model()}, {os.cpu_count()} cores", "command": command or " ".join(sys.argv),
            "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "load": " ".join(f"{x:.2f}" for x in os.getloadavg())}


def _mean(frame: pl.DataFrame, col: str) -> float:
    """Mean over the windows that have a value (NaN: a window measured once has no spread, or a frame
    written before the column existed)."""
    vals = [v for v in (frame[col].to_list() if col in frame.columns else []) if v is not None and math.isfinite(v)]
    return statistics.fmean(vals) if vals else math.nan


def repricing_head(title: str, command: str, split: str | None, measured: str) -> list[str]:
    """The head of a docs/results.md section that re-prices stored runs (no model runs): title, the machine
    this re-pricing ran on and where the stored runs were ``measured``, command, split, date."""
    from .bench_report import machine_facts

    m, p = machine_facts(), provenance(command)
    return [f"**{title}**", "", f"- machine: this re-pricing ran on {m['cpu']}, {m['cores']} cores (no model runs); "
            f"{measured}", f"- command: `{p['command']}`",
            f"- split of the stores: {split or 'as each store was measured'}",
            f"- date of this re-pricing: {p['date'][:10]}", ""]


def reps_range(summary: Mapping[str, Any]) -> str:
    """The repetitions per window: ``5``, or ``5-12`` where a repeat rule measured some windows more."""
    lo, hi = int(summary.get("reps", 0)), int(summary.get("reps_max", 0))
    return f"{lo}-{hi}" if hi > lo else str(lo)


def noise_line(summary: Mapping[str, Any]) -> str:
    """The native medians' own noise beside the MAE (``noise_floor.py``), and the repetitions that
    would put the As²d floor under half the goal."""
    floor, reps = summary.get("noise_floor_pct", math.nan), int(summary.get("reps", 0))
    if not math.isfinite(floor):
        return "noise floor unknown (one repetition per window)"
    need = reps_for(floor, reps, GOAL_MAE_PCT / 2)
    return (f"noise floor of the native medians at {reps_range(summary)} reps: As²d {floor:.2f}%, target-only "
            f"{summary['target_only_noise_floor_pct']:.2f}% (--reps {need} would put As²d's under "
            f"{GOAL_MAE_PCT / 2:g}%)")


def summarize(frame: pl.DataFrame, profile: DeviceProfile) -> dict[str, Any]:
    return {"windows": frame.height, "mae_pct": float(frame["abs_error_pct"].mean()),
            "signed_mean_pct": float(frame["signed_error_pct"].mean()),
            "pooled_error_pct": _pooled_pct(frame, "signed_error_pct"), **_median_run(frame),
            "target_only_mae_pct": float(frame["target_only_error_pct"].abs().mean()),
            "anchored": bool((frame["drift_ratio"] != 1.0).any()),
            "frozen_mae_pct": float(frame["frozen_signed_error_pct"].abs().mean()),
            "frozen_target_only_mae_pct": float(frame["frozen_target_only_error_pct"].abs().mean()),
            "drift_min": float(frame["drift_ratio"].min()), "drift_max": float(frame["drift_ratio"].max()),
            **_as2d_anchor(frame), **_producer_anchor(frame), **_concurrent_anchor(frame), **_calibrated_anchor(frame),
            "width_shape_min": float(frame["width_shape"].min()), "width_shape_max": float(frame["width_shape"].max()),
            "width_mae_pct": (float(frame["width_signed_error_pct"].abs().mean())
                              if frame["width_signed_error_pct"].null_count() < frame.height else None),
            "reps": int(frame["reps"].min()) if "reps" in frame.columns and frame.height else 0,
            "reps_max": int(frame["reps"].max()) if "reps" in frame.columns and frame.height else 0,
            "noise_floor_pct": _mean(frame, "noise_floor_pct"),
            "target_only_noise_floor_pct": _mean(frame, "target_only_noise_floor_pct"),
            "matched_windows": int(frame["matched"].sum()), "profile": profile.file, "goal_mae_pct": GOAL_MAE_PCT,
            "within_goal": bool(frame["abs_error_pct"].mean() <= GOAL_MAE_PCT), **_steadiness(profile)}


def _steadiness(profile: DeviceProfile) -> dict[str, Any]:
    """The profile's calibration verdict (``steadiness.py``), absent for a profile never checked."""
    c = profile.calibration
    if c is None:
        return {}
    return {"calibration_steady": c.steady, "calibration_spread": c.spread, "calibration_inversions": c.inversions}


def calibration_note(summary: Mapping[str, Any]) -> str:
    """``; calibration unsteady (...)`` for the D.3 line when the profile's calibration moved, else ''."""
    if summary.get("calibration_steady", True):
        return ""
    return (f"; calibration unsteady (probe checkpoints x{summary['calibration_spread']:.2f}, "
            f"{summary['calibration_inversions']} width inversion(s))")


def _pooled_pct(rows: pl.DataFrame, col: str) -> float:
    """The pooled TPS error (%) of the windows' signed errors in ``col``: replayed time from
    ``signed = T_native / T_replay - 1``, all windows' time pooled (their tokens cancel)."""
    replay_s = (rows["time_native"] / (1 + rows[col] / 100)).sum()
    return 100 * (rows["time_native"].sum() / replay_s - 1)


def _median_run(frame: pl.DataFrame) -> dict[str, Any]:
    """Beside the verdict: the errors against the median native run instead of each repetition against its
    own probes (``interleaved.py``); absent in a frame written before the judged error was interleaved."""
    col = "median_run_signed_error_pct"
    if col not in frame.columns or frame[col].null_count() == frame.height:
        return {}
    return {"median_run_mae_pct": float(frame[col].abs().mean()), "median_run_pooled_pct": _pooled_pct(frame, col),
            "median_run_target_only_mae_pct": float(frame["median_run_target_only_error_pct"].abs().mean())}


def _calibrated_anchor(frame: pl.DataFrame) -> dict[str, Any]:
    """The MAE and pooled error with the calibration's measured anchors instead of the profile's prices
    of them (``anchors.py``; beside the verdict)."""
    col = "calibrated_anchor_signed_error_pct"
    if col not in frame.columns or frame[col].null_count() == frame.height:
        return {"calibrated_anchor_compared": False}
    rows = frame.filter(pl.col(col).is_not_null())
    return {"calibrated_anchor_compared": True, "calibrated_anchor_mae_pct": float(rows[col].abs().mean()),
            "calibrated_anchor_pooled_pct": _pooled_pct(rows, col)}


def _as2d_anchor(frame: pl.DataFrame) -> dict[str, Any]:
    """As²d's own drift range and the MAE As²d's replay has when scaled by it (beside the verdict)."""
    if "drift_ratio_as2d" not in frame.columns or frame["drift_ratio_as2d"].null_count() == frame.height:
        return {"as2d_anchored": False}
    return {"as2d_anchored": True, "as2d_drift_min": float(frame["drift_ratio_as2d"].min()),
            "as2d_drift_max": float(frame["drift_ratio_as2d"].max()),
            "as2d_anchor_mae_pct": float(frame["as2d_anchor_signed_error_pct"].abs().mean())}


def _concurrent_anchor(frame: pl.DataFrame) -> dict[str, Any]:
    """The verify calls' drift beside the producer (the As²d probe's measured over priced concurrent
    calls, ``drift.py``; the judged replay prices those calls by it) and, beside the verdict, the MAE and
    pooled error with them priced by the target-only probe's idle ratio instead."""
    col = "idle_ratio_concurrent_signed_error_pct"
    if col not in frame.columns or frame[col].null_count() == frame.height:
        return {"concurrent_anchored": False}
    rows = frame.filter(pl.col(col).is_not_null())
    return {"concurrent_anchored": True, "concurrent_drift_min": float(rows["drift_ratio_concurrent"].min()),
            "concurrent_drift_max": float(rows["drift_ratio_concurrent"].max()),
            "idle_ratio_concurrent_mae_pct": float(rows[col].abs().mean()),
            "idle_ratio_concurrent_pooled_pct": _pooled_pct(rows, col)}


def _producer_anchor(frame: pl.DataFrame) -> dict[str, Any]:
    """The producer's own drift range (its times priced by it in the judged replay,
    ``drift.producer_drift_ratio``), and beside the verdict the As²d MAE and pooled error with one ratio,
    the target-only probe's, for both processes."""
    col = "one_ratio_signed_error_pct"
    if col not in frame.columns or frame[col].null_count() == frame.height:
        return {"producer_anchored": False}
    rows = frame.filter(pl.col(col).is_not_null())
    return {"producer_anchored": True, "producer_drift_min": float(rows["drift_ratio_producer"].min()),
            "producer_drift_max": float(rows["drift_ratio_producer"].max()),
            "one_ratio_mae_pct": float(rows[col].abs().mean()),
            "one_ratio_pooled_pct": _pooled_pct(rows, col)}


def decomposed_error(frame: pl.DataFrame) -> str:
    """The column the decomposition's terms add up to: the median run's error (``interleaved.py``), or the
    judged one in a frame written before the two differed."""
    col = "median_run_signed_error_pct"
    return col if col in frame.columns and frame[col].null_count() < frame.height else "signed_error_pct"


def decomposition_lines(frame: pl.DataFrame) -> list[str]:
    """The D.3 decomposition as text: per window the median run's signed error (``decomposed_error``) and
    each term (signed-TPS-error points, they sum to it), then each term's mean signed and mean absolute
    share, and the carrier."""
    cols = [f"d_{t}" for t in TERMS]
    e = decomposed_error(frame)
    head = f"{'window':<16}{'error':>8}" + "".join(f"{t[:12]:>13}" for t in TERMS) + f"{'pub lag ms':>11}{'first':>8}"
    out = ["D.3 decomposition of the median runs (signed TPS error points; the terms sum to the error):", head]
    for r in frame.iter_rows(named=True):
        out.append(f"{str(r['window_id'])[:15]:<16}{r[e]:>+8.2f}"
                   + "".join(f"{r[c]:>+13.2f}" for c in cols) + f"{r['d_publication_lag_ms']:>+11.1f}"
                   + f"{r.get('d_first_publication_lag_ms') or 0.0:>+8.1f}")
    if frame.height:
        out.append(f"{'mean':<16}{frame[e].mean():>+8.2f}"
                   + "".join(f"{frame[c].mean():>+13.2f}" for c in cols))
        out.append(f"{'mean |.|':<16}{frame[e].abs().mean():>8.2f}"
                   + "".join(f"{frame[c].abs().mean():>13.2f}" for c in cols))
        rows = [{t: r[f"d_{t}"] for t in TERMS} for r in frame.iter_rows(named=True)]
        out.append(f"largest term: {dominant_term(rows)}; readiness (rounds with nothing ready) native "
                   f"{frame['d_readiness_native'].mean():.2f} vs replay {frame['d_readiness_replay'].mean():.2f}")
    return out


def verdict(summary: Mapping[str, Any]) -> str:
    """The one D.3 line: MAE against the 5% goal (the paper reports 5.81% on phones)."""
    ok = "PASS" if summary["within_goal"] else "FAIL"
    how = "frozen profile"
    if summary.get("anchored"):
        widths = ""
        if summary.get("width_mae_pct") is not None:
            widths = (f"; each width by its own probe (widest drifting x{summary['width_shape_min']:.2f}-"
                      f"x{summary['width_shape_max']:.2f} of K1's): MAE {summary['width_mae_pct']:.2f}%")
        own, cores = "", ""
        if summary.get("calibrated_anchor_compared"):
            own = (f"; the calibration's measured anchors: MAE {summary['calibrated_anchor_mae_pct']:.2f}%, "
                   f"pooled {summary['calibrated_anchor_pooled_pct']:+.2f}%")
        if summary.get("producer_anchored"):
            cores = f", the producer's core x{summary['producer_drift_min']:.2f}-x{summary['producer_drift_max']:.2f}"
            own += (f"; one ratio for both processes: MAE {summary['one_ratio_mae_pct']:.2f}%, "
                    f"pooled {summary['one_ratio_pooled_pct']:+.2f}%")
        if summary.get("as2d_anchored"):
            own += (f"; As²d by its own probe (x{summary['as2d_drift_min']:.2f}-x{summary['as2d_drift_max']:.2f}): "
                    f"MAE {summary['as2d_anchor_mae_pct']:.2f}%")
        if summary.get("concurrent_anchored"):
            cores += (f", the verify calls beside the producer x{summary['concurrent_drift_min']:.2f}-"
                      f"x{summary['concurrent_drift_max']:.2f}")
            own += (f"; the calls beside the producer by the target's idle ratio: MAE "
                    f"{summary['idle_ratio_concurrent_mae_pct']:.2f}%, pooled "
                    f"{summary['idle_ratio_concurrent_pooled_pct']:+.2f}%")
        if "median_run_mae_pct" in summary:
            own += (f"; against the median run: MAE {summary['median_run_mae_pct']:.2f}%, pooled "
                    f"{summary['median_run_pooled_pct']:+.2f}%, target-only "
                    f"{summary['median_run_target_only_mae_pct']:.2f}%")
        how = (f"drift-anchored (the target's core x{summary['drift_min']:.2f}-x{summary['drift_max']:.2f} of the "
               f"profile's price{cores}{own}{widths}; frozen profile: MAE {summary['frozen_mae_pct']:.2f}%, "
               f"target-only {summary['frozen_target_only_mae_pct']:.2f}%)")
    return (f"D.3 replay vs native: MAE {summary['mae_pct']:.2f}% over {summary['windows']} held-out windows "
            f"(goal <= {summary['goal_mae_pct']:g}%): {ok}; pooled {summary['pooled_error_pct']:+.2f}%, "
            f"target-only MAE {summary['target_only_mae_pct']:.2f}%, {how}; {noise_line(summary)}; "
            f"profile {summary['profile']}{calibration_note(summary)}")


def agreement_markdown(frame: pl.DataFrame, summary: Mapping[str, Any], split: str, engine: str = "torch") -> str:
    """The D.3 table for docs/results.md: machine, exact command, split and date, the errors against
    their goals, and each decomposition term's mean signed and mean absolute share."""
    from .bench_report import machine_facts

    m = machine_facts()
    head = [f"**D.3 agreement, {split} windows, {engine} engine** ({summary['windows']} held-out windows)", "",
            f"- machine: {m['cpu']}, {m['cores']} cores; torch {m['torch']}, MNN {m['mnn']}; "
            f"load average (1/5/15 min) {summary['load']}",
            f"- command: `{summary['command']}`",
            f"- split: {split} (the profile was calibrated on other windows)",
            f"- run date: {summary['date'][:10]}", "",
            "| measure | value | goal |", "|---|---|---|",
            f"| As²d per-window MAE (%) | {summary['mae_pct']:.2f} | <= {summary['goal_mae_pct']:g} |",
            f"| As²d pooled signed error (%) | {summary['pooled_error_pct']:+.2f} | within ±{GOAL_POOLED_PCT:g} |",
            f"| target-only MAE (%) | {summary['target_only_mae_pct']:.2f} | <= {GOAL_TARGET_ONLY_MAE_PCT:g} |",
            f"| frozen-profile As²d MAE (%) | {summary['frozen_mae_pct']:.2f} | |",
            f"| noise floor of the native As²d medians (%), {reps_range(summary)} reps | "
            f"{summary['noise_floor_pct']:.2f} | |",
            f"| noise floor of the native target-only medians (%) | {summary['target_only_noise_floor_pct']:.2f} | |",
            f"| windows whose outputs matched | {summary['matched_windows']} / {summary['windows']} | all |"]
    if "calibration_spread" in summary:
        head.append(f"| calibration steadiness: probe checkpoints (largest / smallest), width inversions | "
                    f"x{summary['calibration_spread']:.2f}, {summary['calibration_inversions']} | "
                    f"<= x{STEADY_SPREAD:.2f}, 0 |")
    head.append("")
    terms = ["| term | mean signed (points) | mean absolute (points) |", "|---|---|---|"]
    terms += [f"| {t} | {frame[f'd_{t}'].mean():+.2f} | {frame[f'd_{t}'].abs().mean():.2f} |" for t in TERMS]
    return "\n".join(head + terms + ["", f"- {verdict(summary)}"]) + "\n"
