"""D.3 on a device reached over adb: consecutive calibrate + run pairs on the loopback phone, each
``native_phone`` run replayed under the profile its ``calibrate_phone`` job just measured.

The loopback phone's runner is the Python runner with the torch engine: this host's Whisper forwards,
timed by the runner's real clock, reached through the real adb client. A pair is
``calibrate_phone`` (verify width sweep, the target step and the producer's publications on the demo
corpus's first dev window) followed by ``native_phone`` (target-only and As²d on the first demo
evaluation windows, speaker-disjoint from nothing: the demo is a smoke test, so the windows only need
to differ from the calibration window). Each configuration's native median per window is set beside its
replay under the frozen profile and under the profile scaled by the configuration's own anchors: the
calibration window rides before, between and after the windows in the configuration's own request, in
the same runner process, and a window's ratio is the geometric mean of the native median over the replay
of the copies right before and after it (``workbench.jobs.phone_probe``). Beside the verdict:
the bracketed probes (three target-only runs on the calibration window in requests of their own, right
before and after the configuration, the geometric mean of the two ratios), and before As²d three As²d runs
there, whose producer interval per token scales the producer by its own core's drift.

The claim checked is the paper's D.3 bar for phones as this project states it: per-window MAE <= 5 %,
in every pair, judged on the drift-anchored replay where the profile has an anchor (as the host's
``workbench.native.agreement`` does); the frozen profile's MAE is printed beside it. Exit status 1
when a pair misses it. Never asserted in a test.

    PYTHONPATH=. python benchmarks/loopback_d3.py [--pairs 3] [--windows 3] [--reps 5] [--max-seconds 6] \\
        [--keep DIR] [--markdown docs/results.md]
"""

from __future__ import annotations

import argparse
import math
import signal
import statistics
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from workbench.native.agreement_report import (  # the project's D.3 goal (paper: 5.81 % on phones)
    GOAL_MAE_PCT,
    decomposition_lines,
)

SECTION = "loopback-d3"
CONF = Path(__file__).resolve().parents[1] / "conf"
PROFILE = "loopback_d3"


@dataclass(frozen=True)
class PairRow:
    """One configuration of one calibrate + run pair: per-window errors pooled over the windows."""

    pair: int
    config: str
    windows: int
    mae_pct: float  # mean |replay TPS / native TPS - 1|, frozen profile
    signed_pct: float  # mean signed error, frozen profile
    anchored_mae_pct: float  # the same under the drift-probed profile (NaN: no probe)
    noise_floor_pct: float  # mean bootstrap noise of the native medians
    producer_anchored_mae_pct: float = math.nan  # each process by its own core's probe (beside the verdict)
    probe_anchored_mae_pct: float = math.nan  # by the bracketed probes in requests of their own (beside it)

    @property
    def judged_mae_pct(self) -> float:
        """The MAE the goal judges: the drift-anchored one when the profile has an anchor (as the host's
        agreement does: on a VM whose speed drifts within minutes the frozen one mostly measures the
        drift), else the frozen one."""
        return self.anchored_mae_pct if math.isfinite(self.anchored_mae_pct) else self.mae_pct

    @property
    def passed(self) -> bool:
        return self.judged_mae_pct <= GOAL_MAE_PCT


def pair_rows(pair: int, agreement: pl.DataFrame) -> list[PairRow]:
    """``native_phone``'s ``agreement`` table (one row per configuration and window) -> one row per
    configuration, in the table's order."""
    rows = []
    for config in agreement["config"].unique(maintain_order=True).to_list():
        g = agreement.filter(pl.col("config") == config)
        anchored = [v for v in g["anchored_error_pct"].to_list() if v is not None and math.isfinite(v)]
        floors = [v for v in g["noise_floor_pct"].to_list() if v is not None and math.isfinite(v)]
        cores = [v for v in g["producer_anchored_error_pct"].to_list() if v is not None and math.isfinite(v)]
        probed = [v for v in (g["probe_anchored_error_pct"].to_list() if "probe_anchored_error_pct" in g.columns
                              else []) if v is not None and math.isfinite(v)]
        errs = g["signed_error_pct"].to_list()
        rows.append(PairRow(pair, config, g.height, statistics.fmean(abs(e) for e in errs), statistics.fmean(errs),
                            statistics.fmean(abs(e) for e in anchored) if anchored else math.nan,
                            statistics.fmean(floors) if floors else math.nan,
                            statistics.fmean(abs(e) for e in cores) if cores else math.nan,
                            statistics.fmean(abs(e) for e in probed) if probed else math.nan))
    return rows


