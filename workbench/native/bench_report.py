"""What the native benchmark reports: the pooled summary, the per-window report, the goals, markdown.

* ``summarize``: one row per method (``SUMMARY_COLUMNS``), every ratio against the **best
  target-only** of the run (the fastest method named ``target_only*``: threads x kernels x engines).
* ``per_window``: per method and window, the ratio to the best target-only on that window (median
  time over repeats) and where the time went: acceptance, coverage, readiness, the plain-step
  reasons (``k1_reason``: not ready, no match = an alignment loss, correction, cost) and T/bound
  (T over max(D, V) + H, the overlap bound of A.3). ``loss_reason`` names each losing window's
  dominant cause.
* ``goal_lines``: PASS/FAIL per goal, judged on the configuration **chosen on dev** (``chosen``),
  never on the fastest variant of the split being reported.
"""

from __future__ import annotations

import datetime
import os
import platform
from collections.abc import Sequence

import polars as pl

from workbench import metrics

SUMMARY_COLUMNS = ("method", "tps", "ratio_target_only", "ratio_serial", "ratio_hf", "slower_share",
                   "matched_share", "acceptance", "coverage", "readiness", "D", "V", "O", "H", "T", "bound",
                   "T_over_bound")
WINDOW_COLUMNS = ("method", "window_id", "tokens", "time", "ratio", "matched", "acceptance", "coverage", "readiness",
                  "not_ready", "no_match", "correction", "cost", "V_share", "T_over_bound", "reason", "fell_back_at")
GOALS = {"speedup": 2.0, "vs_serial": 1.5, "slower_share": 0.05, "exact": 1.0}
# The prefix-conditioned speculative baselines (a drafter that needs each round's committed prefix;
# prefix lookahead overlaps a guess of it with the call, D.4.5)
SERIAL = ("sd", "lookahead", "asp")


def best_target_only(runs: pl.DataFrame) -> str:
    methods = [m for m in runs["method"].unique(maintain_order=True).to_list() if m.startswith("target_only")]
    if not methods:
        raise ValueError("no target_only method ran: nothing to compare with")
    pooled = {m: metrics.tps_pooled(runs.filter(pl.col("method") == m)) for m in methods}
    return max(methods, key=pooled.get)


def _serial(m: str) -> bool:
    return m.split("/")[-1] in SERIAL or m in SERIAL


def summarize(frames: dict[str, pl.DataFrame]) -> pl.DataFrame:
    runs, rounds, stages = frames["runs"], frames["rounds"], frames["stages"]
    methods = runs["method"].unique(maintain_order=True).to_list()
    pooled = {m: metrics.tps_pooled(runs.filter(pl.col("method") == m)) for m in methods}
    best_to = best_target_only(runs)
    hf = [m for m in methods if m.startswith("hf_")]
    best_hf = max(hf, key=pooled.get) if hf else None
    serial = [m for m in methods if _serial(m)]
    best_serial = max(serial, key=pooled.get) if serial else None
    per_window = runs.group_by("method", "window_id").agg(pl.col("tokens").first(), pl.col("time").median())
    base = per_window.filter(pl.col("method") == best_to)
    rows = []
    for m in methods:
        rr = rounds.filter(pl.col("config") == m) if rounds.height else rounds
        row = {"method": m, "tps": pooled[m], "ratio_target_only": pooled[m] / pooled[best_to],
               "ratio_serial": pooled[m] / pooled[best_serial] if best_serial else None,
               "ratio_hf": pooled[m] / pooled[best_hf] if best_hf else None,
               "slower_share": metrics.slowdown_share(per_window.filter(pl.col("method") == m), base),
               "matched_share": float(runs.filter(pl.col("method") == m)["matched"].mean()),
               "acceptance": None, "coverage": None, "readiness": None}
        if rr.height:
            row.update(acceptance=metrics.acceptance(rr), readiness=metrics.readiness(rr),
                       coverage=float(rr["accepted"].sum() / runs.filter(pl.col("method") == m)["tokens"].sum()))
            ov = metrics.overlap_table(stages.filter(pl.col("config") == m), keys=("window_id", "config", "rep"))
            row.update({k: float(ov[k].sum()) for k in ("D", "V", "O", "H", "T")})
            row["bound"] = float(ov.select(pl.max_horizontal("D", "V") + pl.col("H")).sum().item())
            row["T_over_bound"] = row["T"] / row["bound"]
        rows.append(row)
    return pl.DataFrame(rows, infer_schema_length=None).select(
        [pl.col(c) if c in rows[0] else pl.lit(None).alias(c) for c in SUMMARY_COLUMNS])


