"""Greedy chain verification (paper Appendix C.2) and the reference target (C.4).

The rule, in the spirit of gpt-fast: one target forward over ``[root, *chain]`` yields
``greedy[i]``, the target's own token after ``root, chain[:i]``. Candidates are accepted while
they equal those tokens. The target's token at the first mismatch (the **correction**), or the
one after the last candidate on full acceptance (the **bonus**), is the next **known root**. It is
carried into the next call, so no unconditional extra ``K = 1`` forward is spent on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .records import Outcome


class ExactnessError(AssertionError):
    """A speculative path produced a token the greedy target would not have produced."""


@dataclass(slots=True)
class Verdict:
    accepted: int  # chain tokens committed
    committed: tuple[int, ...]  # accepted chain tokens, then the correction/bonus unless output ended
    next_root: int | None  # None when the output ended (EOS or cap)
    outcome: Outcome


def verify_chain(
    chain: Sequence[int], greedy: Sequence[int], eos_id: int | None, room: int
) -> Verdict:
    """Apply the greedy chain rule to one target call's result.

    ``room`` is how many more tokens the output may hold after the root (output cap). A chain
    never exceeds ``room - 1``, so the correction or bonus always fits.
    """
    if len(greedy) != len(chain) + 1:
        raise ValueError(f"greedy: target returned {len(greedy)} tokens for physical width {len(chain) + 1}")
    if len(chain) >= max(room, 1):
        raise ValueError(f"chain: {len(chain)} candidates exceed the remaining output length {room}")
    accepted = 0
    for cand, tok in zip(chain, greedy, strict=False):
        if cand != tok:
            break
        accepted += 1
        if cand == eos_id:  # an accepted EOS ends the output; later greedy entries are moot
            return Verdict(accepted, tuple(chain[:accepted]), None, "eos")
    nxt = int(greedy[accepted])
    committed = (*chain[:accepted], nxt)
    if nxt == eos_id:
        return Verdict(accepted, committed, None, "eos")
    if len(committed) >= room:
        return Verdict(accepted, committed, None, "cap")
    return Verdict(accepted, committed, nxt, "bonus" if accepted == len(chain) else "correction")


class ReferenceTarget:
    """A target that answers from a fixed greedy reference: the replay premise and test oracle.

    ``reference`` is the target's greedy output ``y_1 .. y_N`` (ending at EOS or the cap). It
    checks the Target contract as it goes: every root must be the next reference token, and
    ``keep`` may only retain verified entries. Greedy entries after the first mismatch are
    undefined for a real model; this oracle returns ``-1`` there so a scheme that reads them
    breaks exactness loudly instead of silently.
    """

    def __init__(self, reference: Sequence[int], eos_id: int | None, vocab_size: int) -> None:
        if len(reference) == 0:
            raise ValueError("reference: empty greedy reference; a window needs at least one target token")
        if vocab_size < 1:
            raise ValueError(f"vocab_size must be >= 1, got {vocab_size}")
        bad = [t for t in reference if not 0 <= t < vocab_size]
        if bad:
            raise ValueError(f"reference: token {bad[0]} outside the vocabulary [0, {vocab_size})")
        if eos_id is not None and eos_id in reference[:-1]:
            raise ValueError(f"reference: EOS {eos_id} appears before the last position")
        self.reference = tuple(int(t) for t in reference)
        self.eos_id = eos_id
        self.vocab_size = vocab_size
        self.processed = 0  # reference tokens held in the (virtual) KV state
        self._pending: int | None = None  # entries processed by the last verify
        self.calls = 0

    def _ref(self, i: int) -> int:
        if i < len(self.reference):
            return self.reference[i]
        if self.eos_id is None:
            raise ExactnessError(f"target asked for position {i} beyond the capped reference")
        return self.eos_id

    def prefill(self) -> int:
        self.processed, self._pending, self.calls = 0, None, 0
        return self.reference[0]

    def verify(self, root: int, chain: Sequence[int]) -> list[int]:
        if self._pending is not None:
            raise ExactnessError("verify called twice without keep(): rejected entries were not removed")
        expected = self._ref(self.processed)
        if root != expected:
            raise ExactnessError(f"root {root} at output position {self.processed} != reference {expected}")
        self.calls += 1
        greedy: list[int] = []
        on_path = True
        for i in range(len(chain) + 1):
            greedy.append(self._ref(self.processed + 1 + i) if on_path else -1)
            if i < len(chain) and chain[i] != greedy[-1]:
                on_path = False
        self._pending = len(chain) + 1
        return greedy

    def keep(self, n_accepted: int) -> None:
        if self._pending is None or not 0 <= n_accepted < self._pending:
            raise ExactnessError(f"keep({n_accepted}) does not match the last verify width {self._pending}")
        self.processed += 1 + n_accepted
        self._pending = None
