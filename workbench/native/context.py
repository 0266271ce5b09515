"""What drives host replay error, fitted into the profile (D.3): context length and cold calls.

A target call costs more the longer the committed prefix (attention over the KV cache), and the
first call after a window's prefill is slower (caches cold after idle). From calibration samples:

* per width K, a least-squares line ``ms = a_K + slope_K * pos`` over the width sweep's idle samples
  (``pos`` = committed tokens = sweep offset + 1); the profile keeps the width's median as its cost
  at ``ref_tokens`` (the median sample position) and the slope; the sd of the residuals is the
  width's dispersion. A slope is kept only when it exceeds ``SLOPE_SIGNIFICANCE`` standard errors
  over at least ``SLOPE_MIN_SAMPLES`` samples, else it is 0 (the rule R_GROWTH applies to the
  producer): the sweep has three offsets, and a slope its noise made is extrapolated over every
  call of a window, far enough on a cheap model to price a call below zero;
* K1's slope, where the native target-only runs give enough rounds, from those rounds instead:
  Sen's slope (the median of the pairwise slopes between rounds of one run, so each run keeps its own
  level), kept only when its rank confidence interval (``SLOPE_SIGNIFICANCE`` standard deviations of
  Kendall's statistic, summed over runs) excludes 0 (``within_run_slope``). A decode loop's
  consecutive calls see one machine speed; the sweep's few offsets, repeated minutes apart on a VM
  whose speed drifts, mostly measure the drift. A least-squares line follows one stalled round (a VM
  pause mid-run): with a run's rounds in context order, the stall tilts the whole line, and a wrong K1
  slope misprices every window shorter or longer than the calibration window;
* the target-only step at ``ref_tokens``: median over native target-only rounds (after the first)
  of the charged round time moved to ``ref_tokens`` along the K1 slope;
* the cold-call surcharge: median excess of each run's first round over that line;
* the residual: RMS of target-only rounds (after the first) around the line, in ms;
* per width, the line of As²d's calls that started beside the running producer
  (``concurrent_lines``): a least-squares slope with one level per run over those calls, kept like a
  sweep slope only past ``SLOPE_SIGNIFICANCE`` standard errors, else 0. Beside the producer the two
  processes share the cores and the memory bus; the idle sweep's attention slope does not describe
  how such a call moves along a window, and extrapolated over a short window's early calls it prices
  them below what they cost.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl


@dataclass
class ContextFitResult:
    context: dict[str, Any]  # the profile's verifier.context mapping
    step: dict[str, Any]  # the profile's target_step_ms entry (at ref_tokens)
    sd: dict[int, tuple[float, int]]  # width -> (residual sd ms, n)


SLOPE_SIGNIFICANCE = 2.0  # a sweep slope within this many standard errors of zero is taken as none
SLOPE_MIN_SAMPLES = 6  # fewer sweep samples at a width than this: no slope (too few to test one)


def _line(x: np.ndarray, y: np.ndarray) -> tuple[float, float, np.ndarray]:
    if len(set(x.tolist())) < 2:
        return 0.0, float(np.median(y)), y - np.median(y)
    slope, icept = np.polyfit(x, y, 1)
    return float(slope), float(icept), y - (slope * x + icept)


def significant_line(x: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray, str]:
    """(slope, residuals, how it was judged): the least-squares slope of ``y`` on ``x`` when it exceeds
    ``SLOPE_SIGNIFICANCE`` standard errors over at least ``SLOPE_MIN_SAMPLES`` samples, else 0 with the
    residuals around the mean."""
    slope, _, res = _line(x, y)
    sxx = float(((x - x.mean()) ** 2).sum())
    if len(x) < SLOPE_MIN_SAMPLES or sxx <= 0.0:
        return 0.0, y - y.mean(), f"too few samples for a slope (< {SLOPE_MIN_SAMPLES}): 0"
    se = float(np.sqrt(float((res ** 2).sum()) / (len(x) - 2) / sxx))
    kept, judged = _judged(slope, se)
    return (kept, res, judged) if kept else (0.0, y - y.mean(), judged)


WITHIN_RUN_MIN_ROUNDS = 20  # fewer target-only rounds (after the first) than this: K1's slope from the sweep


RUN_KEYS = ("window_id", "rep")


def round_times(rounds: pl.DataFrame) -> pl.DataFrame:
    """Target-only round records (columns window_id, rep, round, t_end) in run order, with ``dur`` (ms
    charged to the round: from the previous round's end) and ``pos`` (committed tokens before it; the
    prefill made one)."""
    return rounds.sort(*RUN_KEYS, "round").with_columns(
        (1000 * (pl.col("t_end") - pl.col("t_end").shift(1, fill_value=0.0).over(RUN_KEYS))).alias("dur"),
        (pl.col("round") + 1).cast(pl.Float64).alias("pos"))


def within_run_slope(rounds: pl.DataFrame) -> tuple[float, int, str] | None:
    """Sen's slope (ms per committed token) of target-only round times on their context length over
    pairs of rounds within one run (``rounds``: as ``round_times`` returns them; a run's first round left
    out: cold), kept when its rank confidence interval excludes 0, else 0. ``(slope, rounds used, how
    it was judged)``, or None with fewer than ``WITHIN_RUN_MIN_ROUNDS`` rounds or no spread."""
    r = rounds.filter(pl.col("round") > 0)
    if r.height < WITHIN_RUN_MIN_ROUNDS:
        return None
    pairs, var = [], 0.0
    for _, g in r.group_by(*RUN_KEYS):
        x, y = g["pos"].to_numpy().astype(float), g["dur"].to_numpy().astype(float)
        i, j = np.triu_indices(len(x), 1)
        dx = x[j] - x[i]
        pairs.append((y[j] - y[i])[dx != 0] / dx[dx != 0])
        n = len(x)
        var += n * (n - 1) * (2 * n + 5) / 18  # Kendall's S under no trend, runs independent
    slopes = np.sort(np.concatenate(pairs))
    if slopes.size == 0:
        return None
    half = SLOPE_SIGNIFICANCE * np.sqrt(var) / 2  # ranks either side of the median (Sen's interval)
    lo = slopes[max(0, int(np.floor((slopes.size - 1) / 2 - half)))]
    hi = slopes[min(slopes.size - 1, int(np.ceil((slopes.size - 1) / 2 + half)))]
    slope = float(np.median(slopes))
    if lo <= 0.0 <= hi:
        return 0.0, r.height, (f"slope {slope:+.4g} with 0 inside its {SLOPE_SIGNIFICANCE:g}-sigma rank "
                               f"interval [{lo:+.4g}, {hi:+.4g}]: 0")
    return slope, r.height, f"rank interval [{lo:+.4g}, {hi:+.4g}] excludes 0"


def _within_run_line(frame: pl.DataFrame, x: pl.Expr, y: pl.Expr) -> tuple[float, float] | None:
    """(slope, standard error) of ``y`` on ``x`` by least squares with one level per run (``RUN_KEYS``);
    None without spread in ``x``."""
    d = frame.select((x - x.mean().over(RUN_KEYS)).alias("x"), (y - y.mean().over(RUN_KEYS)).alias("y"))
    xs, ys = d["x"].to_numpy().astype(float), d["y"].to_numpy().astype(float)
    sxx = float(xs @ xs)
    if sxx <= 0.0:
        return None
    slope = float(xs @ ys) / sxx
    return slope, float(np.sqrt(float(((ys - slope * xs) ** 2).sum()) / max(1, len(xs) - 2) / sxx))


def _judged(slope: float, se: float) -> tuple[float, str]:
    """The slope kept past ``SLOPE_SIGNIFICANCE`` standard errors, else 0, and how it was judged."""
    t = abs(slope) / se if se > 0 else float("inf")
    if t < SLOPE_SIGNIFICANCE:
        return 0.0, f"slope {slope:+.4g} within {SLOPE_SIGNIFICANCE:g} standard errors of 0: 0"
    return slope, f"{t:.1f} standard errors from 0"


def concurrent_lines(calls: pl.DataFrame, date: str) -> dict[int, dict[str, Any]]:
    """``verifier.context.concurrent_slope_ms``: per width, the within-run slope (ms per committed token)
    of the native calls beside the producer (``calls``: columns window_id, rep, width, pos, call in
    seconds; first calls left out by the caller). A width with fewer than ``SLOPE_MIN_SAMPLES`` calls
    gets no entry (replay takes its idle slope there)."""
    out: dict[int, dict[str, Any]] = {}
    if calls.height == 0:
        return out
    for (k,), g in sorted(calls.group_by("width"), key=lambda kv: kv[0][0]):
        if g.height < SLOPE_MIN_SAMPLES:
            continue
        line = _within_run_line(g, pl.col("pos").cast(pl.Float64), 1000 * pl.col("call"))
        if line is None:
            continue
        slope, judged = _judged(*line)
        out[int(k)] = {"v": round(slope, 5),
                       "source": f"fitted on host {date}, n={g.height} native As2d calls beside the producer, least "
                                 f"squares on context length with one level per run, {judged}"}
    return out


def context_fit(sweep: pl.DataFrame, target_only_rounds: pl.DataFrame, date: str) -> ContextFitResult | None:
    """The fit from the idle width sweep (``kind == verify`` samples) and native target-only round
    records (columns round, t_end, window_id, rep); ``None`` without both."""
    idle = sweep.filter(~pl.col("concurrent")) if sweep.height else sweep
    if idle.height == 0 or target_only_rounds.height == 0 or idle["offset"].null_count() == idle.height:
        return None
    src = f"fitted on host {date}"
    slopes, sd = {}, {}
    for k in sorted(set(idle["width"].to_list())):
        g = idle.filter(pl.col("width") == k)
        x = (g["offset"] + 1).to_numpy().astype(float)
        slope, res, judged = significant_line(x, g["ms"].to_numpy())
        slopes[k] = {"v": round(slope, 5),
                     "source": f"{src}, n={g.height}, least squares on context length, {judged}"}
        if g.height >= 2:
            sd[k] = (round(float(np.std(res, ddof=1)), 4), g.height)
    ref = float(statistics.median((idle["offset"] + 1).to_list()))
    r = round_times(target_only_rounds)
    live = within_run_slope(r)
    if live is not None:
        slopes[1] = {"v": round(live[0], 5), "source": f"{src}, n={live[1]} native target-only rounds, Sen's "
                                                       f"slope on context length within runs, {live[2]}"}
    s1 = slopes.get(1, {"v": 0.0})["v"]
    dur_ms, pos = r["dur"].to_numpy(), r["pos"].to_numpy()
    first = r["round"].to_numpy() == 0
    later = ~first
    if later.sum() < 2:
        return None
    at_ref = dur_ms[later] - s1 * (pos[later] - ref)
    step = float(np.median(at_ref))
    resid = at_ref - step
    cold = max(0.0, float(np.median(dur_ms[first] - (step + s1 * (pos[first] - ref))))) if first.any() else 0.0
    n_runs = int(first.sum())
    context = {
        "ref_tokens": {"v": round(ref, 2), "source": f"{src}, median committed tokens of the width sweep"},
        "slope_ms": slopes,
        "cold_ms": {"v": round(cold, 4), "source": f"{src}, n={n_runs} runs, median excess of the first round"},
        "residual_ms": {"v": round(float(np.sqrt(np.mean(resid ** 2))), 4),
                        "source": f"{src}, n={int(later.sum())} target-only rounds, RMS around the line"},
    }
    step_entry = {"v": round(step, 4), "source": f"{src}, n={int(later.sum())} target-only rounds, median "
                                                 f"charged round time at {ref:g} committed tokens (K1 slope)"}
    return ContextFitResult(context, step_entry, sd)


__all__ = ["SLOPE_MIN_SAMPLES", "SLOPE_SIGNIFICANCE", "WITHIN_RUN_MIN_ROUNDS", "ContextFitResult", "concurrent_lines",
           "context_fit",
           "round_times", "significant_line", "within_run_slope"]
