"""Issue 19 variants under replay: audited on every phone profile, several resident sources included."""

from __future__ import annotations

import pytest

from workbench.decoding.schemes.source_choice import SOURCE_STRIDE
from workbench.replay.engine import replay
from workbench.replay.pricing import pricing_for
from workbench.replay.profile import load_profile
from workbench.replay.result import ReplayConfig
from workbench.replay.synthetic import SyntheticSpec, paper_like_sources, synthetic_windows

WINDOWS = synthetic_windows(SyntheticSpec(n_windows=6, sources=paper_like_sources()))
VARIANTS = [("as2d_subst", "qwen"), ("as2d_hybrid", "qwen"), ("as2d_sources", "qwen+sensevoice"),
            ("as2d_adaptive", "qwen+parakeet+sensevoice")]


@pytest.mark.parametrize("profile", ["k70_pro", "xiaomi_11_pro", "xiaomi_14", "redmi_note_9_pro"])
def test_every_variant_passes_the_replay_audits(profile):
    prof = load_profile(profile)
    for scheme, source in VARIANTS:
        for w in WINDOWS:
            r = replay(w, ReplayConfig(scheme, source=source, budget=7), prof)  # audited: exact, causal, priced
            assert r.tokens == len(w.reference)


def test_hybrid_rounds_pay_their_drafting_on_the_verifier():
    prof = load_profile("xiaomi_14")
    forward_s = pricing_for(prof).forward_s  # one serial drafter forward
    drafted = 0
    for w in WINDOWS:
        r = replay(w, ReplayConfig("as2d_hybrid", source="qwen", budget=7), prof)
        for rec, t_decide, t_start in zip(r.untimed, r.t_decide, r.t_start, strict=True):
            if rec.work.forwards:
                drafted += 1
                assert t_start - t_decide >= rec.work.forwards * forward_s - 1e-12
    assert drafted > 0


def test_source_choice_uses_more_than_one_source():
    prof = load_profile("k70_pro")
    used = set()
    for w in WINDOWS:
        r = replay(w, ReplayConfig("as2d_sources", source="qwen+parakeet+sensevoice", budget=7), prof)
        used |= {p // SOURCE_STRIDE for rec in r.untimed for p in rec.provenance if p >= 0}
    assert len(used) >= 2
