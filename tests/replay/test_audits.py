"""Every replay is audited; each audit fires on a violating run instead of passing silently."""

from __future__ import annotations

from dataclasses import replace

import pytest
from replay_fixtures import EOS, constant_profile, exact_window

from workbench.decoding import ExactnessError
from workbench.replay.audit import ReplayAuditError, audit_run
from workbench.replay.engine import ReplayConfig, replay
from workbench.replay.pricing import pricing_for
from workbench.replay.producer import Producer
from workbench.replay.profile import MissingWidthError
from workbench.replay.trajectory import Window


def _as2d_run(window: Window):
    p = constant_profile(align_ms=0.0, queue_ms=0.0)
    cfg = ReplayConfig("as2d", source="qwen", budget=7)
    from workbench.replay.engine import producer_plan

    plan = producer_plan(window, "qwen", p)
    return p, replay(window, cfg, p, plan=plan), Producer(plan).buffer


def test_clean_run_passes_all_audits() -> None:
    w = exact_window(41)
    p, r, buf = _as2d_run(w)
    audit_run(w, r, pricing_for(p), buf)


def test_committed_tokens_must_equal_reference() -> None:
    w = exact_window(41)
    p, r, buf = _as2d_run(w)
    other = replace(w, reference=(*w.reference[:20], 777, *w.reference[21:]))
    with pytest.raises(ExactnessError, match="position 20"):
        audit_run(other, r, pricing_for(p), buf)


def test_candidate_used_before_publication_is_caught() -> None:
    w = exact_window(41)
    p, r, buf = _as2d_run(w)
    used = next(i for i, x in enumerate(r.untimed) if any(pos >= 0 for pos in x.provenance))
    early = list(r.t_decide)
    early[used] = 0.0  # pretend the round decided before its candidates were out
    bad = replace(r, t_decide=early)
    with pytest.raises(ReplayAuditError, match="published at"):
        audit_run(w, bad, pricing_for(p), buf)


def test_width_missing_from_profile_raises() -> None:
    w = exact_window(41)
    p = constant_profile(max_k=6)
    with pytest.raises(MissingWidthError, match="K=8"):
        replay(w, ReplayConfig("sd", width=8), p)
    with pytest.raises(MissingWidthError, match="K=8"):
        replay(w, ReplayConfig("as2d", source="qwen", budget=7), p)
    # the width audit itself, on a run priced elsewhere
    _, r, buf = _as2d_run(w)
    with pytest.raises(ReplayAuditError, match="K=8"):
        audit_run(w, r, pricing_for(p), buf)


def test_noisy_producer_still_commits_the_reference() -> None:
    """Substitutions, an insertion and a deletion in the producer stream: exactness holds."""
    ref_body = list(range(10, 50))
    stream = ref_body[:5] + [901] + ref_body[5:12] + ref_body[13:20] + [902, 903] + ref_body[22:] + [EOS]
    w = exact_window(41, producer=stream)
    p = constant_profile()
    r = replay(w, ReplayConfig("as2d", source="qwen", budget=7), p)
    assert r.tokens == 41
    reasons = {x.k1_reason for x in r.untimed}
    assert "no_match" in reasons or "not_ready" in reasons
