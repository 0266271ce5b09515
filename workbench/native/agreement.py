"""Replay vs native timing agreement on this host (paper D.3).

The host profile is frozen from the calibration windows first. Then, on *different* windows,
target-only and As²d run natively (warm-up, ``reps`` measured repetitions, order alternating). Replay
re-prices the native runs' own token trajectories -- the target-only output as reference, the
native producer's published token stream as the source -- with the frozen profile, never with
measured times. Signed TPS error is ``100 (TPS_replay / TPS_native - 1)`` per repetition, a window's the
median over its repetitions; the mean absolute error averages its magnitude over windows; the pooled error
pools time. Stage decompositions (D/V/O/H) of both sides show where an error comes from.

**Drift anchor** (``replay/drift.py``): just before each measured repetition, one target-only run on the
profile's calibration window measures how much this machine's speed has moved since calibration, over
the frozen profile's own price of that statistic (``anchors.py``). A window's error is the median over its
repetitions of each one's error against a replay at its own probes (``interleaved.py``): a probe and the run
after it see one machine speed. With a profile that anchors the producer
(``anchor_producer_ms``), the As²d probe run's producer measures its own core's drift, and the
producer's times are scaled by that ratio instead: a VM's two vCPUs drift apart, even in opposite
directions, and one ratio for both misprices the producer against the target
(``one_ratio_signed_error_pct``, reported beside the verdict). The same As²d probe run's target calls
that ran beside its producer, over the frozen profile's price of them (``drift_ratio_concurrent``), price
the held-out window's verify calls beside the producer: two processes contending for two vCPUs move
apart from one process's idle speed (``idle_ratio_concurrent_signed_error_pct``, the target's idle ratio
for them, is reported beside). With a profile that anchors
As²d too (``anchor_as2d_ms``), an As²d run on that window follows each target-only probe, and As²d's
replay scaled by the median of those is reported beside the verdict (``drift_ratio_as2d``,
``as2d_anchor_signed_error_pct``): a VM's two vCPUs need not drift alike and As²d keeps both busy, but
one As²d run is noisier than one target-only run (README). Both errors are reported: ``frozen_*`` (the
paper's protocol as is) and the anchored one, which the goal judges when the profile has an anchor. On a
VM whose speed drifts within minutes only the anchored one says whether the cost *model* is right; the
frozen one mostly measures the drift.

``--probe matched`` (``native.probe`` in the demo) runs each window's probes on the calibration window or
dev clip nearest it in duration instead (``probe_choice.py``, the paper's duration matching; the anchors are
priced on the probe runs, so any dev window serves). The calibration's measured anchors and As²d's own
anchor compare only where the probes ran on the anchor window; elsewhere they are left empty.

With a profile that anchors several widths, the probe also times idle verify calls at those widths and
``width_signed_error_pct`` prices each width by its own drift (``drift.width_shape``). It is reported
beside the verdict, not in it: on this VM it helped in one run and hurt in the next (README).

**Noise floor** (``noise_floor.py``): the native side is a median of ``reps`` runs; the bootstrap of
that median gives each window the error a perfect replay would still show (``noise_floor_pct``). The
verdict prints the mean floor beside the MAE and the repetitions that would halve the goal. A
``RepeatRule`` (``--max-reps``, ``--noise-goal``) repeats a window past ``--reps`` while a method's median
on it still scatters by more than the goal: the windows whose runs scatter get the repetitions.

**Decomposition** (``decomposition.py``): each window's signed error split into terms that add up to it
(publication curve, readiness, verify cost concurrent / idle, loop work, drain), from the native run's
own recorded events; the ``d_<term>`` columns, printed per window, charted by ``notebooks/d3_agreement``.

Run ``python -m workbench.native.agreement --reps 5`` (``--split test``: the bench corpus's test split,
calibrated on its dev split; ``--split dev``: the dev windows that calibration left out, where a change to
this model is chosen; ``--engine mnn``: the MNN engine with its own host profile; ``--max-seconds S``: each
judged window cut to its first S seconds, the demo's short clips beside a long anchor window;
``--clip-seconds C``: the calibration's clips cut to C seconds, as the demo calibrates).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shlex
import statistics
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import polars as pl

from workbench.io import atomic_write_json, atomic_write_parquet
from workbench.metrics import overlap_decomposition
from workbench.replay.drift import scaled
from workbench.replay.engine import replay
from workbench.replay.profile import DeviceProfile, load_profile
from workbench.replay.result import STAGE_SCHEMA, ReplayConfig, ReplayResult
from workbench.replay.sources import profile_source
from workbench.replay.trajectory import Window

from .agreement_report import GOAL_MAE_PCT, agreement_markdown, decomposition_lines, provenance, summarize, verdict
from .anchors import priced_anchors
from .calibrate import CLIP_WINDOWS, calibrate_host
from .decomposition import TERMS, decompose, replay_native_run
from .driver import NativeHost, NativeResult
from .episodes import Episodes, HostSetup, host_setup, median_run, native_episodes
from .interleaved import interleaved_errors
from .noise_floor import NOISE_GOAL_PCT, RepeatRule, median_noise_pct
from .probe_choice import ProbeChoice, ProbeRule
from .run_store import ReplayInputs, absorb, save_runs
from .sweep import PROBE_WIDTHS
from .window_anchoring import NO_PROBES, Anchored, WindowProbes, anchored, concurrent_probe_ratio, window_probes
from .windows import SAMPLE_RATE, AudioWindow, demo_clip_windows, demo_windows

AGREEMENT_COLUMNS = ("window_id", "tokens", "tps_native", "tps_replay", "signed_error_pct", "abs_error_pct",
                     "time_native", "time_replay", "target_only_error_pct", "median_run_signed_error_pct",
                     "median_run_target_only_error_pct", "drift_ratio", "width_shape",
                     "width_signed_error_pct", "drift_ratio_as2d", "as2d_anchor_signed_error_pct",
                     "drift_ratio_producer", "producer_anchor_signed_error_pct", "one_ratio_signed_error_pct",
                     "drift_ratio_concurrent", "idle_ratio_concurrent_signed_error_pct",
                     "calibrated_anchor_signed_error_pct", "probe_window", "frozen_signed_error_pct",
                     "frozen_target_only_error_pct", "matched", "rounds_native",
                     "rounds_replay", "reps", "noise_floor_pct", "target_only_noise_floor_pct",
                     "D_native", "V_native", "O_native", "H_native", "D_replay", "V_replay",
                     "O_replay", "H_replay", *(f"d_{t}" for t in TERMS), "d_publication_lag_ms",
                     "d_first_publication_lag_ms",
                     "d_readiness_native", "d_readiness_replay")


def _overlap(stages: Iterable[tuple], T: float) -> tuple[float, float, float, float]:
    o = overlap_decomposition(pl.DataFrame(list(stages), schema=STAGE_SCHEMA, orient="row"), T)
    return o.D, o.V, o.O, o.H


def anchor_window(profile: DeviceProfile) -> AudioWindow | None:
    """The calibration window the profile's drift anchor was measured on (``None``: no anchor, or the demo
    corpus no longer packs a window of that id -- then replay prices with the frozen profile)."""
    if profile.anchor_window is None:
        return None
    calib, _ = demo_windows()
    return next((w for w in calib if w.window_id == profile.anchor_window), None)


def probe_widths(profile: DeviceProfile | None) -> tuple[int, ...]:
    """The widths to probe beside the drift anchor: those the profile anchored (none for an older profile)."""
    if profile is None or not profile.anchor_widths_ms:
        return ()
    return tuple(k for k in PROBE_WIDTHS if k in profile.anchor_widths_ms)


def window_agreement(inputs: ReplayInputs, profile: DeviceProfile, window_id: str, target_only: Sequence[NativeResult],
                     as2d: Sequence[NativeResult], probes: WindowProbes = NO_PROBES,
                     reference: Sequence[int] | None = None) -> dict[str, Any]:
    """The D.3 rule for one window: replay the median-latency native As²d run's own trajectory with the
    frozen profile, re-anchored by ``probes.target_ms`` when given, the producer's times by its own probe
    ``probes.producer_ms`` when given (each process by the drift of the core it runs on, ``replay/drift.py``;
    one ratio for both is reported beside), the verify calls beside the producer by ``probes.concurrent_ratio``
    when given (the target's idle ratio for them is reported beside). Beside the verdict too: each width by its
    own drift, As²d by its own probe. With ``probes.reps`` (one per repetition) both schemes are judged
    as interleaved ratios, each repetition against a replay at its own probes (``interleaved.py``); the
    median run's error, As²d at the probes of the repetition whose replay is the median one
    (``median_repetition``) and target-only at the median probe, is kept beside (``median_run_*``) and is
    what the decomposition's terms add up to. The target-only reference is the first run's output (all runs are
    audited against it, and against ``reference``, the unplanned target's output, when given:
    ``Episodes.references``)."""
    ref = target_only[0].output
    med = as2d[median_run(as2d)]
    source = profile_source(profile, "producer", {"producer": [inputs.source]}) or inputs.source
    t_to = statistics.median(r.time for r in target_only)
    nat = len(ref) / med.time
    window: Window | None = None

    def as2d_replay(p: DeviceProfile) -> ReplayResult:
        nonlocal window
        window, res = replay_native_run(med, ref, p, source=source, settings=inputs.settings,
                                        eos_id=inputs.eos_id, vocab_size=inputs.vocab_size,
                                        max_output=inputs.max_output, window_id=window_id)
        return res

    def target_only_time(p: DeviceProfile) -> float:  # on the window as2d_replay built
        return replay(cast(Window, window), ReplayConfig("target_only"), p).time

    def errors(p: DeviceProfile) -> tuple[ReplayResult, float, float]:
        res = as2d_replay(p)
        return res, 100 * (res.tps / nat - 1), 100 * (t_to / target_only_time(p) - 1)

    res, frozen_err, frozen_to = errors(profile)
    a, err, to_err = Anchored(profile), frozen_err, frozen_to
    if probes.target_ms is not None:
        a = anchored(profile, probes, errors)
        res, err, to_err = errors(a.judged)
        if a.to_ratio is not None:
            to_err = errors(scaled(profile, a.to_ratio))[2]
    med_err, med_to = err, to_err
    inter = None if probes.target_ms is None else interleaved_errors(
        profile, probes.reps, probes.concurrent_ratio, [r.time for r in as2d], [r.time for r in target_only],
        lambda p: as2d_replay(p).time, target_only_time)
    if inter is not None:  # each repetition against its own probes: the judged error (interleaved.py)
        err, to_err = inter.as2d_pct, inter.target_only_pct
    terms = decompose(cast(Window, window), med, a.judged, source, inputs.settings)  # as2d_replay set it
    return {
        "window_id": window_id, "tokens": len(ref), "tps_native": nat, "tps_replay": res.tps,
        "signed_error_pct": err, "abs_error_pct": abs(err),
        "time_native": med.time, "time_replay": res.time,
        "target_only_error_pct": to_err, "median_run_signed_error_pct": med_err,
        "median_run_target_only_error_pct": med_to, "drift_ratio": a.ratio, "width_shape": a.shape_at,
        "width_signed_error_pct": a.width_err, "drift_ratio_as2d": a.a2_ratio,
        "as2d_anchor_signed_error_pct": a.a2_err,
        "drift_ratio_producer": a.p_ratio, "producer_anchor_signed_error_pct": None if a.p_ratio is None else err,
        "one_ratio_signed_error_pct": a.one_err,
        "drift_ratio_concurrent": probes.concurrent_ratio, "idle_ratio_concurrent_signed_error_pct": a.c_err,
        "frozen_signed_error_pct": frozen_err,
        "frozen_target_only_error_pct": frozen_to,
        "matched": all(r.output == ref for r in [*target_only, *as2d]) and (reference is None
                                                                            or tuple(reference) == tuple(ref)),
        "rounds_native": len(med.records), "rounds_replay": len(res.untimed), "reps": len(as2d),
        "noise_floor_pct": median_noise_pct([r.time for r in as2d], key=window_id),
        "target_only_noise_floor_pct": median_noise_pct([r.time for r in target_only], key=window_id),
        **dict(zip(("D_native", "V_native", "O_native", "H_native"), _overlap(med.stages, med.time), strict=True)),
        **dict(zip(("D_replay", "V_replay", "O_replay", "H_replay"), _overlap(res.stages, res.time), strict=True)),
        **{f"d_{k}": terms[k] for k in (*TERMS, "publication_lag_ms", "first_publication_lag_ms",
                                              "readiness_native", "readiness_replay")},
    }


def agreement_frame(ep: Episodes, inputs: ReplayInputs | HostSetup, profile: DeviceProfile, *,
                    target_scale: float = 1.0) -> pl.DataFrame:
    """``window_agreement`` for every window of ``ep`` that ran both target-only and As²d, re-anchored by
    the median of its drift probes when ``ep`` has probes (``native_episodes``, ``window_probes``), over
    anchors priced by ``profile`` on the window's own probe runs (``anchors.py``). The error with the
    calibration's measured anchors is kept beside (``calibrated_anchor_signed_error_pct``). ``inputs``: the
    setup's replay inputs (a ``HostSetup``'s are taken from it). ``target_scale``: the target's drift ratio
    times this (``reprice.sensitivity``)."""
    inputs = ReplayInputs.of(inputs) if isinstance(inputs, HostSetup) else inputs
    rows = []
    for wid in dict.fromkeys(w for w, _, _, _ in ep.results):
        to, a2 = ep.runs(wid, "target_only"), ep.runs(wid, "as2d")
        if to and a2:
            probes = dataclasses.replace(window_probes(ep, wid),  # measured over priced calls: no anchor
                                         concurrent_ratio=concurrent_probe_ratio(ep, wid, profile))
            runs = [rs for (w, _), rs in ep.probe_runs.items() if w == wid]
            # probed on another dev window (probe_choice.py): the calibration measured no anchor there, so
            # neither its measured anchors nor As²d's own anchor compare; the priced anchors do
            calibrated = all(rs[0].window_id == profile.anchor_window for rs in runs)
            if not calibrated:
                probes = dataclasses.replace(probes, as2d_ms=None)
            priced = priced_anchors(profile, runs, inputs) if probes.target_ms is not None else None
            judged_profile = priced or profile
            if target_scale != 1.0 and judged_profile.anchor_ms is not None:  # the ratio is probe / anchor
                judged_profile = dataclasses.replace(judged_profile, anchor_ms=judged_profile.anchor_ms / target_scale)
            args = (wid, to, a2, probes, ep.references.get(wid))
            judged = window_agreement(inputs, judged_profile, *args)
            measured = (None if priced is None or not calibrated
                        else window_agreement(inputs, profile, *args)["signed_error_pct"])
            rows.append({**judged, "calibrated_anchor_signed_error_pct": measured,
                         "probe_window": runs[0][0].window_id if runs else None})
    return pl.DataFrame(rows, schema=list(AGREEMENT_COLUMNS) if not rows else None).select(AGREEMENT_COLUMNS)


def replay_agreement(
    calib: Sequence[AudioWindow],
    evals: Sequence[AudioWindow],
    model_cfg: dict[str, Any],
    reps: int | RepeatRule = 5,
    *,
    warmup: int = 1,
    profile: DeviceProfile | None = None,
    calib_reps: int = 5,
    widths: Iterable[int] = range(1, 17),
    setup: HostSetup | None = None,
    out_dir: str | Path | None = None,
    progress: bool = True,
    command: str | None = None,
    clips: Sequence[AudioWindow] = (),
    probe: ProbeRule | str = ProbeRule.ANCHOR,
) -> tuple[pl.DataFrame, dict[str, Any]]:
    """Per-window agreement frame (``AGREEMENT_COLUMNS``) and a summary dict.

    ``profile=None`` calibrates on ``calib`` first (frozen before any evaluation run), with As²d's live
    calls on the single dev windows ``clips`` too, as every host calibration does (``calibrate_host``).
    ``probe``: each evaluation window's drift probes on the profile's anchor window, or on the calibration
    window or clip nearest to it in duration (``probe_choice.py``)."""
    from tqdm.auto import tqdm

    setup = setup or host_setup(model_cfg)
    if profile is None:
        profile, _ = calibrate_host(calib, model_cfg, calib_reps, widths, out_dir, setup=setup, progress=progress,
                                    clips=clips)
    setup.use_profile(profile)  # native runs by the kernel plan the frozen profile was measured under
    frames = []
    kept = Episodes()  # every window's D.3 runs, stored after each window (run_store.py)
    anchor = next((w for w in calib if w.window_id == profile.anchor_window), None) or anchor_window(profile)
    choice = None if anchor is None else ProbeChoice.of(anchor, [*calib, *clips], probe)
    with NativeHost(setup.producer, setup.verifier) as host:
        for w in tqdm(evals, desc="replay vs native", disable=not progress):
            ep = native_episodes(setup, [w], ["target_only", "as2d"], reps, warmup, host, probe=choice,
                                 probe_widths=probe_widths(profile) if anchor is not None else (),
                                 probe_as2d=anchor is not None and profile.anchor_as2d_ms is not None)
            frames.append(agreement_frame(ep, setup, profile))
            if out_dir is not None:  # partial measurements survive a stop: re-price them later
                save_runs(Path(out_dir) / "native_runs.json", absorb(kept, ep), ReplayInputs.of(setup), profile.file)
    frame = pl.concat(frames, how="vertical_relaxed")  # a column null in one window (no such probe) is typed in another
    summary = {**summarize(frame, profile), **provenance(command)}
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        atomic_write_parquet(out / "agreement.parquet", frame)
        atomic_write_json(out / "agreement_summary.json", summary)
    return frame, summary


def cropped(windows: Sequence[AudioWindow], seconds: float | None) -> list[AudioWindow]:
    """Each window cut to its first ``seconds`` of audio, its id marked ``<id>[:<seconds>s]`` (``None``: as
    they are). Paper D.3 crops or pads its validation audio to a duration; a judged window cut short
    while the calibration and the probes keep their full windows is the demo's regime (short judged clips
    beside a long anchor window), measured on the bench corpus's own split."""
    if seconds is None:
        return list(windows)
    n = int(seconds * SAMPLE_RATE)
    return [dataclasses.replace(w, window_id=f"{w.window_id}[:{seconds:g}s]", audio=w.audio[:n])
            if len(w.audio) > n else w for w in windows]


