"""Host calibration (paper D.2): measure the ``host`` device profile in the replay schema.

On separate calibration windows, after warm-up, with ``reps`` >= 5 repetitions, it measures

* the kernel plan first (``sweep.kernel_sweep``: a forward of exactly K rows on each linear kernel,
  fitted by ``models.kernel_plan.fit_plan``), then installs it: everything after runs under it;
* verifier widths K (``widths``), idle and while the producer runs on the other core
  (a producer process generating back to back on the same audio, its own placement);
* the producer's service per drafter forward (Tok_T conversion included; a cross-vocabulary producer's
  tokens carry their forward counts, fit R_OPS), idle and while the target runs -> ``forward_ms``,
  ``concurrent_factor``;
* native episodes (target-only, SD, ASP, As²d) through :class:`NativeHost`, from which come the
  target-only step (charged time / rounds), the serial drafter forward and loop residual per
  serial round, ASP extras, As²d alignment and queue per round, and producer startup;
* As²d episodes on single dev clips (``clips``) too: a packed calibration window's calls sit late
  in a long stream, a clip's early in a short one, and beside the producer the two cost differently;
  the live prices (R_LIVE) pool both shapes;
* publication of one batch into the shared buffer.

Checkpoints between the stages time the drift probe's calls again (``steadiness.py``); a calibration
during which this machine's speed moved is measured again, up to ``attempts`` times, and the profile
records the kept attempt's verdict (``calibration:``).

The sweeps are ``sweep.py``, the fit ``fit.py``. Each number is a median of measured samples (or a
stated fit); the file records its date and n. Raw samples are written as parquet next to the
profile. Run ``python -m workbench.native.calibrate``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import yaml

from workbench.io import atomic_write_parquet, atomic_write_text
from workbench.models.kernel_plan import fit_plan
from workbench.replay.profile import DEVICE_DIR, DeviceProfile, parse_profile

from .episodes import HostSetup, host_setup, native_episodes
from .fit import fit_profile, kernel_costs
from .producer import restoring_placement
from .samples import SAMPLE_SCHEMA, sample
from .steadiness import CALIBRATION_ATTEMPTS, CHECK_CALLS, Checkpoint, Steadiness, assess, checkpoint
from .sweep import PROBE_WIDTHS, ProducerLoad, kernel_sweep, publication_samples, verify_sweep
from .windows import AudioWindow, demo_clip_windows, demo_windows, dev_only

CLIP_WINDOWS = 6  # single dev clips whose As²d episodes join the live prices (``--clips``, quick calibration)
log = logging.getLogger(__name__)


def _pass_row(w: AudioWindow, n: int, s: float, rep: int, concurrent: bool) -> dict[str, Any]:
    return sample("producer_pass", w.window_id, concurrent=concurrent, rep=rep, ms=1000 * s, tokens=n)


def _install_plan(setup: HostSetup, rows: list[dict[str, Any]]) -> None:
    """Fit the kernel plan from the kernel sweep's rows (as ``fit.kernel_plan_part`` will) and run the
    target by it from now on: every cost measured after this is the planned one."""
    costs, _ = kernel_costs(pl.DataFrame(rows, schema=SAMPLE_SCHEMA))
    if costs:
        setup.pair.use_kernel_plan(fit_plan(costs))


def _window_samples(setup: HostSetup, w: AudioWindow, widths: list[int], reps: int, warmup: int,
                    mark: Callable[[list[dict[str, Any]]], None]) -> tuple[list[dict[str, Any]], bool]:
    """The sweeps of one calibration window: idle widths, producer passes, widths beside the producer;
    ``mark`` times a checkpoint into the rows between the idle sweep and the producer's (R_STAGE)."""
    setup.verifier.apply()
    rows = verify_sweep(setup.pair, w, widths, reps, warmup, concurrent=False)
    mark(rows)
    with ProducerLoad(setup.producer_spec, w.audio, setup.max_output) as load:
        passes, has_conf = load.passes(reps + warmup)
        rows += [_pass_row(w, n, s, i - warmup, False) for i, (n, s) in enumerate(passes) if i >= warmup]
        load.passes(None)  # the producer now runs back to back while the sweep is measured
        rows += verify_sweep(setup.pair, w, widths, reps, warmup, concurrent=True)
        # Passes cut short by the stop (the sweep ended) still count: per-token time is what matters.
        rows += [_pass_row(w, n, s, i, True) for i, (n, s) in enumerate(load.end_load())]
    return rows, has_conf


@dataclass(frozen=True, slots=True)
class _Attempt:
    """One measured calibration: its profile mapping, raw samples, round records and steadiness."""

    profile: dict[str, Any]
    raw: pl.DataFrame
    rounds: pl.DataFrame
    steadiness: Steadiness


