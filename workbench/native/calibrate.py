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

The sweeps are ``sweep.py``, the fit ``fit.py``. Each number is a median of measured samples (or a
stated fit); the file records its date and n. Raw samples are written as parquet next to the
profile. Run ``python -m workbench.native.calibrate``.
"""

from __future__ import annotations

import argparse
import datetime as dt
from collections.abc import Iterable, Sequence
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
from .sweep import ProducerLoad, kernel_sweep, publication_samples, verify_sweep
from .windows import AudioWindow, demo_clip_windows, demo_windows, dev_only

CLIP_WINDOWS = 6  # single dev clips whose As²d episodes join the live prices (``--clips``, quick calibration)


def _pass_row(w: AudioWindow, n: int, s: float, rep: int, concurrent: bool) -> dict[str, Any]:
    return sample("producer_pass", w.window_id, concurrent=concurrent, rep=rep, ms=1000 * s, tokens=n)


def _install_plan(setup: HostSetup, rows: list[dict[str, Any]]) -> None:
    """Fit the kernel plan from the kernel sweep's rows (as ``fit.kernel_plan_part`` will) and run the
    target by it from now on: every cost measured after this is the planned one."""
    costs, _ = kernel_costs(pl.DataFrame(rows, schema=SAMPLE_SCHEMA))
    if costs:
        setup.pair.use_kernel_plan(fit_plan(costs))


def _window_samples(setup: HostSetup, w: AudioWindow, widths: list[int], reps: int,
                    warmup: int) -> tuple[list[dict[str, Any]], bool]:
    """The sweeps of one calibration window: idle widths, producer passes, widths beside the producer."""
    setup.verifier.apply()
    rows = verify_sweep(setup.pair, w, widths, reps, warmup, concurrent=False)
    with ProducerLoad(setup.producer_spec, w.audio, setup.max_output) as load:
        passes, has_conf = load.passes(reps + warmup)
        rows += [_pass_row(w, n, s, i - warmup, False) for i, (n, s) in enumerate(passes) if i >= warmup]
        load.passes(None)  # the producer now runs back to back while the sweep is measured
        rows += verify_sweep(setup.pair, w, widths, reps, warmup, concurrent=True)
        # Passes cut short by the stop (the sweep ended) still count: per-token time is what matters.
        rows += [_pass_row(w, n, s, i, True) for i, (n, s) in enumerate(load.end_load())]
    return rows, has_conf


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
) -> tuple[DeviceProfile, pl.DataFrame]:
    """Measure the host profile on ``calib`` windows, and As²d's live calls on ``clips`` too (short
    windows, module docstring); returns (profile, raw samples).

    Writes ``profile_path`` (default ``<out_dir>/host.yaml``), and ``host_samples.parquet`` (raw
    samples, columns ``SAMPLE_SCHEMA``) plus ``host_rounds.parquet`` (episode round records) under
    ``out_dir`` when given. The setup's target keeps the fitted kernel plan afterwards."""
    from tqdm.auto import tqdm

    if reps < 1 or not calib:
        raise ValueError("calibration needs at least one window and one repetition")
    dev_only([*calib, *clips], "host calibration")  # per-width costs, kernel crossovers and width caps are fitted here
    widths, date = sorted(set(widths)), dt.date.today().isoformat()
    setup = setup or host_setup(model_cfg)
    setup.verifier.apply()
    rows = kernel_sweep(setup.pair, calib[0], widths, reps, warmup)
    _install_plan(setup, rows)
    rounds: list[pl.DataFrame] = []
    bar = tqdm(total=len(calib) * 3 + (1 if clips else 0), desc="host calibration", disable=not progress)
    for w in calib:
        more, has_conf = _window_samples(setup, w, widths, reps, warmup)
        rows += more
        bar.update(2)
        ep = native_episodes(setup, [w], ["target_only", "sd", "asp", "as2d"], reps, warmup)
        rows += ep.rows
        rounds.append(ep.rounds())
        bar.update(1)
    if clips:
        ep = native_episodes(setup, list(clips), ["as2d"], reps, warmup)
        rows += ep.rows
        rounds.append(ep.rounds())
        bar.update(1)
    bar.close()
    rows += publication_samples(batch=setup.batch_tokens)
    raw = pl.DataFrame(rows, schema=SAMPLE_SCHEMA)
    rounds_df = pl.concat(rounds, how="diagonal_relaxed")
    profile_raw = fit_profile(raw, rounds_df, setup, date, has_conf)
    target = Path(profile_path) if profile_path else (Path(out_dir) / "host.yaml" if out_dir else None)
    if target is not None:
        write_profile(profile_raw, target)
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        atomic_write_parquet(out / "host_samples.parquet", raw)
        atomic_write_parquet(out / "host_rounds.parquet", rounds_df)
    return parse_profile(profile_raw, file=str(target or "<host calibration>")), raw


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
    ap.add_argument("--out-dir", default="outputs/native/calibration")
    ap.add_argument("--profile", default=str(DEVICE_DIR / "host.yaml"))
    args = ap.parse_args(argv)
    from workbench.models.registry import load_model_config

    calib, _ = demo_windows()
    model = load_model_config(args.model)
    profile, raw = calibrate_host(calib[: args.windows], model, args.reps, range(1, args.max_width + 1),
                                  args.out_dir, profile_path=args.profile,
                                  clips=demo_clip_windows(args.clips, model=model))
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
    print(f"samples: {raw.height} rows in {args.out_dir}; median of each, n per field in the YAML")


if __name__ == "__main__":
    main()
