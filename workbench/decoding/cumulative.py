"""Cumulative-prefix publication: how the spoken-QA buffer is fed (paper D.1.2).

"The QA buffer receives cumulative observed prefixes with unchanged token-arrival times; these
prefixes only grow." A QA source is observed as the whole answer so far (a growing prefix), not as
fixed ``batch_tokens`` batches. Each observation may only extend what was published before: a
prefix that rewrites or drops an earlier token is an error, because published tokens never change
(the buffer's invariant, Appendix C.4). The tokens an observation adds are published at their own
arrival times -- never moved to the observation time or to the end of a batch -- so a token is
readable as soon as it arrived, exactly as in the observed prefix.

Two ways in, one rule:

* ``CumulativePrefixPublisher.observe(prefix, arrivals)`` -- a live source (the native producer
  process publishes each prefix it has generated so far);
* ``cumulative_buffer(tokens, times)`` -- a finished trajectory (traces, replay, tests).

Pure Python, no torch, like the rest of ``workbench.decoding``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

from .buffer import PublicationBuffer

BATCHES = "batches"  # fixed-size immutable batches (ASR, translation: the producer's batch_tokens)
CUMULATIVE_PREFIX = "cumulative_prefix"  # growing observed prefixes, per-token arrival times (spoken QA)
PUBLICATIONS = (BATCHES, CUMULATIVE_PREFIX)


def publication_for_task(task: str | None) -> str:
    """The publication rule of a task (D.1.2): spoken QA publishes cumulative prefixes, others batches."""
    if task in (None, "asr", "translation"):
        return BATCHES
    if task == "qa":
        return CUMULATIVE_PREFIX
    raise ValueError(f"task: unknown task {task!r}; choose asr, translation or qa")


class PrefixShrankError(ValueError):
    """An observed prefix did not extend the published one (QA prefixes only grow)."""


class CumulativePrefixPublisher:
    """Feed growing observed prefixes into ``publish(tokens, publish_time, confidences)``.

    ``publish`` is a ``PublicationBuffer.publish`` or the native ``SharedBuffer.publish``. Tokens
    with the same arrival time (e.g. two target tokens from one Tok_T conversion) share one batch;
    every other new token is its own batch at its own arrival time."""

    def __init__(self, publish: Callable[[Sequence[int], float, Sequence[float] | None], Any]) -> None:
        self._publish = publish
        self.published: list[int] = []
        self.last_time: float | None = None
        self.observations = 0

    def observe(self, prefix: Sequence[int], arrivals: Sequence[float],
                confidences: Sequence[float | None] | None = None) -> int:
        """Publish what ``prefix`` adds to the published prefix; returns how many tokens it added.

        ``arrivals[i]`` is when ``prefix[i]`` arrived; only the new tokens' times are used (the
        earlier ones were published at theirs). ``confidences``: per token, or None."""
        n = len(self.published)
        if len(arrivals) != len(prefix):
            raise ValueError(f"arrivals: {len(arrivals)} times for a prefix of {len(prefix)} tokens")
        if confidences is not None and len(confidences) != len(prefix):
            raise ValueError(f"confidences: {len(confidences)} values for a prefix of {len(prefix)} tokens")
        if len(prefix) < n:
            raise PrefixShrankError(f"observation {self.observations}: prefix of {len(prefix)} tokens is shorter "
                                    f"than the {n} already published; QA prefixes only grow (D.1.2)")
        for i in range(n):
            if int(prefix[i]) != self.published[i]:
                raise PrefixShrankError(f"observation {self.observations}: token {i} changed from "
                                        f"{self.published[i]} to {int(prefix[i])}; published tokens never change, "
                                        "so an observed prefix must extend the published one")
        self.observations += 1
        i = n
        while i < len(prefix):  # one batch per arrival time, each at that (unchanged) time
            t = float(arrivals[i])
            j = i + 1
            while j < len(prefix) and float(arrivals[j]) == t:
                j += 1
            if self.last_time is not None and t < self.last_time:
                raise ValueError(f"arrivals: token {i} arrived at {t}, before token {i - 1} at {self.last_time}; "
                                 "arrival times must not decrease")
            conf = None if confidences is None else list(confidences[i:j])
            whole = None if conf is None or None in conf else cast("list[float]", conf)  # all given, or none
            self._publish([int(x) for x in prefix[i:j]], t, whole)
            self.published.extend(int(x) for x in prefix[i:j])
            self.last_time = t
            i = j
        return len(prefix) - n


def cumulative_buffer(tokens: Sequence[int], times: Sequence[float], confidences: Sequence[float] | None = None,
                      *, source_id: str = "producer", producer_id: str = "p0",
                      vocab_size: int | None = None) -> PublicationBuffer:
    """A finished QA trajectory as its buffer: every prefix observed at its last token's arrival.

    Equivalent to feeding ``tokens[:k]`` for k = 1..n into a ``CumulativePrefixPublisher``; the
    source finishes with its last token (like ``PublicationBuffer.from_stream``)."""
    if len(times) != len(tokens):
        raise ValueError(f"times: {len(times)} arrival times for {len(tokens)} tokens")
    buf = PublicationBuffer(source_id, producer_id, vocab_size)
    pub = CumulativePrefixPublisher(buf.publish)
    pub.observe(tokens, times, confidences)
    buf.finish(float(times[-1]) if len(times) else 0.0)
    return buf


__all__ = ["BATCHES", "CUMULATIVE_PREFIX", "PUBLICATIONS", "CumulativePrefixPublisher", "PrefixShrankError",
           "cumulative_buffer", "publication_for_task"]