def _checkpoint(setup: HostSetup, w: AudioWindow, stage: str, rows: list[dict[str, Any]]) -> Checkpoint:
    """Time the drift probe's idle calls again (``steadiness.py``); their rows join the raw samples as
    ``checkpoint`` samples, which no profile field reads."""
    setup.verifier.apply()
    calls = verify_sweep(setup.pair, w, PROBE_WIDTHS, CHECK_CALLS, 1, concurrent=False, offsets=(0,))
    rows += [{**r, "kind": "checkpoint", "scheme": stage} for r in calls]
    return checkpoint(stage, calls)


def _measure(setup: HostSetup, calib: Sequence[AudioWindow], clips: Sequence[AudioWindow], widths: list[int],
             reps: int, warmup: int, date: str, progress: bool) -> _Attempt:
    """One whole calibration under a kernel plan it fits first, with checkpoints between its stages."""
    from tqdm.auto import tqdm

    setup.verifier.apply()
    rows = kernel_sweep(setup.pair, calib[0], widths, reps, warmup)
    _install_plan(setup, rows)
    points = [_checkpoint(setup, calib[0], "start", rows)]
    rounds: list[pl.DataFrame] = []
    bar = tqdm(total=len(calib) * 3 + (1 if clips else 0), desc="host calibration", disable=not progress)
    for w in calib:
        def mark(more: list[dict[str, Any]], w: AudioWindow = w) -> None:
            points.append(_checkpoint(setup, calib[0], f"{w.window_id} idle sweeps", more))

        more, has_conf = _window_samples(setup, w, widths, reps, warmup, mark)
        rows += more
        points.append(_checkpoint(setup, calib[0], f"{w.window_id} sweeps", rows))
        bar.update(2)
        ep = native_episodes(setup, [w], ["target_only", "sd", "asp", "as2d"], reps, warmup)
        rows += ep.rows
        rounds.append(ep.rounds())
        points.append(_checkpoint(setup, calib[0], f"{w.window_id} episodes", rows))
        bar.update(1)
    if clips:
        ep = native_episodes(setup, list(clips), ["as2d"], reps, warmup)
        rows += ep.rows
        rounds.append(ep.rounds())
        points.append(_checkpoint(setup, calib[0], "clips", rows))
        bar.update(1)
    bar.close()
    rows += publication_samples(batch=setup.batch_tokens)
    raw = pl.DataFrame(rows, schema=SAMPLE_SCHEMA)
    rounds_df = pl.concat(rounds, how="diagonal_relaxed")
    profile = fit_profile(raw, rounds_df, setup, date, has_conf)
    idle = {int(k): float(v["v"]) for k, v in profile["verifier"]["idle_ms"].items()}
    steadiness = assess(points, idle, planned="kernel_plan" in profile)
    profile["calibration"] = {**steadiness.to_profile(date), **profile.get("calibration", {})}
    return _Attempt(profile, raw, rounds_df, steadiness)


@restoring_placement()  # the caller's thread keeps its CPUs: a bench calibrating on first use then places both models
def calibrate_host(
    calib: Sequence[AudioWindow],
    model_cfg: dict[str, Any],
    reps: int = 5,
    widths: Iterable[int] = range(1, 17),
    out_dir: str | Path | None = None,
    *,
    warmup: int = 1,
    setup: HostSetup | None = None,
    profile_path: str | Path | None = None,
    progress: bool = True,
    clips: Sequence[AudioWindow] = (),
    attempts: int = CALIBRATION_ATTEMPTS,
) -> tuple[DeviceProfile, pl.DataFrame]:
    """Measure the host profile on ``calib`` windows, and As²d's live calls on ``clips`` too (short
    windows, module docstring); returns (profile, raw samples).

    An unsteady calibration (``steadiness.py``) is measured again, ``attempts`` in all; the steadiest
    is kept, and one line says so, or says that none was steady. Writes ``profile_path`` (default
    ``<out_dir>/host.yaml``), and ``host_samples.parquet`` (raw samples, columns ``SAMPLE_SCHEMA``)
    plus ``host_rounds.parquet`` (episode round records) under ``out_dir`` when given. The setup's
    target keeps the kept attempt's kernel plan afterwards."""
    if reps < 1 or not calib or attempts < 1:
        raise ValueError("calibration needs at least one window, one repetition and one attempt")
    dev_only([*calib, *clips], "host calibration")  # per-width costs, kernel crossovers and width caps are fitted here
    ws, date = sorted(set(widths)), dt.date.today().isoformat()
    setup = setup or host_setup(model_cfg)
    kept: _Attempt | None = None
    for n in range(1, attempts + 1):
        got = _measure(setup, calib, clips, ws, reps, warmup, date, progress)
        if kept is None or got.steadiness.badness() < kept.steadiness.badness():
            kept = got
        if got.steadiness.steady:
            break
        if n < attempts:
            log.warning("host calibration: this machine's speed moved while it was measured (%s); measuring "
                        "again, attempt %d of %d", got.steadiness.describe(), n + 1, attempts)
    assert kept is not None
    if not kept.steadiness.steady:
        log.warning("host calibration: unsteady in %d attempt(s) (%s); the profile says calibration.steady: false "
                    "and replay on it may miss D.3; calibrate again on a quiet machine "
                    "(python -m workbench.native.calibrate)", attempts, kept.steadiness.describe())
    _install_plan(setup, kept.raw.filter(pl.col("kind") == "kernel").to_dicts())  # the kept attempt's plan
    target = Path(profile_path) if profile_path else (Path(out_dir) / "host.yaml" if out_dir else None)
    if target is not None:
        write_profile(kept.profile, target)
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        atomic_write_parquet(out / "host_samples.parquet", kept.raw)
        atomic_write_parquet(out / "host_rounds.parquet", kept.rounds)
    return parse_profile(kept.profile, file=str(target or "<host calibration>")), kept.raw


