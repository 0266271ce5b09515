"""Native on-demand requests (Section 5.4, A.3, D.6.1): audio prepared before the request.

Protocol. Before a request, both models' audio state is prepared off the clock: the target's audio
state (``audio_prefill``: an audio LM's audio KV, a Whisper target's encoder output and
cross-attention KV), the serial drafter's audio prefill and the producer's
(``PrepareWindow``). The request clock starts at the request time s_u and includes, in order:

    residual audio preparation  (what was not prepared by s_u: 0 when the audio state was prepared;
                                 with ``prepare=False`` the encoder / audio KV runs here)
    instruction(-suffix) prefill -> the first known root (time to first token)
    hand-off                     (the driver starting the decode clock; microseconds)
    decoding through target EOS
    charged producer drain       (A.3: drain after EOS is charged once)

L_u = f_u - s_u, measured as one wall-clock difference; the pieces are consecutive timestamps on the
same clock, so they add up to L_u exactly (``RequestTiming.pieces``). Producer cleanup after the
charged boundary is recorded separately.

The request trace (D.6.1): a 10-minute stream built offline from the demo corpus (clips in corpus
order, looped), 19 checkpoints at 60, 90, ..., 600 s; each request transcribes the latest
``window_s`` seconds (60 s in the paper; capped at the target's audio limit, 30 s for Whisper).
"""

from __future__ import annotations

import math
import os
import resource
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from workbench.data.quality import normalize_asr
from workbench.decoding import scheme_spec

from .driver import NativeHost, NativeResult
from .episodes import HostSetup
from .windows import SAMPLE_RATE, AudioWindow

CHECKPOINTS = tuple(range(60, 601, 30))  # D.6.1: 19 positions, 60 s to 600 s, 30 s apart
METHODS = ("target_only", "sd", "asp", "as2d")  # Fig. 7's four curves (ASP = the SpecASR adaptation)


# ------------------------------------------------------------------------------ the trace
@dataclass(frozen=True)
class RequestTrace:
    audio: np.ndarray  # the whole stream, 16 kHz mono
    checkpoints: tuple[float, ...]  # request positions (s into the stream)
    clip_ids: tuple[str, ...]

    @property
    def seconds(self) -> float:
        return len(self.audio) / SAMPLE_RATE

    def window(self, checkpoint: float, window_s: float) -> AudioWindow:
        """The latest ``window_s`` seconds before ``checkpoint`` (the request's audio)."""
        if not 0 < checkpoint <= self.seconds + 1e-9:
            raise ValueError(f"checkpoint {checkpoint} s is outside the {self.seconds:.0f} s trace")
        end = int(round(checkpoint * SAMPLE_RATE))
        start = max(0, end - int(round(window_s * SAMPLE_RATE)))
        return AudioWindow(f"req{int(checkpoint):04d}", (), self.audio[start:end])


def request_trace(clips: Sequence[tuple[str, np.ndarray]], duration_s: float = 600.0,
                  checkpoints: Sequence[float] = CHECKPOINTS, gap_s: float = 0.3) -> RequestTrace:
    """A ``duration_s`` stream of ``clips`` (id, audio) in order, looped, ``gap_s`` silence between."""
    if not clips:
        raise ValueError("request_trace needs at least one clip (the demo corpus is empty?)")
    if max(checkpoints) > duration_s:
        raise ValueError(f"checkpoint {max(checkpoints)} s lies after the trace's end ({duration_s} s)")
    need, parts, ids = int(duration_s * SAMPLE_RATE), [], []
    gap = np.zeros(int(gap_s * SAMPLE_RATE), dtype=np.float32)
    total, k = 0, 0
    while total < need:
        cid, audio = clips[k % len(clips)]
        parts += [np.asarray(audio, dtype=np.float32), gap]
        ids.append(cid)
        total += len(audio) + len(gap)
        k += 1
    return RequestTrace(np.concatenate(parts)[:need], tuple(float(c) for c in checkpoints), tuple(ids))


# ------------------------------------------------------------------------------ request timing
class RequestTarget:
    """A ``Target`` whose prefill is the request: it stamps s_u and the residual/instruction split.

    ``prepare()`` runs before the request: the target's audio state (``audio_prefill``: an audio
    LM's audio KV, a Whisper target's encoder output and cross-attention KV). A request on an
    unprepared target prepares it first, inside the request, as residual audio preparation.
    Everything else is the wrapped target's, unchanged (exactness is untouched)."""

    def __init__(self, target: Any, clock: Any = time.perf_counter) -> None:
        self.inner = target
        self.clock = clock
        self.prepared_s = 0.0
        self.t_request = self.t_audio = self.t_root = math.nan

    @property
    def preparable(self) -> bool:
        return hasattr(self.inner, "audio_prefill")

    def prepare(self) -> None:
        if self.preparable:
            t = self.clock()
            self.inner.audio_prefill()
            self.prepared_s = self.clock() - t

    def prefill(self) -> int:
        self.t_request = self.clock()
        self.t_audio = self.t_request  # nothing residual: the audio state was prepared before s_u
        if self.preparable and not self.inner.audio_prepared:
            self.inner.audio_prefill()  # residual audio preparation: not ready at the request
            self.t_audio = self.clock()
        root = self.inner.prefill()
        self.t_root = self.clock()
        return root

    def __getattr__(self, name: str) -> Any:  # verify, keep, eos_id, vocab_size, committed_entries, ...
        return getattr(self.inner, name)


