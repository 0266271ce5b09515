"""Native runs of translation / spoken-QA windows on a tiny saved Qwen2-Audio release.

* A window's own instruction (the cohort manifest's) reaches the target, the serial drafter and the
  producer process, as in trace collection: every method decodes the instructed greedy output.
* Spoken QA feeds the buffer cumulative prefixes (D.1.2): each token at its own arrival time.

The producer and drafter are the target's own saved weights: then the producer's first token (always
published: it comes from its prompt prefill, before the clock) is the target's, and it differs between
the question's prompt and the pair's default one, so the test can tell which prompt the process got.
"""

from __future__ import annotations

import multiprocessing as mp
import threading
from pathlib import Path

import numpy as np
import pytest

from workbench.data.datasets.instructions import task_instruction
from workbench.decoding.cumulative import BATCHES, CUMULATIVE_PREFIX
from workbench.models.drafting import ProducedToken
from workbench.native.driver import NativeHost
from workbench.native.episodes import host_setup, run_scheme
from workbench.native.producer import ProducerSpec, _produce
from workbench.native.shared import NativeSource, SharedBuffer
from workbench.native.windows import AudioWindow
from workbench.traces.collect import greedy_reference

CAP = 12
QA = task_instruction("qa", question="Who closed the window before the rain?")


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    import torch

    from tests.models.tiny_processors import qwen2_audio_for, qwen2_audio_processor, save_release
    from workbench.models.pair import load_pair
    from workbench.models.registry import load_model_config

    torch.set_num_threads(1)
    root: Path = tmp_path_factory.mktemp("qwen2_audio")
    proc = qwen2_audio_processor()
    target = qwen2_audio_for(proc, seed=0)
    m = load_model_config("qwen2_audio")
    release = str(save_release(target, proc, root / "target"))
    m["target"]["local_path"] = m["drafter"]["local_path"] = release
    m["max_new_tokens"] = CAP
    return load_pair(m)


@pytest.fixture(scope="module")
def audio() -> np.ndarray:
    return (0.1 * np.random.default_rng(3).standard_normal(16000)).astype(np.float32)


def _tokens(stream) -> list[int]:
    return [p.token for p in stream]


def test_qa_window_runs_natively_with_its_question_and_cumulative_prefixes(pair, audio) -> None:
    asked = greedy_reference(pair.new_target(audio, QA), CAP)
    plain = greedy_reference(pair.new_target(audio), CAP)
    assert asked != plain  # the question changes the target's output: the test can tell them apart
    produced = _tokens(pair.producer_stream(audio, QA)[0])
    assert produced[0] != _tokens(pair.producer_stream(audio)[0])[0]  # ... and the producer's first token

    setup = host_setup(pair, publication=CUMULATIVE_PREFIX)
    assert setup.producer.publication == CUMULATIVE_PREFIX
    window = AudioWindow("squad-q1", ("q1",), audio, QA)
    with NativeHost(setup.producer, setup.verifier) as host:
        runs = {s: run_scheme(host, setup, window, s) for s in ("target_only", "sd", "as2d")}
    for scheme, r in runs.items():  # every method decodes the instructed target output, token for token
        assert list(r.output) == asked, scheme
    r = runs["as2d"]
    # the producer process was prompted with the question: what it published is its instructed stream
    n = len(r.producer_tokens)
    assert n >= 1 and list(r.producer_tokens) == produced[:n]
    # cumulative prefixes: every token published at its own arrival (an 8-token batch shares one time)
    assert all(a < b for a, b in zip(r.producer_times, r.producer_times[1:], strict=False))


def _fake_stream(n: int):
    for i in range(n):
        yield ProducedToken(10 + i, 0.5, 100.0 + i)


@pytest.mark.parametrize(("publication", "sizes"), [(BATCHES, [4, 4, 2]), (CUMULATIVE_PREFIX, [1] * 10)])
def test_producer_publishes_batches_or_cumulative_prefixes(publication, sizes) -> None:
    shared = SharedBuffer(mp.get_context("spawn"))
    stop = threading.Event()
    assert _produce(_fake_stream(10), shared, stop, 4, t_begin=100.0, publication=publication) == 10
    shared.finish(110.0)
    buf = NativeSource(shared, 100.0, "producer", 64).snapshot().tokens()
    assert buf == tuple(range(10, 20))
    ends = [shared.batch_end[b] for b in range(shared.n_batches.value)]
    assert np.diff([0, *ends]).tolist() == sizes
    times = [shared.batch_time[b] - 100.0 for b in range(shared.n_batches.value)]
    if publication == CUMULATIVE_PREFIX:
        assert times == [float(i) for i in range(10)]  # unchanged arrival times
    else:
        assert times[:2] == [3.0, 7.0]  # a batch is published with its last token


def test_the_shared_buffer_keeps_each_tokens_drafter_forwards_for_replay() -> None:
    """A Tok_T stream (forward counts per token) publishes its counts beside its tokens; the verifier reads
    them back (``forwards_of``), ``Done`` reports drafter forwards, not tokens; an uncounted stream reads
    back as none (replay then prices one operation per token)."""
    counts = (2, 2, 3, 5, 5, 5, 6)
    stream = (ProducedToken(10 + i, None, 100.0 + i, f) for i, f in enumerate(counts))
    shared = SharedBuffer(mp.get_context("spawn"))
    assert _produce(stream, shared, threading.Event(), 1, t_begin=100.0) == 6
    assert shared.forwards_of(len(counts)) == counts
    shared.reset()
    _produce(_fake_stream(5), shared, threading.Event(), 1, t_begin=100.0)
    assert shared.forwards_of(5) == ()


def test_producer_spec_names_a_bad_publication() -> None:
    with pytest.raises(ValueError, match="publication: 'chunks' is not one of"):
        ProducerSpec(drafter={}, publication="chunks")
