"""Spoken-QA replay publishes cumulative prefixes exactly as the native run does (D.1.2).

A native As²d run of a QA window (tiny saved Qwen2-Audio release, the producer in its own process
feeding the buffer cumulative prefixes) records when each producer token was published. Its
trajectory, replayed with ``publication="cumulative_prefix"`` and the measured operation times,
publishes every token at the native event log's time -- with a profile whose producer batches
eight tokens, which the QA rule must ignore; the same track replayed as batches publishes later.
The Omni-7B/3B cost block prices QA one token per K=1 forward with no publication fee.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.native.test_native_tasks import QA, audio, pair  # noqa: F401  (module fixtures)
from workbench.decoding.cumulative import BATCHES, CUMULATIVE_PREFIX
from workbench.native.driver import NativeHost
from workbench.native.episodes import host_setup, run_scheme
from workbench.native.windows import AudioWindow
from workbench.replay.engine import ReplayConfig, replay
from workbench.replay.producer import ProducerPlan
from workbench.replay.profile import load_profile
from workbench.replay.targets import for_model
from workbench.replay.trajectory import SourceTrack, Window


def _track(tokens: tuple[int, ...], times: tuple[float, ...], publication: str) -> SourceTrack:
    """The native stream as a measured trajectory: one operation per token, lasting since the last arrival
    (a token published before the clock, from the producer's prompt prefill, takes no clock time)."""
    arrivals = [max(0.0, t) for t in times]
    op_ms = tuple(1000.0 * (b - a) for a, b in zip([0.0, *arrivals[:-1]], arrivals, strict=True))
    return SourceTrack("qwen", tokens, None, (1,) * len(tokens), op_ms, publication=publication)


def test_qa_replay_publishes_at_the_native_event_logs_times(pair, audio) -> None:  # noqa: F811
    setup = host_setup(pair, publication=CUMULATIVE_PREFIX)
    window = AudioWindow("squad-q1", ("q1",), audio, QA)
    with NativeHost(setup.producer, setup.verifier) as host:
        ref = run_scheme(host, setup, window, "target_only")
        run = run_scheme(host, setup, window, "as2d")
    tokens, times = tuple(run.producer_tokens), tuple(run.producer_times)
    assert len(tokens) >= 3 and all(a < b for a, b in zip(times, times[1:], strict=False))
    cost = load_profile("k70_pro").source("qwen")
    assert cost.batch_tokens == 8 and cost.publication_ms > 0  # a batching profile: QA must not batch
    qa = ProducerPlan.build(_track(tokens, times, CUMULATIVE_PREFIX), cost, pair.vocab_size).static
    assert qa is not None and qa.snapshot().tokens() == tokens
    native = [max(0.0, t) for t in times]
    assert [qa.publish_time_of(i) for i in range(len(tokens))] == pytest.approx(native, abs=1e-9)
    batched = ProducerPlan.build(_track(tokens, times, BATCHES), cost, pair.vocab_size).static
    later = [batched.publish_time_of(i) - native[i] for i in range(len(tokens))]
    assert min(later) >= 0 and max(later) > 1e-4  # batches hold tokens back: the rule is what the test sees
    # the whole window replays exactly under the cumulative buffer (audited: output = target's greedy)
    w = Window("squad-q1", "spoken_squad", tuple(ref.output), pair.eos_id, pair.vocab_size, setup.max_output, None,
               {"qwen": _track(tokens, times, CUMULATIVE_PREFIX)}).validate()
    res = replay(w, ReplayConfig("as2d", source="qwen", budget=3), load_profile("k70_pro"))
    assert res.tokens == len(ref.output)


def test_the_omni_block_prices_qa_one_token_per_forward_without_a_fee() -> None:
    omni = for_model(load_profile("k70_pro"), "qwen2_5_omni")
    cost = omni.source("qwen2.5-omni-3b")
    track = SourceTrack("qwen2.5-omni-3b", (5, 6, 7, 8, 9), None, (1,) * 5)
    for publication in (BATCHES, CUMULATIVE_PREFIX):  # the block publishes single tokens either way (R_OMNI_PUB)
        buf = ProducerPlan.build(replace(track, publication=publication), cost, 32).static
        assert [buf.publish_time_of(i) for i in range(5)] == pytest.approx(
            [(i + 1) * cost.op_ms / 1000.0 for i in range(5)], rel=1e-12)
    assert omni.metadata.budget == 3 and omni.verify_ms(1) == omni.target_step_ms
    assert "7.773497" in omni.provenance["target_step_ms"]
