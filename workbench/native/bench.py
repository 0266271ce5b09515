"""Native host benchmark: As²d against the best target-only, HF assisted generation, SD, lookahead and ASP.

It runs on the bench corpus's **test split** by default (``--split dev`` for tuning, ``--split demo``
for the demo's smoke windows). "Best target-only" is the fastest of target-only on 1 and 2 threads,
on each linear kernel (``--kernels``) and on each engine (torch, MNN); every variant is printed.
A dev run writes the As²d configuration it chose (``choice.json``); a test run judges the goals on
that configuration, never on the fastest variant of the test split.

All methods run on the same windows, interleaved (window by window, method order rotating per
repetition), after a warm-up pass over the first ``warmup_windows`` windows. Our methods use the
native driver's clock (A.3: after prefill, through EOS plus charged producer drain). HF ``generate``
has no post-prefill boundary of its own, so its charged time is wall time minus the target's prefill
(encoder + prompt) and the assistant's encoder, both measured on the same window just before the call.

Run ``python -m workbench.native.bench``. Frames (parquet under ``out_dir``):

* ``runs``: window_id, split, method, rep, tokens, time, tps, matched, capped, rounds, threads, fault,
  fell_back_at (rounds verified when a fallback rule stopped the producer)
* ``rounds``: round records of our methods (``ROUND_COLUMNS`` + window_id, config, rep, T)
* ``stages``: resource, stage, start, end, round, window_id, config, rep, T
* ``summary``: one row per method, columns ``SUMMARY_COLUMNS`` (``bench_report``)
* ``windows``: the per-window report, columns ``WINDOW_COLUMNS`` (``bench_report.per_window``)
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import polars as pl

from workbench.io import atomic_write_parquet
from workbench.replay.profile import DeviceProfile, load_profile
from workbench.replay.result import STAGE_SCHEMA

from .bench_inputs import bench_eval_windows, dataset_config, with_window_facts
from .bench_methods import default_methods, profile_costs
from .bench_report import SUMMARY_COLUMNS, goal_lines, per_window, round_breakdown, summarize, verify_ceiling
from .driver import Fallback, NativeHost, NativeResult
from .episodes import run_scheme
from .hf_assisted import hf_run
from .methods import Method, online_cap, online_methods
from .producer import ALLOWED_CPUS, Placement
from .windows import AudioWindow

REFERENCE = "target_only@1t"  # every run's output is audited against this method's on the same window


def _host_key(m: Method) -> tuple[int, Any]:
    return id(m.setup.producer) if m.setup.producer is not None else id(m.setup), m.setup.verifier


def run_bench(windows: Sequence[AudioWindow], methods: Sequence[Method], repeats: int = 3, *, warmup: int = 1,
              out_dir: str | Path | None = None, progress: bool = True,
              warmup_windows: int | None = 2) -> dict[str, pl.DataFrame]:
    """Interleaved benchmark; returns ``runs``, ``rounds``, ``stages``, ``summary`` and ``windows`` frames.

    ``warmup`` passes (untimed) run over the first ``warmup_windows`` windows (None: all of them)."""
    from tqdm.auto import tqdm
    from transformers.utils import logging as hf_logging

    from workbench.tracking.partial import record

    hf_logging.set_verbosity_error()
    runs, rounds, stages = [], [], []
    refs: dict[str, tuple[int, ...]] = {}
    all_cpus = ALLOWED_CPUS or None
    with ExitStack() as stack:
        hosts: dict[int, NativeHost] = {}
        for m in methods:
            # one producer process per producer spec and verifier placement: variants that only change
            # scheme settings or costs (budgets, the online rule, +cores) share it
            key = _host_key(m)
            if m.kind == "native" and key not in hosts:
                hosts[key] = stack.enter_context(NativeHost(m.setup.producer, m.setup.verifier))
        n_warm = len(windows) if warmup_windows is None else min(warmup_windows, len(windows))
        bar = tqdm(total=(repeats * len(windows) + warmup * n_warm) * len(methods), desc="bench",
                   disable=not progress)
        stack.callback(bar.close)  # closed on a failure too: the error line starts a line of its own
        for rep in range(-warmup, repeats):
            for wi, w in enumerate(windows if rep >= 0 else windows[:n_warm]):
                k = (rep + wi) % len(methods)  # rotate the order: no method always runs first
                for m in list(methods[k:]) + list(methods[:k]):
                    m.setup.verifier.apply() if m.threads == 1 else Placement(m.threads, all_cpus).apply()
                    fault, r = None, None
                    if m.kind == "hf":
                        out, t = hf_run(m, w)
                    else:
                        r = run_scheme(hosts[_host_key(m)], m.setup, w, m.scheme)
                        out, t, fault = list(r.output), r.time, r.fault
                    bar.update(1)
                    if m.name == REFERENCE and w.window_id not in refs:
                        refs[w.window_id] = tuple(out)
                    if rep < 0:
                        continue
                    runs.append(_run_row(w, m, rep, out, t, fault, r))
                    record("native_runs", runs[-1])  # kept on the FAILED run if a later window raises
                    if r is not None:
                        keys = {"window_id": w.window_id, "config": m.name, "rep": rep, "T": r.time}
                        rounds += [{**x.as_row(), **keys} for x in r.records]
                        stages += [dict(zip(STAGE_SCHEMA, s, strict=True)) | keys for s in r.stages]
            methods[0].setup.verifier.apply()
    frames = _frames(runs, rounds, stages, refs)
    frames["windows"] = per_window(frames)
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        for name, df in frames.items():
            atomic_write_parquet(out / f"bench_{name}.parquet", df)
    return frames


def _run_row(w: AudioWindow, m: Method, rep: int, out: list[int], t: float, fault: str | None,
             r: NativeResult | None) -> dict[str, Any]:
    """One timed run's ``runs`` row (``output`` is dropped after the exactness audit)."""
    return {"window_id": w.window_id, "split": w.split, "method": m.name, "rep": rep,
            "tokens": len(out), "time": t, "tps": len(out) / t, "output": out,
            "capped": bool(r.capped) if r else len(out) >= m.setup.max_output,
            "rounds": len(r.records) if r else None, "threads": m.threads, "fault": fault,
            "fell_back_at": r.fell_back_at_round if r else None}


