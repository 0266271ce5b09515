"""Prefix lookahead (D.4.5, Table 13): SD's rounds, with the next proposal drafted beside the call.

The drafter here is a real greedy function of the prefix (a first-order chain that disagrees with the
target's on a few tokens), defined for every prefix, as a model is: what lookahead drafts from the
expected prefix is then exactly what SD would draft after the bonus, so the two schemes must make the
same rounds, and lookahead may skip serial drafting only after a full acceptance whose bonus it
guessed. Exactness over generated windows is ``test_exactness.py``'s (every catalog scheme).
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from workbench.decoding import FRESH, ReferenceTarget, audit_exact, decode, make_scheme
from workbench.decoding.protocols import Proposal
from workbench.decoding.records import LOOKAHEAD, NO_WORK

EOS, VOCAB = 0, 40


def target_next(prefix: Sequence[int]) -> int:
    a, b = (prefix[-2] if len(prefix) > 1 else 0), prefix[-1]
    return (5 * a + 7 * b + 3) % VOCAB


def drafter_next(prefix: Sequence[int]) -> int:
    a, b = (prefix[-2] if len(prefix) > 1 else 0), prefix[-1]
    right = target_next(prefix)
    return (right + 1) % VOCAB if (a + b) % 7 == 0 else right  # wrong after about one pair in seven


def reference(root: int, n: int) -> list[int]:
    out = [root]
    while len(out) < n - 1:
        out.append(target_next(out) or 1)  # the reference never ends early
    return [*out, EOS]


class ChainDrafter:
    """Greedy drafter of ``drafter_next``: ``n`` tokens after the prefix's last one, one forward each."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, ...]] = []

    def propose(self, prefix: Sequence[int], n: int, stop_below: float | None = None) -> Proposal:
        self.calls.append(tuple(prefix))
        seq = list(prefix)
        for _ in range(n):
            seq.append(drafter_next(seq))
        return Proposal(tuple(seq[len(prefix):]), None, n, 1)


def run(scheme_name: str, ref: list[int], width: int, max_output: int = 200):
    drafter = ChainDrafter()
    scheme = make_scheme(scheme_name, max_output=max_output, eos_id=EOS, drafter=drafter, width=width)
    res = decode(scheme, ReferenceTarget(ref, EOS, VOCAB), draft_cost=lambda w: 0.3 * w.forwards)
    return scheme, res, drafter


@pytest.mark.parametrize("width", [2, 4, 8])
@pytest.mark.parametrize("root", [1, 5, 14])
def test_lookahead_makes_sds_rounds_and_reuses_only_a_full_acceptance_with_the_guessed_bonus(width, root):
    ref = reference(root, 60)
    la, res, drafter = run("lookahead", ref, width)
    sd, sd_res, _ = run("sd", ref, width)
    audit_exact(res.output, ref, "lookahead")
    # Same chains, same acceptance, round for round: only where the chain came from differs.
    assert [(r.chain, r.accepted, r.committed) for r in res.records] == [
        (r.chain, r.accepted, r.committed) for r in sd_res.records]
    reused = 0
    for prev, r in zip(res.records, res.records[1:], strict=False):
        if r.provenance and r.provenance[0] == LOOKAHEAD:
            reused += 1
            assert prev.accepted == len(prev.chain) > 0 and prev.outcome == "bonus"
            assert r.work == NO_WORK  # no serial drafting before this call
        elif r.chain:
            assert set(r.provenance) == {FRESH} and r.work.forwards > 0
    assert reused == la.reused > 0
    assert la.overlapped > la.reused  # some hidden work was wasted
    # Without a thread the lookahead is drafted only once its expected prefix came true: the drafter is
    # never asked about a prefix the target did not commit.
    assert all(c == tuple(ref[:len(c)]) for c in drafter.calls)


def test_a_rejected_round_discards_its_lookahead_and_drafts_from_the_committed_prefix():
    ref = reference(7, 40)  # after (0, 7) the drafter is wrong: the first chain is rejected at once
    la, res, drafter = run("lookahead", ref, 4)
    first, second = res.records[0], res.records[1]
    assert first.accepted < len(first.chain)
    assert second.provenance[0] == FRESH and second.work.forwards > 0
    assert drafter.calls[1] == tuple(ref[:1 + len(first.committed)])  # the committed prefix, not the guess


def test_no_lookahead_when_the_chain_holds_eos_or_the_output_limit_leaves_no_next_chain():
    ref = reference(2, 12)
    la, res, _ = run("lookahead", ref, 8, max_output=len(ref))
    audit_exact(res.output, ref, "lookahead")
    scheme = make_scheme("lookahead", max_output=6, eos_id=EOS, drafter=ChainDrafter(), width=4)
    scheme.start(2)
    call = scheme.plan(0.0)  # 3 candidates: 2 + 3 + bonus fills the limit of 6, so nothing is left to guess
    assert len(call.chain) == 3 and call.overlap == NO_WORK
    scheme = make_scheme("lookahead", max_output=60, eos_id=EOS, drafter=ChainDrafter(), width=4)
    scheme.start(2)
    assert scheme.plan(0.0).overlap.forwards == 4  # the bonus guess and the next three candidates