def table(rows: list[PairRow]) -> list[str]:
    """The pairs as a markdown table (printed and, with ``--markdown``, written)."""
    out = ["| pair | config | windows | MAE % (frozen) | signed % | MAE % (drift-anchored) | noise floor % | "
           f"MAE <= {GOAL_MAE_PCT:g}% | MAE % (producer by its own probe) | MAE % (bracketed probes) |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r.pair} | {r.config} | {r.windows} | {r.mae_pct:.2f} | {r.signed_pct:+.2f} | "
                   f"{r.anchored_mae_pct:.2f} | {r.noise_floor_pct:.2f} | {'PASS' if r.passed else 'FAIL'} | "
                   f"{r.producer_anchored_mae_pct:.2f} | {r.probe_anchored_mae_pct:.2f} |")
    return out


WINDOW_COLUMNS = ("config", "window_id", "tokens", "time_native", "time_replay", "signed_error_pct",
                  "noise_floor_pct", "drift_ratio", "anchored_error_pct", "drift_ratio_before", "drift_ratio_after",
                  "drift_ratio_probe", "probe_anchored_error_pct", "drift_ratio_producer",
                  "producer_anchored_error_pct")


def window_table(agreement: pl.DataFrame) -> list[str]:
    """One pair's agreement table, one row per configuration and window, as markdown."""
    out = ["| " + " | ".join(WINDOW_COLUMNS) + " |", "|" + "---|" * len(WINDOW_COLUMNS)]
    for r in agreement.iter_rows(named=True):
        cells = [f"{v:.3f}" if isinstance(v, float) else ("" if v is None else str(v))
                 for v in (r.get(c) for c in WINDOW_COLUMNS)]
        out.append("| " + " | ".join(cells) + " |")
    return out


def verdict(rows: list[PairRow]) -> str:
    """One line: how many pairs met the goal for every configuration."""
    pairs = sorted({r.pair for r in rows})
    good = [p for p in pairs if all(r.passed for r in rows if r.pair == p)]
    worst = max(r.judged_mae_pct for r in rows)
    frozen = max(r.mae_pct for r in rows)
    return (f"D.3 on the loopback phone: {len(good)} of {len(pairs)} consecutive pairs within {GOAL_MAE_PCT:g}% "
            f"per-window MAE for every configuration (drift-anchored where probed); worst MAE {worst:.2f}%, "
            f"frozen profile {frozen:.2f}%")


def compose_job(tmp: Path, *over: str, max_seconds: float) -> Any:
    """A phone job tracked into a private sqlite store, its outputs and resume state under ``tmp``;
    demo clips packed into windows of at most ``max_seconds`` (calibration and evaluation alike)."""
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose("config", overrides=[
            f"tracking.uri=sqlite:///{tmp}/mlflow.db", f"out_dir={tmp}/out", f"phone.state_dir={tmp}/state",
            "phone.conditions.rest_s=0", "phone.engine.kind=torch", f"phone.max_seconds={max_seconds:g}",
            "phone.idle_timeout_s=900", *over])


def calibrate(tmp: Path, serial: str, reps: int, max_seconds: float) -> Path:
    """One ``calibrate_phone`` job (widths 1-4 at offset 0; the base profile ``host`` for what the
    runner does not time): the profile file it wrote."""
    from workbench.run import execute

    execute(compose_job(tmp, "experiment=calibrate_phone", "device=host", f"phone.name={PROFILE}",
                        f"phone.serial={serial}", f"phone.profile_dir={tmp}/profiles",
                        "phone.calibrate.widths=[1,2,3,4]", "phone.calibrate.offsets=[0]",
                        f"phone.calibrate.reps={reps}", max_seconds=max_seconds))
    return tmp / "profiles" / f"{PROFILE}.yaml"


def native(tmp: Path, serial: str, profile: Path, windows: int, reps: int,
           max_seconds: float) -> tuple[pl.DataFrame, pl.DataFrame]:
    """One ``native_phone`` job (target-only, As²d) under ``profile``: its D.3 agreement table and the
    decomposition of As²d's windows (``workbench.jobs.phone_decomposition``)."""
    import yaml
    from omegaconf import OmegaConf, open_dict

    from workbench.run import execute

    cfg = compose_job(tmp, "experiment=native_phone", "device=host", f"phone.serial={serial}",
                      "phone.producer_probe=true", f"phone.max_windows={windows}", "methods=[target_only,as2d]",
                      f"phone.repetitions={reps}", max_seconds=max_seconds)
    with open_dict(cfg):  # the profile this pair measured, in place of a conf/device file
        cfg.device = OmegaConf.create(yaml.safe_load(profile.read_text()))
    execute(cfg)
    tables = tmp / "out" / "tables"
    return pl.read_parquet(tables / "agreement.parquet"), pl.read_parquet(tables / "decomposition.parquet")


