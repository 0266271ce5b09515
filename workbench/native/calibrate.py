"""Host calibration (paper D.2): measure the ``host`` device profile in the replay schema.

On separate calibration windows, after warm-up, with ``reps`` >= 5 repetitions, it measures

* verifier widths K (``widths``), idle and while the producer runs on the other core
  (a producer process generating back to back on the same audio, its own placement);
* the producer's per-token service (drafter forwards incl. Tok_T conversion: converted target
  tokens over producer time), idle and while the target runs -> ``forward_ms``, ``concurrent_factor``;
* native episodes (target-only, SD, ASP, As²d) through :class:`NativeHost`, from which come the
  target-only step (charged time / rounds), the serial drafter forward and loop residual per
  serial round, ASP extras, As²d alignment and queue per round, and producer startup;
* publication of one batch into the shared buffer.

Each number is a median of measured samples (or a stated fit); the file records its date and n.
Raw samples are written as parquet next to the profile. Run ``python -m workbench.native.calibrate``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import multiprocessing as mp
import statistics
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import yaml

from workbench.io import atomic_write_parquet, atomic_write_text
from workbench.replay.profile import DEVICE_DIR, SCHEMA, DeviceProfile, parse_profile

from .context import context_fit
from .episodes import SAMPLE_SCHEMA, HostSetup, host_setup, native_episodes, sample
from .fingerprint import cpu_model, engine_label, machine_fingerprint
from .liveness import Liveness, ParentGone
from .messages import Failed, Loaded, Passes, Quit, RunPasses
from .producer import IDLE_TIMEOUT_S, ProducerModel, ProducerSpec, report_failure, restoring_placement
from .shared import SharedBuffer
from .windows import AudioWindow, demo_windows, dev_only

PASSES_TIMEOUT_S = 1800.0  # one batch of producer passes; a hung or dead producer fails the calibration
OFFSETS = (0, 32, 64)  # decoder context positions of the width sweep (cf. D.2.2's 0/64/128)
PROBE_WIDTHS = (1, 4, 8)  # widths the drift probe times again on the anchor window, at offset 0 (drift.py)


# ------------------------------------------------------------------------ producer under load
def _producer_load_main(conn: Any, spec: ProducerSpec, audio: Any, cap: int, stop: Any) -> None:
    """Generate the producer stream back to back: ``RunPasses(n)`` passes, or until ``stop`` (load mode)."""
    life = Liveness()  # a calibration whose parent died must not keep a producer spinning
    try:
        conn.send(Loaded(spec.placement.apply()))
        model = ProducerModel(spec)
        encoded = model.encode(audio)  # once: passes measure decoding only
        while True:
            msg = life.recv(conn, IDLE_TIMEOUT_S, "waiting for the next calibration request")
            if isinstance(msg, Quit):
                return
            if not isinstance(msg, RunPasses):
                raise TypeError(f"calibration producer: unexpected message {msg!r}")
            passes, has_conf = [], True
            while (msg.n is None and not stop.is_set()) or (msg.n is not None and len(passes) < msg.n):
                stream = model.stream(audio, cap, encoded)
                first = next(stream, None)  # the producer's prompt prefill, outside its clock (A.3)
                has_conf = has_conf and first is not None and first.confidence is not None
                t0, n = time.perf_counter(), 0
                for _ in stream:
                    n += 1
                    if msg.n is None and stop.is_set():
                        break
                life.check("running calibration passes")
                passes.append((n, time.perf_counter() - t0))
            conn.send(Passes(passes, has_conf))
    except (EOFError, KeyboardInterrupt, ParentGone):
        return
    except BaseException as err:
        report_failure(conn, err)
        raise SystemExit(1) from err


class ProducerLoad:
    """A producer process that runs while the verifier sweep is measured (coexistence, D.2.1)."""

    def __init__(self, spec: ProducerSpec, audio: Any, cap: int) -> None:
        ctx = mp.get_context("spawn")
        self.stop = ctx.Event()
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_producer_load_main, args=(child, spec, audio, cap, self.stop),
                                name="as2d-calib-producer", daemon=True)

    def _recv(self, kind: type, timeout: float = PASSES_TIMEOUT_S) -> Any:
        deadline = time.monotonic() + timeout
        while not self.conn.poll(1.0):  # bounded, and a dead producer is an error, not a hang
            if not self.proc.is_alive():
                raise RuntimeError(f"calibration producer exited (code {self.proc.exitcode}) without answering")
            if time.monotonic() > deadline:
                raise RuntimeError(f"calibration producer did not answer within {timeout:.0f} s")
        msg = self.conn.recv()
        if not isinstance(msg, kind):
            raise RuntimeError(f"calibration producer: {msg.error if isinstance(msg, Failed) else msg!r}")
        return msg

    def __enter__(self) -> ProducerLoad:
        self.proc.start()
        self._recv(Loaded, 600)
        return self

    def passes(self, n: int | None) -> tuple[list[tuple[int, float]], bool]:
        self.stop.clear()
        self.conn.send(RunPasses(n))
        if n is None:
            return [], False
        msg = self._recv(Passes)
        return msg.passes, msg.has_confidence

    def end_load(self) -> list[tuple[int, float]]:
        self.stop.set()
        return self._recv(Passes).passes

    def __exit__(self, *exc: object) -> None:
        try:
            self.conn.send(Quit())
        except (BrokenPipeError, OSError):
            pass
        self.proc.join(5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(5)


# ---------------------------------------------------------------------------- width sweep
def verify_sweep(setup: HostSetup, window: AudioWindow, widths: Iterable[int], reps: int, warmup: int,
                 concurrent: bool, offsets: Sequence[int] = OFFSETS) -> list[dict[str, Any]]:
    """Samples of one target call at each physical width K, at fixed decoder contexts."""
    widths = list(widths)
    target = setup.pair.new_target(window.audio)  # engine-agnostic (torch or MNN, model.engine)
    root = target.prefill()
    pos, rows = 0, []
    for off in sorted(offsets):
        while pos < off:  # advance the committed context with real K=1 steps
            root = target.verify(root, ())[0]
            target.keep(0)
            pos += 1
        for rep in range(-warmup, reps):
            for k in widths:  # widths interleaved within a repetition: drift spreads over all K
                t0 = time.perf_counter()
                target.verify(root, (root,) * (k - 1))  # cost depends on K and context, not token ids
                ms = 1000 * (time.perf_counter() - t0)
                target.keep(0)
                target.state.crop(1)  # drop the root too: every sample sees the same context
                if rep >= 0:
                    rows.append(sample("verify", window.window_id, width=k, concurrent=concurrent, offset=off,
                                       rep=rep, ms=ms, tokens=k))
    return rows


def publication_samples(n: int = 200, batch: int = 4) -> list[dict[str, Any]]:
    """One batch written into the shared buffer (the producer's publication operation)."""
    buf = SharedBuffer(mp.get_context("spawn"))
    rows = []
    for i in range(n):
        if i % 100 == 0:
            buf.reset()
        t0 = time.perf_counter()
        buf.publish(list(range(batch)), t0, None)
        rows.append(sample("publication", None, width=batch, rep=i, ms=1000 * (time.perf_counter() - t0),
                           tokens=batch))
    return rows


# ------------------------------------------------------------------------------- the job
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
) -> tuple[DeviceProfile, pl.DataFrame]:
    """Measure the host profile on ``calib`` windows; returns (profile, raw samples).

    Writes ``profile_path`` (default ``<out_dir>/host.yaml``), and ``host_samples.parquet`` (raw
    samples, columns ``SAMPLE_SCHEMA``) plus ``host_rounds.parquet`` (episode round records) under
    ``out_dir`` when given.
    """
    from tqdm.auto import tqdm

    if reps < 1 or not calib:
        raise ValueError("calibration needs at least one window and one repetition")
    dev_only(calib, "host calibration")  # per-width costs, kernel crossovers and width caps are fitted here
    widths = sorted(set(widths))
    setup = setup or host_setup(model_cfg)
    rows: list[dict[str, Any]] = []
    rounds: list[pl.DataFrame] = []
    has_conf = False
    bar = tqdm(total=len(calib) * 3, desc="host calibration", disable=not progress)
    for w in calib:
        setup.verifier.apply()
        rows += verify_sweep(setup, w, widths, reps, warmup, concurrent=False)
        with ProducerLoad(setup.producer, w.audio, setup.max_output) as load:
            passes, has_conf = load.passes(reps + warmup)
            rows += [_pass_row(w, n, s, i - warmup, False) for i, (n, s) in enumerate(passes) if i >= warmup]
            load.passes(None)  # the producer now runs back to back while the sweep is measured
            rows += verify_sweep(setup, w, widths, reps, warmup, concurrent=True)
            # Passes cut short by the stop (the sweep ended) still count: per-token time is what matters.
            rows += [_pass_row(w, n, s, i, True) for i, (n, s) in enumerate(load.end_load())]
        bar.update(2)
        ep = native_episodes(setup, [w], ["target_only", "sd", "asp", "as2d"], reps, warmup)
        rows += ep.rows
        rounds.append(ep.rounds())
        bar.update(1)
    bar.close()
    rows += publication_samples(batch=setup.batch_tokens)
    raw = pl.DataFrame(rows, schema=SAMPLE_SCHEMA)
    rounds_df = pl.concat(rounds, how="diagonal_relaxed")
    profile_raw = fit_profile(raw, rounds_df, setup, dt.date.today().isoformat(), has_conf)
    target = Path(profile_path) if profile_path else (Path(out_dir) / "host.yaml" if out_dir else None)
    if target is not None:
        write_profile(profile_raw, target)
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        atomic_write_parquet(out / "host_samples.parquet", raw)
        atomic_write_parquet(out / "host_rounds.parquet", rounds_df)
    return parse_profile(profile_raw, file=str(target or "<host calibration>")), raw


