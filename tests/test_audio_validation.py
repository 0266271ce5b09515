"""Audio validation refuses what a model must never see (the mutation audit's audio mutants).

Infinite samples and non-numeric dtypes are rejected with one ``ValueError`` that names the input;
an unchecked cast would either pass them on (bool -> 0/1 floats, +/-inf) or fail with numpy's own
message, which names neither the input nor the fix.
"""

from __future__ import annotations

import numpy as np
import pytest

from workbench.data.audio import validate_audio


@pytest.mark.parametrize("bad", [np.inf, -np.inf])
def test_infinite_samples_are_rejected_naming_the_input(bad):
    audio = np.zeros(1600, np.float32)
    audio[100] = bad
    with pytest.raises(ValueError) as err:
        validate_audio(audio, 16000, source="clip.wav")
    assert "clip.wav" in str(err.value) and "infinite" in str(err.value).lower()


@pytest.mark.filterwarnings("ignore:overflow encountered in cast")
def test_samples_that_overflow_float32_are_rejected():
    audio = np.full(1600, 1e300, np.float64)  # finite as float64, infinite once cast to float32
    with pytest.raises(ValueError, match="clip.wav"):
        validate_audio(audio, 16000, source="clip.wav")


@pytest.mark.parametrize("audio", [
    np.array([True, False, True] * 600),  # bool: would silently become 0/1 floats
    np.array(["0.1", "0.2"] * 800),  # strings: numpy's own error would not name the input
    np.array([b"\x00\x01"] * 1600),  # raw bytes, not decoded PCM
], ids=["bool", "str", "bytes"])
def test_non_numeric_dtypes_are_rejected_naming_the_input_and_dtype(audio):
    with pytest.raises(ValueError) as err:
        validate_audio(audio, 16000, source="clip.wav")
    msg = str(err.value)
    assert "clip.wav" in msg and str(audio.dtype) in msg


def test_finite_float64_and_int16_pass_as_float32():
    ok = validate_audio(np.linspace(-0.5, 0.5, 1600), 16000, source="clip.wav")
    assert ok.dtype == np.float32 and np.isfinite(ok).all() and ok.size == 1600
    pcm = validate_audio(np.array([-32767, 0, 32767] * 600, np.int16), 16000)
    assert pcm.dtype == np.float32 and float(pcm.max()) == pytest.approx(1.0)
