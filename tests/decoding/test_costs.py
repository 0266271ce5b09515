"""Round costs: one typed table per device (running and idle widths, drafter forward, overhead)."""

from __future__ import annotations

import pytest

from workbench.decoding import FRESH, RECYCLED, SOURCE_STRIDE, RoundCosts, SourcePosition, round_costs


def test_the_builder_adds_the_overheads_in_the_clocks_order_and_prices_the_plain_step():
    loop, align = 0.1, 0.2
    c = round_costs({2: 1.0, 4: 1.5}, {2: 0.9, 4: 1.2}, 0.7, (loop, align), drafter_forward=0.05)
    assert c.running == {2: 1.0 + loop + align, 4: 1.5 + loop + align, 1: 0.7 + loop + align}
    assert c.running[2] == (1.0 + loop) + align  # summed as the clock sums it, not 1.0 + (loop + align)
    assert c.idle == {}  # an idle table without a plain step cannot decide: the running one serves
    assert c.table(True) is c.running and c.drafter_forward == 0.05 and c.overhead == loop + align
    both = round_costs({2: 1.0}, {1: 0.5, 2: 0.8}, 0.7, (loop,))
    assert both.table(False) == {2: 1.0 + loop, 1: 0.7 + loop} and both.table(True) == {1: 0.5 + loop, 2: 0.8 + loop}
    assert both.widest == 2


@pytest.mark.parametrize("running", [{0: 1.0, 1: 1.0}, {1: 1.0, -1: 2.0}, {2: 1.0}, {1: 0.0}])
def test_a_table_without_a_plain_step_or_with_magic_keys_is_refused(running):
    with pytest.raises(ValueError, match="costs"):
        RoundCosts(running)


def test_a_plain_mapping_is_the_running_table_and_the_table_is_read_only():
    c = RoundCosts.of({1: 1.0, 3: 2.0})
    assert c.running == {1: 1.0, 3: 2.0} and c.idle == {} and RoundCosts.of(c) is c
    with pytest.raises(TypeError):
        c.running[2] = 1.5  # type: ignore[index]


def test_provenance_is_a_typed_pair_stored_as_one_integer():
    for pair in (SourcePosition(0, 7), SourcePosition(1, 0), SourcePosition(3, 12345)):
        assert SourcePosition.decode(pair.encode()) == pair
    assert SourcePosition(0, 7).encode() == 7  # one source: the plain buffer position
    assert SourcePosition(2, 5).encode() == 2 * SOURCE_STRIDE + 5
    assert SourcePosition(2, FRESH).encode() == FRESH and SourcePosition.decode(RECYCLED).position == RECYCLED


def test_round_costs_are_built_in_one_place():
    """Replay, the native bench and the jobs build their tables with ``round_costs``, never by hand."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "workbench"
    by_hand = []
    for path in sorted(root.rglob("*.py")):
        if path.name == "costs.py" and path.parent.name == "decoding":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            name = getattr(node.func, "id", getattr(node.func, "attr", None)) if isinstance(node, ast.Call) else None
            if name == "RoundCosts":
                by_hand.append(f"{path.relative_to(root)}:{node.lineno}")
    assert not by_hand, by_hand
    users = [p for p in ("replay/engine.py", "native/bench_methods.py") if "round_costs(" in (root / p).read_text()]
    assert users == ["replay/engine.py", "native/bench_methods.py"]