def _frames(runs: list[dict[str, Any]], rounds: list[dict[str, Any]], stages: list[dict[str, Any]],
            refs: dict[str, tuple[int, ...]]) -> dict[str, pl.DataFrame]:
    """The ``runs``, ``rounds`` and ``stages`` frames, every run audited against the reference's output
    on its window (C.4; ``matched``, never hidden), and the ``summary``."""
    run_df = pl.DataFrame(runs, schema_overrides={"fault": pl.Utf8, "rounds": pl.Int64, "split": pl.Utf8,
                                                  "fell_back_at": pl.Int64})
    matched = [tuple(o) == refs.get(w) for w, o in zip(run_df["window_id"], run_df["output"].to_list(), strict=True)]
    run_df = run_df.with_columns(pl.Series("matched", matched, dtype=pl.Boolean)).drop("output")
    frames = {"runs": run_df,
              "rounds": pl.DataFrame(rounds, infer_schema_length=None,
                                     schema_overrides={"chain": pl.List(pl.Int64), "provenance": pl.List(pl.Int64),
                                                       "committed": pl.List(pl.Int64), "k1_reason": pl.Utf8}),
              "stages": pl.DataFrame(stages, infer_schema_length=None)}
    frames["summary"] = summarize(frames)
    return frames


def machine_lines() -> list[str]:
    from .fingerprint import fingerprint_id, machine_fingerprint

    fp = machine_fingerprint()
    return [f"machine {fingerprint_id(fp)}: " + ", ".join(f"{k}={v}" for k, v in fp.items()),
            "load average (1/5/15 min): " + " ".join(f"{x:.2f}" for x in os.getloadavg())]