@dataclass(frozen=True)
class RequestTiming:
    t_request: float
    residual_audio_s: float
    instruction_prefill_s: float
    handoff_s: float
    decode_s: float  # decode clock zero -> target EOS
    drain_s: float  # charged producer drain after EOS
    latency_s: float  # L_u: measured f_u - s_u, one wall-clock difference
    cleanup_s: float

    @classmethod
    def of(cls, target: RequestTarget, r: NativeResult) -> RequestTiming:
        finish = r.origin + r.time  # f_u on the same perf_counter clock
        return cls(target.t_request, target.t_audio - target.t_request, target.t_root - target.t_audio,
                   r.origin - target.t_root, r.t_eos, r.time - r.t_eos, finish - target.t_request, r.cleanup)

    @property
    def pieces(self) -> dict[str, float]:
        return {"residual_audio_s": self.residual_audio_s, "instruction_prefill_s": self.instruction_prefill_s,
                "handoff_s": self.handoff_s, "decode_s": self.decode_s, "drain_s": self.drain_s}

    @property
    def ttft_s(self) -> float:  # the first known root comes out of the instruction prefill
        return self.residual_audio_s + self.instruction_prefill_s


def peak_rss_mb(pids: Sequence[int | None]) -> float:
    """Sum of the peak resident sets (VmHWM) of ``pids`` (None: this process), in MiB."""
    total = 0.0
    for pid in pids:
        try:
            with open(f"/proc/{pid or 'self'}/status") as f:
                kb = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
        except (OSError, StopIteration):
            if pid is not None:
                continue
            kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # Linux: KiB
        total += kb / 1024
    return total


# ------------------------------------------------------------------------------ word agreement
def word_edits(ref: str, hyp: str) -> tuple[int, int]:
    """(word edits, reference words) after ASR normalization: Levenshtein over words."""
    a, b = normalize_asr(ref).split(), normalize_asr(hyp).split()
    prev = list(range(len(b) + 1))
    for i, wa in enumerate(a, 1):
        cur = [i]
        for j, wb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (wa != wb)))
        prev = cur
    return prev[-1], len(a)


def word_agreement(ref: str, hyp: str, max_edits: int = 3, max_rate: float = 0.01) -> bool:
    """D.6.1's bound against target-only: at most ``max_edits`` word edits AND an edit rate <= 1%."""
    edits, n = word_edits(ref, hyp)
    return edits <= max_edits and edits <= max_rate * max(n, 1)


# ------------------------------------------------------------------------------ the sweep
def run_request(host: NativeHost, setup: HostSetup, window: AudioWindow, scheme: str, meter: Any = None, *,
                instruction: str | None = None, prepare: bool = True
                ) -> tuple[NativeResult, RequestTarget, float | None]:
    """One on-demand request: prepare audio state (off the clock; ``prepare=False``: inside the
    request, as residual preparation), then the timed request with ``instruction`` (None: the
    pair's own prompt). Returns (result, timed target, joules read by ``meter`` or None)."""
    pair = setup.pair
    ask = {} if instruction is None else {"instruction": instruction}
    drafter = pair.new_drafter(window.audio, **ask) if setup.uses_drafter(scheme) else None
    target = RequestTarget(pair.new_target(window.audio, **ask))
    if prepare:
        target.prepare()
    costs = setup.costs if scheme_spec(scheme).needs_costs else None
    before = meter.read_uj() if meter is not None else None
    r = host.run(window.window_id, scheme, target, audio=window.audio, max_output=setup.max_output,
                 drafter=drafter, params=setup.params(scheme), costs=costs, **ask)
    joules = None if meter is None else meter.joules_between(before, meter.read_uj())
    return r, target, joules


