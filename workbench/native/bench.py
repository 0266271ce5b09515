"""Native host benchmark: As²d against target-only, HF assisted generation, serial SD and ASP.

All methods run on the same windows, interleaved (window by window, method order rotating per
repetition), after one warm-up pass. Our methods use the native driver's clock (A.3: after prefill,
through EOS plus charged producer drain). HF ``generate`` has no post-prefill boundary of its own,
so its charged time is wall time minus the target's prefill (encoder + prompt) and the
assistant's encoder, both measured on the same window just before the call.

Run ``python -m workbench.native.bench``. Frames (parquet under ``out_dir``):

* ``runs``: window_id, method, rep, tokens, time, tps, matched, capped, rounds, threads, fault
* ``rounds``: round records of our methods (``ROUND_COLUMNS`` + window_id, config, rep, T)
* ``stages``: resource, stage, start, end, round, window_id, config, rep, T
* ``summary``: one row per method, columns ``SUMMARY_COLUMNS``
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import os
import time
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import polars as pl
import torch

from workbench import metrics
from workbench.decoding.width import IDLE_KEY
from workbench.io import atomic_write_parquet
from workbench.replay.profile import DeviceProfile, MissingWidthError, load_profile
from workbench.replay.result import STAGE_SCHEMA

from .driver import NativeHost
from .episodes import HostSetup, all_cores, host_setup, run_scheme, scheme_settings
from .producer import ALLOWED_CPUS, Placement
from .windows import AudioWindow, demo_windows

SUMMARY_COLUMNS = ("method", "tps", "ratio_target_only", "ratio_hf", "slower_share", "matched_share",
                   "acceptance", "coverage", "readiness", "D", "V", "O", "H", "T", "bound", "T_over_bound")


class Method:
    def __init__(self, name: str, kind: str, setup: HostSetup | None = None, threads: int = 1,
                 scheme: str = "", assistant: Any = None, tokenizers: tuple[Any, Any] | None = None) -> None:
        self.name, self.kind, self.setup, self.threads = name, kind, setup, threads
        self.scheme, self.assistant, self.tokenizers = scheme, assistant, tokenizers


def profile_costs(profile: DeviceProfile) -> dict[int, float]:
    """This machine's cost of one As²d round at each width (ms): the concurrent verify (the producer
    runs beside it) plus the round's alignment and queue work -- what as2d_online weighs (as replay) --
    and, under ``IDLE_KEY + K``, the same round once the producer has finished."""
    extra = profile.alignment_ms + profile.queue_ms
    out = {}
    for k in profile.verifier.widths():
        try:
            out[k] = profile.verify_ms(k, True) + extra
        except MissingWidthError:
            continue
        out[IDLE_KEY + k] = profile.verify_ms(k, False) + extra  # once the producer finished (width.split_costs)
    out.setdefault(1, profile.target_step_ms + extra)
    return out


def online_cap(costs: dict[int, float]) -> int:
    """as2d_online's widest chain on this machine: every width its calibration priced (up to K = 16).
    The rule then picks each round's width from those costs; the pair's fixed b stays fixed As²d's."""
    return max(1, min(max(k for k in costs if k < IDLE_KEY), 16) - 1)


def online_methods(setup: HostSetup, costs: dict[int, float], prefix: str = "") -> list[Method]:
    """as2d_online priced by this machine's per-width ``costs`` (widths up to ``online_cap``) and, on two
    or more CPUs, the same with the producer's core joining once the producer has finished (``+cores``,
    ``driver.JoiningCores``); method names start with ``prefix`` (the MNN bench's ``mnn/``)."""
    online = dataclasses.replace(setup, costs=costs, settings={
        **setup.settings, "as2d_online": scheme_settings("as2d_online", online_cap(costs))})
    ms = [Method(f"{prefix}as2d_online/{setup.source}", "native", online, 1, "as2d_online")]
    if len(ALLOWED_CPUS) > 1:
        joined = dataclasses.replace(online, widen=all_cores())
        ms.append(Method(f"{prefix}as2d_online/{setup.source}+cores", "native", joined, 1, "as2d_online"))
    return ms