def agreement_windows(split: str, dataset: str, calib_windows: int, clips: int, windows: int | None,
                      model: Mapping[str, Any], max_seconds: float | None = None, clip_seconds: float | None = None,
                      ) -> tuple[list[AudioWindow], list[AudioWindow], list[AudioWindow]]:
    """(calibration windows, single dev windows whose As²d calls the calibration also prices, evaluation
    windows). ``split="test"``: the bench corpus ``dataset``'s dev split calibrates, speaker-disjoint from its
    test split, which is evaluated; ``"dev"``: the same calibration, evaluated on the dev windows it did not
    use (where a change to the D.3 model is chosen before the test split reports it); ``"demo"``: the demo
    corpus's calibration windows and dev clips, and its evaluation windows. The clips never repeat a
    calibration window. ``max_seconds``: the evaluation windows ``cropped`` to that duration;
    ``clip_seconds``: the bench clips too (the demo calibrates on single clips of a few seconds)."""
    if split in ("dev", "test"):
        from .bench_inputs import dataset_config
        from .windows import bench_windows

        data = dataset_config(dataset)
        calib = bench_windows("dev", data, calib_windows)
        taken = {w.window_id for w in calib}
        more = [w for w in bench_windows("dev", data, calib_windows + clips) if w.window_id not in taken][:clips]
        taken |= {w.window_id for w in more}  # by their whole ids: a cut clip stays out of the judged windows
        more = cropped(more, clip_seconds)
        if split == "test":
            return calib, more, cropped(bench_windows("test", data, windows), max_seconds)
        # round-robin over speakers like the calibration's picks, so the first picks are the ones it took
        picks = bench_windows("dev", data, None if windows is None else len(taken) + windows)
        return calib, more, cropped([w for w in picks if w.window_id not in taken][:windows], max_seconds)
    calib, evals = demo_windows()
    return calib[:calib_windows], demo_clip_windows(clips, model=model), cropped(evals[:windows], max_seconds)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Replay vs native TPS agreement on this host (paper D.3).")
    ap.add_argument("--model", default="whisper_base")
    ap.add_argument("--reps", type=int, default=5, help="measured repetitions per window, at least")
    ap.add_argument("--max-reps", type=int, default=15,
                    help="then more, up to this many, while a window's native median scatters by over --noise-goal "
                         "percent (its noise floor); --max-reps equal to --reps: exactly --reps")
    ap.add_argument("--noise-goal", type=float, default=NOISE_GOAL_PCT)
    ap.add_argument("--profile", default=None, help="a frozen profile (default: calibrate now on the dev windows)")
    ap.add_argument("--calib-windows", type=int, default=1)
    ap.add_argument("--clips", type=int, default=CLIP_WINDOWS,
                    help="single dev windows whose As2d episodes also price the verifier beside the producer, as in "
                         "every host calibration (0: the calibration windows alone)")
    ap.add_argument("--calib-reps", type=int, default=5, help="repetitions of the calibration (D.2: at least 5)")
    ap.add_argument("--windows", type=int, default=None, help="evaluation windows (default: all)")
    ap.add_argument("--split", choices=("demo", "dev", "test"), default="demo",
                    help="test: the bench corpus's test split, calibrated on its dev split (speaker-disjoint); dev: "
                         "the dev windows that calibration did not use, to choose a D.3 model change on")
    ap.add_argument("--dataset", default="bench",
                    help="conf/dataset/<name>.yaml of the bench corpus (--split dev, test)")
    ap.add_argument("--engine", choices=("torch", "mnn"), default=None, help="default: the model's engine")
    ap.add_argument("--probe", choices=[r.value for r in ProbeRule], default=ProbeRule.ANCHOR.value,
                    help="each window's drift probes on the profile's anchor window, or on the calibration window "
                         "or clip nearest to it in duration (paper D.3's duration matching)")
    ap.add_argument("--max-seconds", type=float, default=None,
                    help="judge each evaluation window cut to its first this many seconds (the calibration and "
                         "the probes keep their full windows: the demo's short clips beside a long anchor)")
    ap.add_argument("--clip-seconds", type=float, default=None,
                    help="cut each bench clip the calibration measures to its first this many seconds (the demo "
                         "calibrates on single clips of a few seconds)")
    ap.add_argument("--out-dir", default="outputs/native/agreement")
    ap.add_argument("--markdown", default=None, help="also write the d3-agreement table into this file "
                                                     "(docs/results.md: machine, command, split, date)")
    args = ap.parse_args(argv)
    try:  # one usage line for --reps, --max-reps and --noise-goal that make no rule, before any work
        rule = RepeatRule(args.reps, args.max_reps, args.noise_goal)
    except ValueError as err:
        ap.error(f"{err} (--reps, --max-reps, --noise-goal)")
    from workbench.models.registry import load_model_config

    if args.clips < 0:
        ap.error(f"--clips {args.clips}: give 0 or more single dev windows")
    for flag, value in (("--max-seconds", args.max_seconds), ("--clip-seconds", args.clip_seconds)):
        if value is not None and not value > 0:
            ap.error(f"{flag} {value}: give a positive duration, or leave it out for whole windows")
    cfg = load_model_config(args.model)
    if args.engine:
        cfg = {**cfg, "engine": args.engine}
    # with a frozen --profile too: the clips stay out of the evaluation windows, and may serve as probes
    calib, clips, evals = agreement_windows(args.split, args.dataset, args.calib_windows, args.clips, args.windows, cfg,
                                            args.max_seconds, args.clip_seconds)
    command = "python -m workbench.native.agreement " + shlex.join(argv or sys.argv[1:])
    frame, summary = replay_agreement(calib, evals, cfg, rule,
                                      profile=load_profile(args.profile) if args.profile else None,
                                      out_dir=args.out_dir, calib_reps=args.calib_reps, command=command, clips=clips,
                                      probe=args.probe)
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=200, float_precision=2):
        print(frame)
    print(json.dumps(summary, indent=1))
    print("\n".join(decomposition_lines(frame)))
    print(verdict(summary))
    print(f"machine {summary['machine']}; load average (1/5/15 min) {summary['load']}; {summary['date']}; "
          f"command: {summary['command']}")
    if args.markdown:
        from workbench.io import write_section

        engine = str(cfg.get("engine") or "torch")
        # each departure from the defaults: (in effect, its words in the split line, its section suffix); one
        # section per engine, the dev split's apart from the test split's, each variant apart from the default
        variants = [(args.probe == ProbeRule.MATCHED.value, " (probes duration-matched)", "-matched"),
                    (bool(args.max_seconds), f" (cut to their first {args.max_seconds or 0:g} s)",
                     f"-{args.max_seconds or 0:g}s"),
                    (bool(args.clip_seconds), f" (calibration clips cut to {args.clip_seconds or 0:g} s)",
                     f"-clips{args.clip_seconds or 0:g}s")]
        split = ("demo" if args.split == "demo" else f"bench {args.split}") + "".join(w for on, w, _ in variants if on)
        text = agreement_markdown(frame, summary, split, engine)
        section = ("d3-agreement" if engine == "torch" else f"d3-agreement-{engine}") + (
            "-dev" if args.split == "dev" else "") + "".join(x for on, _, x in variants if on)
        print(f"results table -> {write_section(args.markdown, section, text)}")


if __name__ == "__main__":
    main()

__all__ = ["AGREEMENT_COLUMNS", "GOAL_MAE_PCT", "agreement_frame", "agreement_markdown", "agreement_windows",
           "anchor_window", "decomposition_lines", "median_run", "provenance", "replay_agreement", "replay_native_run",
           "summarize", "verdict", "window_agreement"]