def loss_reason(r: dict) -> str:
    """The dominant cause of a window where a method is not faster than the best target-only."""
    if r["ratio"] is None or r["ratio"] >= 1.0:
        return ""
    if r["acceptance"] is None:
        return "no speculation"
    causes = {"producer not ready": r["not_ready"], "alignment loss (no match)": r["no_match"],
              "corrections": r["correction"], "rejected drafts": 1.0 - r["acceptance"]}
    cause = max(causes, key=causes.get)
    if r["T_over_bound"] is not None and r["T_over_bound"] > 1.25:
        return f"{cause}; loop overhead (T/bound {r['T_over_bound']:.2f})"
    return cause


def per_window(frames: dict[str, pl.DataFrame], methods: Sequence[str] | None = None) -> pl.DataFrame:
    """``WINDOW_COLUMNS`` per (method, window) of ``methods`` (default: every method with rounds)."""
    runs, rounds, stages = frames["runs"], frames["rounds"], frames["stages"]
    best_to = best_target_only(runs)
    if "fell_back_at" not in runs.columns:  # a frame written before the fallback rule existed
        runs = runs.with_columns(pl.lit(None, pl.Int64).alias("fell_back_at"))
    # fell_back_at: the round the fallback rule stopped the producer (driver.Fallback), in the first repeat
    med = runs.group_by("method", "window_id", maintain_order=True).agg(
        pl.col("tokens").first(), pl.col("time").median(), pl.col("matched").all(), pl.col("fell_back_at").first())
    base = dict(med.filter(pl.col("method") == best_to).select("window_id", "time").iter_rows())
    if methods is None:
        methods = rounds["config"].unique(maintain_order=True).to_list() if rounds.height else []
    out = []
    for m in methods:
        for r in med.filter(pl.col("method") == m).iter_rows(named=True):
            rr = rounds.filter((pl.col("config") == m) & (pl.col("window_id") == r["window_id"])) \
                if rounds.height else rounds
            row = {**r, "ratio": base[r["window_id"]] / r["time"], "acceptance": None, "coverage": None,
                   "readiness": None, "not_ready": None, "no_match": None, "correction": None, "cost": None,
                   "V_share": None, "T_over_bound": None}
            if rr.height:
                n = rr.height
                reasons = {k: float((rr["k1_reason"] == k).sum() / n) for k in ("not_ready", "no_match",
                                                                                 "correction", "cost")}
                ov = metrics.overlap_table(stages.filter((pl.col("config") == m) &
                                                         (pl.col("window_id") == r["window_id"])),
                                           keys=("window_id", "config", "rep"))
                bound = float(ov.select(pl.max_horizontal("D", "V") + pl.col("H")).sum().item())
                row.update(acceptance=metrics.acceptance(rr), readiness=metrics.readiness(rr),
                           coverage=float(rr["accepted"].sum() / runs.filter(
                               (pl.col("method") == m) & (pl.col("window_id") == r["window_id"]))["tokens"].sum()),
                           V_share=float(ov["V"].sum() / ov["T"].sum()), T_over_bound=float(ov["T"].sum() / bound),
                           **reasons)
            row["reason"] = loss_reason(row)
            out.append(row)
    schema = {"ratio": pl.Float64, "acceptance": pl.Float64, "coverage": pl.Float64, "readiness": pl.Float64,
              "not_ready": pl.Float64, "no_match": pl.Float64, "correction": pl.Float64, "cost": pl.Float64,
              "V_share": pl.Float64, "T_over_bound": pl.Float64, "reason": pl.Utf8, "fell_back_at": pl.Int64}
    if not out:
        return pl.DataFrame(schema={c: schema.get(c, pl.Utf8) for c in WINDOW_COLUMNS})
    return pl.DataFrame(out, schema_overrides=schema, infer_schema_length=None).select(WINDOW_COLUMNS)