__all__ = ["SUMMARY_COLUMNS", "Method", "bench_eval_windows", "dataset_config", "default_methods", "goal_lines",
           "online_cap", "online_methods", "with_window_facts",
           "profile_costs", "run_bench", "summarize"]


def _methods(args: Any, cfg: dict[str, Any], profile: DeviceProfile | None) -> tuple[list[Method], str, Any]:
    """(methods, As²d name prefix, the MNN/torch setups for the engine tables or None)."""
    from workbench.models.registry import load_model_config

    if args.engine == "mnn":
        from .fingerprint import host_profile
        from .mnn_bench import mnn_methods

        torch_cfg = {**cfg, "engine": "torch"}
        methods, mnn, torch_setup = mnn_methods(
            cfg, profile_costs(profile) if profile else None, fallbacks=[Fallback.parse(f) for f in args.fallbacks],
            kernels=args.kernels, torch_profile=host_profile(torch_cfg, args.on_mismatch),
            same_vocab_cfg=load_model_config(args.same_vocab_model) if args.same_vocab_model else None)
        print("engine mnn: target_only@Nt is MNN target-only (the exactness reference), target_only@Nt/torch torch's")
        return methods, "mnn/as2d", (mnn, torch_setup)
    alt = load_model_config(args.same_vocab_model) if args.same_vocab_model else None
    batches = [*args.batches, *([1] if args.single_token_batches else [])]
    methods = default_methods(cfg, alt, profile, batches, args.kernels, hf=args.hf, budgets=args.budgets,
                              as2d_kernels=args.as2d_kernels, fallbacks=[Fallback.parse(f) for f in args.fallbacks],
                              mnn_producer=args.mnn_producer and _mnn_available(), guess=args.guess)
    if args.mnn_baseline:  # best target-only is the best over engines too
        from .mnn_bench import mnn_target_only

        try:
            methods[2:2] = mnn_target_only(cfg)
        except Exception as err:  # MNN absent or unable to run this family: say so, bench the rest
            print(f"bench: MNN target-only left out ({type(err).__name__}: {str(err)[:160]})")
    return methods, "as2d", None


def _mnn_available() -> bool:
    """Whether pyMNN imports here (the ``@mnn`` producer variants); says so in one line when not."""
    try:
        import MNN  # noqa: F401
    except ImportError as err:
        print(f"bench: the producer on MNN left out ({err}); pip install MNN")
        return False
    return True


def _print_reports(frames: dict[str, pl.DataFrame], chosen: str | None, prefix: str) -> pl.DataFrame:
    """Summary, the ratio of every As²d variant per window side by side, and the chosen one's report."""
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=250, float_precision=3, fmt_str_lengths=60):
        print(frames["summary"])
        win = frames["windows"]
        if win.height:
            print("Per window: ratio to the best target-only (median time over repeats), every speculative method")
            print(win.pivot(on="method", index="window_id", values="ratio"))
        report = win.filter(pl.col("method") == chosen) if chosen else win.clear()
        if report.height:
            print(f"Per window report of {chosen}")
            print(report.drop("method"))
            print(f"Where the rounds of {chosen} went")
            rounds = round_breakdown(frames, chosen)
            print(rounds)
            ceiling = verify_ceiling(rounds)
            if ceiling is not None:
                print(f"verify ceiling (every round a verify round like its own): {ceiling:.2f}x the best target-only")
    return report.filter(pl.col("ratio") < 1.0) if report.height else report


