"""What every dataset loader returns: utterances that point at audio on disk (or in an HF column).

A loader reads one dataset's own on-disk layout and returns :class:`Utterance` records in a stable
order; it never decodes audio up front (durations come from file headers). Windows, cohorts and
splits are built from these records elsewhere (``datasets.windows``, ``workbench.data.cohort``).
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from workbench.data.audio import load_audio, validate_audio
from workbench.errors import AudioError, ConfigError

AUDIO_SUFFIXES = (".flac", ".wav")  # wherever a layout names one, a file of the other is accepted


class DatasetLayoutError(ConfigError):
    """``dataset.root`` is missing or does not hold the expected layout; one line says which layout.

    A ``ConfigError``: the entry point prints it as one line (the fix is ``dataset.root``)."""

    def __init__(self, name: str, root: Any, problem: str, layout: str) -> None:
        super().__init__("dataset.root", f"{root}: {problem}; {name} expects {layout}")
        self.dataset = name

    def line(self) -> str:
        return f"dataset.root={self.what}"

    def __reduce__(self):
        return (_layout_error, (type(self), self.key, self.what, self.dataset))


def _layout_error(cls: type, key: str, what: str, dataset: str) -> DatasetLayoutError:
    err = cls.__new__(cls)
    ConfigError.__init__(err, key, what)
    err.dataset = dataset
    return err


@dataclass(frozen=True, slots=True)
class Segment:
    """A span of one recording: a file on disk, or encoded bytes from an HF ``datasets`` audio column."""

    path: Path | None
    seconds: float  # duration of the span (not of the whole file)
    start: float = 0.0  # seconds into the recording
    data: bytes | None = None

    def load(self) -> np.ndarray:
        """Mono float32 16 kHz samples of this span (validated like any request's audio)."""
        whole = self.start == 0.0 and self.data is None
        if whole and self.path is not None:
            return load_audio(self.path, max_seconds=None)
        import soundfile as sf

        src: Any = io.BytesIO(self.data) if self.data is not None else str(self.path)
        name = str(self.path) if self.path is not None else "<hf audio bytes>"
        with sf.SoundFile(src) as f:
            rate = f.samplerate
            f.seek(int(round(self.start * rate)))
            data = f.read(int(round(self.seconds * rate)), dtype="float32", always_2d=False)
        return validate_audio(data, rate, max_seconds=None, source=f"{name}@{self.start:.2f}s")


@dataclass(frozen=True)
class Utterance:
    """One annotated unit of a dataset: a LibriSpeech utterance, an AMI segment, a QA question.

    ``group`` is the recording the unit belongs to (chapter, meeting, song, speaker): only units of
    one group are packed into a window. ``reference`` is what task quality compares the target's
    output with (transcript, translation); ``meta`` carries task fields (question, answers, ...).
    """

    utt_id: str
    segments: tuple[Segment, ...]
    text: str
    group: str
    language: str
    reference: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        return sum(s.seconds for s in self.segments)

    def load(self) -> np.ndarray:
        return concat([s.load() for s in self.segments])


def concat(parts: Sequence[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts).astype(np.float32) if parts else np.zeros(0, dtype=np.float32)


def require_dir(name: str, root: Any, layout: str) -> Path:
    """``dataset.root`` as an existing directory, or one line naming the expected layout."""
    if root is None or str(root) in ("", "???"):
        raise DatasetLayoutError(name, root, "not set (pass dataset.root=/path)", layout)
    path = Path(str(root)).expanduser()
    if not path.is_dir():
        raise DatasetLayoutError(name, root, "no such directory", layout)
    return path


def file_seconds(path: Path) -> float:
    """Duration from the header (no decoding); a file soundfile cannot open raises one clear error."""
    import soundfile as sf

    try:
        info = sf.info(str(path))
    except Exception as e:  # soundfile raises several types for undecodable input
        raise AudioError(f"cannot be read ({type(e).__name__}: {e})", where=f"audio {path}",
                         fix="convert it to WAV/FLAC (e.g. `ffmpeg -i in -ar 16000 -ac 1 out.wav`)") from e
    return info.frames / info.samplerate


def bytes_seconds(data: bytes, source: str) -> float:
    import soundfile as sf

    try:
        info = sf.info(io.BytesIO(data))
    except Exception as e:
        raise AudioError(f"HF audio bytes cannot be decoded ({type(e).__name__}: {e})", where=f"audio {source}",
                         fix="re-save the HF copy, or point dataset.root at the native layout") from e
    return info.frames / info.samplerate


def find_audio(path: Path) -> Path:
    """The file a layout names, or its WAV/FLAC twin when only that one exists (else ``path``)."""
    if path.is_file() or path.suffix.lower() not in AUDIO_SUFFIXES:
        return path
    for suffix in AUDIO_SUFFIXES:
        twin = path.with_suffix(suffix)
        if twin.is_file():
            return twin
    return path


def whole_file(path: Path) -> Segment:
    """A whole recording. An unreadable one gets duration 0 here: the validation pass before any
    model work (``workbench.data.screen``) names it with every other bad file, instead of the first
    one stopping the load."""
    path = find_audio(path)
    try:
        return Segment(path, file_seconds(path))
    except AudioError:
        return Segment(path, 0.0)