@contextmanager
def _work_dir(keep: str | None) -> Iterator[Path]:
    """``keep`` (created) when given, else a temporary directory removed afterwards."""
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        yield Path(keep).resolve()
        return
    with tempfile.TemporaryDirectory(prefix="as2d-loopback-d3-") as tmp_dir:
        yield Path(tmp_dir)


def _facts(args: argparse.Namespace, command: str, start: dict[str, Any], end: dict[str, Any],
           torch_version: str) -> list[str]:
    """What the table names: machine, command, split and date (``provenance`` at start and end)."""
    return [f"- machine: {end['machine']}; torch {torch_version}; load average (1/5/15 min) "
            f"{start['load']} at start, {end['load']} at end",
            f"- command: `{command}`",
            f"- split: demo evaluation windows 1-{args.windows} (clips packed up to {args.max_seconds:g} s), each "
            f"pair calibrated on the demo's first dev window; {args.reps} repetitions; the judged anchors are "
            "the calibration window run before, between "
            "and after the windows in each configuration's own request (a window by the two copies around it); "
            "beside them, the bracketed probes (three target-only runs on that window "
            "before and after each configuration, the geometric mean of the two ratios) and three As²d runs there "
            "(the producer's own anchor) before As²d",
            f"- run date: {end['date'][:10]}"]


def _args(argv: list[str] | None) -> argparse.Namespace:
    """The command line, checked: one line naming a bad option and its range."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=3, help="consecutive calibrate + run pairs")
    ap.add_argument("--windows", type=int, default=3, help="demo evaluation windows per native run")
    ap.add_argument("--reps", type=int, default=5, help="repetitions per window, calibration and run alike")
    ap.add_argument("--max-seconds", type=float, default=6.0,
                    help="demo clips packed into windows of at most this length (calibration and evaluation): "
                         "longer windows hold more rounds, so one call more or less moves a window's time less")
    ap.add_argument("--markdown", default=None, help=f"write section {SECTION!r} of this document")
    ap.add_argument("--keep", default=None, help="keep the jobs' outputs (profiles, tables, MLflow store) here "
                                                 "instead of a temporary directory")
    args = ap.parse_args(argv)
    if min(args.pairs, args.windows, args.reps) < 1:
        ap.error("--pairs, --windows and --reps must each be at least 1")
    if not 0 < args.max_seconds <= 30:
        ap.error(f"--max-seconds {args.max_seconds:g}: give a window length in (0, 30] s (Whisper's audio limit)")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    command = " ".join(["python benchmarks/loopback_d3.py", *(sys.argv[1:] if argv is None else argv)])

    import torch

    from phone_runner.testing.loopback import adb_server, start_loopback
    from workbench.native.agreement import provenance

    # SIGTERM unwinds like Ctrl-C, through the finally blocks that unplug the phone and kill the server
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    start = provenance(command)
    rows: list[PairRow] = []
    last, terms = pl.DataFrame(), pl.DataFrame()
    with _work_dir(args.keep) as tmp, adb_server() as port:
        dev = start_loopback(tmp / "phone", port)
        try:
            for i in range(1, args.pairs + 1):
                profile = calibrate(tmp / f"p{i}" / "calibrate", dev.serial, args.reps, args.max_seconds)
                last, terms = native(tmp / f"p{i}" / "native", dev.serial, profile, args.windows, args.reps,
                                     args.max_seconds)
                rows += pair_rows(i, last)
                print("\n".join(table([r for r in rows if r.pair == i])[2:]), flush=True)
                for config in terms["config"].unique(maintain_order=True).to_list():
                    print(f"pair {i}, {config}:", *decomposition_lines(terms.filter(pl.col("config") == config)),
                          sep="\n", flush=True)
        finally:
            dev.stop()
            dev.disconnect(port)
    end = provenance(command)
    head = verdict(rows)
    lines = [*_facts(args, command, start, end, torch.__version__), "", *table(rows), "",
             f"Per window, pair {args.pairs}:", "", *window_table(last)]
    if terms.height:  # where As²d's error comes from in the last pair, under the judged profile
        lines += ["", f"As²d's D.3 decomposition, pair {args.pairs} (the judged, own-anchored profile):", "", "```",
                  *decomposition_lines(terms), "```"]
    print(head)
    print("\n".join(lines))
    if args.markdown:
        from workbench.io import write_section

        title = "**D.3 on the loopback phone (Python runner, torch engine: this host's forwards over adb)**"
        write_section(args.markdown, SECTION, "\n".join([title, "", head, "", *lines]))
    return 0 if all(r.passed for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