def _pass_row(w: AudioWindow, n: int, s: float, rep: int, concurrent: bool) -> dict[str, Any]:
    return sample("producer_pass", w.window_id, concurrent=concurrent, rep=rep, ms=1000 * s, tokens=n)


# ------------------------------------------------------------------------------- the fit
def _med(xs: Sequence[float]) -> float:
    if not xs:
        raise ValueError("calibration produced no samples for a profile field")
    return float(statistics.median(xs))


def fit_profile(raw: pl.DataFrame, rounds: pl.DataFrame, setup: HostSetup, date: str,
                has_conf: bool) -> dict[str, Any]:
    """The profile mapping (replay schema) from raw samples and episode rounds; medians throughout."""

    def meas(xs: Sequence[float], what: str = "median") -> dict[str, Any]:
        return {"v": round(_med(xs), 4), "source": f"measured on host {date}, n={len(xs)}, {what}"}

    def kind(k: str) -> pl.DataFrame:
        return raw.filter(pl.col("kind") == k)

    ver = kind("verify")
    idle = {k: ver.filter((pl.col("width") == k) & ~pl.col("concurrent"))["ms"].to_list()
            for k in sorted(set(ver["width"].to_list()))}
    conc = {k: ver.filter((pl.col("width") == k) & pl.col("concurrent"))["ms"].to_list() for k in idle}
    ep = kind("episode")
    to = ep.filter(pl.col("scheme") == "target_only")
    step = (to["ms"] / to["rounds"]).to_list()  # charged time per target-only round, loop included

    r = rounds.with_columns((pl.col("t_start") - pl.col("t_decide")).alias("pre"),
                            (pl.col("t_end") - pl.col("t_start")).alias("call"))
    sd = r.filter((pl.col("config") == "sd") & (pl.col("work_forwards") > 0))
    forward = (1000 * sd["pre"] / sd["work_forwards"]).to_list()
    # Loop residual per serial round (D.2.2): wall time minus drafting and verification, per round.
    serial = r.filter(pl.col("config").is_in(["sd", "asp"])).group_by("window_id", "config", "rep").agg(
        ((pl.col("T").first() - (pl.col("t_end") - pl.col("t_decide")).sum()) / pl.len()).alias("loop"))
    loop = (1000 * serial["loop"]).to_list()
    a = r.filter(pl.col("config") == "as2d").sort("window_id", "rep", "round")
    align = (1000 * a["pre"]).to_list()
    q = a.with_columns((pl.col("t_decide").shift(-1).over("window_id", "rep") - pl.col("t_end")).alias("q"))
    queue = (1000 * q["q"].drop_nulls()).to_list()
    startup = kind("producer_startup")["ms"].to_list()
    pub = kind("publication")["ms"].to_list()
    passes = kind("producer_pass").filter(pl.col("tokens") >= 4)
    per_tok = passes.with_columns((pl.col("ms") / pl.col("tokens")).alias("per_token"))
    per_tok_idle = per_tok.filter(~pl.col("concurrent"))["per_token"].to_list()
    per_tok_conc = per_tok.filter(pl.col("concurrent"))["per_token"].to_list()
    # Coexistence as it really happens (D.3): the producer's per-token interval in the native As²d
    # episodes, over its idle per-token time. The synthetic load (a width sweep beside back-to-back
    # passes) stresses the cores differently and measured a factor near 1 where As²d runs at ~1.5.
    live = kind("producer_token").filter(pl.col("tokens") >= 4)["ms"].to_list()
    op_idle = _med(per_tok_idle)
    if live:
        factor = _med(live) / op_idle
        factor_src = (f"fitted on host {date}, n={len(live)} native As2d runs, median per-token publication "
                      f"interval beside the target / idle per-token time (R_LIVE)")
    else:
        factor = _med(per_tok_conc) / op_idle if per_tok_conc else 1.0
        factor_src = (f"measured on host {date}, n={len(per_tok_conc)}/{len(per_tok_idle)} passes, "
                      "ratio of medians (target running / idle)")
    first = kind("producer_first")["ms"].to_list()
    if first:  # replay prices the prompt-prefill token as an operation too: the second one ends at 2 ops
        startup_entry = {"v": round(max(0.0, _med(first) - 2 * op_idle * factor), 4),
                         "source": f"fitted on host {date}, n={len(first)} native As2d runs, median first "
                                   "publication after the clock minus two coexisting operations (R_LIVE)"}
    else:
        startup_entry = meas(startup)
    to_first = to.filter(pl.col("window_id") == to["window_id"][0]) if to.height else to
    anchor = (to_first["ms"] / to_first["rounds"]).to_list()
    # The same idle calls the drift probe repeats: probe widths on the anchor window at its first context.
    at_anchor = ver.filter(~pl.col("concurrent") & (pl.col("offset") == 0)
                           & (pl.col("window_id") == (to["window_id"][0] if to.height else None)))
    anchor_widths = {k: at_anchor.filter(pl.col("width") == k)["ms"].to_list() for k in PROBE_WIDTHS}
    anchor_widths = {k: v for k, v in anchor_widths.items() if v}

    fit = context_fit(ver, r.filter(pl.col("config") == "target_only"), date)
    ctx, sds = (fit.context, fit.sd) if fit is not None else (None, {})
    step_meas = fit.step if fit is not None else meas(step, "median charged time per target-only round")
    f_ms = _med(forward)
    v1 = _med(idle[1])
    refresh = {k: round(f_ms * _med(v) / v1, 4) for k, v in idle.items()}
    asp = r.filter(pl.col("config") == "asp")
    paired, prob_row, n_asp = _fit_asp(asp, f_ms, refresh)
    fitted = f"fitted on host {date}, n={n_asp} ASP rounds, least squares"

    producer = {"kind": "autoregressive", "forward_ms": meas(per_tok_idle, "median producer time per target token"),
                "publication_ms": meas(pub), "startup_ms": startup_entry,
                "concurrent_factor": {"v": round(factor, 4), "source": factor_src},
                "batch_tokens": {"v": setup.batch_tokens, "derived": "R_BATCH"}, "confidence": has_conf}
    sources = {setup.source: producer}
    if setup.serial_source != setup.source:
        sources[setup.serial_source] = {
            "kind": "autoregressive", "forward_ms": meas(forward, "median SD draft time per forward"),
            "publication_ms": {"v": 0.0, "derived": "R_SERIAL"}, "startup_ms": {"v": 0.0, "derived": "R_SERIAL"},
            "concurrent_factor": {"v": 1.0, "derived": "R_SERIAL"}, "batch_tokens": {"v": 1, "derived": "R_SERIAL"},
            "confidence": True}
    else:
        producer["forward_ms"] = meas(forward, "median SD draft time per forward")
    return {
        "schema": SCHEMA, "name": "host", "device": f"this host ({cpu_model()})",
        "machine": machine_fingerprint(engine_label(setup.pair.config)),
        "description": (f"{setup.target.name} target on {setup.verifier}; producer {setup.source} "
                        f"(batch {setup.batch_tokens}) on {setup.producer.placement}; serial drafter "
                        f"{setup.serial_source}. Measured by workbench.native.calibrate; ms per operation."),
        "rules": {
            "R_BATCH": "Publication batch size is the producer's configured batch_tokens (conf/model).",
            "R_SERIAL": "The serial drafter runs inside the verifier's loop: nothing to publish, its prefill "
                        "is before the clock, and it never coexists with the target (factor 1).",
            "R_REFRESH": "ASP batched KV refresh at width K = serial draft forward * V(K)/V(1) of this file.",
            "R_LIVE": "The producer's coexistence factor and startup come from its publication times in the "
                      "native As2d episodes of the calibration windows (what replay must predict); so does the "
                      "verifier's cost at each width those episodes called often enough: beside the producer "
                      "from As2d's calls, idle from target-only, SD and ASP calls (first calls left out).",
        },
        **({"anchor_ms": meas(anchor, "median target-only round on anchor_window (drift anchor)"),
            "anchor_window": to["window_id"][0]} if anchor else {}),
        **({"anchor_widths_ms": {k: meas(v, "median idle verify call on anchor_window at offset 0 (drift probe)")
                                 for k, v in anchor_widths.items()}}
           if anchor and 1 in anchor_widths and len(anchor_widths) > 1 else {}),
        "target_step_ms": step_meas,
        "loop_residual_ms": meas(loop, "median per serial round of (T - draft - verify) / rounds"),
        "queue_ms": meas(queue, "median As2d gap from a call's end to the next decision"),
        "alignment_ms": meas(align, "median As2d decision-to-call time"),
        "verifier": {"idle_ms": {k: _with_sd(e, sds.get(k)) for k, e in live_widths(
                         r.filter(pl.col("config").is_in(list(IDLE_SCHEMES))), idle, date,
                         "idle calls (target-only, SD, ASP)").items()},
                     "concurrent": {"ms": live_widths(a, conc, date, "As2d calls beside the producer"),
                                    "missing": "median_ratio"},
                     **({"context": ctx} if ctx is not None else {})},
        "sources": sources,
        "serial_drafter": setup.serial_source,
        "asp": {"paired_branch_ms": {"v": paired, "source": fitted},
                "prob_row_ms": {"v": prob_row, "source": fitted},
                "kv_refresh_ms": {k: {"v": v, "derived": "R_REFRESH"} for k, v in refresh.items()}},
    }


