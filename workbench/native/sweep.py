"""Calibration sweeps (paper D.2): the host's operations timed one by one, as raw samples.

* ``verify_sweep``: one target call at each physical width K at fixed decoder contexts, idle or while
  a producer process generates back to back beside it (``ProducerLoad``, coexistence D.2.1);
* ``kernel_sweep``: a forward of exactly K rows on each linear kernel, for the kernel plan;
* ``ProducerLoad.passes``: the producer's own decoding passes, idle or under load;
* ``publication_samples``: one batch written into the shared buffer;
* ``width_probe``: the drift probe's idle calls at a few widths.

Every function returns sample rows (``samples.SAMPLE_SCHEMA``); ``fit.py`` turns them into a profile.
"""

from __future__ import annotations

import multiprocessing as mp
import statistics
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from workbench.models.kernel_plan import PLAN_KERNELS
from workbench.models.pair import ModelPair

from .liveness import Liveness, ParentGone
from .messages import Failed, Loaded, Passes, Quit, RunPasses
from .producer import IDLE_TIMEOUT_S, ProducerModel, ProducerSpec, report_failure, spawn_start_method
from .samples import sample
from .shared import SharedBuffer
from .windows import AudioWindow

PASSES_TIMEOUT_S = 1800.0  # one batch of producer passes; a hung or dead producer fails the calibration
OFFSETS = (0, 32, 64)  # decoder context positions of the width sweep (cf. D.2.2's 0/64/128)
PROBE_WIDTHS = (1, 4, 8)  # widths the drift probe times again on the anchor window, at offset 0 (drift.py)


# ------------------------------------------------------------------------ producer under load
def _producer_load_main(conn: Any, spec: ProducerSpec, audio: Any, cap: int, stop: Any) -> None:
    """Generate the producer stream back to back: ``RunPasses(n)`` passes, or until ``stop`` (load mode)."""
    life = Liveness()  # a calibration whose parent died must not keep a producer spinning
    try:
        placed = spec.placement.apply()
        model = ProducerModel(spec)
        encoded = model.encode(audio)  # once: passes measure decoding only
        # Loaded only now: a sweep "beside the producer" must not start while the producer still loads
        conn.send(Loaded(placed))
        while True:
            msg = life.recv(conn, IDLE_TIMEOUT_S, "waiting for the next calibration request")
            if isinstance(msg, Quit):
                return
            if not isinstance(msg, RunPasses):
                raise TypeError(f"calibration producer: unexpected message {msg!r}")
            passes: list[Any] = []
            has_conf = True
            while (msg.n is None and not stop.is_set()) or (msg.n is not None and len(passes) < msg.n):
                stream = model.stream(audio, cap, encoded)
                first = next(stream, None)  # the producer's prompt prefill, outside its clock (A.3)
                has_conf = has_conf and first is not None and first.confidence is not None
                # operations after the prefill: drafter forwards where the stream counts them (Tok_T), else tokens
                t0, n = time.perf_counter(), 0
                base = None if first is None else first.forwards
                for item in stream:
                    n = item.forwards - base if item.forwards and base else n + 1
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
        self.conn, self._child = ctx.Pipe()
        self.proc = ctx.Process(target=_producer_load_main, args=(self._child, spec, audio, cap, self.stop),
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
        with spawn_start_method():  # under a joblib sweep's worker too
            self.proc.start()
        self._child.close()  # the child's end lives in the child only: its death is an EOF here
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
def _at_offsets(pair: ModelPair, window: AudioWindow, offsets: Sequence[int]) -> Iterator[tuple[Any, int, int]]:
    """(target, root, offset) with the committed context advanced to each offset by real K=1 steps."""
    target = pair.new_target(window.audio)  # engine-agnostic (torch or MNN, model.engine)
    root = target.prefill()
    pos = 0
    for off in sorted(offsets):
        while pos < off:
            root = target.verify(root, ())[0]
            target.keep(0)
            pos += 1
        yield target, root, off


def _timed_call(target: Any, root: int, k: int) -> float:
    """One K-wide target call on the current context (ms), then back to that context."""
    t0 = time.perf_counter()
    target.verify(root, (root,) * (k - 1))  # cost depends on K and context, not token ids
    ms = 1000 * (time.perf_counter() - t0)
    target.keep(0)
    target.state.crop(1)  # drop the root too: every sample sees the same context
    return ms


def verify_sweep(pair: ModelPair, window: AudioWindow, widths: Iterable[int], reps: int, warmup: int,
                 concurrent: bool, offsets: Sequence[int] = OFFSETS) -> list[dict[str, Any]]:
    """Samples of one target call at each physical width K, at fixed decoder contexts (under the
    target's kernel plan, if it has one: the cost a forward of K rows really has)."""
    widths, rows = list(widths), []
    for target, root, off in _at_offsets(pair, window, offsets):
        for rep in range(-warmup, reps):
            for k in widths:  # widths interleaved within a repetition: drift spreads over all K
                ms = _timed_call(target, root, k)
                if rep >= 0:
                    rows.append(sample("verify", window.window_id, width=k, concurrent=concurrent, offset=off,
                                       rep=rep, ms=ms, tokens=k))
    return rows


def kernel_sweep(pair: ModelPair, window: AudioWindow, widths: Iterable[int], reps: int, warmup: int,
                 offsets: Sequence[int] = OFFSETS) -> list[dict[str, Any]]:
    """Samples of a forward of exactly K rows on each linear kernel (``kind == "kernel"``), idle: what
    the kernel plan is fitted from (``models.kernel_plan.fit_plan``). Empty for a target without
    packed linears (``kernels: plain``, MNN, audio LMs): it has one way to run."""
    switch = getattr(pair.target, "kernels", None)
    if switch is None:
        return []
    widths, rows = list(widths), []
    try:
        for target, root, off in _at_offsets(pair, window, offsets):
            for rep in range(-warmup, reps):
                for k in widths:  # kernels interleaved per width and repetition: drift hits both alike
                    for kernel in PLAN_KERNELS:
                        switch.forced = kernel  # a forced kernel also turns padding off
                        ms = _timed_call(target, root, k)
                        if rep >= 0:
                            rows.append(sample("kernel", window.window_id, width=k, offset=off, rep=rep, ms=ms,
                                               tokens=k, kernel=kernel))
    finally:
        switch.forced = None
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




def width_probe(pair: ModelPair, window: AudioWindow, widths: Sequence[int], reps: int = 5) -> dict[int, float]:
    """Median idle verify call (ms) per width on ``window`` at offset 0: the calibration sweep's own calls,
    so they compare with the profile's ``anchor_widths_ms`` (drift probe, ``replay/drift.py``)."""
    rows = verify_sweep(pair, window, widths, reps, warmup=1, concurrent=False, offsets=(0,))
    return {k: statistics.median(r["ms"] for r in rows if r["width"] == k) for k in widths}


__all__ = ["OFFSETS", "PROBE_WIDTHS", "ProducerLoad", "kernel_sweep", "publication_samples", "verify_sweep",
           "width_probe"]
