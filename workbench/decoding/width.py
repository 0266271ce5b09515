"""Cost-aware chain length: how many ready candidates one round should verify.

Terms. A round verifies the known root plus a chain of ``n`` candidates at physical width
``K = n + 1``; ``cost[K]`` is what that target call takes on this device (``cost[1]`` is a plain
target step). ``p`` is the per-candidate acceptance: the chance a candidate is accepted given
every candidate before it was (greedy chain verification stops at the first mismatch).

Why a rule at all: on phones a wide verify costs little more than a step, so any ready
candidate is worth verifying; on a CPU host a K=4 verify can cost ~1.9 steps, and verifying
candidates that will most likely be rejected makes the target slower than plain decoding.
The rule maximizes expected committed tokens per unit of verify time:

    E[n] = 1 + p + p^2 + ... + p^n        (accepted prefix, plus the correction or bonus)
    n*   = argmax_{0 <= n <= ready}  E[n] / cost[n + 1]

``n* = 0`` is a plain step: no verify is started whose expected yield per ms is below a step's.
Ties go to the shorter chain (less wasted work when the estimate is off). The estimate uses only
rounds already verified: no future information.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


def expected_tokens(n: int, p: float) -> float:
    """Expected tokens a chain of ``n`` candidates commits, correction or bonus included."""
    total, term = 1.0, 1.0
    for _ in range(n):
        term *= p
        total += term
    return total


def choose_chain_length(ready: int, costs: Mapping[int, float], p: float) -> int:
    """Chain length (0 = plain step) with the best expected tokens per ms among priced widths.

    ``ready`` is how many candidates the round could verify (already cut by budget and output
    room); widths the device does not price are never chosen.
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"acceptance estimate must be in [0, 1], got {p}")
    if 1 not in costs or costs[1] <= 0:
        raise ValueError("costs must price a plain step (width 1) with a positive time")
    best_n, best_rate = 0, 1.0 / costs[1]
    for n in range(1, max(0, ready) + 1):
        c = costs.get(n + 1)
        if c is None or c <= 0:
            continue
        rate = expected_tokens(n, p) / c
        if rate > best_rate * (1.0 + 1e-12):
            best_n, best_rate = n, rate
    return best_n


@dataclass
class AcceptanceEstimate:
    """Running per-candidate acceptance, the geometric-model estimate with exponential forgetting.

    Each verified chain of ``n`` candidates with ``a`` accepted adds ``a`` successes and, when
    ``a < n``, one failure; ``p = successes / (successes + failures)``. ``decay`` < 1 forgets old
    rounds so the estimate follows the audio (speech rate, noise) as it changes. The prior is a
    few pseudo-rounds so the first rounds are not decided by a single outcome.
    """

    successes: float = 2.0
    failures: float = 1.0
    decay: float = 0.9

    @property
    def p(self) -> float:
        return self.successes / (self.successes + self.failures)

    def observe(self, proposed: int, accepted: int) -> None:
        if proposed <= 0:
            return  # a plain step says nothing about the candidates
        if not 0 <= accepted <= proposed:
            raise ValueError(f"accepted {accepted} outside [0, {proposed}]")
        self.successes = self.decay * self.successes + accepted
        self.failures = self.decay * self.failures + (1.0 if accepted < proposed else 0.0)


__all__ = ["AcceptanceEstimate", "choose_chain_length", "expected_tokens"]
