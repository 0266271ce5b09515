"""The scheme catalog: settings are checked by name, and the facts it gives hold when schemes run."""

import pytest

from workbench.decoding import (
    CATALOG,
    DECOUPLED,
    SERIAL,
    PublicationBuffer,
    ReferenceTarget,
    TrajectoryDrafter,
    decode,
    make_scheme,
    scheme_spec,
)
from workbench.replay import ReplayConfig

EOS, V = 0, 64
REF = [*range(5, 45), EOS]


@pytest.mark.parametrize(("name", "typo", "meant"), [("as2d", "budegt", "budget"), ("asp", "treshold", "threshold"),
                                                     ("as2d_wo_bc", "window", "span")])
def test_a_misspelt_setting_is_an_error_naming_it(name, typo, meant):
    with pytest.raises(ValueError, match=rf"unknown setting '{typo}'.*{meant}"):
        make_scheme(name, max_output=9, eos_id=EOS, drafter=object(), source=PublicationBuffer(), **{typo: 3})
    with pytest.raises(ValueError, match=typo):
        ReplayConfig(name, source="qwen", **{typo: 3})


def test_a_setting_of_another_scheme_is_rejected_and_the_allowed_ones_listed():
    with pytest.raises(ValueError, match=r"'budget'.*cap, threshold"):
        make_scheme("asp", max_output=9, eos_id=EOS, drafter=object(), budget=3)


def test_decoupled_and_serial_partition_the_catalog():
    assert DECOUPLED | SERIAL == set(CATALOG) and not DECOUPLED & SERIAL
    # Hybrid candidates (beyond the paper) read the buffer and draft when it has nothing usable.
    assert {n for n, s in CATALOG.items() if s.needs_drafter} <= SERIAL | {"as2d_hybrid", "as2d_adaptive"}
    # the schemes that read the publication buffer
    assert DECOUPLED == {"as2d", "as2d_wo_bc", "as2d_online", "as2d_guarded", "as2d_subst", "as2d_hybrid",
                         "as2d_sources", "as2d_adaptive"}


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_no_round_is_wider_than_the_catalog_says(name):
    spec = scheme_spec(name)
    settings = {"budget": 5, "cap": 6, "width": 4}
    settings = {k: v for k, v in settings.items() if k in spec.defaults}
    drafts = {c: ([*REF[c:], EOS, EOS], [0.9] * (len(REF) - c + 2)) for c in range(1, len(REF))}
    buf = PublicationBuffer.from_stream(REF, [0.0] * len(REF), [0.9] * len(REF))
    flat = {k: 1.0 for k in range(1, 26)} if spec.needs_costs else None  # wide verifies as cheap as a step
    res = decode(make_scheme(name, max_output=64, eos_id=EOS, drafter=TrajectoryDrafter(REF, drafts), source=buf,
                             costs=flat, **settings), ReferenceTarget(REF, EOS, V))
    assert res.output == tuple(REF)
    widest = max(r.width for r in res.records)
    # exact candidates: every scheme but target-only reaches its widest width, and never beyond
    assert widest == spec.widest_width(**settings) and (widest == 1) == (name == "target_only")


def test_replay_config_reads_back_its_settings_and_labels_itself():
    cfg = ReplayConfig("as2d", source="qwen", budget=5)
    assert (cfg.budget, cfg.span, cfg.label) == (5, scheme_spec("as2d").defaults["span"], "as2d/qwen/b5")
    assert ReplayConfig("sd", width=6).label == "sd/K6" and ReplayConfig("target_only").label == "target_only"
    assert cfg == ReplayConfig("as2d", source="qwen", budget=5) and cfg != ReplayConfig("as2d", source="qwen")
    with pytest.raises(AttributeError, match="width"):
        _ = cfg.width


def test_adaptive_without_hybrid_drafting_builds_and_decodes_with_no_drafter():
    spec = scheme_spec("as2d_adaptive")
    assert spec.uses_drafter() and not spec.uses_drafter(hybrid=False)
    assert not scheme_spec("as2d").uses_drafter() and scheme_spec("sd").uses_drafter()
    # a source that diverges once (a substitution at position 7), so the guess round is taken
    stream = [*REF[:7], 63, *REF[8:]]
    buf = PublicationBuffer.from_stream(stream, [0.0] * len(stream), [0.9] * len(stream))
    flat = {k: 1.0 for k in range(1, 26)}
    with pytest.raises(ValueError, match="needs a drafter"):
        make_scheme("as2d_adaptive", max_output=64, eos_id=EOS, source=buf, costs=flat)
    scheme = make_scheme("as2d_adaptive", max_output=64, eos_id=EOS, source=buf, costs=flat, hybrid=False, budget=5)
    res = decode(scheme, ReferenceTarget(REF, EOS, V))
    assert res.output == tuple(REF)  # C.4: the target's greedy output
    after = [r for r in res.records if r.chain and r.root == REF[7]]  # the round that follows the rejection
    assert after and after[0].chain[0] == REF[8]  # verified the correction plus the continuation after it
