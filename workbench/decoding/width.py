"""Cost-aware chain length: how many ready candidates one round should verify.

Terms. A round verifies the known root plus a chain of ``n`` candidates at physical width
``K = n + 1``; ``cost[K]`` is what that target call takes on this device (``cost[1]`` is a plain
target step). ``q_i`` is the conditional acceptance of chain slot ``i``: the chance its candidate is accepted
given every candidate before it was (greedy chain verification stops at the first mismatch).
Acceptance is bursty -- a producer that matched five tokens in a row is likely in a stretch it
heard well -- so ``q_i`` is estimated per slot rather than as one geometric ``p``.

Why a rule at all: on phones a wide verify costs little more than a step, so any ready
candidate is worth verifying; on a CPU host a K=4 verify can cost ~1.9 steps, and verifying
candidates that will most likely be rejected makes the target slower than plain decoding.
The rule maximizes expected committed tokens per unit of verify time:

    E[n] = 1 + q1 + q1*q2 + ... + q1*...*qn   (accepted prefix, plus the correction or bonus)
    n*   = argmax_{0 <= n <= ready}  E[n] / cost[n + 1]

``n* = 0`` is a plain step: no verify is started whose expected yield per ms is below a step's.
Ties go to the shorter chain (less wasted work when the estimate is off). The estimate uses only
rounds already verified: no future information.

With a running throughput ``r`` (tokens per unit cost this window has achieved so far, a
``RunningRate``) the rule weighs each round against what the time would earn otherwise:

    n*   = argmax_{0 <= n <= ready}  E[n] - r * cost[n + 1]

The ratio rule alone is myopic: a candidate it leaves out stays in the buffer, so cutting a chain
mostly buys one more round and its fixed cost: at a device's jump in cost between two widths it cuts
chains the fixed budget verifies profitably (docs/adaptive.md, "Online budget"). Against the window's own rate a
slot is verified when its chance of being accepted pays for its extra verify time at that rate.
Before any round is priced the ratio rule decides (its best ratio is the rate it expects).

Once the producer is done, nothing more will be published: time a round saves can only go to the
candidates already known, so the rate is capped by the best rate at which they can be committed
(``supply_rate``). Without the cap, the rate a window earned on wide verifies made its last
tokens go one plain step at a time on a profile whose narrow verifies are dear (docs/adaptive.md,
"Supply-rate cap"; ``experiment=adaptive dataset=demo``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


def _slot(accept: float | Sequence[float], i: int) -> float:
    """Conditional acceptance of slot ``i`` (1-based); slots past the estimate repeat its last."""
    if isinstance(accept, (int, float)):
        return float(accept)
    return float(accept[min(i, len(accept)) - 1]) if len(accept) else 0.0


def expected_tokens(n: int, accept: float | Sequence[float]) -> float:
    """Expected tokens a chain of ``n`` candidates commits, correction or bonus included."""
    total, term = 1.0, 1.0
    for i in range(1, n + 1):
        term *= _slot(accept, i)
        total += term
    return total


def choose_chain_length(ready: int, costs: Mapping[int, float], accept: float | Sequence[float],
                        rate: float | None = None) -> int:
    """Chain length (0 = plain step) with the best expected tokens per unit time among priced widths.

    ``ready`` is how many candidates the round could verify (already cut by budget and output
    room); ``accept`` is one acceptance for every slot or the per-slot ``q_i``; widths the device
    does not price are never chosen. With ``rate`` (tokens per unit cost achieved so far) the best
    is the largest ``E[n] - rate * cost[n + 1]`` instead of the largest ratio (module docstring).
    """
    qs = [accept] if isinstance(accept, (int, float)) else list(accept)
    if any(not 0.0 <= q <= 1.0 for q in qs):
        raise ValueError(f"acceptance estimates must be in [0, 1], got {accept}")
    if 1 not in costs or costs[1] <= 0:
        raise ValueError("costs must price a plain step (width 1) with a positive time")
    if rate is not None and not rate >= 0.0:
        raise ValueError(f"rate must be a non-negative throughput, got {rate}")
    best_n, best = 0, chain_value(0, costs, accept, rate)
    for n in range(1, max(0, ready) + 1):
        c = costs.get(n + 1)
        if c is None or c <= 0:
            continue
        v = chain_value(n, costs, accept, rate)
        if v > best + 1e-12 * max(1.0, abs(best)):
            best_n, best = n, v
    return best_n


def before_eos(chain: Sequence[int], eos_id: int | None) -> int:
    """How many leading candidates are worth verifying: all of them up to the first EOS candidate.

    ``expected_tokens`` counts a bonus after the last candidate, but nothing follows EOS. Verifying
    candidates ``c_1..c_k, EOS`` commits at most ``c_1..c_k, EOS``; verifying ``c_1..c_k`` commits the
    same, the bonus being the target's own EOS -- one width narrower (otherwise every window's last
    round verifies its EOS at one width more; docs/adaptive.md, "EOS left to the bonus")."""
    for i, tok in enumerate(chain):
        if tok == eos_id:
            return i
    return len(chain)


def eos_pricing(chain: Sequence[int], eos_id: int | None, costs: Mapping[int, float]
                ) -> tuple[int, Mapping[int, float], bool]:
    """``(ready, costs, rides)``: the candidates before an EOS candidate (``before_eos``), the table to
    choose their length with, and whether the EOS candidate rides along.

    Verifying ``c_1..c_k, EOS`` commits what verifying ``c_1..c_k`` does (the bonus is the target's
    EOS), so all ``k`` may be verified at whichever of the two widths is cheaper. Widths are not always
    monotone in cost: on a host whose packed kernels start at K4 (``models/packed_linear.py``) K3 can
    cost more than K4, and leaving the EOS out then turns a window's last K4 round into plain steps
    (docs/adaptive.md, "EOS left to the bonus"). With ``rides`` the caller
    verifies one more candidate when it chose all ``k``."""
    k = before_eos(chain, eos_id)
    narrow, wide = costs.get(k + 1), costs.get(k + 2)
    if k == len(chain) or narrow is None or wide is None or wide >= narrow:
        return k, costs, False
    return k, {**costs, k + 1: wide}, True


def supply_rate(known: int, costs: Mapping[int, float]) -> float | None:
    """The best tokens per unit cost at which ``known`` tokens can be committed: rounds of priced widths,
    each committing its width, every candidate accepted (``None`` when the widths cannot cover them)."""
    if known <= 0:
        return None
    best = [0.0] + [math.inf] * known  # best[r]: least cost to commit r tokens
    for r in range(1, known + 1):
        best[r] = min((c + best[r - k] for k, c in costs.items() if 1 <= k <= r and c > 0), default=math.inf)
    return known / best[known] if best[known] < math.inf else None


def opportunity_rate(rate: float | None, chain: Sequence[int], eos_id: int | None, costs: Mapping[int, float],
                     done: bool) -> float | None:
    """What a round's time would earn otherwise: the window's running ``rate``, capped once the producer is
    ``done`` by the ``supply_rate`` of what is left to read (the chain up to its EOS, plus the bonus)."""
    if not done or rate is None:
        return rate
    left = supply_rate(before_eos(chain, eos_id) + 1, costs)
    return rate if left is None else min(rate, left)


def online_choice(chain: Sequence[int], eos_id: int | None, costs: Mapping[int, float],
                  estimate: AcceptanceEstimate, rate: float | None, done: bool) -> tuple[int, float]:
    """How many of ``chain``'s candidates the online rule verifies, and that choice's ``chain_value``:
    ``choose_chain_length`` with the EOS priced by ``eos_pricing`` and, once the producer is ``done``,
    the rate capped by ``opportunity_rate``. One rule for every scheme that weighs widths online."""
    ready, table, rides = eos_pricing(chain, eos_id, costs)
    q = estimate.slots(ready)
    r = opportunity_rate(rate, chain, eos_id, table, done)
    n = choose_chain_length(ready, table, q, r)
    return n + (rides and n == ready), chain_value(n, table, q, r)  # the EOS rides along at the cheaper width


def chain_value(n: int, costs: Mapping[int, float], accept: float | Sequence[float], rate: float | None) -> float:
    """What ``choose_chain_length`` maximizes: ``E[n] / cost`` without a rate, ``E[n] - rate * cost`` with one."""
    c = costs[n + 1]
    e = expected_tokens(n, accept)
    return e / c if rate is None else e - rate * c


@dataclass
class RunningRate:
    """Tokens committed per unit of priced round cost in this window so far (``None`` before a round)."""

    tokens: float = 0.0
    cost: float = 0.0

    def observe(self, tokens: int, cost: float | None) -> None:
        if cost is not None and cost > 0:
            self.tokens += tokens
            self.cost += cost

    @property
    def value(self) -> float | None:
        return self.tokens / self.cost if self.cost > 0 else None


# Where an estimate starts when nothing is known: acceptance 2/3, believed as firmly as 3 observed rounds.
PRIOR, PRIOR_ROUNDS = 2 / 3, 3.0


def tried_slots(proposed: int, accepted: int) -> int:
    """Chain slots a verified chain of ``proposed`` candidates tried: every accepted one and the first
    rejected one, if any (greedy verification stops there)."""
    return min(accepted + 1, proposed)


@dataclass
class AcceptanceEstimate:
    """Running per-slot conditional acceptance with exponential forgetting.

    A verified chain of ``n`` candidates with ``a`` accepted tried slots ``1..min(a + 1, n)`` and
    accepted slots ``1..a``. ``decay`` < 1 forgets old rounds so the estimate follows the audio
    (speech rate, noise) as it changes. Every slot starts from a few pseudo-rounds (``prior``
    successes out of ``prior_trials``) so the first rounds are not decided by one outcome.
    """

    decay: float = 0.9
    prior: float = PRIOR * PRIOR_ROUNDS
    prior_trials: float = PRIOR_ROUNDS
    successes: list[float] = field(default_factory=list)
    trials: list[float] = field(default_factory=list)

    @classmethod
    def starting_at(cls, p: float, rounds: float, decay: float) -> AcceptanceEstimate:
        """An estimate that believes acceptance ``p`` as strongly as ``rounds`` observed rounds would."""
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"prior: an acceptance in [0, 1], got {p}")
        if not rounds > 0.0:
            raise ValueError(f"prior_rounds: a positive weight in rounds, got {rounds}")
        return cls(decay=decay, prior=p * rounds, prior_trials=rounds)

    def slots(self, n: int) -> list[float]:
        """``q_1..q_n``, each shrunk toward the pooled acceptance of every slot tried so far.

        Deep slots are tried only after long accepted runs, so they have few trials; pooling keeps
        one unlucky rejection there from cutting every later chain short.
        """
        s_all, t_all = sum(self.successes), sum(self.trials)
        pooled = (s_all + self.prior) / (t_all + self.prior_trials)
        out = []
        for i in range(n):
            if i < len(self.trials):
                out.append((self.successes[i] + self.prior_trials * pooled) / (self.trials[i] + self.prior_trials))
            else:
                out.append(out[-1] if out else pooled)
        return out

    @property
    def p(self) -> float:
        """First-slot acceptance (the chance a chain earns anything at all)."""
        return self.slots(1)[0]

    def observe(self, proposed: int, accepted: int) -> None:
        if proposed <= 0:
            return  # a plain step says nothing about the candidates
        if not 0 <= accepted <= proposed:
            raise ValueError(f"accepted {accepted} outside [0, {proposed}]")
        tried = tried_slots(proposed, accepted)
        while len(self.trials) < tried:
            self.trials.append(0.0)
            self.successes.append(0.0)
        for i in range(len(self.trials)):
            self.trials[i] *= self.decay
            self.successes[i] *= self.decay
            if i < tried:
                self.trials[i] += 1.0
                self.successes[i] += 1.0 if i < accepted else 0.0


__all__ = ["PRIOR", "PRIOR_ROUNDS", "AcceptanceEstimate", "RunningRate", "before_eos", "chain_value",
           "choose_chain_length", "eos_pricing", "expected_tokens", "online_choice", "opportunity_rate",
           "supply_rate", "tried_slots"]