BREAKDOWN_COLUMNS = ("kind", "rounds", "round_share", "time_share", "tokens_per_round", "call_ms")


def round_breakdown(frames: dict[str, pl.DataFrame], method: str) -> pl.DataFrame:
    """Where ``method``'s rounds and time went, pooled over windows (``BREAKDOWN_COLUMNS``).

    One row per kind of target call: ``verify`` (candidates rode along) and one ``plain:<k1_reason>``
    per reason a round stepped alone (not ready, no match = an alignment loss, exhausted = the
    producer had published nothing beyond the cursor, correction, cost, ...); then ``target_only``,
    the best target-only's own step. A ratio short of its goal shows here as many plain rounds, few
    tokens per verify, or a plain step dearer than target-only's (the target on fewer threads while
    the producer runs)."""
    rounds = frames["rounds"]
    cols = {"kind": pl.Utf8, "rounds": pl.Int64, "round_share": pl.Float64, "time_share": pl.Float64,
            "tokens_per_round": pl.Float64, "call_ms": pl.Float64}
    if not rounds.height:
        return pl.DataFrame(schema=cols)
    timed = rounds.with_columns(ms=(pl.col("t_end") - pl.col("t_start")) * 1e3, n=pl.col("committed").list.len())
    own = timed.filter(pl.col("config") == method).with_columns(
        kind=pl.when(pl.col("width") > 1).then(pl.lit("verify"))
        .otherwise(pl.lit("plain:") + pl.col("k1_reason").fill_null("none")))
    total_n, total_ms = max(own.height, 1), max(float(own["ms"].sum()), 1e-9)
    rows = own.group_by("kind").agg(rounds=pl.len(), round_share=pl.len() / total_n,
                                    time_share=pl.col("ms").sum() / total_ms,
                                    tokens_per_round=pl.col("n").mean(), call_ms=pl.col("ms").median())
    ref = timed.filter(pl.col("config") == best_target_only(frames["runs"]))
    if ref.height:
        rows = pl.concat([rows.sort("rounds", descending=True), pl.DataFrame(
            {"kind": ["target_only"], "rounds": [ref.height], "round_share": [None], "time_share": [None],
             "tokens_per_round": [float(ref["n"].mean())], "call_ms": [float(ref["ms"].median())]})],
            how="vertical_relaxed")
    return rows.select([pl.col(c).cast(t) for c, t in cols.items()])


def goal_lines(summary: pl.DataFrame, chosen: str | None, prefix: str = "as2d", hf: bool = False) -> list[str]:
    """One PASS/FAIL line per goal, judged on ``chosen`` (the As²d configuration picked on dev).

    ``chosen=None`` or a method that did not run: the goals are not judged (picking the fastest
    variant of the reported split would be tuning on it)."""
    rows = {r["method"]: r for r in summary.to_dicts()}
    ours = [m for m in rows if m.startswith(prefix)]
    if not ours:
        return ["no As²d method ran: no goal can be judged"]
    if chosen not in rows:
        return [f"no configuration chosen on dev ({chosen!r} did not run): goals not judged; "
                "run the bench with --split dev first (it writes the choice)"]
    r = rows[chosen]

    def line(ok: bool, text: str) -> str:
        return f"{'PASS' if ok else 'FAIL'}  {text}"

    out = [line(r["ratio_target_only"] >= GOALS["speedup"],
                f"{chosen}: {r['ratio_target_only']:.2f}x the best target-only (goal >= {GOALS['speedup']}x)")]
    if r["ratio_serial"] is not None:
        out.append(line(r["ratio_serial"] >= GOALS["vs_serial"],
                        f"{chosen}: {r['ratio_serial']:.2f}x the best serial SD/ASP (goal >= {GOALS['vs_serial']}x)"))
    else:
        out.append("FAIL  no serial SD/ASP run to compare with")
    if hf and r["ratio_hf"] is not None:
        out.append(f"info  {chosen}: {r['ratio_hf']:.2f}x the best HF assisted generation")
    out.append(line(r["slower_share"] <= GOALS["slower_share"],
                    f"{chosen}: {100 * r['slower_share']:.0f}% of windows slower than the best target-only "
                    f"(goal <= {100 * GOALS['slower_share']:.0f}%)"))
    exact = min(rows[m]["matched_share"] for m in ours)
    out.append(line(exact >= GOALS["exact"], f"As²d variants: {100 * exact:.0f}% of outputs exact (goal 100%)"))
    return out


