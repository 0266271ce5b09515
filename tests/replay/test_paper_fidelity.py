"""The paper's rules as replay sees them, each pinned on a hand-made window."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from replay_fixtures import constant_profile, exact_window

from workbench import metrics
from workbench.replay.engine import replay, results_frame
from workbench.replay.profile import load_profile
from workbench.replay.result import ReplayConfig
from workbench.replay.trajectory import DraftTable, SourceTrack, Window

CONFIGS = [ReplayConfig("target_only"), ReplayConfig("sd", width=8), ReplayConfig("asp"),
           ReplayConfig("as2d_wo_td", budget=7), ReplayConfig("as2d", source="qwen", budget=7),
           ReplayConfig("as2d_wo_bc", source="qwen", cap=14)]


def one_token_window(reference: tuple[int, ...], max_output: int) -> Window:
    """A window prefill already ends: EOS as the first token, or an output cap of one."""
    no_drafts = DraftTable(np.zeros((0, 0), dtype=np.int64), np.zeros((0, 0)), np.zeros(0, dtype=np.int64))
    track = SourceTrack("qwen", (7, 8, 9), (0.9, 0.9, 0.9), (1, 1, 1))
    return Window("one", "test", reference, 0, 1000, max_output, no_drafts, {"qwen": track}).validate()


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c.label)
@pytest.mark.parametrize(("reference", "max_output"), [((0,), 1024), ((5,), 1)], ids=["eos-first", "cap-1"])
def test_a_one_token_output_replays_audited_and_counts_its_token(cfg, reference, max_output):
    w = one_token_window(reference, max_output)
    r = replay(w, cfg, load_profile("k70_pro"))  # audited: the output is rebuilt and compared
    assert r.untimed == () and r.tokens == 1 and r.output == reference
    assert r.time == 0.0 and r.tps == float("inf")  # prefill is off the decode clock; nothing is in flight at 0
    normal = replay(exact_window(12), cfg, constant_profile())
    rounds = pl.concat([normal.rounds_frame(), r.rounds_frame()])
    runs = results_frame([normal, r])
    assert metrics.output_tokens(rounds, runs=runs) == normal.tokens + r.tokens == runs["tokens"].sum()
    assert metrics.coverage(rounds, int(runs["tokens"].sum())) == pytest.approx(
        sum(x.accepted for x in normal.untimed) / (normal.tokens + 1))
