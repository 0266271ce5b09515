"""The paper's core rules (C.3, D.1), each on a hand-made window: ASP recycling, As²d settings, anchor order."""

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


def _ablation_runs(confs: list[float]):
    """As²d and its two ablations on one exact window whose confidences dip in places."""
    from workbench.decoding import PublicationBuffer, make_scheme

    ref = [*range(5, 35), EOS]
    stream, stream_confs = ref + [EOS] * 30, confs + [0.9] * 30  # the drafter also runs on past EOS
    buf = PublicationBuffer.from_stream(stream, [0.0] * len(stream), stream_confs)  # all out before round 0
    drafts = {c: (stream[c:], stream_confs[c:]) for c in range(1, len(ref))}
    runs = {}
    for name, settings in (("as2d", {"budget": 6}), ("as2d_wo_td", {"budget": 6}), ("as2d_wo_bc", {"cap": 6})):
        scheme = make_scheme(name, max_output=64, eos_id=EOS, source=buf, drafter=TrajectoryDrafter(ref, drafts),
                             **settings)
        res = decode(scheme, ReferenceTarget(ref, EOS, V))
        assert res.output == tuple(ref)
        runs[name] = [r.chain for r in res.records]
    return runs


def test_each_ablation_changes_one_thing_as2d_keeps_the_confidence_threshold():
    confs = [0.9] * 31
    confs[4] = confs[13] = confs[20] = 0.2  # the chain stops after each of these (0.4 threshold)
    runs = _ablation_runs(confs)
    # With the same candidates, confidences, budget and cap, the three propose the same chains:
    # w/o TD differs from As²d only in who drafts (and when), w/o BC only in its cap.
    assert runs["as2d"] == runs["as2d_wo_td"] == runs["as2d_wo_bc"]
    # roots at output positions 0, 5, 12, 14: each chain stops after position 4, 13 or 20, or at the budget
    assert [len(c) for c in runs["as2d"]][:4] == [4, 6, 1, 6]


def test_as2d_gates_on_confidence_only_where_the_source_has_it():
    from workbench.decoding import PublicationBuffer, make_scheme

    ref = [*range(5, 25), EOS]
    blind = PublicationBuffer.from_stream(ref, [0.0] * len(ref))  # an external source: no confidences
    res = decode(make_scheme("as2d", max_output=64, eos_id=EOS, source=blind, budget=6), ReferenceTarget(ref, EOS, V))
    assert res.output == tuple(ref) and [r.width for r in res.records][:3] == [7, 7, 7]  # missing is not imputed
