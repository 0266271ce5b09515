"""The two small interfaces every scheme talks to, plus the drafter interface.

Terms (paper, Sections 3-4 and Appendix C):

* **known root** -- a target token that is already decided (it is the target's own greedy
  token) but not yet processed into the target's KV state. Prefill yields the first one; every
  verification call yields the next one (a *correction* or a *bonus*).
* **chain** -- candidate tokens verified after the root in the same forward.
* **physical width** ``K = 1 + len(chain)``; a *plain step* is ``K = 1`` (root only).
* **committed prefix** -- every token known so far, including the root.

A ``Target`` never sees the buffer and a ``Drafter`` never sees target state: the scheme in
between decides what to verify, and the verification rule decides what to commit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


class Verifier(Protocol):
    """What the round loop asks of a target (``driver.run_rounds``): ``verify`` and ``keep`` as ``Target``'s."""

    def verify(self, root: int, chain: Sequence[int]) -> list[int]: ...

    def keep(self, n_accepted: int) -> None: ...


@runtime_checkable
class Target(Protocol):
    """A greedy target model with retained state (KV cache) on the committed prefix.

    Contract (Appendix C.4, pathwise equivalence and commit-and-repair):

    * ``prefill()`` processes the fixed input (audio state and instruction) and returns the first
      greedy token, which becomes the first known root. It is outside the decode clock.
    * ``verify(root, chain)`` runs ONE forward over ``[root, *chain]`` on top of the retained state
      and returns ``K`` greedy tokens: ``greedy[i]`` is the target's token after
      ``root, chain[:i]``. Afterwards the state holds all ``K`` processed entries.
    * ``keep(n_accepted)`` retains ``root`` plus the first ``n_accepted`` chain entries and removes
      the rest (KV rollback). The next known root is *not* processed here: it is carried into the
      next ``verify`` call, so there is no unconditional extra ``K = 1`` forward.
    """

    eos_id: int | None
    vocab_size: int

    def prefill(self) -> int: ...

    def verify(self, root: int, chain: Sequence[int]) -> list[int]: ...

    def keep(self, n_accepted: int) -> None: ...


@dataclass(frozen=True, slots=True)
class Proposal:
    """What a prefix-conditioned drafter returns for one round.

    ``forwards`` counts drafter forwards spent (including a catch-up forward for committed
    tokens missing from the drafter's own KV); ``catchup`` counts those missing tokens.
    ``confidences`` are top-1 probabilities, ``None`` when the drafter has none.
    """

    tokens: tuple[int, ...]
    confidences: tuple[float, ...] | None
    forwards: int
    catchup: int = 0


@runtime_checkable
class Drafter(Protocol):
    """Prefix-conditioned drafter for standard SD and SpecASR ASP (serial baselines).

    ``propose(prefix, n, stop_below)`` returns up to ``n`` greedy draft tokens continuing
    ``prefix`` (the committed prefix, known root included). With ``stop_below`` set, drafting
    stops after the first token whose confidence is below it; that token is included (ASP).
    """

    def propose(self, prefix: Sequence[int], n: int, stop_below: float | None = None) -> Proposal: ...


class Pending(Protocol):
    """A proposal being drafted beside a target call (prefix lookahead)."""

    def result(self) -> Proposal:
        """The proposal, once drafted (waits for it)."""
        ...

    def discard(self) -> None:
        """Drop the proposal; afterwards the drafter is free for the next ``propose``."""
        ...


@runtime_checkable
class Overlapping(Drafter, Protocol):
    """A drafter that can draft beside the target call (the native host's: a thread).

    ``start(prefix, n)`` begins ``propose(prefix, n)`` at once and returns without waiting. A
    drafter without ``start`` is asked only when the scheme needs the tokens (same tokens, no
    overlap in real time; a priced clock charges the overlap from ``Call.overlap``)."""

    def start(self, prefix: Sequence[int], n: int) -> Pending: ...
