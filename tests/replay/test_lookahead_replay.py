"""Prefix lookahead under replay's serial clock: the overlap priced by hand, and the drafter as one resource."""

from __future__ import annotations

import pytest
from replay_fixtures import constant_profile, exact_window

from workbench.decoding.records import LOOKAHEAD
from workbench.decoding.schemes.lookahead import reused_lookaheads
from workbench.metrics import lookahead_use
from workbench.replay.engine import ReplayConfig, replay
from workbench.replay.synthetic import SyntheticSpec, synthetic_windows

MS = 1e-3


def test_lookahead_k8_exact_drafter_by_hand() -> None:
    w = exact_window(25)
    r = replay(w, ReplayConfig("lookahead", width=8), constant_profile())
    # Round 1 drafts 7 tokens first (70 ms). Every call then verifies K8 (idle 120 ms, concurrent 180 ms)
    # while the drafter spends 8 forwards (80 ms) beside it on the next proposal: 80 ms at the concurrent
    # rate covers 80/180 of the call, the rest runs idle: 80 + (1 - 80/180) * 120 ms. Loop 5 ms each.
    call = 80 + (1 - 80 / 180) * 120
    assert r.time == pytest.approx((70 + 3 * (call + 5)) * MS, abs=1e-9)
    assert [x.width for x in r.records] == [8, 8, 8]
    assert [x.provenance[0] for x in r.records[1:]] == [LOOKAHEAD, LOOKAHEAD]
    assert all(x.t_start == x.t_decide for x in r.records[1:])  # the lookahead was done before the decision
    sd = replay(w, ReplayConfig("sd", width=8), constant_profile())
    assert r.time < sd.time
    spans = [s for s in r.stages if s[1] == "lookahead"]
    assert [(s[2], s[3] - s[2]) for s in spans] == [pytest.approx((x.t_start, 80 * MS)) for x in r.records]
    # 70 ms drafted serially, 3 x 80 ms beside the calls (all hidden); rounds 1-2 used rounds 0-1's lookahead.
    use = lookahead_use(r.stages_frame(), reused_lookaheads(r.records))
    assert reused_lookaheads(r.records) == {0, 1}
    assert (use.drafting, use.hidden, use.reused) == pytest.approx((310 * MS, 240 * MS, 160 * MS))
    assert use.hidden_share == pytest.approx(240 / 310) and use.reused_share == pytest.approx(160 / 310)


def test_lookahead_drafting_holds_the_drafter_on_synthetic_windows() -> None:
    profile = constant_profile(forward_ms=50.0)  # 4 forwards outlast a K4 call: the next round may wait
    started = reused_total = waited = 0
    for w in synthetic_windows(SyntheticSpec(n_windows=6, mean_tokens=60.0, seed=3)):
        r = replay(w, ReplayConfig("lookahead", width=4), profile)  # audited: exact, ordered, priced
        sd = replay(w, ReplayConfig("sd", width=4), profile)
        assert r.output == sd.output == w.reference
        records = r.records
        spans = [s for s in r.stages if s[1] == "lookahead"]
        assert spans, w.window_id
        for _, _, start, end, i in spans:
            assert start == records[i].t_start  # drafted beside its own call
            assert all(x.t_start >= end for x in records[i + 1:])  # no drafting before the drafter is free
            assert r.time >= max(s[3] for s in spans)
        reused = [x for x in records if x.provenance and x.provenance[0] == LOOKAHEAD]
        assert all(x.work.forwards == 0 for x in reused)
        started, reused_total = started + len(spans), reused_total + len(reused)
        waited += sum(x.t_start > x.t_decide for x in reused)
    assert started > reused_total > 0  # some of the hidden work is discarded after a rejection
    assert waited > 0  # and some reused proposals were still being drafted when the round decided
