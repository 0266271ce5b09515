"""The Python runner's reference engine, as protocol lines (PROTOCOL.md, ``engine`` and output lines).

A run replays each window on the request's ``pricing`` (``phone_runner.reference``) and writes what
a phone would: publications and rounds in time order, the stages, then the ``window`` line. With
``clock: real`` each line waits for its priced time (threads are not needed: the clock is the model).
A calibration writes the priced costs as the ``measure`` lines a phone would measure (D.2).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .payloads import profile_from_pricing, window_from_payload
from .protocol import Request
from .runner_output import Out
from .runtime import RunnerFailure

if TYPE_CHECKING:
    from workbench.decoding import Batch, PublicationBuffer
    from workbench.replay.profile import DeviceProfile
    from workbench.replay.result import ReplayConfig, ReplayResult
    from workbench.replay.trajectory import Window


@dataclass(frozen=True)
class _Clock:
    """A line's time. Virtual: the priced time, written at once. Real: the line waits until its
    priced time has passed since ``t0``, and its time is what the clock then shows."""

    real: bool
    t0: float

    def pace(self, t: float) -> float:
        if not self.real:
            return t
        delay = self.t0 + t - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        return time.perf_counter() - self.t0


def run_reference(req: Request, out: Out) -> dict[str, float]:
    """Every window ``warmups + repetitions`` times (warm-ups write nothing); returns the summary's
    totals: rounds, tokens and priced time over the measured repetitions."""
    from .reference import priced_profile, replay_config

    assert req.pricing is not None
    profile = priced_profile(req.pricing)
    cfg = replay_config(req)
    real = req.engine.get("clock") == "real"
    drain = req.engine.get("drain", "boundary")
    totals = {"rounds": 0, "tokens": 0, "time": 0.0}
    for entry in req.windows:
        wid = entry["window_id"]
        window = window_from_payload({**entry, "max_output": entry.get("max_output") or req.max_output})
        for rep in range(-req.warmups, req.repetitions):
            result, buffer = _replay(window, wid, cfg, profile, drain)
            if rep < 0:
                continue  # warm-ups print nothing
            clock = _Clock(real, time.perf_counter())
            _write_repetition(out, {"window_id": wid, "repetition": rep}, cfg, result, buffer, clock)
            totals["rounds"] += len(result.untimed)
            totals["tokens"] += result.tokens
            totals["time"] += result.time
    return totals


def _replay(window: Window, wid: str, cfg: ReplayConfig, profile: DeviceProfile, drain: str
            ) -> tuple[ReplayResult, PublicationBuffer | None]:
    """One audited replay; an unpriced width and an exactness fault are the runner's ``error`` codes."""
    from workbench.decoding import ExactnessError
    from workbench.replay.audit import ReplayAuditError
    from workbench.replay.profile import MissingWidthError

    from .reference import run_window

    try:
        return run_window(window, cfg, profile, drain)
    except MissingWidthError as err:
        raise RunnerFailure("width_not_priced", str(err), wid) from None
    except (ExactnessError, ReplayAuditError) as err:
        raise RunnerFailure("exactness", str(err), wid) from None


def _write_repetition(out: Out, common: dict[str, Any], cfg: ReplayConfig, result: ReplayResult,
                      buffer: PublicationBuffer | None, clock: _Clock) -> None:
    """One measured repetition: each publication before the first round that ends at or after it
    (the readiness tie, PROTOCOL.md Ties), the stages, then the ``window`` line."""
    # cleanup: producer time after target EOS beyond the charged boundary, as the C++ runner
    p_stop = max((end for res, _, _, end, _ in result.stages if res == "producer"), default=0.0)
    # a static plan's buffer also holds batches the stopped producer never reached
    pubs = [b for b in buffer or () if b.publish_time <= p_stop]
    pi = 0
    for rec in result.records:
        while pi < len(pubs) and pubs[pi].publish_time <= rec.t_end:
            _write_publication(out, common, pubs[pi], clock)
            pi += 1
        clock.pace(rec.t_end)
        row = rec.as_row()
        out("round", **common, config=cfg.label, **row)
    for b in pubs[pi:]:
        _write_publication(out, common, b, clock)
    for resource, stage, start, end, rnd in result.stages:
        out("stage", **common, resource=resource, stage=stage, start=start, end=end, round=rnd)
    # real clock: the window's time is what the clock showed when its priced end was reached
    # (sleep overshoot and line writing included), not the priced value itself
    elapsed = clock.pace(result.time)
    output = [int(t) for t in result.output]  # root first, even a window prefill already ended
    out("window", **common, config=cfg.label, scheme=cfg.scheme, tokens=result.tokens, time=elapsed,
        t_eos=result.t_eos, cleanup=max(0.0, p_stop - result.t_eos), rounds=len(result.untimed),
        output=output)


def _write_publication(out: Out, common: dict[str, Any], b: Batch, clock: _Clock) -> None:
    clock.pace(b.publish_time)
    out("publication", **common, source_id=b.source_id, producer_id=b.producer_id, offset=b.offset,
        publish_time=b.publish_time, tokens=list(b.tokens),
        confidences=None if b.confidences is None else list(b.confidences))


def calibrate_reference(req: Request, out: Out) -> None:
    """Reference calibration: the priced costs, as ``measure`` lines (what a phone would measure)."""
    from workbench.replay.profile import MissingWidthError

    assert req.pricing is not None and req.calibrate is not None
    profile = profile_from_pricing(req.pricing)
    plan = req.calibrate
    reps = int(plan.get("reps", 5))
    for conc in plan.get("with_producer", [False, True]):
        for offset in plan.get("offsets", [0]):
            for k in plan.get("widths", range(1, 17)):
                try:
                    ms = profile.verify_ms(k, bool(conc))
                except MissingWidthError as err:
                    raise RunnerFailure("width_not_priced", str(err)) from None
                for rep in range(reps):
                    out("measure", op="verify", width=k, offset=offset, concurrent=bool(conc), source=None,
                        repetition=rep, ms=ms)
    for rep in range(reps):
        out("measure", op="target_step", width=1, offset=None, concurrent=False, source=None, repetition=rep,
            ms=profile.target_step_ms)
        if plan.get("draft_forward", True):
            out("measure", op="draft_forward", width=1, offset=None, concurrent=False,
                source=profile.serial_drafter, repetition=rep, ms=profile.source(profile.serial_drafter).op_ms)
        if plan.get("asp", True) and profile.asp is not None:
            out("measure", op="asp_paired", width=None, offset=None, concurrent=False, source=None, repetition=rep,
                ms=profile.asp.paired_branch_ms)
            out("measure", op="asp_prob_row", width=None, offset=None, concurrent=False, source=None,
                repetition=rep, ms=profile.asp.prob_row_ms)
            for k, ms in profile.asp.kv_refresh_ms.items():
                out("measure", op="asp_refresh", width=k, offset=None, concurrent=False, source=None,
                    repetition=rep, ms=ms)
        for name, s in profile.sources.items():
            op = "chunk_service" if s.kind == "chunk" else "producer_forward"
            out("measure", op=op, width=None, offset=None, concurrent=False, source=name, repetition=rep, ms=s.op_ms)