def parser() -> Any:
    import argparse

    ap = argparse.ArgumentParser(description="Native host benchmark: As²d vs the best target-only, SD, ASP and HF "
                                             "on the bench corpus (test split by default).")
    ap.add_argument("--model", default="whisper_base")
    ap.add_argument("--same-vocab-model", default="whisper_base_int8", help="second producer's conf/model ('' = none)")
    ap.add_argument("--split", choices=("test", "dev", "demo"), default="test",
                    help="test: report; dev: tune (writes choice.json); demo: the demo's smoke windows")
    ap.add_argument("--dataset", default="bench", help="conf/dataset/<name>.yaml of the bench corpus (bench_ci: small)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--windows", type=int, default=None, help="at most this many windows, round-robin over speakers")
    ap.add_argument("--max-seconds", type=float, default=25.0, help="demo windows only: packing length")
    ap.add_argument("--out-dir", default=None, help="default outputs/native/bench_<split>[_mnn]")
    ap.add_argument("--choice", default=None, help="the dev run's choice.json (default: <dev out-dir>/choice.json)")
    ap.add_argument("--markdown", default=None, help="also write the results table (machine, command, split, date)")
    ap.add_argument("--section", default=None,
                    help="--markdown's section name (default native-bench-<split>[_mnn]); another name keeps that one")
    ap.add_argument("--profile", default=None,
                    help="host profile for as2d_online's costs (default: this machine's, calibrated once if needed)")
    ap.add_argument("--on-mismatch", choices=("calibrate", "refuse"), default="calibrate",
                    help="no profile of this machine yet: calibrate it (cached per fingerprint) or refuse")
    ap.add_argument("--no-online", action="store_true", help="skip as2d_online (no profile needed)")
    ap.add_argument("--batches", type=int, nargs="*", default=[],
                    help="also As²d with producers publishing batches of these sizes (e.g. 4 8: the paper's phones)")
    ap.add_argument("--budgets", type=int, nargs="*", default=[],
                    help="also fixed As²d at these proposal budgets b (choose on dev, e.g. 2 5 7)")
    ap.add_argument("--fallbacks", nargs="*", default=["12:0.1", "12:0.2", "16:0.1", "16:0.2"],
                    help="also as2d_online+cores with these fallback rules AFTER:BELOW (driver.Fallback: stop the "
                         "producer when fewer than BELOW candidates per round were accepted in the first AFTER "
                         "rounds; choose on dev)")
    ap.add_argument("--guess", action="store_true",
                    help="also each as2d_online method with the substitution guess after a rejection (+guess)")
    ap.add_argument("--single-token-batches", action="store_true", help="same as --batches 1")
    ap.add_argument("--kernels", nargs="*", default=["plain", "packed"],
                    help="target-only also with the target's linears on these kernels (models.packed_linear)")
    ap.add_argument("--as2d-kernels", nargs="*", default=[],
                    help="As²d too on these of --kernels (each a second target in memory)")
    ap.add_argument("--only", nargs="*", default=[],
                    help="run only methods whose names match these globs (e.g. 'target_only*' sd asp 'as2d_online*')")
    ap.add_argument("--no-hf", dest="hf", action="store_false",
                    help="leave HF assisted generation out (it is no goal's baseline; it is the slowest to run)")
    ap.add_argument("--no-mnn-producer", dest="mnn_producer", action="store_false",
                    help="leave out As²d with the producer on MNN (@mnn; the target stays on torch)")
    ap.add_argument("--no-mnn-baseline", dest="mnn_baseline", action="store_false",
                    help="leave MNN target-only out of the best target-only (torch engine)")
    ap.add_argument("--engine", choices=("torch", "mnn"), default="torch",
                    help="mnn: MNN As²d/SD/ASP against MNN and torch target-only, step/verify costs, F.6")
    return ap


