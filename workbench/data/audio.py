"""Audio input validation: every request's audio becomes mono float32 at 16 kHz, or one clear error.

Resampling is done only between integer-ratio-friendly rates with a windowed-sinc polyphase filter
(scipy.signal.resample_poly) and is logged, because a resampled view is not the recorded audio.
"""

from __future__ import annotations

import logging
from fractions import Fraction
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)
SAMPLE_RATE = 16000
WHISPER_MAX_SECONDS = 30.0
MIN_SAFE_RATE = 8000  # below this, upsampling invents a band the models were trained on
MAX_RATIO_TERMS = 1000  # polyphase up/down factors above this make the filter impractically long


def _fail(source: str, problem: str, fix: str) -> ValueError:
    return ValueError(f"audio {source}: {problem}. Fix: {fix}")


def resample(audio: np.ndarray, rate: int, target: int = SAMPLE_RATE, source: str = "<array>") -> np.ndarray:
    """Polyphase resampling ``rate`` -> ``target``; refuses unsafe conversions."""
    if rate == target:
        return audio
    if rate < MIN_SAFE_RATE:
        raise _fail(source, f"sample rate {rate} Hz is too low to resample to {target} Hz safely",
                    f"record or export at >= {MIN_SAFE_RATE} Hz, ideally {target} Hz")
    ratio = Fraction(target, rate)
    if max(ratio.numerator, ratio.denominator) > MAX_RATIO_TERMS:
        raise _fail(source, f"sample rate {rate} Hz has no practical polyphase ratio to {target} Hz",
                    f"convert it to {target} Hz first (e.g. `sox in.wav -r {target} out.wav`)")
    from scipy.signal import resample_poly

    log.warning("audio %s: resampled from %d Hz to %d Hz (polyphase); the model sees a resampled view",
                source, rate, target)
    return resample_poly(audio, ratio.numerator, ratio.denominator).astype(np.float32)


def validate_audio(
    audio: np.ndarray, rate: int, max_seconds: float | None = WHISPER_MAX_SECONDS, source: str = "<array>"
) -> np.ndarray:
    """Return mono float32 16 kHz audio or raise one ``ValueError`` naming the source and the fix."""
    a = np.asarray(audio)
    if a.ndim == 2:  # (frames, channels) as soundfile returns it
        a = a.mean(axis=1)
    elif a.ndim != 1:
        raise _fail(source, f"expected a 1-D or (frames, channels) array, got shape {a.shape}",
                    "pass mono samples or a (frames, channels) array")
    if a.size == 0:
        raise _fail(source, "contains no samples", "supply a non-empty recording")
    if not np.issubdtype(a.dtype, np.number):
        raise _fail(source, f"non-numeric dtype {a.dtype}", "pass float or integer PCM samples")
    if np.issubdtype(a.dtype, np.integer):
        a = a.astype(np.float32) / float(np.iinfo(a.dtype).max)
    a = a.astype(np.float32)
    if not np.isfinite(a).all():
        bad = int((~np.isfinite(a)).sum())
        raise _fail(source, f"{bad} samples are NaN or infinite", "re-export the audio; it is corrupt")
    a = resample(a, int(rate), SAMPLE_RATE, source)
    seconds = a.size / SAMPLE_RATE
    if max_seconds is not None and seconds > max_seconds:
        raise _fail(source, f"is {seconds:.2f} s long, the model allows at most {max_seconds:.0f} s",
                    f"split it into windows of <= {max_seconds:.0f} s (e.g. workbench windowing)")
    return a


def load_audio(path: str | Path, max_seconds: float | None = WHISPER_MAX_SECONDS) -> np.ndarray:
    """Read a file with soundfile and validate it (mono float32 16 kHz)."""
    import soundfile as sf

    path = Path(path)
    if not path.is_file():
        raise _fail(str(path), "does not exist", "check the path")
    try:
        data, rate = sf.read(str(path), dtype="float32", always_2d=False)
    except Exception as e:  # soundfile raises several types for undecodable input
        raise _fail(str(path), f"cannot be decoded ({type(e).__name__}: {e})",
                    "convert it to WAV/FLAC/OGG (e.g. `ffmpeg -i in -ar 16000 -ac 1 out.wav`)") from e
    return validate_audio(data, rate, max_seconds, source=str(path))