def idle_width_medians(model_cfg: dict[str, Any], widths: Sequence[int], reps: int,
                       window: AudioWindow) -> dict[int, float]:
    """The idle verify sweep alone (D.2), on one core at decoder offset 0: median ms per width. What a
    phone calibration with a real engine on the loopback phone (this host's forwards) is checked against."""
    import statistics

    from .producer import Placement

    with restoring_placement():
        setup = host_setup(model_cfg, verifier=Placement(1))
        setup.verifier.apply()
        rows = verify_sweep(setup.pair, window, widths, reps, 1, concurrent=False, offsets=[0])
    return {k: statistics.median(r["ms"] for r in rows if r["width"] == k) for k in widths}


def write_profile(profile: dict[str, Any], path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    header = ("# Host device profile, measured by `python -m workbench.native.calibrate` (paper D.2).\n"
              "# Every number: {v, source: measured on host <date>, n=<samples>, median} or {v, derived: <rule>}.\n")
    return atomic_write_text(path, header + yaml.safe_dump(profile, sort_keys=False, width=110))


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Measure conf/device/host.yaml on this machine (paper D.2).")
    ap.add_argument("--model", default="whisper_base")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--max-width", type=int, default=16)
    ap.add_argument("--windows", type=int, default=1, help="calibration windows (dev split) to use")
    ap.add_argument("--clips", type=int, default=CLIP_WINDOWS,
                    help="single dev clips whose As2d episodes also price the verifier beside the producer")
    ap.add_argument("--attempts", type=int, default=CALIBRATION_ATTEMPTS,
                    help="calibrations measured at most while this machine's speed moves under them")
    ap.add_argument("--out-dir", default="outputs/native/calibration")
    ap.add_argument("--profile", default=str(DEVICE_DIR / "host.yaml"))
    args = ap.parse_args(argv)
    from workbench.models.registry import load_model_config

    calib, _ = demo_windows()
    model = load_model_config(args.model)
    profile, raw = calibrate_host(calib[: args.windows], model, args.reps, range(1, args.max_width + 1),
                                  args.out_dir, profile_path=args.profile,
                                  clips=demo_clip_windows(args.clips, model=model), attempts=args.attempts)
    if profile.verifier.context is not None:
        c = profile.verifier.context
        print(f"context fit: K1 {c.slope(1):+.4f} ms/token from {c.ref_tokens:.0f} tokens, cold first call "
              f"+{c.cold_ms:.2f} ms, residual (RMS) {c.residual_ms:.2f} ms per target-only round")
    print(f"wrote {args.profile}: step {profile.target_step_ms:.2f} ms, loop {profile.loop_residual_ms:.2f} ms, "
          f"queue {profile.queue_ms:.2f} ms, align {profile.alignment_ms:.3f} ms")
    if profile.kernel_plan is not None:
        print("kernel plan: " + ", ".join(f"K{k} {c.kernel}" + (f"->K{c.rows}" if c.rows > k else "")
                                          for k, c in profile.kernel_plan.choices.items()))
    for k in profile.verifier.widths():
        print(f"  K{k:<2d} idle {profile.verify_ms(k):7.2f} ms  concurrent {profile.verify_ms(k, True):7.2f} ms")
    for s in profile.sources.values():
        print(f"  source {s.name}: {s.op_ms:.2f} ms/forward, x{s.concurrent_factor:.3f} concurrent, "
              f"startup {s.startup_ms:.2f} ms, publication {s.publication_ms:.3f} ms")
    if profile.calibration is not None:
        check = profile.calibration
        print(f"steadiness: {'steady' if check.steady else 'UNSTEADY'}, probe checkpoints x{check.spread:.2f}, "
              f"{check.inversions} width inversion(s)")
    print(f"samples: {raw.height} rows in {args.out_dir}; median of each, n per field in the YAML")


if __name__ == "__main__":
    main()
