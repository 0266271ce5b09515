"""Sustained native streaming (D.6.2, Fig. 9, Table 16): paced 4 s blocks, a queue, lag and RTF.

A pacer thread releases non-overlapping ``block_s`` blocks of a long recording in real time (block
i arrives when its final sample would have been captured); a FIFO ``BlockQueue`` holds what is not
yet processed; the worker takes blocks in arrival order and processes each one completely
(target encoding, prefill, decoding through EOS, charged producer drain) before the next.

Context: the audio context persists for ``reset_s`` (12 s) and then resets, models stay resident;
a block's request covers the audio since the last reset up to its own end. (The committed text
context of the paper's runner is not carried: the pair's Whisper target has no previous-text
prompt.) Source lifetime (D.6.2 names both): ``expiry="arrival"`` (the cooled run) -- a block whose
processing starts later than ``deadline_s`` after its arrival is decoded without the producer
(target-only), its drafting epoch has expired; ``expiry="consumption"`` (the uncooled run) -- an
epoch drafts until the target has consumed it, so a backlog does not also switch drafting off
(under "arrival" every block behind a missed deadline decodes target-only, and the backlog grows).

Per block: queue wait (arrival -> processing start), completion lag l_i = f_i - r_i (arrival of the
final sample -> output complete), encode / prefill / decode times. Over the run: active RTF
(serial target-path time / audio), resource RTF (elapsed time incl. paced waits and drain / audio),
p95 lag (linear interpolation), trailing-window (<= 15 blocks) decode TPS and prefill time, and
the host temperature (thermal zones / hwmon) where readable.
"""

from __future__ import annotations

import math
import queue
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from .windows import SAMPLE_RATE

TRAILING = 15  # Fig. 9: trailing windows of at most 15 blocks


@dataclass(frozen=True)
class Block:
    index: int
    start_s: float  # position in the stream
    end_s: float
    context_start_s: float  # where this block's audio context begins (last reset)

    @property
    def seconds(self) -> float:
        return self.end_s - self.start_s


def plan_blocks(duration_s: float, block_s: float = 4.0, reset_s: float = 12.0) -> list[Block]:
    """Non-overlapping blocks covering ``duration_s``; context resets every ``reset_s``."""
    if block_s <= 0 or reset_s < block_s:
        raise ValueError(f"need 0 < block_s <= reset_s, got block_s={block_s}, reset_s={reset_s}")
    n = int(math.floor(duration_s / block_s + 1e-9))
    return [Block(i, i * block_s, (i + 1) * block_s, math.floor(i * block_s / reset_s + 1e-9) * reset_s)
            for i in range(n)]


class BlockQueue:
    """FIFO of arrived blocks: stamps arrival, hands each block out exactly once, in arrival order."""

    _END = object()

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock
        self._q: queue.Queue = queue.Queue()
        self.arrivals: dict[int, float] = {}
        self._next_put = 0
        self._next_get = 0
        self.max_depth = 0

    def put(self, block: Block) -> None:
        if block.index != self._next_put:
            raise ValueError(f"block {block.index} arrived out of order (expected {self._next_put})")
        self.arrivals[block.index] = self.clock()
        self._next_put += 1
        self._q.put(block)
        self.max_depth = max(self.max_depth, self._q.qsize())

    def close(self) -> None:
        self._q.put(self._END)

    def __iter__(self) -> Iterator[tuple[Block, float]]:
        """(block, arrival time) until ``close()``; checks that nothing is lost or reordered."""
        while (item := self._q.get()) is not self._END:
            if item.index != self._next_get:
                raise RuntimeError(f"queue handed out block {item.index}, expected {self._next_get}")
            self._next_get += 1
            yield item, self.arrivals[item.index]
        if self._next_get != self._next_put:
            raise RuntimeError(f"queue closed with {self._next_put - self._next_get} blocks unprocessed")


def pace(blocks: list[Block], q: BlockQueue, t_start: float, speed: float = 1.0,
         stop: threading.Event | None = None) -> threading.Thread:
    """Release each block at ``t_start + end_s / speed`` (real time at ``speed`` 1), then close."""
    def run() -> None:
        for b in blocks:
            delay = t_start + b.end_s / speed - q.clock()
            if delay > 0 and stop is not None and stop.wait(delay):
                break
            if delay > 0 and stop is None:
                time.sleep(delay)
            q.put(b)
        q.close()

    th = threading.Thread(target=run, name="as2d-pacer", daemon=True)
    th.start()
    return th


@dataclass(frozen=True)
class Processed:
    """What processing one block measured (seconds) and produced."""
    tokens: int
    encode_s: float
    prefill_s: float
    decode_s: float
    drafting: bool = True
    output: tuple[int, ...] = ()
    capped: bool = False


EXPIRY = ("arrival", "consumption")  # source lifetime rules of D.6.2 (see the module docstring)
Processor = Callable[[Block, np.ndarray, bool], Processed]  # (block, context audio, may draft) -> Processed


