"""Metrics shared by native runs and replay (paper Sections 5.1-5.3, D.2.7, D.4).

Inputs are polars DataFrames:

* **windows** -- one row per (window, configuration): ``window_id``, ``config``, ``tokens``
  (committed target tokens), ``time`` (charged decode seconds) and, for task TPS,
  ``useful_tokens`` (``useful_tokens`` below);
* **rounds** -- round records (``workbench.decoding.ROUND_COLUMNS``), one row per target call;
* **stages** -- completed stage intervals: ``resource`` (producer / verifier / other),
  ``start``, ``end``, and ``T`` (the run's charged time), plus grouping keys.

TPS always pools tokens over time (sum / sum), never averages per-window rates, unless a
per-window function says so.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import polars as pl


def tps_pooled(windows: pl.DataFrame, by: Sequence[str] | None = None) -> pl.DataFrame | float:
    """Committed tokens over charged time, pooled (per group when ``by`` is given)."""
    expr = (pl.col("tokens").sum() / pl.col("time").sum()).alias("tps")
    if by:
        return windows.group_by(list(by), maintain_order=True).agg(expr)
    return float(windows.select(expr).item())


def useful_tokens(n_tokens: int, ends_with_eos: bool) -> int:
    """Task TPS's numerator for one output (D.1.2, D.4.4): its tokens less the first, chosen in
    prefill before the decode clock starts, and less the EOS when the output ends with one (a capped
    output has none). The one place this rule lives: every task table counts through it."""
    if n_tokens <= 0:
        return 0
    return max(n_tokens - 1 - int(ends_with_eos), 0)


def task_tps(windows: pl.DataFrame, by: Sequence[str] | None = None) -> pl.DataFrame | float:
    """Task TPS as the paper counts it (D.1.2): ``useful_tokens`` over charged time, pooled (per group
    when ``by`` is given; the column is then ``tps_useful``)."""
    expr = (pl.col("useful_tokens").sum() / pl.col("time").sum()).alias("tps_useful")
    if by:
        return windows.group_by(list(by), maintain_order=True).agg(expr)
    return float(windows.select(expr).item())


def tps_per_window(windows: pl.DataFrame) -> pl.DataFrame:
    return windows.with_columns((pl.col("tokens") / pl.col("time")).alias("tps"))


def _chain_len() -> pl.Expr:
    return pl.col("chain").list.len()


def acceptance(rounds: pl.DataFrame) -> float:
    """Accepted candidates / proposed candidates (conditional acceptance)."""
    proposed = rounds.select(_chain_len().sum()).item()
    return float(rounds["accepted"].sum() / proposed) if proposed else float("nan")


def output_tokens(rounds: pl.DataFrame, keys: Sequence[str] = ("window_id", "config"),
                  runs: pl.DataFrame | None = None) -> int:
    """Target output tokens of the runs: every committed token plus each run's first root.

    A run whose output prefill already ended (EOS first, or an output cap of 1) has no rounds,
    so ``rounds`` alone cannot see it; pass ``runs`` (one row per run, e.g. a windows frame)
    to count its root too.
    """
    cols = [k for k in keys if k in rounds.columns]
    n_runs = rounds.select(cols).unique().height if keys else 1
    if runs is not None:
        n_runs = runs.select([k for k in keys if k in runs.columns]).unique().height if keys else runs.height
    return int(rounds.select(pl.col("committed").list.len().sum()).item()) + n_runs


def coverage(rounds: pl.DataFrame, tokens: int | None = None) -> float:
    """Accepted draft tokens / target output tokens (Section 5.2); pass ``tokens`` when some runs
    have no rounds (see ``output_tokens``)."""
    total = output_tokens(rounds) if tokens is None else tokens
    return float(rounds["accepted"].sum() / total)


def readiness(rounds: pl.DataFrame) -> float:
    """Share of rounds that are K=1 with nothing ready (the target advanced alone)."""
    return float(rounds.select(((pl.col("width") == 1) & (pl.col("ready") == 0)).mean()).item())


def multi_token_share(rounds: pl.DataFrame) -> float:
    """Share of rounds with physical width K > 1."""
    return float(rounds.select((pl.col("width") > 1).mean()).item())


def mean_accepted_length(rounds: pl.DataFrame) -> float:
    """vLLM-style mean acceptance length: 1 + accepted tokens per drafted round."""
    drafted = rounds.filter(_chain_len() > 0)
    return 1.0 + float(drafted["accepted"].sum() / drafted.height) if drafted.height else float("nan")


def slowdown_share(windows: pl.DataFrame, baseline: pl.DataFrame) -> float:
    """Share of windows whose TPS is below the baseline's (target-only) on the same window."""
    a = tps_per_window(windows).select("window_id", "tps")
    b = tps_per_window(baseline).select("window_id", pl.col("tps").alias("tps_base"))
    joined = a.join(b, on="window_id", how="inner")
    if joined.height != a.height:
        raise ValueError(f"baseline lacks {a.height - joined.height} of the compared windows")
    return float(joined.select((pl.col("tps") < pl.col("tps_base")).mean()).item())


