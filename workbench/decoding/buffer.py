"""Ordered publication buffer (paper Section 4.1, Appendix C.1).

* **publication batch** -- an immutable run of candidate tokens a producer appends at once
  (8 tokens by default for autoregressive producers; a whole chunk for external chunk sources).
  It carries source id, producer id, token offset, publish time and per-token confidence
  (``None`` when the source has none -- never invented).
* **buffer** -- the ordered, append-only sequence of published tokens of one request and source.
* **snapshot** -- what a reader sees "published by time t": an immutable prefix of the buffer.

Published tokens never change; only the read cursor (kept by the scheme) moves. That is what
makes candidate recycling proposal-only (Appendix C.4, condition 3).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

DEFAULT_BATCH_TOKENS = 8


@dataclass(frozen=True, slots=True)
class Batch:
    """One immutable publication batch."""

    source_id: str
    producer_id: str
    offset: int
    publish_time: float
    tokens: tuple[int, ...]
    confidences: tuple[float, ...] | None = None

    def __len__(self) -> int:
        return len(self.tokens)


class Snapshot:
    """Immutable view of the first ``len(self)`` published tokens.

    The buffer only appends, so a snapshot can share its storage: positions below its length
    are never written again.
    """

    __slots__ = ("_tokens", "_conf", "_batch_of", "_n", "time", "complete", "source_id")

    def __init__(self, tokens: list[int], conf: list[float | None], batch_of: list[int], n: int, time: float,
                 complete: bool, source_id: str) -> None:
        self._tokens = tokens  # the buffer's own lists (append-only: positions below n never change)
        self._conf = conf
        self._batch_of = batch_of
        self._n = n
        self.time = time
        self.complete = complete
        self.source_id = source_id

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i: int) -> int:
        if not 0 <= i < self._n:
            raise IndexError(f"buffer position {i} is not published in this snapshot (length {self._n})")
        return self._tokens[i]

    def tokens(self, start: int = 0, stop: int | None = None) -> tuple[int, ...]:
        stop = self._n if stop is None else min(stop, self._n)
        return tuple(self._tokens[start:stop])

    def find(self, token: int, start: int, stop: int) -> int | None:
        """First position in ``[start, stop)`` (clipped to this snapshot) holding ``token``."""
        toks = self._tokens
        for j in range(max(0, start), min(stop, self._n)):
            if toks[j] == token:
                return j
        return None

    def rfind(self, token: int, start: int, stop: int) -> int | None:
        """Last position in ``[start, stop)`` (clipped to this snapshot) holding ``token``, searching back."""
        toks = self._tokens
        for j in range(min(stop, self._n) - 1, max(0, start) - 1, -1):
            if toks[j] == token:
                return j
        return None

    def confidence(self, i: int) -> float | None:
        self[i]  # bounds check
        return self._conf[i]

    def batch_index(self, i: int) -> int:
        self[i]
        return self._batch_of[i]


class PublicationBuffer:
    """Append-only ordered buffer of one request's candidates from one source.

    ``publish`` validates everything a later audit relies on: token ids inside the target
    vocabulary, non-decreasing publish times, and confidences either for every token or none.
    """

    def __init__(self, source_id: str = "producer", producer_id: str = "p0", vocab_size: int | None = None):
        self.source_id = source_id
        self.producer_id = producer_id
        self.vocab_size = vocab_size
        self.batches: list[Batch] = []
        self._tokens: list[int] = []
        self._conf: list[float | None] = []
        self._batch_of: list[int] = []
        self._times: list[float] = []  # publish time of each batch
        self._ends: list[int] = []  # cumulative token count after each batch
        self.finish_time: float | None = None

    def __len__(self) -> int:
        return len(self._tokens)

    def __iter__(self) -> Iterator[Batch]:
        return iter(self.batches)

    def publish(
        self, tokens: Sequence[int], publish_time: float, confidences: Sequence[float] | None = None
    ) -> Batch:
        if self.finish_time is not None:
            raise ValueError(f"publish: source {self.source_id!r} already finished at {self.finish_time}")
        if len(tokens) == 0:
            raise ValueError("publish: tokens is empty; a batch carries at least one token")
        if self._times and publish_time < self._times[-1]:
            raise ValueError(
                f"publish_time {publish_time} is earlier than the previous batch's {self._times[-1]}; "
                "batches must be published in time order"
            )
        toks = tuple(int(t) for t in tokens)
        for t in toks:
            if t < 0 or (self.vocab_size is not None and t >= self.vocab_size):
                raise ValueError(
                    f"tokens: candidate token {t} is outside the target vocabulary [0, {self.vocab_size}); "
                    "convert drafter output with Tok_T before publishing"
                )
        conf: tuple[float, ...] | None = None
        if confidences is not None:
            conf = tuple(float(c) for c in confidences)
            if len(conf) != len(toks):
                raise ValueError(f"confidences: {len(conf)} values for {len(toks)} tokens")
        batch = Batch(self.source_id, self.producer_id, len(self._tokens), float(publish_time), toks, conf)
        self.batches.append(batch)
        self._tokens.extend(toks)
        self._conf.extend(conf if conf is not None else (None,) * len(toks))
        self._batch_of.extend([len(self.batches) - 1] * len(toks))
        self._times.append(float(publish_time))
        self._ends.append(len(self._tokens))
        return batch

    def finish(self, time: float) -> None:
        """Mark the source exhausted: no batch follows."""
        if self._times and time < self._times[-1]:
            raise ValueError(f"finish time {time} precedes the last publish time {self._times[-1]}")
        self.finish_time = float(time)

    def snapshot(self, t: float = float("inf")) -> Snapshot:
        """Tokens published at or before time ``t``."""
        nb = bisect.bisect_right(self._times, t)
        n = self._ends[nb - 1] if nb else 0
        complete = self.finish_time is not None and self.finish_time <= t and n == len(self._tokens)
        return Snapshot(self._tokens, self._conf, self._batch_of, n, t, complete, self.source_id)

    def publish_time_of(self, position: int) -> float:
        return self._times[self._batch_of[position]]

    @classmethod
    def from_stream(
        cls,
        tokens: Sequence[int],
        times: Sequence[float],
        confidences: Sequence[float] | None = None,
        batch_tokens: int = DEFAULT_BATCH_TOKENS,
        source_id: str = "producer",
        producer_id: str = "p0",
        vocab_size: int | None = None,
    ) -> PublicationBuffer:
        """Batch a producer trajectory: each batch is published when its last token is generated.

        ``times[i]`` is when token ``i`` was generated. The final partial batch is published
        with the last token, then the source finishes.
        """
        if len(times) != len(tokens):
            raise ValueError(f"times: {len(times)} generation times for {len(tokens)} tokens")
        if batch_tokens < 1:
            raise ValueError(f"batch_tokens must be >= 1, got {batch_tokens}")
        buf = cls(source_id, producer_id, vocab_size)
        for s in range(0, len(tokens), batch_tokens):
            e = min(s + batch_tokens, len(tokens))
            conf = None if confidences is None else confidences[s:e]
            buf.publish(tokens[s:e], times[e - 1], conf)
        buf.finish(times[-1] if len(times) else 0.0)
        return buf