LIVE_MIN_CALLS = 5  # fewer native calls at a width than this: the sweep prices it
IDLE_SCHEMES = ("target_only", "sd", "asp")  # their verify calls run with no producer beside them


def live_widths(rounds: pl.DataFrame, sweep: dict[int, list[float]], date: str, what: str,
                ) -> dict[int, dict[str, Any]]:
    """The verifier's cost per width: the median native call at that width among ``rounds`` of the
    calibration windows' episodes (R_LIVE), where they made at least ``LIVE_MIN_CALLS``; else the sweep's.
    A window's first call is left out: the context fit's cold surcharge prices it.

    Why, beside the producer (agreement runs at 17:13 and 17:25): the sweep's K = 1 call measured
    38.0 / 30.3 ms, but As²d's own K = 1 calls took 29.0 / 28.0 ms; replay priced every plain step of
    As²d that much too slowly. Idle, the same (a fresh calibration at 23:40): the sweep's K1 / K4 took
    27.0 / 33.7 ms against 23.5 (target-only steps) / 32.5 (SD verifies), and replay prices As²d's
    calls once its producer has finished at the idle rate, so short windows replayed 5-9% slow."""
    calls = rounds.filter(pl.col("round") > 0) if rounds.height else rounds
    out = {}
    for k, v in sweep.items():
        live = (1000 * calls.filter(pl.col("width") == k)["call"]).to_list() if calls.height else []
        if len(live) >= LIVE_MIN_CALLS:
            out[k] = {"v": round(_med(live), 4),
                      "source": f"fitted on host {date}, n={len(live)} native {what} at this width, median (R_LIVE)"}
        elif v:
            out[k] = {"v": round(_med(v), 4), "source": f"measured on host {date}, n={len(v)}, median"}
    return out


