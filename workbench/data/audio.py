"""Audio input validation: every request's audio becomes mono float32 at 16 kHz, or one clear error.

Resampling is done only between integer-ratio-friendly rates with a windowed-sinc polyphase filter
(scipy.signal.resample_poly) and is logged, because a resampled view is not the recorded audio.
Downmixing is logged too. Files are checked from their header (duration, channels, rate) before
any decoding, so a 1-hour file is refused without reading 500 MB, and a WAV whose data is shorter
than its header declares (an interrupted copy) is refused instead of loading silently short.
Arrays must be 1-D or ``(frames, channels)``; a channels-first ``(2, N)`` array is refused with the
fix, not read as N-channel audio of 2 samples. All-silent or clipped audio is reported.
"""

from __future__ import annotations

import logging
from fractions import Fraction
from pathlib import Path

import numpy as np

from workbench.errors import AudioError

log = logging.getLogger(__name__)
SAMPLE_RATE = 16000
WHISPER_MAX_SECONDS = 30.0
MIN_SAFE_RATE = 8000  # below this, upsampling invents a band the models were trained on
MAX_RATIO_TERMS = 1000  # polyphase up/down factors above this make the filter impractically long
MAX_CHANNELS = 8  # more "channels" than this is not a recording layout: the array is the wrong way round
CLIP_LEVEL = 0.999  # |x| at or above this is full scale
CLIP_SHARE = 0.01  # more than 1% of samples at full scale: clipped


def _fail(source: str, problem: str, fix: str) -> AudioError:
    return AudioError(problem, where=f"audio {source}", fix=fix)


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
        frames, channels = a.shape
        if channels > MAX_CHANNELS or (frames <= MAX_CHANNELS and a.size > 0):
            first = "channels-first" if frames <= MAX_CHANNELS < channels else "ambiguous"
            raise _fail(source, f"a {first} array of shape {a.shape}: expected (frames, channels) with at most "
                        f"{MAX_CHANNELS} channels", "pass audio.T if the channels are the first axis, or mono samples")
        if channels > 1:
            log.warning("audio %s: downmixed %d channels to mono (mean); the model sees the mix", source, channels)
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
    _check_length(a.size / float(rate), max_seconds, source)  # before resampling: no work on audio we refuse
    a = resample(a, int(rate), SAMPLE_RATE, source)
    report_level(a, source)
    return a


def _check_length(seconds: float, max_seconds: float | None, source: str) -> None:
    if max_seconds is not None and seconds > max_seconds + 0.5 / SAMPLE_RATE:
        raise _fail(source, f"is {seconds:.2f} s long, the model allows at most {max_seconds:.0f} s",
                    f"split it into windows of <= {max_seconds:.0f} s (e.g. workbench windowing)")


def report_level(a: np.ndarray, source: str) -> dict[str, float]:
    """Warn on all-silent or clipped audio (it decodes, but rarely to what the speaker said)."""
    peak = float(np.abs(a).max()) if a.size else 0.0
    clipped = float((np.abs(a) >= CLIP_LEVEL).mean()) if a.size else 0.0
    if peak == 0.0:
        log.warning("audio %s: all samples are zero (silence); the transcript will be empty or invented", source)
    elif clipped > CLIP_SHARE:
        log.warning("audio %s: %.1f%% of samples are at full scale (clipped); record at a lower gain",
                    source, 100 * clipped)
    return {"peak": peak, "clipped_share": clipped}


def _wav_data_shortfall(path: Path) -> tuple[int, int] | None:
    """(declared, present) data bytes of a RIFF/WAVE file whose data chunk is cut short, else ``None``."""
    import struct

    size = path.stat().st_size
    with open(path, "rb") as f:
        head = f.read(12)
        if len(head) < 12 or head[:4] != b"RIFF" or head[8:12] != b"WAVE":
            return None
        while True:
            chunk = f.read(8)
            if len(chunk) < 8:
                return None
            cid, n = chunk[:4], struct.unpack("<I", chunk[4:])[0]
            if cid == b"data":
                if n in (0, 0xFFFFFFFF):  # streaming writers leave the size unset: nothing to compare
                    return None
                present = size - f.tell()
                return (n, present) if present < n else None
            f.seek(n + (n & 1), 1)


def check_header(path: Path, max_seconds: float | None = WHISPER_MAX_SECONDS) -> object:
    """Read duration, channels and rate from the header and refuse the file before decoding it."""
    import soundfile as sf

    try:
        info = sf.info(str(path))
    except Exception as e:  # soundfile raises several types for undecodable input
        raise _fail(str(path), f"cannot be decoded ({type(e).__name__}: {e})",
                    "convert it to WAV/FLAC/OGG (e.g. `ffmpeg -i in -ar 16000 -ac 1 out.wav`)") from e
    short = _wav_data_shortfall(path)
    if short is not None:
        declared, present = short
        per_s = info.samplerate * info.channels * max(1, _bytes_per_sample(info.subtype))
        raise _fail(str(path), f"is truncated: its header declares {declared / per_s:.2f} s of audio, the file holds "
                    f"{present / per_s:.2f} s", "copy or export the file again (an interrupted write?)")
    if info.channels > MAX_CHANNELS:
        raise _fail(str(path), f"has {info.channels} channels", "export mono or stereo audio")
    if info.frames and info.samplerate:
        _check_length(info.frames / info.samplerate, max_seconds, str(path))
    return info


def _bytes_per_sample(subtype: str) -> int:
    return {"PCM_U8": 1, "PCM_S8": 1, "PCM_16": 2, "PCM_24": 3, "PCM_32": 4, "FLOAT": 4, "DOUBLE": 8,
            "ULAW": 1, "ALAW": 1}.get(subtype, 2)


def load_audio(path: str | Path, max_seconds: float | None = WHISPER_MAX_SECONDS) -> np.ndarray:
    """Read a file with soundfile and validate it (mono float32 16 kHz)."""
    import soundfile as sf

    path = Path(path)
    if not path.is_file():
        raise _fail(str(path), "does not exist", "check the path")
    check_header(path, max_seconds)
    try:
        data, rate = sf.read(str(path), dtype="float32", always_2d=False)
    except Exception as e:  # soundfile raises several types for undecodable input
        raise _fail(str(path), f"cannot be decoded ({type(e).__name__}: {e})",
                    "convert it to WAV/FLAC/OGG (e.g. `ffmpeg -i in -ar 16000 -ac 1 out.wav`)") from e
    return validate_audio(data, rate, max_seconds, source=str(path))
