"""Drain charging and the accounting audits, on hand-computed timelines (mutation audit).

The timeline: the verifier's K=1 call costs 15 ms, the producer runs 5 ms forwards (one token
each) from time 0 and never publishes a usable candidate, so every round is a plain step. With
a 5-token reference the target commits its last token after 4 rounds; per-round queue work
``q`` follows each call. After target EOS the producer finishes the forward in flight and stops
(A.3, D.5.1): that drain starts at EOS, in parallel with the last queue work.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from replay_fixtures import exact_window, num

from workbench.replay.audit import ReplayAuditError, audit_run
from workbench.replay.engine import replay
from workbench.replay.pricing import pricing_for
from workbench.replay.profile import parse_profile
from workbench.replay.result import ReplayConfig

NEVER = 999  # a producer token the reference never contains


def profile(queue_ms: float):
    raw = {
        "schema": "device-profile/1", "name": f"drain-q{queue_ms}", "device": "test", "rules": {},
        "target_step_ms": num(15.0), "loop_residual_ms": num(0.0), "queue_ms": num(queue_ms),
        "alignment_ms": num(0.0),
        "verifier": {"idle_ms": {k: num(15.0 + 5.0 * (k - 1)) for k in range(1, 9)},
                     "concurrent": {"factor": num(1.0), "missing": "error"}},
        "sources": {"qwen": {"kind": "autoregressive", "forward_ms": num(5.0), "publication_ms": num(0.0),
                             "startup_ms": num(0.0), "concurrent_factor": num(1.0), "batch_tokens": num(8),
                             "confidence": True}},
        "serial_drafter": "qwen",
    }
    return parse_profile(raw, file="drain.yaml")


def run(queue_ms: float, stream_len: int = 40):
    w = exact_window(5, producer=[NEVER] * stream_len)
    r = replay(w, ReplayConfig("as2d", source="qwen", budget=3), profile(queue_ms))
    assert [x.width for x in r.untimed] == [1, 1, 1, 1]  # the premise: four plain steps
    return w, r


def producer_stop(r) -> float:
    return max(end for res, stage, _, end, _ in r.stages if res == "producer")


@pytest.mark.parametrize("queue_ms, t_eos_ms, charged_ms, producer_stop_ms", [
    # EOS at 60 ms falls exactly on the end of the 12th forward: nothing is in flight, no drain
    # (float drift in the producer's work used to charge one more forward, 65 ms).
    (0.0, 60.0, 60.0, 60.0),
    # calls end at 15, 32, 49, 66; the forward in flight at 66 ends at 70, after the queue work (68).
    (2.0, 66.0, 70.0, 70.0),
    # calls end at 15, 37, 59, 81; the drain (to 85) hides under the queue work (to 88). Draining
    # only after the queue work would stop the producer at 90 instead.
    (7.0, 81.0, 88.0, 85.0),
    # q = 5 ms: calls end at 15, 35, 55, 75 -- exact forward boundaries again, so no drain.
    (5.0, 75.0, 80.0, 75.0),
])
def test_drain_starts_at_eos_and_stops_at_the_next_operation_boundary(queue_ms, t_eos_ms, charged_ms,
                                                                      producer_stop_ms):
    _, r = run(queue_ms)
    assert r.t_eos * 1000 == pytest.approx(t_eos_ms)
    assert r.time * 1000 == pytest.approx(charged_ms)
    assert producer_stop(r) * 1000 == pytest.approx(producer_stop_ms)


def test_a_producer_done_before_eos_adds_no_drain():
    _, r = run(7.0, stream_len=3)  # 3 forwards: done at 15 ms, long before EOS
    assert r.time * 1000 == pytest.approx(88.0) and producer_stop(r) * 1000 == pytest.approx(15.0)


def test_full_drain_runs_the_whole_stream():
    w = exact_window(5, producer=[NEVER] * 40)
    r = replay(w, ReplayConfig("as2d", source="qwen", budget=3), profile(7.0), drain="full")
    assert r.time * 1000 == pytest.approx(200.0)  # 40 forwards of 5 ms


def _audit(w, r, queue_ms=7.0):
    audit_run(w, r, pricing_for(profile(queue_ms)), None)


def test_the_ordering_audit_catches_rounds_out_of_order():
    w, r = run(7.0)
    _audit(w, r)  # the genuine run passes
    start = list(r.t_start)
    start[2] = r.t_decide[2] - 1e-3  # a call that starts before its own decision
    with pytest.raises(ReplayAuditError, match="out of order"):
        _audit(w, replace(r, t_start=start))
    end = list(r.t_end)
    end[1] = r.t_decide[2] + 1e-3  # round 1 still running when round 2 decides
    with pytest.raises(ReplayAuditError, match="out of order"):
        _audit(w, replace(r, t_end=end))


def test_the_charged_time_audit_catches_a_clock_that_ends_early():
    w, r = run(7.0)
    with pytest.raises(ReplayAuditError, match="charged time"):
        _audit(w, replace(r, time=r.t_end[-1] - 1e-3))  # before the last call ended
    with pytest.raises(ReplayAuditError, match="charged time"):
        _audit(w, replace(r, time=r.t_eos - 1e-3, t_eos=r.t_eos))
