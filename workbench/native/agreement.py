"""Replay vs native timing agreement on this host (paper D.3).

The host profile is frozen from the calibration windows first. Then, on *different* windows,
target-only and As²d run natively (warm-up, ``reps`` measured repetitions, order alternating). Replay
re-prices the native runs' own token trajectories -- the target-only output as reference, the
native producer's published token stream as the source -- with the frozen profile, never with
measured times. Signed TPS error is ``100 (TPS_replay / TPS_native - 1)`` against the median-latency
native As²d run; the mean absolute error averages its magnitude over windows; the pooled error
pools tokens and time. Stage decompositions (D/V/O/H) of both sides show where an error comes from.

Run ``python -m workbench.native.agreement``.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from workbench.metrics import overlap_decomposition
from workbench.replay.engine import STAGE_SCHEMA, ReplayConfig, replay
from workbench.replay.profile import DeviceProfile, load_profile
from workbench.replay.trajectory import SourceTrack, Window

from .calibrate import calibrate_host
from .driver import NativeResult
from .windows import AudioWindow, HostSetup, demo_windows, host_setup, native_episodes

AGREEMENT_COLUMNS = ("window_id", "tokens", "tps_native", "tps_replay", "signed_error_pct", "abs_error_pct",
                     "time_native", "time_replay", "target_only_error_pct", "matched", "rounds_native",
                     "rounds_replay", "D_native", "V_native", "O_native", "H_native", "D_replay", "V_replay",
                     "O_replay", "H_replay")


def _overlap(stages: Iterable[tuple], T: float) -> tuple[float, float, float, float]:
    o = overlap_decomposition(pl.DataFrame(list(stages), schema=STAGE_SCHEMA, orient="row"), T)
    return o.D, o.V, o.O, o.H


def replay_native_run(run: NativeResult, reference: Sequence[int], profile: DeviceProfile, *, source: str,
                      budget: int, eos_id: int | None, vocab_size: int, max_output: int,
                      window_id: str | None = None) -> tuple[Window, Any]:
    """Replay one native As²d run's trajectory (reference + published producer stream) under ``profile``."""
    tokens = tuple(run.producer_tokens)
    track = SourceTrack(source, tokens, None, (1,) * len(tokens))  # the host prices its producer per target token
    w = Window(window_id or run.window_id, "host", tuple(reference), eos_id, vocab_size, max_output, None,
               {source: track}).validate()
    return w, replay(w, ReplayConfig("as2d", source=source, budget=budget), profile)


def replay_window(setup: HostSetup, profile: DeviceProfile, window_id: str, reference: Sequence[int],
                  run: NativeResult) -> tuple[Window, Any]:
    """``replay_native_run`` with the host setup's source, budget and target protocol."""
    return replay_native_run(run, reference, profile, source=setup.source, budget=setup.budget,
                             eos_id=setup.target.protocol.eos_id, vocab_size=setup.target.config.vocab_size,
                             max_output=setup.max_output, window_id=window_id)


def replay_agreement(
    calib: Sequence[AudioWindow],
    evals: Sequence[AudioWindow],
    model_cfg: dict[str, Any],
    reps: int = 5,
    *,
    warmup: int = 1,
    profile: DeviceProfile | None = None,
    calib_reps: int = 5,
    widths: Iterable[int] = range(1, 17),
    setup: HostSetup | None = None,
    out_dir: str | Path | None = None,
    progress: bool = True,
) -> tuple[pl.DataFrame, dict[str, Any]]:
    """Per-window agreement frame (``AGREEMENT_COLUMNS``) and a summary dict.

    ``profile=None`` calibrates on ``calib`` first (frozen before any evaluation run)."""
    from tqdm.auto import tqdm

    setup = setup or host_setup(model_cfg)
    if profile is None:
        profile, _ = calibrate_host(calib, model_cfg, calib_reps, widths, out_dir, setup=setup, progress=progress)
    rows = []
    for w in tqdm(evals, desc="replay vs native", disable=not progress):
        ep = native_episodes(setup, [w], ["target_only", "as2d"], reps, warmup)
        to = [r for _, s, _, r in ep.results if s == "target_only"]
        a2 = sorted((r for _, s, _, r in ep.results if s == "as2d"), key=lambda r: r.time)
        ref = to[0].output
        matched = all(r.output == ref for r in to + a2)
        med = a2[len(a2) // 2]  # the median-latency native As²d run (D.3)
        window, res = replay_window(setup, profile, w.window_id, ref, med)
        t_to = statistics.median(r.time for r in to)
        to_replay = replay(window, ReplayConfig("target_only"), profile)
        nat, rep = len(ref) / med.time, res.tps
        rows.append({
            "window_id": w.window_id, "tokens": len(ref), "tps_native": nat, "tps_replay": rep,
            "signed_error_pct": 100 * (rep / nat - 1), "abs_error_pct": abs(100 * (rep / nat - 1)),
            "time_native": med.time, "time_replay": res.time,
            "target_only_error_pct": 100 * (t_to / to_replay.time - 1), "matched": matched,
            "rounds_native": len(med.records), "rounds_replay": len(res.untimed),
            **dict(zip(("D_native", "V_native", "O_native", "H_native"), _overlap(med.stages, med.time), strict=True)),
            **dict(zip(("D_replay", "V_replay", "O_replay", "H_replay"), _overlap(res.stages, res.time), strict=True)),
        })
    frame = pl.DataFrame(rows).select(AGREEMENT_COLUMNS)
    summary = summarize(frame, profile)
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        frame.write_parquet(out / "agreement.parquet")
        (out / "agreement_summary.json").write_text(json.dumps(summary, indent=1))
    return frame, summary


def summarize(frame: pl.DataFrame, profile: DeviceProfile) -> dict[str, Any]:
    tok = frame["tokens"].sum()
    pooled = (tok / frame["time_replay"].sum()) / (tok / frame["time_native"].sum())
    return {"windows": frame.height, "mae_pct": float(frame["abs_error_pct"].mean()),
            "signed_mean_pct": float(frame["signed_error_pct"].mean()), "pooled_error_pct": 100 * (pooled - 1),
            "target_only_mae_pct": float(frame["target_only_error_pct"].abs().mean()),
            "matched_windows": int(frame["matched"].sum()), "profile": profile.file, "goal_mae_pct": 5.0}


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Replay vs native TPS agreement on this host (paper D.3).")
    ap.add_argument("--model", default="whisper_base")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--profile", default=None, help="a frozen profile (default: calibrate now on the dev windows)")
    ap.add_argument("--calib-windows", type=int, default=1)
    ap.add_argument("--windows", type=int, default=None, help="evaluation windows (default: all)")
    ap.add_argument("--out-dir", default="outputs/native/agreement")
    args = ap.parse_args(argv)
    from workbench.models.registry import load_model_config

    calib, evals = demo_windows()
    profile = load_profile(args.profile) if args.profile else None
    cfg = load_model_config(args.model)
    frame, summary = replay_agreement(calib[: args.calib_windows], evals[: args.windows], cfg, args.reps,
                                      profile=profile, out_dir=args.out_dir)
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=200, float_precision=2):
        print(frame)
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()

__all__ = ["AGREEMENT_COLUMNS", "replay_agreement", "replay_window", "summarize"]
