"""Audio that used to load silently wrong: checked from the header, refused with the fix."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import soundfile as sf

from tests.models.conftest import tiny_audio, tiny_whisper
from workbench.data.audio import load_audio, validate_audio


def _tone(seconds: float, rate: int = 16000) -> np.ndarray:
    t = np.arange(int(rate * seconds)) / rate
    return (0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)


def test_channels_first_array_is_refused_with_the_fix():
    stereo_cf = np.stack([_tone(1.0), _tone(1.0)])  # (2, 16000): used to become 2 samples
    with pytest.raises(ValueError, match=r"channels-first array of shape \(2, 16000\).*audio\.T") as err:
        validate_audio(stereo_cf, 16000, source="clip")
    assert "Fix:" in str(err.value)
    assert validate_audio(stereo_cf.T, 16000).shape == (16000,)


def test_downmix_is_reported(caplog):
    with caplog.at_level(logging.WARNING):
        validate_audio(np.stack([_tone(0.5), _tone(0.5)], axis=1), 16000, source="clip")
    assert "downmixed 2 channels" in caplog.text


def test_truncated_wav_is_refused(tmp_path):
    sf.write(tmp_path / "full.wav", _tone(3.0), 16000, subtype="PCM_16")
    data = (tmp_path / "full.wav").read_bytes()
    (tmp_path / "cut.wav").write_bytes(data[: len(data) // 3])  # header still says 3 s
    with pytest.raises(ValueError, match=r"cut\.wav: is truncated: its header declares 3\.00 s") as err:
        load_audio(tmp_path / "cut.wav")
    assert "Fix:" in str(err.value)
    assert load_audio(tmp_path / "full.wav").size == 48000


def test_an_hour_long_file_is_refused_from_its_header(tmp_path):
    path = tmp_path / "hour.wav"
    with sf.SoundFile(path, "w", samplerate=8000, channels=1, subtype="PCM_U8") as f:  # 29 MB, not 115
        block = np.zeros(8000 * 60, dtype=np.int16)
        for _ in range(60):
            f.write(block)
    import workbench.data.audio as audio_mod

    decoded = []
    real_read = sf.read
    try:  # record whether any decode happens (the refusal must come from the header alone)
        sf.read = lambda *a, **k: decoded.append(a) or real_read(*a, **k)
        with pytest.raises(ValueError, match=r"is 3600\.00 s long, the model allows at most 30 s"):
            audio_mod.load_audio(path)
    finally:
        sf.read = real_read
    assert decoded == []


def test_silent_and_clipped_audio_are_reported(caplog):
    with caplog.at_level(logging.WARNING):
        validate_audio(np.zeros(8000, np.float32), 16000, source="quiet")
        validate_audio(np.clip(_tone(0.5) * 10, -1, 1), 16000, source="loud")
        validate_audio(_tone(0.5), 16000, source="fine")
    assert "quiet: all samples are zero" in caplog.text
    assert "loud:" in caplog.text and "clipped" in caplog.text
    assert "fine" not in caplog.text


@pytest.mark.parametrize("audio, match", [
    (np.full(6400, np.nan, np.float32), "NaN"),
    (np.concatenate([tiny_audio(0.4), [np.inf]]).astype(np.float32), "NaN or infinite"),
    (np.zeros(31 * 16000, np.float32), "at most 30 s"),
])
def test_whisper_target_validates_its_audio(audio, match):
    # NaN audio used to decode to "!!!!"; audio over 30 s was cut silently by the feature extractor
    bundle = tiny_whisper()
    with pytest.raises(ValueError, match=match) as err:
        bundle.features(audio)
    assert "tiny-whisper input" in str(err.value)


def test_audio_lm_prompts_refuse_audio_the_processor_would_cut():
    from workbench.models.prompts import _check_audio

    with pytest.raises(ValueError, match="audio LM input: is 31.00 s long"):
        _check_audio(np.zeros(31 * 16000, np.float32))
    assert _check_audio(_tone(1.0)).shape == (16000,)
