"""Issue 11's core rules, each on a hand-made window: ASP recycling, As²d settings, anchor order."""

from workbench.decoding import FRESH, ReferenceTarget, SpecASR, TrajectoryDrafter, decode

EOS, V = 0, 128


def test_asp_drafts_fresh_when_the_recycled_match_is_the_old_drafts_last_token():
    # The drafter believes 8 where the target says 99; its draft (cap 4) ends with 9, the token
    # the paired-branch forward regenerates after 99. Nothing follows the match to reuse, so
    # SpecASR drafts fresh from there instead of verifying the lone regenerated token.
    ref = [5, 6, 7, 99, 9, 10, 11, 12, 13, EOS]
    drafts = {c: (ref[c:] + [EOS] * 5, [0.9] * (len(ref) - c + 5)) for c in range(1, len(ref) + 1)}
    drafts[1] = ([6, 7, 8, 9, 10, 11], [0.9] * 6)
    res = decode(SpecASR(TrajectoryDrafter(ref, drafts), 64, EOS, cap=4), ReferenceTarget(ref, EOS, V))
    assert res.output == tuple(ref)
    first, second = res.records[:2]
    assert first.chain == (6, 7, 8, 9) and first.committed == (6, 7, 99)
    assert second.chain == (9, 10, 11, 12) and second.provenance == (FRESH,) * 4
    assert second.work.paired_forwards == 1 and second.work.forwards == 3  # the paired forward made the first