def work_by_config(windows: pl.DataFrame, rounds: pl.DataFrame) -> pl.DataFrame:
    """Table 10 (D.4.2): pooled TPS with the work behind it, per configuration and dataset.

    Verification rounds, drafter forwards, verifier seconds (target calls) and serial drafting
    seconds (before calls that drafted), per (device, config) and dataset, plus ``dataset ==
    "all"``. ``windows`` gives tokens/time/dataset per run; ``rounds`` the timed round records.
    """
    keys = [k for k in ("device", "config") if k in windows.columns and k in rounds.columns]
    drafted = (pl.col("work_forwards") + pl.col("work_paired_forwards")) > 0
    work = rounds.group_by([*keys, "window_id"]).agg(
        pl.len().alias("rounds"),
        (pl.col("work_forwards") + pl.col("work_paired_forwards")).sum().alias("draft_forwards"),
        (pl.col("t_end") - pl.col("t_start")).sum().alias("verify_s"),
        (pl.col("t_start") - pl.col("t_decide")).filter(drafted).sum().alias("draft_s"),
    )
    runs = windows.select(*keys, "window_id", "dataset", "tokens", "time").join(
        work, on=[*keys, "window_id"], how="left").fill_null(0)
    sums = [pl.col(c).sum() for c in ("tokens", "time", "rounds", "draft_forwards", "verify_s", "draft_s")]
    per = runs.group_by([*keys, "dataset"]).agg(*sums)
    total = runs.group_by(keys).agg(*sums).with_columns(pl.lit("all").alias("dataset"))
    out = pl.concat([per, total.select(per.columns)])
    return out.with_columns((pl.col("tokens") / pl.col("time")).alias("tps")).sort([*keys, "dataset"])


def regime_changes(per_window: pl.DataFrame, regime: Sequence[str] = ("device", "dataset"),
                   baseline: str = "target_only") -> pl.DataFrame:
    """Table 11 (D.4.5): per-window TPS change (%) over ``baseline``, median and IQR per regime.

    ``per_window`` has one TPS per (method, window) and the regime columns (SD's widths already
    averaged within each window). Every window is kept; the quartiles describe variation across
    windows, not confidence intervals. Negative values are slowdowns.
    """
    on = [*[k for k in regime if k != "dataset"], "window_id"]
    base = per_window.filter(pl.col("method") == baseline).select(*on, pl.col("tps").alias("tps_base"))
    subset = per_window.filter(pl.col("method") != baseline)
    joined = subset.join(base, on=on, how="inner")
    if joined.height != subset.height:
        raise ValueError(f"per_window: {subset.height - joined.height} rows have no {baseline!r} TPS for their window")
    change = 100.0 * (pl.col("tps") / pl.col("tps_base") - 1.0)
    return joined.group_by([*regime, "method"]).agg(
        change.median().alias("median_pct"),
        change.quantile(0.25, "linear").alias("q1_pct"),
        change.quantile(0.75, "linear").alias("q3_pct"),
        pl.len().alias("windows"),
    ).sort([*regime, "method"])


def oracle_gap(tps_selected: float, tps_oracle: float) -> float:
    """100 * (1 - TPS_selected / TPS_oracle), D.4.3."""
    return 100.0 * (1.0 - tps_selected / tps_oracle)


# ---------------------------------------------------------------------------------------------
# D.2.7 overlap decomposition


@dataclass(frozen=True, slots=True)
class Overlap:
    """``T = D + V - O + H`` (eq. 5) for one run; ``T >= max(D, V) + H`` (eq. 9)."""

    T: float
    D: float  # |P|: producer (drafting) service
    V: float  # |V|: verifier service
    O: float  # noqa: E741 - the paper's symbol; |P ∩ V|
    H: float  # |[0, T] \\ (P ∪ V)|: queue/synchronization work and idle time


