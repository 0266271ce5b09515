"""The bench corpus: speaker-disjoint splits, the perturbations it promises, a deterministic build."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from workbench.data import bench_corpus as bc
from workbench.data.bench_corpus_audio import Perturbation, add_noise, perturb, telephone
from workbench.errors import DataError

pytestmark = pytest.mark.skipif(not (bc.TESTDATA_DIR.is_dir() and bc.ASTERISK_DIR.is_dir()),
                                reason="needs pocketsphinx-testdata and asterisk-core-sounds-en-wav (setup.sh)")


def test_plan_is_large_varied_and_split_by_speaker():
    plans = bc.plan()
    assert len(plans) >= 60 and len({p.window_id for p in plans}) == len(plans)
    speakers = {s: {p.speaker for p in plans if p.split == s} for s in bc.SPLITS}
    assert len(speakers["dev"] | speakers["test"]) >= 8
    assert not speakers["dev"] & speakers["test"]  # no speaker in both splits
    # the test split holds real speech too, and the demo's own speakers (tuned on) are dev only
    assert {"librivox", "cards", "piper-joe"} <= speakers["dev"]
    assert any(p.origin == "real" for p in plans if p.split == "test")
    # no synthesized passage is read in both splits: test words were never seen while tuning
    texts = {s: {t for p in plans if p.split == s and p.origin == "synth" for t in p.texts} for s in bc.SPLITS}
    assert not texts["dev"] & texts["test"]
    kinds = Counter(p.perturbation.kind for p in plans)
    assert {"clean", "noise", "speed", "telephone", "farfield"} <= set(kinds)
    assert len({p.perturbation.value for p in plans if p.perturbation.kind == "noise"}) >= 3  # several SNRs
    assert {"numerals", "names", "long"} <= {p.content for p in plans}


def test_small_build_is_deterministic_reused_and_rebuilt_when_damaged(tmp_path):
    a = bc.build_bench_corpus(tmp_path / "a", max_windows_per_split=2, progress=False)
    b = bc.build_bench_corpus(tmp_path / "b", max_windows_per_split=2, progress=False)
    assert [w.sha256 for w in a] == [w.sha256 for w in b]  # content-identical rebuild
    assert {w.split for w in a} == {"dev", "test"} and len(a) == 4
    bc.check_disjoint(a)
    doc = json.loads((tmp_path / "a" / "manifest-2.json").read_text())
    row = doc["windows"][0]
    assert {"window_id", "speaker", "perturbation", "split", "text", "seconds", "sha256"} <= set(row)
    assert all(w["text"] for w in doc["windows"])
    first = a.windows[0].path
    stamp = first.stat().st_mtime_ns
    again = bc.build_bench_corpus(tmp_path / "a", max_windows_per_split=2, progress=False)
    assert first.stat().st_mtime_ns == stamp and [w.sha256 for w in again] == [w.sha256 for w in a]
    first.write_bytes(first.read_bytes()[:-400])  # a truncated copy is made again, not served
    fixed = bc.build_bench_corpus(tmp_path / "a", max_windows_per_split=2, progress=False)
    assert fixed.windows[0].sha256 == a.windows[0].sha256
    audio = fixed.load_audio(fixed.windows[0])
    assert audio.dtype == np.float32 and audio.size / 16000 <= bc.MAX_SECONDS


def test_a_speaker_in_both_splits_is_refused(tmp_path):
    w = bc.BenchWindow("x-00-clean", "x", "dev", "synth", "prose", "clean", "t", 1.0, tmp_path / "x.wav", "0", "0")
    both = bc.BenchCorpus(tmp_path, [w, bc.BenchWindow(**{**{k: getattr(w, k) for k in w.__slots__},
                                                           "window_id": "x-01-clean", "split": "test"})])
    with pytest.raises(DataError, match="both dev and test"):
        bc.check_disjoint(both)


def test_perturbations_do_what_they_say():
    rng = np.random.default_rng(0)
    t = np.arange(16000 * 2) / 16000
    speech = (0.5 * np.sin(2 * np.pi * 440 * t) + 0.3 * np.sin(2 * np.pi * 6000 * t)).astype(np.float32)
    noisy = add_noise(speech, 10.0, rng)
    snr = 10 * np.log10(np.mean(speech ** 2) / np.mean((noisy - speech) ** 2))
    assert snr == pytest.approx(10.0, abs=0.5)
    fast = perturb(speech, Perturbation("speed", 1.25), "w")
    assert fast.size == pytest.approx(speech.size / 1.25, rel=0.01)
    band = np.abs(np.fft.rfft(telephone(speech)))
    f = np.fft.rfftfreq(speech.size, 1 / 16000)
    assert band[f > 4500].max() < 0.01 * band[(f > 400) & (f < 500)].max()  # nothing above the phone band
    same = perturb(speech, Perturbation("noise", 5.0), "w-1")
    assert np.array_equal(same, perturb(speech, Perturbation("noise", 5.0), "w-1"))  # seeded by window id
    assert not np.array_equal(same, perturb(speech, Perturbation("noise", 5.0), "w-2"))


def test_the_bench_dataset_config_is_not_a_trace_corpus():
    from workbench.data.corpus import corpus_from_config
    from workbench.errors import ConfigError

    cfg = {"name": "bench", "kind": "bench"}
    with pytest.raises(ConfigError, match="native bench corpus"):
        corpus_from_config(cfg, Path("/nonexistent"))
