"""Audio input validation: one clear ValueError per bad input, resampling logged."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import soundfile as sf

from workbench.data.audio import SAMPLE_RATE, load_audio, validate_audio


def _tone(rate: int, seconds: float, freq: float = 440.0) -> np.ndarray:
    t = np.arange(int(rate * seconds)) / rate
    return (0.5 * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def test_wav_roundtrip_is_mono_float32_16k(tmp_path):
    stereo = np.stack([_tone(16000, 1.0), _tone(16000, 1.0)], axis=1)
    sf.write(tmp_path / "a.wav", stereo, 16000, subtype="PCM_16")
    a = load_audio(tmp_path / "a.wav")
    assert a.dtype == np.float32 and a.ndim == 1 and a.size == 16000
    assert np.abs(a - _tone(16000, 1.0)).max() < 1e-3


def test_resampling_44k1_keeps_the_tone_and_warns(tmp_path, caplog):
    sf.write(tmp_path / "b.wav", _tone(44100, 1.0), 44100)
    with caplog.at_level(logging.WARNING):
        a = load_audio(tmp_path / "b.wav")
    assert "resampled from 44100 Hz to 16000 Hz" in caplog.text
    assert abs(a.size - SAMPLE_RATE) <= 1
    spectrum = np.abs(np.fft.rfft(a))
    assert abs(np.argmax(spectrum) * SAMPLE_RATE / a.size - 440) < 2


@pytest.mark.parametrize(
    "audio,rate,match",
    [
        (np.zeros(0, np.float32), 16000, "no samples"),
        (np.array([0.0, np.nan, 0.1], np.float32), 16000, "NaN"),
        (np.zeros(31 * 16000, np.float32), 16000, "at most 30 s"),
        (np.zeros(4000, np.float32), 4000, "too low"),
        (np.zeros(16001, np.float32), 16001, "no practical polyphase ratio"),
        (np.zeros((2, 2, 2), np.float32), 16000, "shape"),
    ],
)
def test_bad_inputs_raise_one_clear_error(audio, rate, match):
    with pytest.raises(ValueError, match=match) as err:
        validate_audio(audio, rate, source="clip.wav")
    assert "clip.wav" in str(err.value) and "Fix:" in str(err.value)


def test_undecodable_and_missing_files(tmp_path):
    (tmp_path / "junk.wav").write_bytes(b"RIFF not really a wav file")
    with pytest.raises(ValueError, match="junk.wav.*cannot be decoded.*Fix:"):
        load_audio(tmp_path / "junk.wav")
    with pytest.raises(ValueError, match="does not exist"):
        load_audio(tmp_path / "missing.wav")


def test_integer_pcm_is_scaled_and_no_length_cap_when_disabled():
    pcm = (np.ones(40 * 16000) * 16384).astype(np.int16)
    a = validate_audio(pcm, 16000, max_seconds=None)
    assert a.dtype == np.float32 and abs(float(a[0]) - 0.5) < 1e-3