def _with_sd(entry: dict[str, Any], sd: tuple[float, int] | None) -> dict[str, Any]:
    """Per-width dispersion (Fig. 8 error bars): sd of the width's residuals around its context line."""
    return entry if sd is None else {**entry, "sd": sd[0], "n": sd[1]}


def _fit_asp(asp: pl.DataFrame, f_ms: float, refresh: dict[int, float]) -> tuple[float, float, int]:
    """ASP paired-branch and probability-row costs: non-negative least squares on draft time."""
    if asp.height == 0:
        return 0.0, 0.0, 0
    rw = asp["work_refresh_width"].to_list()
    y = np.array([1000 * p - f_ms * f - (refresh.get(w, 0.0) if w else 0.0)
                  for p, f, w in zip(asp["pre"].to_list(), asp["work_forwards"].to_list(), rw, strict=True)])
    x = np.array([asp["work_paired_forwards"].to_list(), asp["work_prob_rows"].to_list()], dtype=float).T
    coef = np.linalg.lstsq(x, y, rcond=None)[0] if x.any() else np.zeros(2)
    return round(max(0.0, float(coef[0])), 4), round(max(0.0, float(coef[1])), 4), asp.height


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
    ap.add_argument("--out-dir", default="outputs/native/calibration")
    ap.add_argument("--profile", default=str(DEVICE_DIR / "host.yaml"))
    args = ap.parse_args(argv)
    from workbench.models.registry import load_model_config

    calib, _ = demo_windows()
    profile, raw = calibrate_host(calib[: args.windows], load_model_config(args.model), args.reps,
                                  range(1, args.max_width + 1), args.out_dir, profile_path=args.profile)
    if profile.verifier.context is not None:
        c = profile.verifier.context
        print(f"context fit: K1 {c.slope(1):+.4f} ms/token from {c.ref_tokens:.0f} tokens, cold first call "
              f"+{c.cold_ms:.2f} ms, residual (RMS) {c.residual_ms:.2f} ms per target-only round")
    print(f"wrote {args.profile}: step {profile.target_step_ms:.2f} ms, loop {profile.loop_residual_ms:.2f} ms, "
          f"queue {profile.queue_ms:.2f} ms, align {profile.alignment_ms:.3f} ms")
    for k in profile.verifier.widths():
        print(f"  K{k:<2d} idle {profile.verify_ms(k):7.2f} ms  concurrent {profile.verify_ms(k, True):7.2f} ms")
    for s in profile.sources.values():
        print(f"  source {s.name}: {s.op_ms:.2f} ms/token, x{s.concurrent_factor:.3f} concurrent, "
              f"startup {s.startup_ms:.2f} ms, publication {s.publication_ms:.3f} ms")
    print(f"samples: {raw.height} rows in {args.out_dir}; median of each, n per field in the YAML")


if __name__ == "__main__":
    main()