def default_methods(model_cfg: dict[str, Any], same_vocab_cfg: dict[str, Any] | None,
                    profile: DeviceProfile | None = None, batches: Sequence[int] = (),
                    kernels: Sequence[str] = ()) -> list[Method]:
    """target-only (1 and 2 threads), HF assisted (same-vocab int8 base; cross-tokenizer tiny.en),
    SD and ASP with the serial drafter, As²d with each producer; with this machine's ``profile``
    also as2d_online (chain length per round from the machine's per-width costs, up to ``online_cap``)
    and, on two or more CPUs, the same with the producer's core joining the verifier once the producer
    has finished (``+cores``, ``driver.JoiningCores``); for each of
    ``batches`` other than the configured one, also As²d publishing batches of that size (``@batchN``);
    for each of ``kernels`` other than the target's, also As²d with the target on those linear kernels
    (``@plain`` / ``@packed``, ``models.packed_linear``), a second target in memory."""
    main = host_setup(model_cfg)
    pair = main.pair
    if profile is not None:
        main.costs = profile_costs(profile)
    ms = [Method("target_only@1t", "native", main, 1, "target_only"),
          Method("target_only@2t", "native", main, 2, "target_only")]
    # HF assisted generate is driven as an encoder-decoder call (_hf_run); audio-LM pairs compare the
    # paper's native set (D.6.1: target-only, SD, SpecASR, As²d)
    hf = not pair.audio_lm
    if hf:
        ms.append(Method(f"hf_assisted/{main.serial_source}", "hf", main, 1, assistant=main.serial))
    if hf and main.source != main.serial_source:
        tok = None
        if pair.cross_vocabulary:  # universal assisted generation
            from transformers import AutoTokenizer

            from workbench.models.registry import ModelSpec, resolve_weights

            tok = (AutoTokenizer.from_pretrained(pair.target_dir),
                   AutoTokenizer.from_pretrained(resolve_weights(ModelSpec.from_dict(pair.producer_cfg))))
        ms.append(Method(f"hf_assisted/{main.source}", "hf", main, 1, assistant=pair.producer, tokenizers=tok))
    ms += [Method("sd", "native", main, 1, "sd"), Method("asp", "native", main, 1, "asp"),
           Method(f"as2d/{main.source}", "native", main, 1, "as2d")]
    if main.costs is not None:
        ms += online_methods(main, main.costs)
    for n in dict.fromkeys(batches):
        if n != main.batch_tokens:
            other = dataclasses.replace(main, producer=dataclasses.replace(main.producer, batch_tokens=n))
            ms.append(Method(f"as2d/{main.source}@batch{n}", "native", other, 1, "as2d"))
    own = (model_cfg.get("target") or {}).get("kernels") or "plain"
    for k in dict.fromkeys(kernels):
        if k != own:
            other_cfg = {**model_cfg, "target": {**model_cfg["target"], "kernels": k}}
            other = host_setup(other_cfg, verifier=main.verifier, producer=main.producer.placement)
            ms.append(Method(f"as2d/{other.source}@{k}", "native", other, 1, "as2d"))
    if same_vocab_cfg is not None:
        # the second producer publishes batches of the main pair's size; one target model in memory
        alt = {**same_vocab_cfg["drafter"], "batch_tokens": pair.batch_tokens}
        setup2 = host_setup(pair.with_producer(alt), verifier=main.verifier, producer=main.producer.placement)
        if setup2.source != main.source:
            ms.append(Method(f"as2d/{setup2.source}", "native", setup2, 1, "as2d"))
    return ms


def _hf_run(m: Method, w: AudioWindow) -> tuple[list[int], float]:
    """HF assisted ``generate`` with our protocol (prompt, suppression); returns (output, charged s)."""
    from transformers.generation.utils import GenerationMixin

    from workbench.models.whisper import WhisperDecoderState, WhisperTarget

    s = m.setup
    proto = s.target.protocol
    t0 = time.perf_counter()
    WhisperTarget(s.target, w.audio).prefill()
    t_pre = time.perf_counter() - t0
    feats = s.target.features(w.audio)
    t0 = time.perf_counter()
    WhisperDecoderState(m.assistant, m.assistant.features(w.audio))
    t_pre += time.perf_counter() - t0
    gc = copy.deepcopy(s.target.model.generation_config)
    gc.suppress_tokens, gc.begin_suppress_tokens = list(proto.suppress_ids), list(proto.begin_suppress_ids)
    gc.do_sample, gc.num_beams, gc.max_new_tokens, gc.max_length = False, 1, s.max_output, None
    kw: dict[str, Any] = {"assistant_model": m.assistant.model}
    if m.tokenizers is not None:
        kw.update(tokenizer=m.tokenizers[0], assistant_tokenizer=m.tokenizers[1])
    t0 = time.perf_counter()
    # Whisper's own generate() rejects decoder_input_ids with an assistant; the generic one is HF's
    # assisted generation proper, on the same encoder-decoder model.
    out = GenerationMixin.generate(s.target.model, input_features=feats, generation_config=gc,
                                   decoder_input_ids=torch.tensor([proto.prompt_ids]), **kw)
    wall = time.perf_counter() - t0
    return out[0].tolist()[len(proto.prompt_ids):], max(wall - t_pre, 1e-9)


