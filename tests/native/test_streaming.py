"""Sustained streaming (D.6.2): the block queue never loses or reorders a block; lag identities."""

from __future__ import annotations

import random
import time

import numpy as np
import pytest

from workbench.native.streaming import BlockQueue, Processed, pace, plan_blocks, run_stream, summarize
from workbench.native.windows import SAMPLE_RATE


def test_plan_blocks_and_context_resets() -> None:
    blocks = plan_blocks(30.0, 4.0, 12.0)
    assert [b.index for b in blocks] == list(range(7))  # 28 s of whole blocks; the partial 2 s is not a block
    assert [b.context_start_s for b in blocks] == [0, 0, 0, 12, 12, 12, 24]
    with pytest.raises(ValueError, match="block_s"):
        plan_blocks(30.0, 4.0, 2.0)


def test_queue_keeps_every_block_in_order_under_a_slower_consumer() -> None:
    blocks = plan_blocks(60.0, 0.5, 1.5)  # 120 blocks, released 100x faster than real time
    q = BlockQueue()
    pace(blocks, q, q.clock(), speed=100.0)
    rng = random.Random(0)
    seen = []
    for b, arrival in q:  # a consumer that is sometimes slower, sometimes faster than arrivals
        time.sleep(rng.choice([0.0, 0.0, 0.012]))
        seen.append((b.index, arrival))
    assert [i for i, _ in seen] == list(range(len(blocks)))
    assert all(a <= b for (_, a), (_, b) in zip(seen, seen[1:], strict=False))  # arrival stamps in order
    assert q.max_depth > 1  # a backlog did build up: the order held while blocks waited


def test_queue_rejects_out_of_order_arrivals_and_detects_loss() -> None:
    blocks = plan_blocks(12.0, 4.0, 12.0)
    q = BlockQueue()
    with pytest.raises(ValueError, match="out of order"):
        q.put(blocks[1])
    q.put(blocks[0])
    q.put(blocks[1])
    q.close()
    it = iter(q)
    next(it)
    q._q.get()  # a block vanishing from the queue (what the check exists for)
    with pytest.raises(RuntimeError, match="unprocessed|expected"):
        list(it)


def test_run_stream_rows_obey_the_lag_identities() -> None:
    audio = np.zeros(int(6.0 * SAMPLE_RATE), np.float32)
    contexts = []

    def process(block, ctx, may_draft) -> Processed:  # a real (slow) worker: 30-60 ms per block
        contexts.append(len(ctx) / SAMPLE_RATE)
        time.sleep(0.03 + 0.03 * (block.index % 2))
        return Processed(tokens=3, encode_s=0.01, prefill_s=0.01, decode_s=0.01, drafting=may_draft)

    f = run_stream(audio, process, block_s=0.5, reset_s=1.5, deadline_s=0.02, speed=10.0)
    assert f["block"].to_list() == list(range(12))
    assert contexts == pytest.approx([0.5, 1.0, 1.5] * 4)
    for r in f.iter_rows(named=True):
        assert r["lag_s"] == pytest.approx(r["queue_wait_s"] + r["processing_s"], abs=1e-9)
        assert r["begin"] >= r["arrival"] and r["drafting"] == (r["queue_wait_s"] <= 0.02)
    late = run_stream(audio, process, block_s=0.5, reset_s=1.5, deadline_s=0.02, expiry="consumption", speed=10.0)
    assert late["drafting"].all()  # consumption-based lifetime: every block drafts however late it starts
    with pytest.raises(ValueError, match="streaming.expiry"):
        run_stream(audio, process, block_s=0.5, deadline_s=0.02, expiry="never")
    s = summarize(f)
    assert s["active_rtf"] == pytest.approx(f["processing_s"].sum() / 6.0)
    assert s["decode_tps"] == pytest.approx(36 / 0.12)
    assert s["max_queue_wait_s"] == pytest.approx(f["queue_wait_s"].max())


def test_a_bad_source_lifetime_is_one_config_error() -> None:
    from omegaconf import OmegaConf

    from workbench.jobs.config import ConfigError
    from workbench.jobs.streaming import _opts

    base = {"duration_s": 24.0, "streaming": {"block_s": 4.0, "reset_s": 12.0, "deadline_s": 4.0, "speed": 1.0,
                                              "method": "as2d", "expiry": "consumption"}}
    assert _opts(OmegaConf.create(base))["expiry"] == "consumption"
    base["streaming"]["expiry"] = "forever"
    with pytest.raises(ConfigError, match="streaming.expiry"):
        _opts(OmegaConf.create(base))