def machine_facts() -> dict[str, str]:
    """CPU model, cores, torch and MNN versions: what every published figure names."""
    from importlib.metadata import PackageNotFoundError, version

    from .fingerprint import cpu_model

    def ver(pkg: str) -> str:
        try:
            return version(pkg)
        except PackageNotFoundError:
            return "not installed"

    return {"cpu": cpu_model(), "cores": str(len(os.sched_getaffinity(0))), "python": platform.python_version(),
            "torch": ver("torch"), "mnn": ver("MNN") if ver("MNN") != "not installed" else ver("mnn"),
            "load": " ".join(f"{x:.2f}" for x in os.getloadavg())}


def machine_line(m: dict[str, str] | None = None) -> str:
    """``CPU, N cores; torch X, MNN Y`` of ``machine_facts()`` (``m``; default: this machine's now):
    what every results table names."""
    m = machine_facts() if m is None else m
    return f"{m['cpu']}, {m['cores']} cores; torch {m['torch']}, MNN {m['mnn']}"


def _f(v: float | None) -> str:
    return "" if v is None else f"{v:.2f}"


def markdown(summary: pl.DataFrame, command: str, split: str, n_windows: int, repeats: int,
             chosen: str | None, goals: Sequence[str], losers: pl.DataFrame | None = None,
             breakdown: pl.DataFrame | None = None) -> str:
    """A results table for docs/results.md: machine, exact command, split, date, then one row per method."""
    m = machine_facts()
    reps = f"{repeats} repeat{'s' if repeats != 1 else ''}"
    head = [f"**Native bench, {split} split** ({n_windows} windows x {reps}, interleaved) -- "
            f"{datetime.date.today().isoformat()}",
            "",
            f"- machine: {machine_line(m)}; load average at the end {m['load']}",
            f"- command: `{command}`",
            f"- configuration chosen on dev: `{chosen}`", ""]
    cols = ("method", "tps", "ratio_target_only", "ratio_serial", "slower_share", "matched_share", "acceptance",
            "readiness", "T_over_bound")
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in summary.iter_rows(named=True):
        cells = [r["method"]] + [("" if r[c] is None else f"{r[c]:.3f}") for c in cols[1:]]
        lines.append("| " + " | ".join(cells) + " |")
    tail = ["", *[f"- {g}" for g in goals]]
    if losers is not None and losers.height:
        tail += ["", f"Windows where `{chosen}` is slower than the best target-only:", "",
                 "| window | ratio | acceptance | readiness | no_match | T/bound | reason | fell back at round |",
                 "|---|---|---|---|---|---|---|---|"]
        for r in losers.iter_rows(named=True):
            back = r.get("fell_back_at")
            tail.append(f"| {r['window_id']} | {_f(r['ratio'])} | {_f(r['acceptance'])} | {_f(r['readiness'])} | "
                        f"{_f(r['no_match'])} | {_f(r['T_over_bound'])} | {r['reason']} | "
                        f"{'' if back is None else back} |")
    if breakdown is not None and breakdown.height:
        tail += ["", breakdown_markdown(breakdown, chosen)]
    return "\n".join(head + lines + tail) + "\n"


