"""Native host driver on tiny real Whisper models: exactness, real concurrency, same records, faults."""

from __future__ import annotations

import json
import math
import os
import time

import polars as pl
import pytest
import torch
from transformers import WhisperConfig, WhisperForConditionalGeneration

from tests.producer_first import wait_for_the_producer
from workbench.decoding import ROUND_COLUMNS, SCHEMES, scheme_spec
from workbench.metrics import overlap_decomposition
from workbench.models.whisper import WhisperTarget, load_whisper, whisper_drafter
from workbench.models.whisper_convert import AS2D_META
from workbench.native.driver import NativeHost, ProducerError
from workbench.native.episodes import default_placements
from workbench.native.producer import ALLOWED_CPUS, Placement, ProducerSpec

# native runs assert what a producer racing the target achieves: alone (tests/conftest.py)
pytestmark = pytest.mark.serial

TINY = dict(vocab_size=96, d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
            decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, num_mel_bins=16,
            max_source_positions=16, max_target_positions=256, decoder_start_token_id=1, eos_token_id=3,
            pad_token_id=3, bos_token_id=3)
CAP = 120


def save(model, d):
    model.save_pretrained(d)
    (d / AS2D_META).write_text(json.dumps(
        {"prompt_ids": [1, 2], "eos_id": 3, "suppress_ids": [0], "begin_suppress_ids": [3]}))
    return d


def random_whisper(seed: int, d):
    """A tiny Whisper with random weights of ``seed``, saved to ``d``."""
    torch.manual_seed(seed)
    model = WhisperForConditionalGeneration(WhisperConfig(**TINY)).eval()
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0.0, 0.3)
    return save(model, d)


@pytest.fixture(scope="module")
def producer_dir(tmp_path_factory):
    return random_whisper(0, tmp_path_factory.mktemp("tiny_producer"))


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory, producer_dir):
    """The target: the producer's weights plus 10 decoder layers whose residual branches are
    exactly zero. Same greedy function, several times the decode cost -- so a real, cheaper
    producer can run ahead of it, as a drafter does of its target."""
    small = WhisperForConditionalGeneration.from_pretrained(producer_dir)
    big = WhisperForConditionalGeneration(WhisperConfig(**{**TINY, "decoder_layers": 12})).eval()
    state = big.state_dict()
    with torch.no_grad():
        for k, v in small.state_dict().items():
            state[k].copy_(v)
        for k, v in state.items():
            layer = k.split("decoder.layers.")[1].split(".")[0] if "decoder.layers." in k else None
            if layer is not None and int(layer) >= 2 and any(x in k for x in ("out_proj", "fc2")):
                v.zero_()
    big.load_state_dict(state)
    return save(big, tmp_path_factory.mktemp("tiny_target"))


@pytest.fixture(scope="module")
def audio():
    t = torch.arange(6400) / 16000
    return (0.3 * torch.sin(2 * torch.pi * 220 * t)).numpy()


@pytest.fixture(scope="module")
def host(producer_dir):
    spec = ProducerSpec(drafter={"name": "tiny", "family": "whisper", "local_path": str(producer_dir),
                                 "vocabulary": "shared"}, placement=Placement(threads=1))
    with NativeHost(spec, verifier=Placement(threads=1)) as h:
        yield h


def run(host, tiny_dir, audio, scheme, ahead=False, **kw):
    """One window of ``scheme``; ``ahead``: the target's first call waits for the producer to finish
    (tests/producer_first.py), so a test asserting accepted candidates does not race it."""
    target = WhisperTarget(load_whisper(tiny_dir), audio)
    if ahead:
        target = wait_for_the_producer(target, host.shared)
    spec = scheme_spec(scheme)
    drafter = whisper_drafter(load_whisper(host.spec.drafter["local_path"]), audio) if spec.needs_drafter else None
    if spec.needs_costs:  # a cost-aware scheme chooses its chain from per-width verify costs (ms), as a profile's
        kw.setdefault("costs", {k: 10.0 + 2.0 * k for k in range(1, 17)})
    return host.run("w0", scheme, target, audio=audio, max_output=CAP, drafter=drafter, **kw)


