"""Scheme behaviour beyond exactness: widths, K=1 reasons, ASP recycling, bad input."""

import subprocess
import sys

import pytest

from workbench.decoding import (
    RECYCLED,
    As2d,
    PublicationBuffer,
    ReferenceTarget,
    SpecASR,
    StandardSD,
    TrajectoryDrafter,
    decode,
    make_scheme,
    verify_chain,
)

EOS, V = 0, 128
REF = [5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, EOS]


def perfect_drafts(ref, conf=0.9):
    return {c: (ref[c:] + [EOS] * 30, [conf] * (len(ref) - c + 30)) for c in range(1, len(ref) + 1)}


def test_verification_rule_correction_bonus_eos_and_cap():
    assert verify_chain([1, 2, 3], [1, 2, 9, 4], EOS, 10).committed == (1, 2, 9)
    v = verify_chain([1, 2, 3], [1, 2, 3, 4], EOS, 10)
    assert (v.accepted, v.committed, v.outcome, v.next_root) == (3, (1, 2, 3, 4), "bonus", 4)
    assert verify_chain([1, EOS, 5], [1, EOS, 7, 7], EOS, 10).committed == (1, EOS)
    assert verify_chain([1, 2], [1, 2, 3], EOS, 3).outcome == "cap"
    with pytest.raises(ValueError, match="greedy"):
        verify_chain([1, 2], [1], EOS, 10)


def test_target_only_needs_no_extra_k1_forward():
    target = ReferenceTarget(REF, EOS, V)
    res = decode(make_scheme("target_only", max_output=64, eos_id=EOS), target)
    assert res.output == tuple(REF) and target.calls == len(REF) - 1


def test_sd_uses_fixed_width_and_full_acceptance_carries_the_bonus_as_root():
    target = ReferenceTarget(REF, EOS, V)
    res = decode(StandardSD(TrajectoryDrafter(REF, perfect_drafts(REF)), 5, 64, EOS), target)
    assert res.output == tuple(REF)
    # 14 tokens after the root: 3 full rounds of 4+bonus = 15 > 14, the last is cut by EOS.
    assert [r.width for r in res.records] == [5, 5, 5]
    assert res.records[0].outcome == "bonus" and res.records[1].root == res.records[0].committed[-1]


def test_output_cap_shortens_the_chain():
    ref = REF[:6]  # the target was capped at 6 tokens
    res = decode(StandardSD(TrajectoryDrafter(ref, perfect_drafts(REF)), 8, 6, EOS), ReferenceTarget(ref, EOS, V))
    assert res.output == tuple(ref) and [r.width for r in res.records] == [5] and res.records[-1].outcome == "cap"


def test_asp_stops_after_the_first_low_confidence_token():
    drafts = {c: (REF[c:] + [EOS] * 30, [0.9, 0.9, 0.3, 0.9] + [0.9] * 40) for c in range(1, len(REF) + 1)}
    res = decode(SpecASR(TrajectoryDrafter(REF, drafts), 64, EOS), ReferenceTarget(REF, EOS, V))
    assert res.records[0].width == 4  # root + two confident tokens + the low-confidence one


def test_asp_recycles_the_rejected_suffix_when_the_target_substitutes_a_token():
    # Drafter believes 8 where the target says 99; its later tokens 9 10 11 stay right.
    ref = [5, 6, 7, 99, 9, 10, 11, 12, EOS]
    wrong = [5, 6, 7, 8, 9, 10, 11, 12, EOS, EOS, EOS]
    drafts = {1: (wrong[1:], [0.9] * 10)}
    for c in range(2, len(ref) + 1):
        drafts[c] = (ref[c:] + [EOS] * 5, [0.9] * (len(ref) - c + 5))
    drafts[4] = ([9, 10, 11, 12, EOS], [0.9] * 5)
    res = decode(SpecASR(TrajectoryDrafter(ref, drafts), 64, EOS, cap=24), ReferenceTarget(ref, EOS, V))
    assert res.output == tuple(ref)
    first, second = res.records[:2]
    assert first.accepted == 2 and first.committed[-1] == 99
    # Paired-branch forward regenerates 9 after 99; it matches the old draft at the same slot,
    # so the old suffix 10 11 12 EOS is reused without new drafting, and verified again.
    assert second.chain[:2] == (9, 10) and second.provenance[1:] == (RECYCLED,) * (len(second.chain) - 1)
    assert second.work.paired_forwards == 1 and second.work.forwards == 0
    assert second.work.refresh_width == len(second.chain) - 1


def test_as2d_wo_bc_needs_source_confidences():
    buf = PublicationBuffer.from_stream([5, 6, 7], [0.0, 0.0, 0.0])
    scheme = make_scheme("as2d_wo_bc", max_output=64, eos_id=EOS, source=buf)
    with pytest.raises(ValueError, match="threshold"):
        decode(scheme, ReferenceTarget(REF, EOS, V))


def test_as2d_budget_caps_physical_width():
    buf = PublicationBuffer.from_stream(REF, [0.0] * len(REF))
    res = decode(As2d(buf, 3, 64, EOS), ReferenceTarget(REF, EOS, V))
    assert res.output == tuple(REF) and max(r.width for r in res.records) == 4


@pytest.mark.parametrize(
    "make, field",
    [
        (lambda: ReferenceTarget([], EOS, V), "reference"),
        (lambda: make_scheme("as2d", max_output=9, eos_id=EOS, source=PublicationBuffer(), budget=-1), "budget"),
        (lambda: make_scheme("as2d", max_output=9, eos_id=EOS, source=PublicationBuffer(), budget=25), "budget"),
        (lambda: make_scheme("sd", max_output=9, eos_id=EOS, drafter=object(), width=1), "width"),
        (lambda: make_scheme("asp", max_output=9, eos_id=EOS, drafter=object(), threshold=1.5), "threshold"),
        (lambda: make_scheme("nope", max_output=9, eos_id=EOS), "scheme"),
        (lambda: make_scheme("sd", max_output=9, eos_id=EOS), "drafter"),
        (lambda: make_scheme("target_only", max_output=0, eos_id=EOS), "max_output"),
        (lambda: ReferenceTarget([1, V + 3], EOS, V), "reference"),
    ],
)
def test_bad_input_names_the_field(make, field):
    with pytest.raises(ValueError, match=field):
        make()


def test_decoding_core_imports_no_torch():
    code = "import sys, workbench.decoding; bad = {'torch', 'transformers', 'MNN'} & set(sys.modules); print(bad)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "set()"