def run_bench(windows: Sequence[AudioWindow], methods: Sequence[Method], repeats: int = 3, *, warmup: int = 1,
              out_dir: str | Path | None = None, progress: bool = True) -> dict[str, pl.DataFrame]:
    """Interleaved benchmark; returns ``runs``, ``rounds``, ``stages`` and ``summary`` frames."""
    from tqdm.auto import tqdm
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    runs, rounds, stages = [], [], []
    refs: dict[str, tuple[int, ...]] = {}
    all_cpus = ALLOWED_CPUS or None
    with ExitStack() as stack:
        hosts: dict[int, NativeHost] = {}
        for m in methods:
            if m.kind == "native" and id(m.setup) not in hosts:
                hosts[id(m.setup)] = stack.enter_context(NativeHost(m.setup.producer, m.setup.verifier))
        bar = tqdm(total=(repeats + warmup) * len(windows) * len(methods), desc="bench", disable=not progress)
        for rep in range(-warmup, repeats):
            for wi, w in enumerate(windows):
                k = (rep + wi) % len(methods)  # rotate the order: no method always runs first
                for m in list(methods[k:]) + list(methods[:k]):
                    m.setup.verifier.apply() if m.threads == 1 else Placement(m.threads, all_cpus).apply()
                    fault, r = None, None
                    if m.kind == "hf":
                        out, t = _hf_run(m, w)
                    else:
                        r = run_scheme(hosts[id(m.setup)], m.setup, w, m.scheme)
                        out, t, fault = list(r.output), r.time, r.fault
                    bar.update(1)
                    if m.name == "target_only@1t" and w.window_id not in refs:
                        refs[w.window_id] = tuple(out)
                    if rep < 0:
                        continue
                    runs.append({"window_id": w.window_id, "method": m.name, "rep": rep, "tokens": len(out),
                                 "time": t, "tps": len(out) / t, "output": out,
                                 "capped": bool(r.capped) if r else len(out) >= m.setup.max_output,
                                 "rounds": len(r.records) if r else None, "threads": m.threads, "fault": fault})
                    if r is not None:
                        keys = {"window_id": w.window_id, "config": m.name, "rep": rep, "T": r.time}
                        rounds += [{**x.as_row(), **keys} for x in r.records]
                        stages += [dict(zip(STAGE_SCHEMA, s, strict=True)) | keys for s in r.stages]
            methods[0].setup.verifier.apply()
        bar.close()
    run_df = pl.DataFrame(runs, schema_overrides={"fault": pl.Utf8, "rounds": pl.Int64})
    # Exactness audit: every run against target-only's output on the same window (never hidden).
    matched = [tuple(o) == refs.get(w) for w, o in zip(run_df["window_id"], run_df["output"].to_list(), strict=True)]
    run_df = run_df.with_columns(pl.Series("matched", matched, dtype=pl.Boolean)).drop("output")
    frames = {"runs": run_df,
              "rounds": pl.DataFrame(rounds, infer_schema_length=None,
                                     schema_overrides={"chain": pl.List(pl.Int64), "provenance": pl.List(pl.Int64),
                                                       "committed": pl.List(pl.Int64), "k1_reason": pl.Utf8}),
              "stages": pl.DataFrame(stages, infer_schema_length=None)}
    frames["summary"] = summarize(frames)
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        for name, df in frames.items():
            atomic_write_parquet(out / f"bench_{name}.parquet", df)
    return frames


