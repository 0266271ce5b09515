"""The native host's lookahead drafter: prefix lookahead's next proposal drafts in a thread beside the call.

``decoding.schemes.lookahead.PrefixLookahead`` asks an ``Overlapping`` drafter to ``start`` a
proposal before the target call; here it runs on one worker thread while the verifier thread runs the
target (torch releases the interpreter lock inside its kernels), and the scheme collects or discards
it at its next decision. The scheme never proposes while a lookahead runs, so one thread at a time
touches the drafter's state, in the scheme's order. The thread runs on ``cpus`` when given (the
native host passes its producer's, idle in a serial run, so the overlap is physical, as As²d's
producer is on its own core); else on the verifier's CPUs, where it only interleaves with the call.
Both threads share one interpreter: the drafter's Python-side work per forward (small models have
much of it) still takes turns with the verifier's, and the target's calls run slower beside it, so a
thread hides less than a drafter process would. ``spans`` keeps each lookahead's drafting interval
on ``perf_counter`` for the stages.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor

from workbench.decoding.protocols import Drafter, Proposal
from workbench.decoding.records import RoundRecord, Stage


def _pin(cpus: tuple[int, ...] | None) -> None:
    """Pin the calling (worker) thread to ``cpus``; torch's thread count stays the verifier's."""
    if cpus is not None and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, set(cpus))


class _Running:
    __slots__ = ("future",)

    def __init__(self, future: Future[Proposal]) -> None:
        self.future = future

    def result(self) -> Proposal:
        return self.future.result()

    def discard(self) -> None:
        self.future.result()  # the drafter is free only once it has finished


class ThreadedDrafter:
    """A drafter whose ``start`` drafts on a worker thread; ``close`` (or a ``with`` block) ends the thread."""

    def __init__(self, drafter: Drafter, cpus: tuple[int, ...] | None = None) -> None:
        self.drafter = drafter
        self.spans: list[tuple[float, float]] = []
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="as2d-lookahead",
                                        initializer=_pin, initargs=(cpus,))

    def __enter__(self) -> ThreadedDrafter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._pool.shutdown(wait=True)

    def propose(self, prefix: Sequence[int], n: int, stop_below: float | None = None) -> Proposal:
        return self.drafter.propose(prefix, n, stop_below)

    def start(self, prefix: Sequence[int], n: int) -> _Running:
        return _Running(self._pool.submit(self._timed, tuple(prefix), n))

    def _timed(self, prefix: tuple[int, ...], n: int) -> Proposal:
        t = time.perf_counter()
        prop = self.drafter.propose(prefix, n)
        self.spans.append((t, time.perf_counter()))
        return prop


def lookahead_stages(drafter: ThreadedDrafter, records: Sequence[RoundRecord], t0: float) -> list[Stage]:
    """Each lookahead's drafting on the decode clock, as a ``producer``/``lookahead`` stage of the round
    that started it (the round whose decision and call enclose its start; -1 if none does)."""
    out: list[Stage] = []
    for a, b in drafter.spans:
        start = a - t0
        i = next((r.round for r in records if r.t_decide <= start <= r.t_end), -1)
        out.append(("producer", "lookahead", start, b - t0, i))
    return out