def run_ondemand(setup: HostSetup, trace: RequestTrace, schemes: Sequence[str] = METHODS, *, window_s: float = 60.0,
                 warmup: int = 1, memory_budget_mb: float | None = None, decode: Any = None,
                 meter: Any = None, host: NativeHost | None = None, progress: bool = False,
                 prepare: bool = True) -> pl.DataFrame:
    """Every checkpoint x scheme, one formal request each after ``warmup`` unrecorded requests per
    scheme (the paper's initial execution check). ``decode``: ids -> text for word agreement.
    ``prepare``: audio state prepared before each request (the paper's setting) or, False, inside it.
    ``meter``: a ``workbench.energy.RaplMeter`` (host energy per request, read around ``host.run``:
    it also covers the producer's window preparation), or None: no energy columns."""
    if host is None:
        with NativeHost(setup.producer, setup.verifier) as h:
            return run_ondemand(setup, trace, schemes, window_s=window_s, warmup=warmup,
                                memory_budget_mb=memory_budget_mb, decode=decode, meter=meter, host=h,
                                progress=progress, prepare=prepare)
    from tqdm.auto import tqdm

    limit = setup.pair.max_audio_seconds
    seconds = min(window_s, limit) if limit else window_s
    first = trace.window(trace.checkpoints[0], seconds)
    for scheme in schemes:
        for _ in range(warmup):
            run_request(host, setup, first, scheme, prepare=prepare)
    rows: list[dict[str, Any]] = []
    reference: dict[float, tuple[tuple[int, ...], str | None]] = {}
    todo = [(c, s) for c in trace.checkpoints for s in schemes]
    for checkpoint, scheme in tqdm(todo, desc="on-demand requests", unit="request", disable=not progress):
        w = trace.window(checkpoint, seconds)
        r, target, joules = run_request(host, setup, w, scheme, meter, prepare=prepare)
        energy = {} if joules is None else {"energy_j": joules, "j_per_token": joules / max(len(r.output), 1)}
        timing = RequestTiming.of(target, r)
        text = decode(list(r.output)) if decode is not None else None
        if scheme == "target_only":
            reference[checkpoint] = (r.output, text)
        rss = peak_rss_mb([None, host.producer_pid])
        rows.append({"checkpoint_s": checkpoint, "method": scheme, "prepared": prepare, "audio_s": w.seconds,
                     "tokens": len(r.output),
                     "rounds": len(r.records), "latency_s": timing.latency_s, "ttft_s": timing.ttft_s,
                     **timing.pieces, "cleanup_s": timing.cleanup_s, "prepared_s": target.prepared_s,
                     "decode_tps": len(r.output) / r.time if r.time > 0 else math.nan,
                     "request_tps": len(r.output) / timing.latency_s, "peak_rss_mb": rss,
                     "memory_budget_mb": memory_budget_mb,
                     "within_budget": None if memory_budget_mb is None else rss <= memory_budget_mb,
                     "capped": r.capped, **energy, "text": text, "output": list(r.output)})
    out = pl.DataFrame(rows, infer_schema_length=None)
    return with_agreement(out, reference)


def with_agreement(frame: pl.DataFrame, reference: dict[float, tuple[tuple[int, ...], str | None]]) -> pl.DataFrame:
    """Exact token match and the word-edit bound against target-only at the same checkpoint."""
    exact, edits, agree = [], [], []
    for row in frame.iter_rows(named=True):
        ref = reference.get(row["checkpoint_s"])
        if ref is None:
            exact.append(None), edits.append(None), agree.append(None)
            continue
        exact.append(tuple(row["output"]) == tuple(ref[0]))
        if ref[1] is None or row["text"] is None:
            edits.append(None), agree.append(None)
        else:
            edits.append(word_edits(ref[1], row["text"])[0])
            agree.append(word_agreement(ref[1], row["text"]))
    return frame.with_columns(pl.Series("exact", exact, dtype=pl.Boolean),
                              pl.Series("word_edits", edits, dtype=pl.Int64),
                              pl.Series("word_agreement", agree, dtype=pl.Boolean))


def tail_latency(frame: pl.DataFrame, alphas: Sequence[float] = (0.5, 0.95)) -> pl.DataFrame:
    """Per method (and per ``prepared`` setting when the frame holds both): Q_alpha of L_u over
    requests (linear interpolation), mean latency, median TPS and preparation time."""
    keys = ["method", "prepared"] if "prepared" in frame.columns else ["method"]
    aggs = [pl.col("latency_s").quantile(a, interpolation="linear").alias(f"latency_p{round(100 * a)}")
            for a in alphas]
    prepared = [pl.col("prepared_s").median().alias("prepared_p50")] if "prepared_s" in frame.columns else []
    return (frame.group_by(keys, maintain_order=True)
            .agg(pl.len().alias("requests"), pl.col("latency_s").mean().alias("latency_mean"), *aggs,
                 pl.col("ttft_s").median().alias("ttft_p50"), pl.col("request_tps").median().alias("request_tps_p50"),
                 pl.col("decode_tps").median().alias("decode_tps_p50"), *prepared,
                 pl.col("peak_rss_mb").max().alias("peak_rss_mb"),
                 pl.col("exact").sum().alias("exact"), pl.col("word_agreement").sum().alias("word_agreement")))


def cpu_note() -> str:
    """The load this run shared the machine with (the host is shared; timings are noisy)."""
    try:
        return f"loadavg {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs"
    except OSError:
        return "loadavg unavailable"


__all__ = ["CHECKPOINTS", "METHODS", "RequestTarget", "RequestTiming", "RequestTrace", "peak_rss_mb",
           "request_trace", "run_ondemand", "run_request", "tail_latency", "with_agreement", "word_agreement",
           "word_edits"]