def test_every_scheme_matches_target_only_and_emits_replay_records(host, tiny_dir, audio):
    ref = run(host, tiny_dir, audio, "target_only")
    assert len(ref.output) > 20
    for scheme in SCHEMES:
        res = run(host, tiny_dir, audio, scheme, ahead=scheme_spec(scheme).decoupled)
        assert res.output == ref.output, scheme
        frame = pl.DataFrame([r.as_row() for r in res.records])
        assert tuple(frame.columns) == ROUND_COLUMNS
        assert all(r.t_decide <= r.t_start <= r.t_end for r in res.records)
        if scheme != "target_only":  # the same model drafts, so candidates really are accepted
            assert sum(r.accepted for r in res.records) > 0, scheme


def test_producer_runs_concurrently_with_the_verifier(host, tiny_dir, audio):
    res = run(host, tiny_dir, audio, "as2d", params={"budget": 3})
    stages = pl.DataFrame(list(res.stages), schema=["resource", "stage", "start", "end", "round"], orient="row")
    ov = overlap_decomposition(stages, res.time)
    assert ov.O > 0 and ov.D > 0 and ov.V > 0  # real overlap of producer and verifier service
    assert abs(ov.T - (ov.D + ov.V - ov.O + ov.H)) < 1e-9
    used = [p for r in res.records for p in r.provenance]
    assert used and all(res.producer_times[p] <= r.t_decide for r in res.records for p in r.provenance)
    assert res.placement["producer"]["pid"] != res.placement["verifier"]["pid"]


def test_target_hitting_the_output_cap(host, tiny_dir, audio):
    bundle = load_whisper(tiny_dir)
    res = host.run("cap", "as2d", WhisperTarget(bundle, audio), audio=audio, max_output=17)
    assert res.capped and len(res.output) == 17


def test_producer_that_publishes_nothing_lets_the_target_finish_alone(host, tiny_dir, audio):
    ref = run(host, tiny_dir, audio, "target_only")
    res = run(host, tiny_dir, audio, "as2d", producer_cap=0)
    assert res.output == ref.output and res.producer_tokens == ()
    assert {r.k1_reason for r in res.records} <= {"not_ready", "exhausted", "output_cap"}


def test_producer_crash_mid_run_gives_one_error_keeps_timings_and_leaves_no_orphan(tiny_dir, producer_dir, audio):
    spec = ProducerSpec(drafter={"name": "tiny", "family": "whisper", "local_path": str(producer_dir),
                                 "vocabulary": "shared"})
    with NativeHost(spec) as h:
        pid = h.producer_pid
        bundle = load_whisper(tiny_dir)
        target = WhisperTarget(bundle, audio)
        orig_prefill, orig_verify = target.prefill, target.verify
        # Synchronised, not timed: holding the buffer's publication lock from before the producer
        # starts (prefill) holds it at its first publish, so it is certainly mid-window -- it can
        # neither finish nor report Done -- when the first target call kills it.
        lock = h.shared.n_batches.get_lock()
        killed = []

        def prefill_holding_the_buffer():
            lock.acquire()
            return orig_prefill()

        def verify_then_kill(root, chain):  # the phone-side failure: the producer dies mid-window
            if not killed:
                assert math.isnan(h.shared.finish_time.value)  # the premise: it has not finished
                os.kill(h.producer_pid, 9)
                h._proc.join(5)
                killed.append(h.shared.n_batches.value)
                lock.release()
            return orig_verify(root, chain)

        target.prefill, target.verify = prefill_holding_the_buffer, verify_then_kill
        with pytest.raises(ProducerError, match="producer") as err:
            h.run("crash", "as2d", target, audio=audio, max_output=CAP, drain_timeout=2)
        partial = err.value.partial
        assert killed == [0]  # killed mid-window, before its first publication
        assert partial is not None and partial.records and partial.time > 0
    time.sleep(0.1)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_host_places_the_producer_off_the_verifiers_core_and_gives_the_thread_its_cpus_back(producer_dir):
    # Regression: placements narrowed the calling thread for good, so after an in-process
    # calibration the next host's producer inherited the verifier's one core and ran at half speed.
    before = os.sched_getaffinity(0)
    threads = torch.get_num_threads()
    verifier, producer = default_placements()
    spec = ProducerSpec(drafter={"name": "tiny", "family": "whisper", "local_path": str(producer_dir),
                                 "vocabulary": "shared"}, placement=Placement(threads=1))  # no CPUs: inherits
    for _ in range(2):  # the second host sees what the first left behind
        with NativeHost(spec, verifier=verifier) as h:
            assert h.placement["verifier"]["cpus"] == sorted(verifier.cpus or before)
            assert h.placement["producer"]["cpus"] == sorted(before)  # spawned before the verifier is pinned
        assert os.sched_getaffinity(0) == before and torch.get_num_threads() == threads
        assert default_placements() == (verifier, producer)
    if len(ALLOWED_CPUS) >= 2:
        assert verifier.cpus != producer.cpus and len(verifier.cpus) == len(producer.cpus) == 1