def _merge(intervals: Iterable[tuple[float, float]], T: float) -> list[tuple[float, float]]:
    """Union of intervals clipped to ``[0, T]``: internal intervals of a stage merge (D.2.7)."""
    out: list[tuple[float, float]] = []
    for s, e in sorted((max(0.0, s), min(T, e)) for s, e in intervals):
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return out


def _measure(merged: list[tuple[float, float]]) -> float:
    return sum(e - s for s, e in merged)


def _intersection(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> float:
    i = j = 0
    total = 0.0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if hi > lo:
            total += hi - lo
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def overlap_decomposition(stages: pl.DataFrame, T: float | None = None) -> Overlap:
    """D, V, O, H of one run from its completed stage intervals (eqs. 4-5).

    ``resource == "producer"`` intervals form P, ``"verifier"`` form V; anything else (loop,
    queue) is residual and lands in H with idle time. H is measured directly as the part of
    ``[0, T]`` covered by neither set, so eq. 5 is a checked identity rather than a definition.
    """
    if T is None:
        T = float(stages["T"][0])
    rows = stages.select("resource", "start", "end").rows()
    p = _merge(((s, e) for r, s, e in rows if r == "producer"), T)
    v = _merge(((s, e) for r, s, e in rows if r == "verifier"), T)
    union = _merge(p + v, T)
    gaps, prev = 0.0, 0.0
    for s, e in union:
        gaps += s - prev
        prev = e
    gaps += T - prev
    return Overlap(T=T, D=_measure(p), V=_measure(v), O=_intersection(p, v), H=gaps)


def overlap_table(stages: pl.DataFrame, keys: Sequence[str] = ("window_id", "config")) -> pl.DataFrame:
    """Overlap decomposition per run (grouped by ``keys``); needs a ``T`` column."""
    rows = []
    for key, part in stages.group_by(list(keys), maintain_order=True):
        o = overlap_decomposition(part)
        rows.append({**dict(zip(keys, key, strict=True)), "T": o.T, "D": o.D, "V": o.V, "O": o.O, "H": o.H})
    return pl.DataFrame(rows)


# ---------------------------------------------------------------------------------------------
# Prefix lookahead (D.4.5, Table 13): how much drafting the overlap hides, and how much of that is used


@dataclass(frozen=True, slots=True)
class LookaheadUse:
    """One run's drafting (seconds): serial drafting before calls plus lookahead drafting beside them.
    A lookahead still running when the next round decides makes that round wait: the wait is not hidden."""

    drafting: float
    hidden: float  # lookahead drafting that ran while the verifier was busy
    reused: float  # ... of lookaheads whose proposal became the next round's chain

    @property
    def hidden_share(self) -> float:
        return self.hidden / self.drafting if self.drafting > 0 else 0.0

    @property
    def reused_share(self) -> float:
        return self.reused / self.drafting if self.drafting > 0 else 0.0


def lookahead_use(stages: pl.DataFrame, reused_rounds: Iterable[int]) -> LookaheadUse:
    """Hidden and reused drafting of one run from its stage intervals.

    A lookahead stage carries the round that started it; ``reused_rounds`` are the rounds whose
    lookahead became the next chain (``decoding.schemes.lookahead.reused_lookaheads`` of the records).
    The paper's K70 AMI case hides 34.9% of drafting, of which 6.2% can be reused (D.4.5)."""
    rows = stages.select("resource", "stage", "start", "end", "round").rows()
    T = max((e for *_, e, _ in rows), default=0.0)
    # The target calls only: a verifier waiting for the drafter before a call hides nothing.
    verifier = _merge(((s, e) for r, st, s, e, _ in rows if r == "verifier" and st in ("verify", "step")), T)
    serial = sum(e - s for r, st, s, e, _ in rows if r == "producer" and st == "draft")
    looks = [(s, e, i) for _, st, s, e, i in rows if st == "lookahead"]
    used = set(reused_rounds)
    hidden = reused = 0.0
    for s, e, i in looks:
        h = _intersection(_merge([(s, e)], T), verifier)
        hidden += h
        reused += h if i in used else 0.0
    return LookaheadUse(serial + sum(e - s for s, e, _ in looks), hidden, reused)
