"""The ordered publication buffer across processes (native clock).

The producer process writes batches into shared memory; the verifier process mirrors them into
the decoding core's own ``PublicationBuffer`` at each decision, so schemes run unchanged and
the replay audits (publish time <= decision time) hold for native runs too.

Layout (all ``multiprocessing`` shared arrays, allocated once, reset per window):

* ``tokens[i]``, ``conf[i]`` -- published candidate tokens in target vocabulary (NaN: none);
* ``forwards_at[i]`` -- drafter forwards run by the time that token was available (0: not counted, one per
  token), the ``ProducedToken.forwards`` replay prices a cross-vocabulary producer by;
* ``batch_end[b]``, ``batch_time[b]`` -- cumulative token count and publish time of batch b;
* ``n_batches`` -- the publication counter, written *after* the batch data, under its lock;
* ``spans[s] = (start, end)`` -- producer stage intervals (one per forward), ``n_spans``;
* ``finish_time`` -- when the producer stopped (EOS, cap, or the verifier's stop request).

Times are ``time.perf_counter()`` values: CLOCK_MONOTONIC, shared by processes on one host.
"""

from __future__ import annotations

import math
import multiprocessing as mp
from collections.abc import Sequence

from workbench.decoding import PublicationBuffer, Snapshot

MAX_TOKENS = 2048
MAX_BATCHES = 1024
MAX_SPANS = 4096


class SharedBuffer:
    def __init__(self, ctx: mp.context.BaseContext, max_tokens: int = MAX_TOKENS) -> None:
        self.max_tokens = max_tokens
        self.tokens = ctx.RawArray("i", max_tokens)
        self.conf = ctx.RawArray("d", max_tokens)
        self.batch_end = ctx.RawArray("i", MAX_BATCHES)
        self.batch_time = ctx.RawArray("d", MAX_BATCHES)
        self.n_batches = ctx.Value("i", 0)
        self.spans = ctx.RawArray("d", 2 * MAX_SPANS)
        self.n_spans = ctx.Value("i", 0)
        self.finish_time = ctx.Value("d", math.nan)
        self.forwards_at = ctx.RawArray("i", max_tokens)

    # -- producer side ----------------------------------------------------------------------
    def reset(self) -> None:
        with self.n_batches.get_lock():
            self.n_batches.value = 0
        self.n_spans.value = 0
        self.finish_time.value = math.nan

    def publish(self, tokens: Sequence[int], publish_time: float, confidences: Sequence[float] | None,
                forwards: Sequence[int | None] | None = None) -> None:
        with self.n_batches.get_lock():
            b = self.n_batches.value
            start = self.batch_end[b - 1] if b else 0
            end = start + len(tokens)
            if end > self.max_tokens or b >= MAX_BATCHES:
                raise OverflowError(f"shared buffer full: {end} tokens / {b + 1} batches")
            for i, t in enumerate(tokens):
                self.tokens[start + i] = int(t)
                self.conf[start + i] = math.nan if confidences is None else float(confidences[i])
                self.forwards_at[start + i] = 0 if forwards is None else int(forwards[i] or 0)
            self.batch_end[b] = end
            self.batch_time[b] = publish_time
            self.n_batches.value = b + 1  # last: readers never see a half-written batch

    def add_span(self, start: float, end: float) -> None:
        s = self.n_spans.value
        if s < MAX_SPANS:
            self.spans[2 * s], self.spans[2 * s + 1] = start, end
            self.n_spans.value = s + 1

    def finish(self, t: float) -> None:
        self.finish_time.value = t

    # -- verifier side ----------------------------------------------------------------------
    def forwards_of(self, n: int) -> tuple[int, ...]:
        """The first ``n`` tokens' forward counts; empty when the producer did not count them."""
        counts = tuple(self.forwards_at[:n])
        return counts if counts and all(counts) else ()

    def producer_spans(self) -> list[tuple[float, float]]:
        n = self.n_spans.value
        return [(self.spans[2 * i], self.spans[2 * i + 1]) for i in range(n)]


class NativeSource:
    """Verifier-side view: mirrors shared batches into a core ``PublicationBuffer``.

    ``t0`` is the decode clock's zero (after prefill); snapshot times are relative to it, like
    replay's. Pulling happens at decision time, so every batch mirrored was published by then.
    """

    def __init__(self, shared: SharedBuffer, t0: float, source_id: str, vocab_size: int | None) -> None:
        self.shared = shared
        self.t0 = t0
        self.buffer = PublicationBuffer(source_id, "native", vocab_size)
        self._pulled = 0

    def _pull(self) -> None:
        sh = self.shared
        with sh.n_batches.get_lock():
            n = sh.n_batches.value
            batches = []
            for b in range(self._pulled, n):
                start = sh.batch_end[b - 1] if b else 0
                end = sh.batch_end[b]
                conf = [sh.conf[i] for i in range(start, end)]
                batches.append((sh.tokens[start:end], sh.batch_time[b], conf))
            finish = sh.finish_time.value
        for toks, t, conf in batches:
            has_conf = not any(math.isnan(c) for c in conf)
            self.buffer.publish(toks, t - self.t0, conf if has_conf else None)
        self._pulled = n
        if not math.isnan(finish) and self.buffer.finish_time is None:
            last = self.buffer.publish_time_of(len(self.buffer) - 1) if len(self.buffer) else 0.0
            self.buffer.finish(max(finish - self.t0, last))

    def snapshot(self, t: float = float("inf")) -> Snapshot:
        self._pull()
        return self.buffer.snapshot(t)