def main(argv: Sequence[str] | None = None) -> None:
    import shlex
    import sys

    from workbench.io import write_section
    from workbench.models.registry import load_model_config

    from .bench_report import markdown
    args = parser().parse_args(argv)
    suffix = "_mnn" if args.engine == "mnn" else ""
    out_dir = Path(args.out_dir or f"outputs/native/bench_{args.split}{suffix}")
    choice_path = Path(args.choice or f"outputs/native/bench_dev{suffix}/choice.json")
    # shlex: the command as a shell must be given it (a glob of --only stays quoted)
    command = "python -m workbench.native.bench " + shlex.join(sys.argv[1:] if argv is None else argv)
    print("\n".join(machine_lines()))
    cfg = load_model_config(args.model)
    if args.engine == "mnn":
        cfg = {**cfg, "engine": "mnn"}
    profile = None if args.no_online else _bench_profile(args, cfg)
    windows = bench_eval_windows(args.split, args.dataset, args.windows, args.max_seconds)
    print(f"split {args.split}: {len(windows)} windows ({args.dataset if args.split != 'demo' else 'demo corpus'})")
    methods, prefix, engines = _methods(args, cfg, profile)
    if args.only:  # the exactness reference always runs: every other method is judged against it
        from fnmatch import fnmatch

        methods = [m for m in methods if m.name == REFERENCE or any(fnmatch(m.name, g) for g in args.only)]
    print("methods: " + ", ".join(m.name for m in methods))
    frames = run_bench(windows, methods, args.repeats, out_dir=out_dir)
    if engines is not None:  # MNN: forward costs of both engines and F.6 agreement
        from .mnn_bench import engine_costs, f6_agreement

        frames["costs"], frames["f6"] = engine_costs(*engines, windows[0].audio), f6_agreement(*engines, windows)
        for name in ("costs", "f6"):
            atomic_write_parquet(out_dir / f"bench_{name}.parquet", frames[name])
    if args.split != "demo":  # where a window's loss lives: its speaker, perturbation and content
        frames["windows"] = with_window_facts(frames["windows"], args.dataset)
        atomic_write_parquet(out_dir / "bench_windows.parquet", frames["windows"])
    chosen = _chosen(args.split, frames, prefix, out_dir, choice_path)
    losers = _print_reports(frames, chosen, prefix)
    if engines is not None:
        with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=250, float_precision=3):
            print("Forward cost per width (ms, median; step = width 1, verify = width K)")
            print(frames["costs"])
            print("F.6: MNN greedy vs torch greedy per window")
            print(frames["f6"])
    goals = goal_lines(frames["summary"], chosen, prefix=prefix, hf=args.engine == "torch")
    print(f"split {args.split}, windows: {len(windows)}, repeats: {args.repeats}")
    print("\n".join(machine_lines()[1:] + goals))
    if args.markdown:
        text = markdown(frames["summary"], command, args.split, len(windows), args.repeats, chosen, goals, losers,
                        round_breakdown(frames, chosen) if chosen else None)
        section = args.section or f"native-bench-{args.split}{suffix}"
        print(f"results table -> {write_section(args.markdown, section, text)}")


def _bench_profile(args: Any, cfg: dict[str, Any]) -> DeviceProfile:
    """This machine's host profile for as2d_online's costs (``--profile``, or calibrated once per
    fingerprint); one line when it has none and ``--on-mismatch refuse``."""
    from .fingerprint import HostProfileMismatch, host_profile

    try:
        profile = load_profile(args.profile) if args.profile else host_profile(cfg, args.on_mismatch)
    except HostProfileMismatch as err:
        raise SystemExit(f"bench: {err}") from None
    running = profile_costs(profile).running
    print(f"costs from {profile.file}: " + ", ".join(f"K{k} {v:.1f}" for k, v in running.items() if k <= 8)
          + " ms ...")
    return profile


def _chosen(split: str, frames: dict[str, pl.DataFrame], prefix: str, out_dir: Path, choice_path: Path) -> str | None:
    """The As²d configuration the goals judge: a dev run chooses it and writes ``choice.json``; any other
    split reads the dev run's choice (None when there is none: the goals are not judged)."""
    from .choice import choose_on_dev, read_choice, write_choice
    from .fingerprint import fingerprint_id, machine_fingerprint

    if split == "dev":
        choice = choose_on_dev(frames, prefix, fingerprint_id(machine_fingerprint()))
        print(f"chosen on dev: {choice.method} ({choice.dev_ratio_target_only:.2f}x) -> "
              f"{write_choice(choice, out_dir)}")
    else:
        choice = read_choice(choice_path)
        print(f"configuration chosen on dev: {choice.method if choice else None} (from {choice_path})")
    return choice.method if choice else None


if __name__ == "__main__":
    main()