def summarize(frames: dict[str, pl.DataFrame]) -> pl.DataFrame:
    runs, rounds, stages = frames["runs"], frames["rounds"], frames["stages"]
    methods = runs["method"].unique(maintain_order=True).to_list()
    pooled = {m: metrics.tps_pooled(runs.filter(pl.col("method") == m)) for m in methods}
    best_to = max((m for m in methods if m.startswith("target_only")), key=pooled.get)
    hf = [m for m in methods if m.startswith("hf_")]
    best_hf = max(hf, key=pooled.get) if hf else None
    per_window = runs.group_by("method", "window_id").agg(pl.col("tokens").first(), pl.col("time").median())
    base = per_window.filter(pl.col("method") == best_to)
    rows = []
    for m in methods:
        rr = rounds.filter(pl.col("config") == m) if rounds.height else rounds
        row = {"method": m, "tps": pooled[m], "ratio_target_only": pooled[m] / pooled[best_to],
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


GOALS = {"speedup": 1.5, "vs_hf": 2.0, "slower_share": 0.05, "exact": 1.0}  # host benchmark goals (docs/adaptive.md)


def goal_lines(summary: pl.DataFrame, prefix: str = "as2d", hf: bool = True) -> list[str]:
    """One PASS/FAIL line per host benchmark goal, judged on the fastest As²d variant (methods named
    ``prefix``...); ``hf=False`` leaves out the HF goal (the MNN bench has none)."""
    rows = {r["method"]: r for r in summary.to_dicts()}
    ours = [m for m in rows if m.startswith(prefix)]
    if not ours:
        return ["no As²d method ran: no goal can be judged"]
    best = max(ours, key=lambda m: rows[m]["tps"])
    r = rows[best]

    def line(ok: bool, text: str) -> str:
        return f"{'PASS' if ok else 'FAIL'}  {text}"

    out = [line(r["ratio_target_only"] >= GOALS["speedup"],
                f"{best}: {r['ratio_target_only']:.2f}x the best target-only (goal >= {GOALS['speedup']}x)")]
    if hf and r["ratio_hf"] is not None:
        out.append(line(r["ratio_hf"] >= GOALS["vs_hf"],
                        f"{best}: {r['ratio_hf']:.2f}x the best HF assisted (goal >= {GOALS['vs_hf']}x)"))
    elif hf:
        out.append("FAIL  no HF assisted run to compare with")
    out.append(line(r["slower_share"] <= GOALS["slower_share"],
                    f"{best}: {100 * r['slower_share']:.0f}% of windows slower than target-only "
                    f"(goal <= {100 * GOALS['slower_share']:.0f}%)"))
    exact = min(rows[m]["matched_share"] for m in ours)
    out.append(line(exact >= GOALS["exact"], f"As²d variants: {100 * exact:.0f}% of outputs exact (goal 100%)"))
    return out


def machine_lines() -> list[str]:
    from .fingerprint import fingerprint_id, machine_fingerprint

    fp = machine_fingerprint()
    return [f"machine {fingerprint_id(fp)}: " + ", ".join(f"{k}={v}" for k, v in fp.items()),
            "load average (1/5/15 min): " + " ".join(f"{x:.2f}" for x in os.getloadavg())]


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Native host benchmark: As²d vs peers on the demo windows.")
    ap.add_argument("--model", default="whisper_base")
    ap.add_argument("--same-vocab-model", default="whisper_base_int8", help="second producer's conf/model ('' = none)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--windows", type=int, default=None)
    ap.add_argument("--max-seconds", type=float, default=25.0)
    ap.add_argument("--out-dir", default="outputs/native/bench")
    ap.add_argument("--profile", default=None,
                    help="host profile for as2d_online's costs (default: this machine's, calibrated once if needed)")
    ap.add_argument("--on-mismatch", choices=("calibrate", "refuse"), default="calibrate",
                    help="no profile of this machine yet: calibrate it (cached per fingerprint) or refuse")
    ap.add_argument("--no-online", action="store_true", help="skip as2d_online (no profile needed)")
    ap.add_argument("--batches", type=int, nargs="*", default=[],
                    help="also As²d with producers publishing batches of these sizes (e.g. 4 8: the paper's phones)")
    ap.add_argument("--single-token-batches", action="store_true", help="same as --batches 1")
    ap.add_argument("--kernels", nargs="*", default=["plain", "packed"],
                    help="also As²d with the target's linears on these kernels (models.packed_linear)")
    ap.add_argument("--engine", choices=("torch", "mnn"), default="torch",
                    help="mnn: MNN target-only, torch target-only, MNN As²d/SD/ASP, step/verify costs, F.6")
    args = ap.parse_args(argv)
    if args.engine == "mnn":  # MNN engine: its own method set and tables (workbench.models.mnn.bench)
        from workbench.models.mnn.bench import main as mnn_main

        windows = [] if args.windows is None else ["--windows", str(args.windows)]
        return mnn_main(["--model", args.model, "--repeats", str(args.repeats), "--max-seconds",
                         str(args.max_seconds), "--out-dir", f"{args.out_dir}_mnn", *windows])
    from workbench.models.registry import load_model_config

    from .fingerprint import HostProfileMismatch, host_profile

    print("\n".join(machine_lines()))
    cfg = load_model_config(args.model)
    profile = None
    if not args.no_online:
        try:
            profile = load_profile(args.profile) if args.profile else host_profile(cfg, args.on_mismatch)
        except HostProfileMismatch as err:
            raise SystemExit(f"bench: {err}") from None
        print(f"costs from {profile.file}: " + ", ".join(f"K{k} {v:.1f}" for k, v in profile_costs(profile).items()
                                                         if k <= 8) + " ms ...")
    _, evals = demo_windows(args.max_seconds)
    alt = load_model_config(args.same_vocab_model) if args.same_vocab_model else None
    batches = [*args.batches, *([1] if args.single_token_batches else [])]
    frames = run_bench(evals[: args.windows], default_methods(cfg, alt, profile, batches, args.kernels),
                       args.repeats, out_dir=args.out_dir)
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=250, float_precision=3):
        print(frames["summary"])
    print(f"windows: {len(evals[: args.windows])}, repeats: {args.repeats}")
    print("\n".join(machine_lines()[1:] + goal_lines(frames["summary"])))


if __name__ == "__main__":
    main()
