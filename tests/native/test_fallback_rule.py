"""The fallback rule (``driver.Fallback``) on the replay oracle: when it stops the producer, and when not."""

from __future__ import annotations

import multiprocessing as mp

import pytest

from workbench.decoding.verification import ReferenceTarget
from workbench.native.driver import Fallback, JoiningCores
from workbench.native.producer import Placement
from workbench.native.shared import SharedBuffer

REF = list(range(10, 40)) + [2]
BAD = [63, 63]  # a chain the target rejects at its first entry


def drive(chains: list[list[int] | int], rule: Fallback) -> tuple[JoiningCores, list[int]]:
    """One round per entry: a chain (``BAD``, or ``k`` correct candidates), verified at the reference's next
    position, keeping what the target accepts; returns the target wrapper and its stop requests."""
    target = ReferenceTarget(REF, eos_id=2, vocab_size=64)
    stops: list[int] = []
    cores = JoiningCores(target, SharedBuffer(mp.get_context("spawn")), Placement(1), rule,
                         lambda: stops.append(len(stops)))
    root, pos = target.prefill(), 0
    for entry in chains:
        chain = REF[pos + 1:pos + 1 + entry] if isinstance(entry, int) else entry
        greedy = cores.verify(root, chain)
        n = next((i for i, (c, g) in enumerate(zip(chain, greedy, strict=False)) if c != g), len(chain))
        cores.keep(n)
        pos += n + 1
        root = REF[pos]
    return cores, stops


def test_too_few_accepted_candidates_in_the_first_rounds_stop_the_producer_once() -> None:
    # 4 rounds: plain steps and rejected chains count alike; 1 accepted < 0.5 x 4
    cores, stops = drive([0, BAD, 1, BAD, BAD, BAD, 0], Fallback(after=4, below=0.5))
    assert len(stops) == 1 and cores.fell_back_at_round == 4


def test_enough_accepted_candidates_keep_the_producer() -> None:
    cores, stops = drive([0, 2, BAD, 0, BAD, BAD, BAD], Fallback(after=4, below=0.5))  # 2 = 0.5 x 4: not below
    assert stops == [] and cores.fell_back_at_round is None
    cores, stops = drive([0, 2, BAD, 0], Fallback(after=4, below=0.51))
    assert len(stops) == 1 and cores.fell_back_at_round == 4


def test_the_rule_is_judged_once_at_its_round() -> None:
    """A window that goes bad after round ``after`` is not stopped later (the rule reads only the start)."""
    cores, stops = drive([3, 3, BAD, BAD, BAD, BAD, BAD, BAD], Fallback(after=2, below=1.0))
    assert stops == [] and cores.fell_back_at_round is None
    cores, _ = drive([BAD], Fallback(after=2, below=1.0))  # the window ended before the rule's round
    assert cores.fell_back_at_round is None


@pytest.mark.parametrize("text", ["8", "x:0.3", "0:0.3", "8:0", "8:-1"])
def test_bad_fallback_rules_are_refused_with_their_form(text: str) -> None:
    with pytest.raises(ValueError, match="fallback"):
        Fallback.parse(text)


def test_fallback_names_round_trip() -> None:
    rule = Fallback.parse("12:0.2")
    assert rule == Fallback(12, 0.2) and Fallback.parse(rule.name.removeprefix("fallback:")) == rule
