"""A.3: a producer whose prompt prefill (operation 0) ran before the decode clock is replayed without
charging it: its tokens are out at the clock's zero, the startup precedes operation 1, every later batch
is out one operation sooner, and a measured track keeps its own times."""

from __future__ import annotations

from dataclasses import replace

import pytest

from workbench.replay.producer import ProducerPlan, SourcePrice
from workbench.replay.trajectory import SourceTrack

OP_S, STARTUP_S, PUB_S = 0.010, 0.003, 0.001


def _plan(batch: int, prefilled: bool, op_ms: tuple[float, ...] | None = None) -> ProducerPlan:
    track = SourceTrack("p", tuple(range(10, 19)), None, (1,) * 9, op_ms)
    price = SourcePrice("autoregressive", OP_S, PUB_S, STARTUP_S, 1.0, batch, None, prefilled)
    return ProducerPlan.build(track, price, 100)


def test_operation_0_is_out_at_the_clocks_zero_and_the_startup_precedes_operation_1():
    plan = _plan(1, prefilled=True)
    assert plan.batch_work[0] == pytest.approx(PUB_S)  # the prefill's token, published at once
    assert plan.batch_work[1] == pytest.approx(PUB_S + STARTUP_S + OP_S + PUB_S)
    on_clock = _plan(1, prefilled=False)
    assert on_clock.batch_work[0] == pytest.approx(STARTUP_S + OP_S + PUB_S)
    # from operation 1 on, every batch is out exactly one operation sooner
    for a, b in zip(plan.batch_work[1:], on_clock.batch_work[1:], strict=True):
        assert b - a == pytest.approx(OP_S)


def test_a_batch_that_holds_the_prefilled_token_waits_for_the_operations_after_it():
    plan, on_clock = _plan(4, prefilled=True), _plan(4, prefilled=False)
    assert plan.batch_end == on_clock.batch_end == (4, 8, 9)
    assert plan.batch_work[0] == pytest.approx(STARTUP_S + 3 * OP_S + PUB_S)
    assert [b - a for a, b in zip(plan.batch_work, on_clock.batch_work, strict=True)] == pytest.approx([OP_S] * 3)
    assert plan.total_work == pytest.approx(on_clock.total_work - OP_S)


def test_a_measured_track_times_operation_0_from_the_clock_either_way():
    times = tuple(float(5 + i) for i in range(9))
    assert _plan(1, True, times).batch_work == _plan(1, False, times).batch_work


def test_the_profile_flag_reaches_the_price():
    from tests.replay.replay_fixtures import constant_profile

    cost = constant_profile().source("qwen")
    assert not SourcePrice.of(cost).prefilled and SourcePrice.of(replace(cost, prefilled=True)).prefilled