def test_producers_core_joins_the_verifier_once_the_producer_has_finished(host, tiny_dir, audio):
    ref = run(host, tiny_dir, audio, "target_only")
    wide = Placement(2, ALLOWED_CPUS or None)
    # the producer certainly finishes mid-window (tests/producer_first.py), whatever else loads the machine
    res = run(host, tiny_dir, audio, "as2d", ahead=True, params={"budget": 3}, widen=wide)
    assert res.output == ref.output
    j, finish = res.joined_at_round, res.producer_finish
    assert j is not None and j >= 1 and finish >= res.producer_times[-1]
    # it joins at the first verify after the producer stopped, not before
    assert res.records[j - 1].t_start < finish < res.records[j].t_end
    # and the verifier's own placement is back for the next window
    assert torch.get_num_threads() == 1
    assert run(host, tiny_dir, audio, "as2d", params={"budget": 3}).joined_at_round is None


@pytest.fixture(scope="module")
def stranger_dir(tmp_path_factory):
    """A producer with other weights than the target's: its candidates are (almost) never accepted."""
    return random_whisper(1, tmp_path_factory.mktemp("tiny_stranger"))


@pytest.mark.skipif(len(ALLOWED_CPUS) < 2, reason="the producer's core can only join on 2+ CPUs")
def test_fallback_stops_a_producer_that_does_not_pay_and_its_core_joins(tiny_dir, stranger_dir, audio):
    from workbench.native.driver import Fallback

    spec = ProducerSpec(drafter={"name": "stranger", "family": "whisper", "local_path": str(stranger_dir),
                                 "vocabulary": "shared"}, placement=Placement(threads=1))
    wide, rule = Placement(2, ALLOWED_CPUS or None), Fallback(after=4, below=0.5)
    with NativeHost(spec, verifier=Placement(threads=1)) as stranger:
        ref = run(stranger, tiny_dir, audio, "target_only")
        kept = run(stranger, tiny_dir, audio, "as2d", params={"budget": 3}, widen=wide)
        res = run(stranger, tiny_dir, audio, "as2d", params={"budget": 3}, widen=wide, fallback=rule)
        assert torch.get_num_threads() == 1  # the verifier's own placement is back after the window
    assert kept.output == ref.output == res.output  # exact, with or without the rule
    assert kept.fell_back_at_round is None  # no rule, no stop: the producer ran to its own end
    f = res.fell_back_at_round
    assert f == rule.after and sum(r.accepted for r in res.records[:f]) < rule.below * f
    # the producer stopped at its next forward and the target took its core at the next verify after
    assert res.producer_finish < res.t_eos and len(res.producer_tokens) < len(kept.producer_tokens)
    assert res.joined_at_round is not None and res.joined_at_round >= f


def test_fallback_keeps_a_producer_that_pays(host, tiny_dir, audio):
    """The same-weights producer's chains are accepted: the rule never fires and the run is exact."""
    from workbench.native.driver import Fallback

    ref = run(host, tiny_dir, audio, "target_only")
    wide = Placement(2, ALLOWED_CPUS or None)
    rule = Fallback(10, 0.5)
    # synchronised, not timed: every round after the first finds its candidates ready on any machine
    res = run(host, tiny_dir, audio, "as2d", ahead=True, params={"budget": 3}, widen=wide, fallback=rule)
    assert res.output == ref.output
    assert all(r.accepted > 0 for r in res.records[1:rule.after])  # round 0 may decide before any is ready
    assert sum(r.accepted for r in res.records[:rule.after]) >= rule.below * rule.after
    assert res.fell_back_at_round is None