def run_stream(audio: np.ndarray, process: Processor, *, block_s: float = 4.0, reset_s: float = 12.0,
               deadline_s: float | None = None, expiry: str = "arrival", speed: float = 1.0,
               clock: Callable[[], float] = time.perf_counter,
               temperature: Callable[[], float | None] | None = None, progress: bool = False) -> pl.DataFrame:
    """Stream ``audio`` in paced blocks through ``process``; one row per block (times: s since start)."""
    from tqdm.auto import tqdm

    if expiry not in EXPIRY:
        raise ValueError(f"streaming.expiry: expected one of {list(EXPIRY)}, got {expiry!r}")
    blocks = plan_blocks(len(audio) / SAMPLE_RATE, block_s, reset_s)
    if not blocks:
        raise ValueError(f"the stream is shorter than one {block_s} s block")
    q = BlockQueue(clock)
    t_start = clock()
    pacer = pace(blocks, q, t_start, speed)
    rows = []
    for block, arrival in tqdm(q, total=len(blocks), desc="stream blocks", unit="block", disable=not progress):
        begin = clock()
        wait = begin - arrival
        may_draft = expiry == "consumption" or deadline_s is None or wait <= deadline_s
        ctx = audio[int(round(block.context_start_s * SAMPLE_RATE)): int(round(block.end_s * SAMPLE_RATE))]
        p = process(block, ctx, may_draft)
        end = clock()
        rows.append({"block": block.index, "start_s": block.start_s, "end_s": block.end_s,
                     "context_s": block.end_s - block.context_start_s, "arrival": arrival - t_start,
                     "begin": begin - t_start, "finish": end - t_start, "queue_wait_s": wait,
                     "lag_s": end - arrival, "processing_s": end - begin, "encode_s": p.encode_s,
                     "prefill_s": p.prefill_s, "decode_s": p.decode_s, "tokens": p.tokens,
                     "drafting": p.drafting and may_draft, "capped": p.capped, "depth": q._q.qsize(),
                     "temp_c": temperature() if temperature is not None else None, "output": list(p.output)})
    pacer.join()
    return pl.DataFrame(rows, infer_schema_length=None).with_columns(trailing(pl.DataFrame(rows)))


def trailing(frame: pl.DataFrame, n: int = TRAILING) -> list[pl.Series]:
    """Trailing-window (<= ``n`` blocks) decode TPS, prefill time and active RTF (Fig. 9)."""
    tok = frame["tokens"].cast(pl.Float64).rolling_sum(n, min_samples=1)
    dec = frame["decode_s"].rolling_sum(n, min_samples=1)
    proc = frame["processing_s"].rolling_sum(n, min_samples=1)
    dur = (frame["end_s"] - frame["start_s"]).rolling_sum(n, min_samples=1)
    return [(tok / dec).alias("trailing_decode_tps"), frame["prefill_s"].rolling_mean(n, min_samples=1)
            .alias("trailing_prefill_s"), (proc / dur).alias("trailing_rtf")]


def summarize(frame: pl.DataFrame) -> dict[str, float]:
    """Table 16's rows for one run."""
    audio_s = float((frame["end_s"] - frame["start_s"]).sum())
    first_arrival = float(frame["arrival"][0]) - float(frame["end_s"][0] - frame["start_s"][0])
    temps = frame["temp_c"].drop_nulls() if "temp_c" in frame.columns else pl.Series([], dtype=pl.Float64)
    out = {"blocks": float(frame.height), "audio_s": audio_s,
           "mean_encode_s": float(frame["encode_s"].mean()), "mean_prefill_s": float(frame["prefill_s"].mean()),
           "mean_decode_s": float(frame["decode_s"].mean()), "mean_processing_s": float(frame["processing_s"].mean()),
           "active_rtf": float(frame["processing_s"].sum()) / audio_s,
           "resource_rtf": (float(frame["finish"].max()) - first_arrival) / audio_s,
           "decode_tps": float(frame["tokens"].sum()) / max(float(frame["decode_s"].sum()), 1e-12),
           "p95_lag_s": float(frame["lag_s"].quantile(0.95, interpolation="linear")),
           "final_lag_s": float(frame["lag_s"][-1]), "max_queue_wait_s": float(frame["queue_wait_s"].max()),
           "final_queue_wait_s": float(frame["queue_wait_s"][-1]), "capped": float(frame["capped"].sum()),
           "undrafted_blocks": float((~frame["drafting"]).sum())}
    if len(temps):
        out.update(first_temp_c=float(temps[0]), max_temp_c=float(temps.max()))
    return out


# ------------------------------------------------------------------------------ temperature
def temperature_reader(roots: tuple[str, ...] = ("/sys/class/thermal", "/sys/class/hwmon")
                       ) -> Callable[[], float | None] | None:
    """The hottest readable host sensor (deg C), or None when this machine exposes none."""
    files = [f for r in roots for f in sorted(Path(r).glob("thermal_zone*/temp")) + sorted(Path(r).glob(
        "hwmon*/temp*_input"))]

    def read() -> float | None:
        vals = []
        for f in files:
            try:
                vals.append(int(f.read_text().strip()) / 1000)
            except (OSError, ValueError):
                continue
        return max(vals) if vals else None

    return read if files and read() is not None else None


# ------------------------------------------------------------------------------ host processor
def host_processor(setup: Any, host: Any, scheme: str = "as2d") -> Processor:
    """Process a block natively: fresh target on the context audio (encode = features, prefill =
    audio + instruction prefill), then ``scheme`` through EOS; target-only after a missed deadline."""

    from .ondemand import RequestTarget

    def process(block: Block, ctx: np.ndarray, may_draft: bool) -> Processed:
        name = scheme if may_draft else "target_only"
        t = time.perf_counter()
        drafter = setup.pair.new_drafter(ctx) if setup.uses_drafter(name) else None
        target = RequestTarget(setup.pair.new_target(ctx))
        encode_s = time.perf_counter() - t
        r = host.run(f"b{block.index:04d}", name, target, audio=ctx, max_output=setup.max_output, drafter=drafter,
                     params=setup.params(name))
        return Processed(len(r.output), encode_s, target.t_root - target.t_request, r.time, name != "target_only",
                         tuple(r.output), r.capped)

    return process


__all__ = ["EXPIRY", "Block", "BlockQueue", "Processed", "TRAILING", "host_processor", "pace", "plan_blocks",
           "run_stream", "summarize", "temperature_reader", "trailing"]
