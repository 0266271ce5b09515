"""Synchronise a native run so the producer is certainly ahead: not timed, on any machine.

A test that asserts candidates were *accepted* asserts that the producer published them before the
target read -- a race the producer wins on a quiet machine and may lose on a loaded one. Wrapping the
target so its first call waits for the producer to finish its window makes every later round find
its candidates ready, so such a test checks verification and the rules, not this machine's speed."""

from __future__ import annotations

import math
import time
from typing import Any

WAIT_S = 120.0  # a producer that has not finished a test window by then is broken, not slow


def wait_for_the_producer(target: Any, shared: Any) -> Any:
    """``target``, whose first ``verify`` waits until the host's producer (``shared``: its buffer)
    has finished; later calls go straight through. Returns ``target`` itself."""
    first = target.verify

    def verify_once_the_producer_finished(root: int, chain: Any) -> Any:
        deadline = time.monotonic() + WAIT_S
        while math.isnan(shared.finish_time.value):
            assert time.monotonic() < deadline, f"the producer did not finish its window within {WAIT_S:g} s"
            time.sleep(0.005)
        target.verify = first
        return first(root, chain)

    target.verify = verify_once_the_producer_finished
    return target


class WrappingPair:
    """A model pair whose every new target passes through ``wrap`` (the rest is the pair's own)."""

    def __init__(self, pair: Any) -> None:
        self._pair = pair

    def wrap(self, target: Any) -> Any:
        return target

    def new_target(self, *args: Any, **kwargs: Any) -> Any:
        return self.wrap(self._pair.new_target(*args, **kwargs))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pair, name)


class ProducerFirst(WrappingPair):
    """A model pair whose new targets wait for ``host``'s producer (``wait_for_the_producer``)."""

    def __init__(self, pair: Any, host: Any) -> None:
        super().__init__(pair)
        self._host = host

    def wrap(self, target: Any) -> Any:
        return wait_for_the_producer(target, self._host.shared)