def verify_ceiling(breakdown: pl.DataFrame) -> float | None:
    """The ratio to the best target-only's step that a method would reach if *every* round were one of
    its own verify rounds: (tokens per verify / median verify call) over (tokens per target-only step /
    its median call). Fewer wasted plain steps (alignment losses, corrections, not ready) can at most
    close the gap to it; a goal above it needs more tokens per verify (acceptance, width) or a cheaper
    verify. Round time only: encoder and prefill are outside it. ``None`` without both rows."""
    by = {r["kind"]: r for r in breakdown.iter_rows(named=True)}
    v, t = by.get("verify"), by.get("target_only")
    if not v or not t or not (v["call_ms"] and t["call_ms"] and t["tokens_per_round"]):
        return None
    return (v["tokens_per_round"] / v["call_ms"]) / (t["tokens_per_round"] / t["call_ms"])


def breakdown_markdown(breakdown: pl.DataFrame, method: str | None) -> str:
    """``round_breakdown`` as a markdown table, then its ``verify_ceiling``."""
    out = [f"Where the rounds of `{method}` went (pooled over windows; call_ms: median target call):", "",
           "| kind | rounds | round share | time share | tokens per round | call ms |", "|---|---|---|---|---|---|"]
    out += [f"| {r['kind']} | {r['rounds']} | {_f(r['round_share'])} | {_f(r['time_share'])} | "
            f"{_f(r['tokens_per_round'])} | {_f(r['call_ms'])} |" for r in breakdown.iter_rows(named=True)]
    ceiling = verify_ceiling(breakdown)
    if ceiling is not None:
        out += ["", f"Verify ceiling: {ceiling:.2f}x the best target-only's step, if every round of `{method}` "
                "verified as its verify rounds did (no plain step left); a ratio goal above it needs more tokens "
                "per verify or a cheaper verify, not fewer wasted rounds."]
    return "\n".join(out)


__all__ = ["BREAKDOWN_COLUMNS", "GOALS", "SUMMARY_COLUMNS", "WINDOW_COLUMNS", "best_target_only", "breakdown_markdown",
           "goal_lines", "loss_reason", "machine_facts", "machine_line", "markdown", "per_window", "round_breakdown",
           "summarize", "verify_ceiling"]


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m workbench.native.bench_report OUT_DIR --method M``: the round breakdown of a finished
    bench run (its ``bench_rounds`` and ``bench_runs`` parquet), printed and, with ``--markdown``,
    written as its own section under the machine and the command that made it."""
    import argparse
    import shlex
    import sys
    from pathlib import Path

    from workbench.io import write_section

    ap = argparse.ArgumentParser(description="Where a bench method's rounds and time went (a finished run).")
    ap.add_argument("run", help="a bench run's out-dir (outputs/native/bench_<split>)")
    ap.add_argument("--method", required=True, help="the method to break down (e.g. the dev choice)")
    ap.add_argument("--markdown", default=None, help="also write it as a section of this document")
    ap.add_argument("--section", default="native-bench-rounds")
    args = ap.parse_args(argv)
    frames = {k: pl.read_parquet(Path(args.run) / f"bench_{k}.parquet") for k in ("rounds", "runs")}
    table = round_breakdown(frames, args.method)
    with pl.Config(tbl_rows=-1, float_precision=3):
        print(table)
    if args.markdown:
        runs = frames["runs"]
        split = ",".join(sorted(set(runs["split"].drop_nulls().to_list()))) if "split" in runs.columns else "?"
        command = "python -m workbench.native.bench_report " + shlex.join(sys.argv[1:] if argv is None else argv)
        ran = datetime.date.fromtimestamp((Path(args.run) / "bench_runs.parquet").stat().st_mtime).isoformat()
        head = [f"- machine: {machine_line()}",
                f"- command: `{command}` (the bench run in `{args.run}`, split {split})",
                f"- run date: {ran} (when the bench wrote its tables)", ""]
        body = "\n".join(head) + "\n" + breakdown_markdown(table, args.method) + "\n"
        print(f"-> {write_section(args.markdown, args.section, body)}")


if __name__ == "__main__":
    main()
