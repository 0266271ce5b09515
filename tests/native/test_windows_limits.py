"""Host windows load under the target's own audio limit (Whisper 30 s; Qwen3-ASR/Omni long audio).

Pure audio files, no model: packing reads the clips' samples only."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from workbench.data.corpus import Clip, Corpus
from workbench.native.windows import SAMPLE_RATE, demo_windows, pack_windows


def _clip(root: Path, name: str, seconds: float) -> Clip:
    rng = np.random.default_rng(len(name))
    path = root / f"{name}.wav"
    sf.write(str(path), (0.1 * rng.standard_normal(int(seconds * SAMPLE_RATE))).astype(np.float32), SAMPLE_RATE)
    return Clip(name, path, name, "piper", seconds, SAMPLE_RATE)


def test_a_long_clip_packs_for_a_long_audio_target_and_is_refused_under_whisper(tmp_path: Path) -> None:
    clips = [_clip(tmp_path, "long", 34.0), _clip(tmp_path, "short", 2.0)]
    corpus = Corpus(tmp_path, clips)
    # Qwen3-ASR / Omni (no family limit): the 34 s clip is one window, never cut to 30 s
    windows = pack_windows(corpus, clips, max_seconds=60.0, audio_limit=None)
    assert [w.clip_ids for w in windows] == [("long", "short")]
    assert windows[0].seconds == pytest.approx(34.0 + 0.3 + 2.0, abs=1e-3)
    assert windows[0].instruction is None  # the pair's own prompt unless a window carries one
    # Whisper (30 s encoder): the same clip is one clear error naming the file, not silently truncated
    with pytest.raises(ValueError, match=r"long\.wav.*30"):
        pack_windows(corpus, clips, max_seconds=60.0, audio_limit=30.0)


def test_windows_pack_to_the_smaller_of_the_pack_size_and_the_target_limit(tmp_path: Path) -> None:
    clips = [_clip(tmp_path, f"c{i}", 4.0) for i in range(4)]
    corpus = Corpus(tmp_path, clips)
    wide = pack_windows(corpus, clips, max_seconds=60.0, audio_limit=None)
    narrow = pack_windows(corpus, clips, max_seconds=60.0, audio_limit=9.0)
    assert [len(w.clip_ids) for w in wide] == [4]
    assert [len(w.clip_ids) for w in narrow] == [2, 2] and max(w.seconds for w in narrow) <= 9.0


def test_demo_windows_take_the_model_limit(tmp_path: Path) -> None:
    clips = [_clip(tmp_path, f"d{i}", 3.0) for i in range(8)]
    corpus = Corpus(tmp_path, clips)
    whisper = {"target": {"family": "whisper"}}
    capped = {"target": {"family": "qwen3_asr"}, "max_audio_seconds": 7.0}
    _, ev_w = demo_windows(60.0, corpus=corpus, model=whisper)
    _, ev_c = demo_windows(60.0, corpus=corpus, model=capped)
    assert max(w.seconds for w in ev_w) <= 30.0 and max(w.seconds for w in ev_c) <= 7.0
    assert sum(len(w.clip_ids) for w in ev_w) == sum(len(w.clip_ids) for w in ev_c)  # same clips, repacked
    assert len(ev_c) > len(ev_w)
